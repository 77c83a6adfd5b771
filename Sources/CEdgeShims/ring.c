// The shared-memory ring; see include/edge_ring.h.
#define _GNU_SOURCE
#include "edge_ring.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

typedef struct {
    uint32_t magic;
    uint32_t version;
    uint64_t layout_id;
    uint32_t record_bytes;
    uint32_t slot_bytes;
    uint32_t slot_count;
    uint32_t stream;
    _Atomic uint64_t write_seq;
    _Atomic uint32_t wake;
    _Atomic uint32_t closed;
    uint8_t reserved[EDGE_RING_HEADER_BYTES - 48];
} ring_header;

_Static_assert(sizeof(ring_header) == EDGE_RING_HEADER_BYTES, "ring header is 64 bytes");

static inline _Atomic uint64_t *slot_at(const void *base, const ring_header *h, uint64_t seq) {
    uintptr_t p = (uintptr_t)base + EDGE_RING_HEADER_BYTES
                + (uintptr_t)(seq & (h->slot_count - 1)) * h->slot_bytes;
    return (_Atomic uint64_t *)p;
}

int edge_ring_create(const char *name, uint32_t slot_count, uint32_t record_bytes,
                     uint64_t layout_id, uint32_t stream, void **base, size_t *length) {
    if (slot_count == 0 || (slot_count & (slot_count - 1)) != 0 || record_bytes == 0 || record_bytes % 8 != 0)
        return -EINVAL;
    uint32_t slot_bytes = record_bytes + 8;
    size_t len = EDGE_RING_HEADER_BYTES + (size_t)slot_count * slot_bytes;
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -errno;
    if (ftruncate(fd, (off_t)len) != 0) { int e = errno; close(fd); return -e; }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { int e = errno; close(fd); return -e; }
    ring_header *h = (ring_header *)p;
    h->magic = EDGE_RING_MAGIC;
    h->version = EDGE_RING_VERSION;
    h->layout_id = layout_id;
    h->record_bytes = record_bytes;
    h->slot_bytes = slot_bytes;
    h->slot_count = slot_count;
    h->stream = stream;
    atomic_store_explicit(&h->write_seq, 0, memory_order_release);
    // The writable mapping made above stays; no other may be made from now on.
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
        int e = errno; munmap(p, len); close(fd); return -e;
    }
    *base = p;
    *length = len;
    return fd;
}

void edge_ring_publish(void *base, const void *record) {
    ring_header *h = (ring_header *)base;
    uint64_t n = atomic_load_explicit(&h->write_seq, memory_order_relaxed);
    _Atomic uint64_t *slot = slot_at(base, h, n);
    atomic_store_explicit(slot, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    _Atomic uint64_t *dst = slot + 1;
    const uint64_t *src = (const uint64_t *)record;
    for (uint32_t i = 0; i < h->record_bytes / 8; i++)
        atomic_store_explicit(&dst[i], src[i], memory_order_relaxed);
    atomic_store_explicit(slot, n + 1, memory_order_release);
    atomic_store_explicit(&h->write_seq, n + 1, memory_order_release);
}

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout) {
    return syscall(SYS_futex, (uint32_t *)word, op, val, timeout, NULL, 0);
}

int edge_ring_signal(void *base) {
    ring_header *h = (ring_header *)base;
    atomic_fetch_add_explicit(&h->wake, 1, memory_order_release);
    // One waiter: the kernel's work for a wake grows with the threads woken,
    // and the agent must not pay per reader. Each reader woken with news
    // wakes the next (edge_ring_relay).
    long r = futex(&h->wake, FUTEX_WAKE, 1, NULL);
    return r < 0 ? -errno : (int)r;
}

int edge_ring_relay(const void *base) {
    ring_header *h = (ring_header *)base;
    long r = futex(&h->wake, FUTEX_WAKE, 1, NULL);
    return r < 0 ? -errno : (int)r;
}

void edge_ring_close(void *base) {
    ring_header *h = (ring_header *)base;
    atomic_store_explicit(&h->closed, 1, memory_order_release);
    atomic_fetch_add_explicit(&h->wake, 1, memory_order_release);
    futex(&h->wake, FUTEX_WAKE, INT_MAX, NULL);
}

int edge_ring_map_reader(int fd, uint64_t layout_id, uint32_t record_bytes, uint32_t stream,
                         const void **base, size_t *length) {
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0) return -errno;
    int needed = F_SEAL_SHRINK | F_SEAL_FUTURE_WRITE;
    if ((seals & needed) != needed) return -EPERM;
    struct stat st;
    if (fstat(fd, &st) != 0) return -errno;
    if (st.st_size < (off_t)EDGE_RING_HEADER_BYTES) return -EPROTO;
    size_t len = (size_t)st.st_size;
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return -errno;
    const ring_header *h = (const ring_header *)p;
    uint32_t count = h->slot_count;
    if (h->magic != EDGE_RING_MAGIC || h->version != EDGE_RING_VERSION || h->layout_id != layout_id
        || h->record_bytes != record_bytes || h->slot_bytes != record_bytes + 8 || h->stream != stream
        || count == 0 || (count & (count - 1)) != 0
        || (size_t)EDGE_RING_HEADER_BYTES + (size_t)count * h->slot_bytes > len) {
        munmap(p, len);
        return -EPROTO;
    }
    *base = p;
    *length = len;
    return 0;
}

void edge_ring_unmap(const void *base, size_t length) { munmap((void *)base, length); }

uint64_t edge_ring_write_seq(const void *base) {
    ring_header *h = (ring_header *)base;
    return atomic_load_explicit(&h->write_seq, memory_order_acquire);
}

uint32_t edge_ring_slot_count(const void *base) { return ((const ring_header *)base)->slot_count; }

uint32_t edge_ring_wake_word(const void *base) {
    ring_header *h = (ring_header *)base;
    return atomic_load_explicit(&h->wake, memory_order_acquire);
}

int edge_ring_is_closed(const void *base) {
    ring_header *h = (ring_header *)base;
    return atomic_load_explicit(&h->closed, memory_order_acquire) != 0;
}

int edge_ring_read(const void *base, uint64_t seq, void *out) {
    const ring_header *h = (const ring_header *)base;
    _Atomic uint64_t *slot = slot_at(base, h, seq);
    if (atomic_load_explicit(slot, memory_order_acquire) != seq + 1) return 1;
    _Atomic uint64_t *src = slot + 1;
    uint64_t *dst = (uint64_t *)out;
    for (uint32_t i = 0; i < h->record_bytes / 8; i++)
        dst[i] = atomic_load_explicit(&src[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(slot, memory_order_relaxed) == seq + 1 ? 0 : 1;
}

int edge_ring_wait(const void *base, uint32_t seen, int timeout_ms) {
    ring_header *h = (ring_header *)base;
    struct timespec ts = { .tv_sec = timeout_ms / 1000, .tv_nsec = (long)(timeout_ms % 1000) * 1000000L };
    long r = futex(&h->wake, FUTEX_WAIT, seen, timeout_ms < 0 ? NULL : &ts);
    if (r == 0) return 0;
    if (errno == EAGAIN) return 0;
    return -errno;
}

struct edge_futex_waitv { uint64_t val; uint64_t uaddr; uint32_t flags; uint32_t reserved; };
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#define EDGE_FUTEX2_SIZE_U32 0x02
#define EDGE_FUTEX2_PRIVATE 128
#define EDGE_MAX_WAIT 16

int edge_ring_wait_any(const void *const *bases, const uint32_t *seen, int n,
                       const uint32_t *control, uint32_t control_seen, int timeout_ms) {
    if (n < 0 || n > EDGE_MAX_WAIT - 1) return -EINVAL;
    struct edge_futex_waitv w[EDGE_MAX_WAIT];
    memset(w, 0, sizeof w);
    w[0].val = control_seen;
    w[0].uaddr = (uint64_t)(uintptr_t)control;
    w[0].flags = EDGE_FUTEX2_SIZE_U32 | EDGE_FUTEX2_PRIVATE;
    for (int i = 0; i < n; i++) {
        const ring_header *h = (const ring_header *)bases[i];
        w[i + 1].val = seen[i];
        w[i + 1].uaddr = (uint64_t)(uintptr_t)&h->wake;
        w[i + 1].flags = EDGE_FUTEX2_SIZE_U32;   // shared: the agent wakes it
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec += 1; deadline.tv_nsec -= 1000000000L; }
    long r = syscall(SYS_futex_waitv, w, (unsigned)(n + 1), 0, &deadline, CLOCK_MONOTONIC);
    if (r > 0) return (int)r;          // woken by ring r - 1
    if (r == 0) return 0;              // woken by the control word
    if (errno == EAGAIN) return 0;     // a word had changed already: nobody woke us
    if (errno != ENOSYS) return -errno;
    // Before Linux 5.16: a short wait on each ring in turn (at most 2 ms late).
    if (atomic_load_explicit((_Atomic uint32_t *)control, memory_order_acquire) != control_seen) return 0;
    for (int i = 0; i < n; i++) {
        if (edge_ring_wake_word(bases[i]) != seen[i]) return 0;
    }
    if (n == 0) {
        struct timespec ts = { .tv_sec = 0, .tv_nsec = 2000000L };
        long f = syscall(SYS_futex, control, FUTEX_WAIT_PRIVATE, control_seen, &ts, NULL, 0);
        return f == 0 || errno == EAGAIN ? 0 : -errno;
    }
    int e = edge_ring_wait(bases[0], seen[0], 2);
    return e == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

void edge_ring_poke(uint32_t *control) {
    atomic_fetch_add_explicit((_Atomic uint32_t *)control, 1, memory_order_release);
    syscall(SYS_futex, control, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

uint32_t edge_ring_load_word(const uint32_t *word) {
    return atomic_load_explicit((_Atomic uint32_t *)word, memory_order_acquire);
}

#include <sys/socket.h>

#define EDGE_MAX_PASSED_FDS 16

long edge_send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds) {
    if (nfds < 0 || nfds > EDGE_MAX_PASSED_FDS) return -EINVAL;
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    union { char bytes[CMSG_SPACE(sizeof(int) * EDGE_MAX_PASSED_FDS)]; struct cmsghdr align; } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfds > 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.bytes;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    for (;;) {
        ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return (long)n;
        if (errno == EINTR) continue;
        return -errno;
    }
}

long edge_recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds, int *truncated) {
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    union { char bytes[CMSG_SPACE(sizeof(int) * EDGE_MAX_PASSED_FDS)]; struct cmsghdr align; } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.bytes, .msg_controllen = sizeof control.bytes };
    *nfds = 0;
    *truncated = 0;
    ssize_t n;
    for (;;) {
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n >= 0) break;
        if (errno == EINTR) continue;
        return -errno;
    }
    if (msg.msg_flags & MSG_CTRUNC) *truncated = 1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const unsigned char *data = CMSG_DATA(c);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, data + i * sizeof(int), sizeof(int));
            if (*nfds < max_fds) fds[(*nfds)++] = fd; else close(fd);
        }
    }
    return (long)n;
}
