// SPDX-License-Identifier: Apache-2.0
// A close(2) that reports closing a descriptor that is not open (EBADF),
// loaded with LD_PRELOAD by .ci/run's AddressSanitizer step.
//
// Why: a descriptor closed twice in a process with many threads (the test
// process runs hundreds of tests at once) closes, the second time, whatever
// another thread was given that number in between: a socket, a ring's
// memfd. CI then fails somewhere unrelated, now and then (it did, twice).
// Most of the time nothing took the number yet, and the second close fails
// with EBADF: this turns that into a report with a backtrace, every run.
//
// Only programs under $CLOSECHECK_ROOT (the package's .build) report, into
// $CLOSECHECK_DIR/<pid>.txt; other programs the tests start (mosquitto,
// python, systemd tools) are left alone. close(-1) is not reported.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int (*real_close)(int);
static int checked = -1;   // -1: not decided yet; 0: not our program; 1: ours
static char exe[4096];

static int is_ours(void) {
    if (checked >= 0) return checked;
    const char *root = getenv("CLOSECHECK_ROOT");
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) n = 0;
    exe[n] = 0;
    checked = root && *root && strncmp(exe, root, strlen(root)) == 0;
    return checked;
}

static void report(int fd) {
    const char *dir = getenv("CLOSECHECK_DIR");
    if (!dir) return;
    char path[4200];
    snprintf(path, sizeof path, "%s/%d.txt", dir, (int)getpid());
    int out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) return;
    char head[4300];
    int len = snprintf(head, sizeof head, "close(%d): EBADF in %s (pid %d, thread %ld)\n",
                       fd, exe, (int)getpid(), (long)syscall(SYS_gettid));
    if (write(out, head, len) < 0) { }
    void *frames[48];
    int k = backtrace(frames, 48);
    backtrace_symbols_fd(frames, k, out);
    if (write(out, "\n", 1) < 0) { }
    real_close(out);
}

int close(int fd) {
    if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    int r = real_close(fd);
    if (r < 0 && errno == EBADF && fd >= 0 && is_ours()) {
        int saved = errno;
        report(fd);
        errno = saved;
    }
    return r;
}
