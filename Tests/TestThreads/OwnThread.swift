// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeValues
import Testing

/// A suite trait: each test of the suite runs on a thread of its own.
///
/// Why: Swift Testing runs every test on Swift concurrency's cooperative
/// threads, and there are only as many of those as the machine has
/// processors. A synchronous test that waits on a real agent or broker for
/// ten seconds (polling, a process wait, a socket read with a timeout) holds
/// one of them for ten seconds. On CI's two-core machine two such tests
/// stalled every other test of the run however idle the processors were:
/// stack samples of a whole `swift test` found both cooperative threads in
/// such waits, and the run (854 s) used a third of one core; with this
/// trait it took 330 s for the same CPU time. Under this trait the test's body runs on a dedicated
/// thread through a task executor preference (SE-0417), so the cooperative
/// threads stay free; the body stays in the test's task, so `#expect`,
/// `Issue.record` and task-local state work as before.
///
///     @Suite(.ownThread) struct DaemonTests { ... }
public struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    public init() {}

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        // The suite's own scope (no test case) holds no thread.
        guard testCase != nil else { return try await function() }
        let executor = OwnThreadExecutor()
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) {
            // The preference takes effect when the task is next enqueued: a
            // yield moves it onto the thread before the body starts.
            await Task.yield()
            try await function()
        }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test runs on a thread of its own (``OwnThreadTrait``): for tests
    /// that block while they wait on real processes.
    public static var ownThread: Self { OwnThreadTrait() }
}

/// A task executor with one thread of its own, which runs the jobs enqueued
/// on it in order and ends at ``finish()``.
public final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// The project's mutex and condition (on the heap: a pthread mutex or
    /// condition must not move, and Swift does not promise a stored
    /// property's address across `&` uses).
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var jobs: [UnownedJob] = []
    private var finished = false
    private var exited = false
    private var thread = pthread_t()

    public init() {
        let me = Unmanaged.passRetained(self).toOpaque()
        let r = pthread_create(&thread, nil, { raw in
            Unmanaged<OwnThreadExecutor>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, me)
        precondition(r == 0, "OwnThreadExecutor: pthread_create failed (\(r))")
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        lock.lock()
        if exited {
            // A task that kept the preference past the test (an unstructured
            // `Task` the test started): run it where tasks run by default.
            lock.unlock()
            globalConcurrentExecutor.enqueue(unowned)
            return
        }
        jobs.append(unowned)
        lock.broadcast()   // one waiter: the executor's thread
        lock.unlock()
    }

    /// The thread ends once it has run every job enqueued so far. Joined,
    /// unless the caller is that thread (the task can still be on it when
    /// the preference's scope ends): then it ends after this job.
    public func finish() {
        lock.withLock {
            finished = true
            lock.broadcast()
        }
        if pthread_equal(thread, pthread_self()) == 0 { pthread_join(thread, nil) } else { pthread_detach(thread) }
    }

    /// The name of the executors' threads (in `ps -L`, `top -H`, a debugger).
    public static let threadName = "own-test-thread"

    private func run() {
        // A new thread inherits its creator's name (a cooperative thread's);
        // the kernel's per-thread name file renames it.
        if let f = fopen("/proc/thread-self/comm", "w") { fputs(Self.threadName, f); fclose(f) }
        while true {
            lock.lock()
            while jobs.isEmpty && !finished { lock.wait(untilNs: .max) }
            if jobs.isEmpty { exited = true; lock.unlock(); return }
            let job = jobs.removeFirst()
            lock.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

