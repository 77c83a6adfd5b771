#define _GNU_SOURCE
#include "edge_shims.h"
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/prctl.h>
#include <linux/i2c.h>
#include <linux/i2c-dev.h>

const unsigned long EDGE_I2C_FUNC_I2C = I2C_FUNC_I2C;
const unsigned long EDGE_I2C_FUNC_SMBUS_READ_I2C_BLOCK = I2C_FUNC_SMBUS_READ_I2C_BLOCK;
const unsigned long EDGE_I2C_FUNC_SMBUS_WRITE_I2C_BLOCK = I2C_FUNC_SMBUS_WRITE_I2C_BLOCK;
const unsigned long EDGE_I2C_FUNC_SMBUS_READ_BYTE = I2C_FUNC_SMBUS_READ_BYTE;
const unsigned long EDGE_I2C_FUNC_SMBUS_WRITE_BYTE = I2C_FUNC_SMBUS_WRITE_BYTE;
const unsigned long EDGE_I2C_FUNC_SMBUS_READ_BYTE_DATA = I2C_FUNC_SMBUS_READ_BYTE_DATA;
const unsigned long EDGE_I2C_FUNC_SMBUS_WRITE_BYTE_DATA = I2C_FUNC_SMBUS_WRITE_BYTE_DATA;
const unsigned long EDGE_I2C_FUNC_SMBUS_QUICK = I2C_FUNC_SMBUS_QUICK;

static int retry_ioctl(int fd, unsigned long req, void *arg) {
    for (;;) {
        int r = ioctl(fd, req, arg);
        if (r >= 0) return r;
        if (errno != EINTR) return -errno;
    }
}

int edge_i2c_set_slave(int fd, uint16_t address) {
    for (;;) {
        int r = ioctl(fd, I2C_SLAVE, (unsigned long)address);
        if (r >= 0) return 0;
        if (errno != EINTR) return -errno;
    }
}

int edge_i2c_funcs(int fd, unsigned long *funcs) {
    int r = retry_ioctl(fd, I2C_FUNCS, funcs);
    return r < 0 ? r : 0;
}

int edge_i2c_rdwr(int fd, uint16_t address, const uint8_t *wbuf, uint16_t wlen,
                  uint8_t *rbuf, uint16_t rlen) {
    struct i2c_msg msgs[2];
    int n = 0;
    if (wlen > 0) {
        msgs[n].addr = address; msgs[n].flags = 0; msgs[n].len = wlen;
        msgs[n].buf = (uint8_t *)wbuf; n++;
    }
    if (rlen > 0) {
        msgs[n].addr = address; msgs[n].flags = I2C_M_RD; msgs[n].len = rlen;
        msgs[n].buf = rbuf; n++;
    }
    if (n == 0) return 0;
    struct i2c_rdwr_ioctl_data data = { msgs, (uint32_t)n };
    int r = retry_ioctl(fd, I2C_RDWR, &data);
    return r < 0 ? r : 0;
}

int edge_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -errno;
    *pid = cred.pid; *uid = cred.uid; *gid = cred.gid;
    return 0;
}

int edge_sleep_until_monotonic_ns(uint64_t deadline_ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
    for (;;) {
        int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (r == 0) return 0;
        if (r != EINTR) return -r;
    }
}

uint64_t edge_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int edge_set_timer_slack_ns(unsigned long ns) {
    return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0 ? 0 : -errno;
}

#if defined(__GLIBC__)
#include <malloc.h>
int edge_release_free_memory(void) { return malloc_trim(0); }
#else
int edge_release_free_memory(void) { return 0; }
#endif

int edge_terminal_columns(int fd) {
    struct winsize ws;
    int r = retry_ioctl(fd, TIOCGWINSZ, &ws);
    if (r < 0) return r;
    return ws.ws_col;
}
