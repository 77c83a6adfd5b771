#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
import Testing
import TestThreads

/// The `.ownThread` trait (Tests/TestThreads): a blocking test body must not
/// hold a cooperative thread, and must stay in its test's task.
@Suite(.ownThread)
struct OwnThreadTests {
    /// More blocking bodies than there are cooperative threads (one per
    /// processor), each waiting until all have started: on the cooperative
    /// threads the last ones could never start and the wait would run out.
    @Test func blockingBodiesDoNotHoldTheCooperativeThreads() async throws {
        let processors = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let count = 4 * processors + 1
        let barrier = Barrier(count)
        let arrived = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    let all = Flag()
                    try await OwnThreadTrait().provideScope(for: Test.current!, testCase: Test.Case.current) {
                        all.value = barrier.arriveAndWait(seconds: 20)
                    }
                    return all.value
                }
            }
            var n = 0
            for try await ok in group where ok { n += 1 }
            return n
        }
        #expect(arrived == count)
    }

    /// The body runs in the test's task: Swift Testing's task-local state
    /// (which test is running, where an issue is recorded) is there.
    @Test func theBodyKeepsTheTestsTaskLocalState() {
        #expect(Test.current?.name.hasPrefix("theBodyKeepsTheTestsTaskLocalState") == true)
        #expect(Self.threadName() == OwnThreadExecutor.threadName)
    }

    /// This thread's name (the kernel's per-thread name file).
    static func threadName() -> String {
        guard let f = fopen("/proc/thread-self/comm", "r") else { return "" }
        defer { fclose(f) }
        var name = [CChar](repeating: 0, count: 64)
        guard fgets(&name, Int32(name.count), f) != nil else { return "" }
        return String(decoding: name.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Set on one thread, read after it is joined.
final class Flag: @unchecked Sendable { var value = false }

/// Waits until `count` threads have arrived (bounded).
final class Barrier: @unchecked Sendable {
    private let lock = ConditionLock()
    private var arrived = 0   // guarded by `lock`
    private let count: Int
    init(_ count: Int) { self.count = count }

    func arriveAndWait(seconds: Int) -> Bool {
        let deadline = monotonicNowNs() + UInt64(seconds) * 1_000_000_000
        return lock.withLock {
            arrived += 1
            lock.broadcast()
            while arrived < count {
                if !lock.wait(untilNs: deadline) { return arrived >= count }
            }
            return true
        }
    }
}

