// SPDX-License-Identifier: Apache-2.0
#ifndef EDGE_TEST_SHIMS_H
#define EDGE_TEST_SHIMS_H

/// For tests: from now on the calling thread, and every thread it creates
/// afterwards, gets ENOSYS from futex_waitv(2), as on a kernel before Linux
/// 5.16 (or under a seccomp policy that does not know the call). A seccomp
/// filter (seccomp(2), SECCOMP_SET_MODE_FILTER, without TSYNC: other threads
/// are not affected); sets no_new_privs on the thread, as the filter needs.
/// Returns 0, or -errno.
int edge_test_deny_futex_waitv(void);

/// What futex_waitv(2) says on the calling thread to an empty wait list:
/// its errno (EINVAL from a kernel that has the call, ENOSYS from one that
/// does not or under the filter above).
int edge_test_futex_waitv_errno(void);

#endif
