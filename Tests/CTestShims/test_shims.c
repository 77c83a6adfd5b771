// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include "edge_test_shims.h"
#include <errno.h>
#include <stddef.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// futex_waitv is 449 in the generic table (arm64) and on x86-64 (Linux 5.16,
// kernel/futex/syscalls.c; arch/x86/entry/syscalls/syscall_64.tbl).
#define EDGE_NR_FUTEX_WAITV 449

int edge_test_deny_futex_waitv(void) {
#if defined(__x86_64__)
    const unsigned int arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned int arch = AUDIT_ARCH_AARCH64;
#else
    return -ENOTSUP;
#endif
    struct sock_filter code[] = {
        // Another architecture's call numbers (a 32-bit call on x86-64): allowed.
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, EDGE_NR_FUTEX_WAITV, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { .len = (unsigned short)(sizeof code / sizeof code[0]), .filter = code };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return -errno;
    return 0;
}

int edge_test_futex_waitv_errno(void) {
    long r = syscall(EDGE_NR_FUTEX_WAITV, NULL, 0u, 0u, NULL, 0);
    return r == 0 ? 0 : errno;
}
