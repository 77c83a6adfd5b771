#ifndef EDGE_SHIMS_H
#define EDGE_SHIMS_H
// Thin, non-variadic wrappers for Linux calls Swift cannot import directly
// (ioctl is variadic; struct ucred needs _GNU_SOURCE). Each returns 0 on
// success or -errno on failure, so callers never read a stale errno.
#include <stdint.h>
#include <stddef.h>
// The shared-memory rings' calls (in a header of their own; included here so
// that a build whose module cache predates them sees them too).
#include "edge_ring.h"

/// ioctl(fd, I2C_SLAVE, address). Never I2C_SLAVE_FORCE: EBUSY must surface
/// when a kernel driver owns the address.
int edge_i2c_set_slave(int fd, uint16_t address);
/// ioctl(fd, I2C_FUNCS, &funcs).
int edge_i2c_funcs(int fd, unsigned long *funcs);
/// One I2C_RDWR transaction: optional write of `wlen` bytes, then (repeated
/// start) optional read of `rlen` bytes, on one 7-bit address.
int edge_i2c_rdwr(int fd, uint16_t address, const uint8_t *wbuf, uint16_t wlen,
                  uint8_t *rbuf, uint16_t rlen);
/// SO_PEERCRED of a connected Unix socket.
int edge_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);
/// clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to an absolute deadline in
/// nanoseconds; retries EINTR.
int edge_sleep_until_monotonic_ns(uint64_t deadline_ns);
/// prctl(PR_SET_TIMERSLACK, ns) for the calling thread: how late the kernel
/// may defer its timer wake-ups (default 50 µs for SCHED_OTHER threads).
int edge_set_timer_slack_ns(unsigned long ns);
/// ioctl(fd, TIOCGWINSZ): the terminal's width in columns (0 when the
/// terminal does not say), or -errno (ENOTTY: not a terminal).
int edge_terminal_columns(int fd);
/// clock_gettime(CLOCK_MONOTONIC) in nanoseconds.
uint64_t edge_monotonic_ns(void);
/// malloc_trim(0) where the C library has it (glibc): returns the free pages
/// of every malloc arena to the kernel. 1 if memory was released, else 0.
int edge_release_free_memory(void);

// Functionality bits, re-exported as constants Swift can see.
extern const unsigned long EDGE_I2C_FUNC_I2C;
extern const unsigned long EDGE_I2C_FUNC_SMBUS_READ_I2C_BLOCK;
extern const unsigned long EDGE_I2C_FUNC_SMBUS_WRITE_I2C_BLOCK;
extern const unsigned long EDGE_I2C_FUNC_SMBUS_READ_BYTE;
extern const unsigned long EDGE_I2C_FUNC_SMBUS_WRITE_BYTE;
extern const unsigned long EDGE_I2C_FUNC_SMBUS_READ_BYTE_DATA;
extern const unsigned long EDGE_I2C_FUNC_SMBUS_WRITE_BYTE_DATA;
extern const unsigned long EDGE_I2C_FUNC_SMBUS_QUICK;

#endif
