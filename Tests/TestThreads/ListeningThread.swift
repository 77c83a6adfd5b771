// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeValues

/// A listening socket served on a thread of its own, which alone closes it.
///
/// Why: a test server that closed its listener from the test while its
/// thread was still to call `accept` (a thread starts when the scheduler
/// says, later under load) left that thread with a descriptor *number*
/// that the next `socket()` or `accept()` anywhere in the test process
/// could be given. The late thread then accepted another test's client on
/// that other test's listener, sent it its own line and closed it: CI saw
/// an agent-protocol test's client read "the connection closed before any
/// line" (the stale-socket test's server sends an empty line).
///
/// Here the descriptor stays open until the serving thread has returned
/// from `serve`, and ``stop()`` only shuts it down, under a lock and only
/// while it is open: `accept` then fails at once (EINVAL, also when the
/// thread calls it only later) and a `connect` is refused (ECONNREFUSED),
/// so the path behaves as closed the moment ``stop()`` returns.
public final class ListeningThread: @unchecked Sendable {
    /// The listening descriptor, for `serve` to accept on.
    public let listener: Int32
    /// Whether the listener was closed (by the serving thread) and whether
    /// ``stop()`` was called.
    /// (`Locked`, a pthread mutex, which ThreadSanitizer sees: with the
    /// toolchain's `Synchronization.Mutex`, a `stop()` that met the thread's
    /// close was reported as a race.)
    private let flags = Locked((closed: false, stopped: false))

    /// Starts a thread that runs `serve(listener)`, then closes `listener`.
    /// `serve` must return once `accept` fails (as it does after ``stop()``).
    public init(listener: Int32, serve: @escaping @Sendable (Int32) -> Void) {
        self.listener = listener
        let job = Job { [self] in
            serve(listener)
            flags.withLock { f in
                f.closed = true
                close(listener)
            }
        }
        var thread = pthread_t()
        let r = pthread_create(&thread, nil, { raw in
            Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, Unmanaged.passRetained(job).toOpaque())
        precondition(r == 0, "ListeningThread: pthread_create failed (\(r))")
        pthread_detach(thread)
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { flags.withLock { $0.stopped } }

    /// Stops listening: connects are refused and the thread's `accept`
    /// fails from now on. Does not wait for the thread; safe to call twice.
    public func stop() {
        flags.withLock { f in
            f.stopped = true
            if !f.closed { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    private final class Job {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
}
