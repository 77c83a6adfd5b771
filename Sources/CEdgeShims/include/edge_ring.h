#ifndef EDGE_RING_H
#define EDGE_RING_H
// A stream's shared-memory ring (docs/protocol.md, "Shared-memory rings"):
// one writer (the agent), any number of read-only readers in other
// processes. The memory is a sealed memfd: the agent maps it writable, then
// seals it (no shrinking or growing, no new writable mapping), and hands the
// descriptor to entitled clients over the socket (SCM_RIGHTS).
//
// Layout (little-endian, this machine's):
//   header, 64 bytes: magic, version, layout id, record/slot sizes, slot
//     count, stream index, write sequence (records written so far), the
//     wake word readers wait on (a futex), closed flag;
//   slot_count slots of slot_bytes: an 8-byte sequence (n + 1 for record n,
//     0 while the writer is filling the slot), then the record.
// Each slot is a sequence lock: a reader copies the record and keeps it only
// if the slot's sequence was n + 1 before and after the copy. Every word is
// stored and loaded atomically (relaxed, ordered by the sequence's
// release/acquire), so a reader in the writer's own process is not a data
// race either. Functions return 0 or -errno unless they say otherwise.
#include <stdint.h>
#include <stddef.h>

#define EDGE_RING_MAGIC 0x52474445u  /* "EDGR" */
#define EDGE_RING_VERSION 1u
#define EDGE_RING_HEADER_BYTES 64u

/// Creates the ring's memfd (`name` shows in /proc/PID/fd), maps it
/// writable, writes the header and seals it (F_SEAL_SHRINK | F_SEAL_GROW |
/// F_SEAL_FUTURE_WRITE | F_SEAL_SEAL). `slot_count` must be a power of two;
/// `record_bytes` a multiple of 8. Returns the descriptor (close-on-exec),
/// or -errno; the mapping in *base, its length in *length.
int edge_ring_create(const char *name, uint32_t slot_count, uint32_t record_bytes,
                     uint64_t layout_id, uint32_t stream, void **base, size_t *length);

/// Stores `record` (record_bytes long, 8-byte aligned) as the next record.
/// Does not wake readers: call edge_ring_signal once per delivery.
void edge_ring_publish(void *base, const void *record);

/// Bumps the wake word and wakes one reader waiting on it (one futex call
/// that wakes one thread, whatever the number of readers: the kernel's work
/// for a wake grows with the threads it wakes). Each reader woken passes the
/// wake on (edge_ring_relay), once per value of the word, so every reader
/// wakes once per delivery and the agent pays for one. Returns the number woken, or -errno.
int edge_ring_signal(void *base);

/// Wakes one more reader waiting on the ring's wake word without changing
/// it: what a reader that was woken does first (once per value of the word).
int edge_ring_relay(const void *base);

/// Marks the ring closed (the agent let go of it: unsubscribed, stopping)
/// and wakes every reader.
void edge_ring_close(void *base);

/// Checks a descriptor received from the agent and maps it read-only: the
/// seals (it cannot shrink under the reader, nobody else can write it), the
/// size, the header (magic, version, `layout_id`, `record_bytes`). -EPROTO
/// when the header differs, -EPERM when the seals are missing.
int edge_ring_map_reader(int fd, uint64_t layout_id, uint32_t record_bytes, uint32_t stream,
                         const void **base, size_t *length);
/// Unmaps what edge_ring_map_reader mapped.
void edge_ring_unmap(const void *base, size_t length);

/// Records written so far (acquire).
uint64_t edge_ring_write_seq(const void *base);
/// The slot count.
uint32_t edge_ring_slot_count(const void *base);
/// The wake word now (pass it to edge_ring_wait).
uint32_t edge_ring_wake_word(const void *base);
/// 1 once the agent closed the ring.
int edge_ring_is_closed(const void *base);

/// Copies record `seq` into `out` (record_bytes, 8-byte aligned). 0 when the
/// copy is whole; 1 when the slot holds another record (overwritten: the
/// reader fell a lap behind) or was being written during the copy.
int edge_ring_read(const void *base, uint64_t seq, void *out);

/// Waits until the wake word differs from `seen` or `timeout_ms` passes
/// (FUTEX_WAIT on the shared mapping). 0 woken or value already changed,
/// -ETIMEDOUT, -EINTR.
int edge_ring_wait(const void *base, uint32_t seen, int timeout_ms);

/// Waits until any of `n` rings' wake words differs from `seen[i]`, or the
/// process-private word `control` differs from `control_seen`, or
/// `timeout_ms` passes: one futex_waitv(2) (Linux 5.16), else short waits on
/// each in turn. i + 1 when a wake on ring i ended the wait (the caller
/// relays it once it found news), 0 for any other end of the wait
/// (the control word, a word already changed), -ETIMEDOUT, -EINTR.
int edge_ring_wait_any(const void *const *bases, const uint32_t *seen, int n,
                       const uint32_t *control, uint32_t control_seen, int timeout_ms);
/// Bumps a process-private word and wakes its waiter (edge_ring_wait_any's `control`).
void edge_ring_poke(uint32_t *control);
/// Loads a process-private word (acquire).
uint32_t edge_ring_load_word(const uint32_t *word);

// Descriptor passing on a Unix stream socket (SCM_RIGHTS).

/// send(2) of `len` bytes (MSG_NOSIGNAL) carrying `nfds` descriptors
/// (at most 16) with the first byte. Bytes sent, or -errno (-EAGAIN when the
/// socket is full: nothing was sent, the descriptors were not either).
long edge_send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);

/// recv(2) into `buf` that also takes the descriptors arriving with these
/// bytes (close-on-exec), at most `max_fds` into `fds` (the rest are closed);
/// their number in *nfds, and *truncated = 1 when the kernel dropped some
/// (MSG_CTRUNC: this process is out of descriptors). Bytes read (0 at the
/// end), or -errno.
long edge_recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds, int *truncated);

#endif
