// Issue 16, item 4: every JSON5 reader read without a bound
// (`calibration_file: "/dev/zero"` grew to 8.5 GB in 20 s; a FIFO as
// `--config` blocked for ever). Each reader now refuses what is not a regular
// file, or is larger than ConfigLoader.maximumFileBytes, with a typed error
// naming the file and what is wrong.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import EdgeBus
@testable import EdgeConfig
import EdgeLocations
import TestThreads

/// A private directory under /tmp, removed by the caller.
func boundedTestDirectory(_ tag: String) throws -> String {
    var template = Array("/tmp/edge-bounded-\(tag)-XXXXXX".utf8CString)
    guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw BoundedTestError(description: "mkdtemp: \(String(cString: strerror(errno)))")
    }
    return String(cString: p)
}

struct BoundedTestError: Error, CustomStringConvertible { var description: String }

/// A FIFO with no writer in `dir`.
func makeFIFO(in dir: String) throws -> String {
    let path = dir + "/fifo.json5"
    guard mkfifo(path, 0o600) == 0 else { throw BoundedTestError(description: "mkfifo: \(String(cString: strerror(errno)))") }
    return path
}

/// Runs `work` on its own thread and waits at most `seconds` for it. A read
/// that blocks on `fifo` (the bug) fails the test instead of hanging it: at
/// the deadline the FIFO is opened for writing and closed, which ends the
/// blocked open or read, and the test records the failure.
func finishes<T: Sendable>(within seconds: Double, releasing fifo: String? = nil,
                           _ work: @escaping @Sendable () -> T,
                           sourceLocation: SourceLocation = #_sourceLocation) -> T? {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    let thread = Thread {
        box.set(work())
        done.signal()
    }
    thread.start()
    if done.wait(timeout: .now() + seconds) == .success { return box.get() }
    Issue.record("the read did not return within \(seconds) s: it blocks", sourceLocation: sourceLocation)
    if let fifo {
        // Each blocked open or read of the FIFO ends when a writer comes and
        // goes; a reader that reads it again blocks again: release until done.
        for _ in 0..<100 {
            let w = open(fifo, O_WRONLY | O_NONBLOCK)
            if w >= 0 { close(w) }
            if done.wait(timeout: .now() + 0.1) == .success { break }
        }
    }
    return nil
}

final class ResultBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T?
    func set(_ v: T) { lock.lock(); value = v; lock.unlock() }
    func get() -> T? { lock.lock(); defer { lock.unlock() }; return value }
}

@Suite(.ownThread) struct BoundedFileTests {
    /// Loads `path` as each kind of file EdgeConfig reads; the error of each.
    static func errors(_ path: String) -> [(String, ConfigError?)] {
        func attempt(_ f: () throws -> Void) -> ConfigError? {
            do { try f(); return nil } catch { return error as? ConfigError }
        }
        return [
            ("configuration", attempt { () throws -> Void in _ = try ConfigLoader.load(AgentConfig.self, from: path) }),
            ("board profile", attempt { () throws -> Void in _ = try ConfigLoader.load(BoardProfile.self, from: path) }),
            ("calibration", attempt { () throws -> Void in _ = try CalibrationFile.loadIfPresent(from: path) }),
        ]
    }

    @Test func aFIFOIsRefusedAtOnceNotWaitedOn() throws {
        let dir = try boundedTestDirectory("fifo")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fifo = try makeFIFO(in: dir)
        let results = try #require(finishes(within: 30, releasing: fifo) { Self.errors(fifo).map { ($0.0, $0.1) } })
        for (what, error) in results {
            let e = try #require(error, "\(what): a FIFO was read as a \(what)")
            #expect(e.kind == .notARegularFile, "\(what): \(e)")
            #expect(e.file == fifo)
            #expect(e.description.hasPrefix("\(fifo): not a regular file (a FIFO)"), "\(what): \(e)")
        }
    }

    @Test func devZeroIsRefusedWithoutReadingIt() throws {
        for (what, error) in Self.errors("/dev/zero") {
            let e = try #require(error, "\(what)")
            #expect(e.kind == .notARegularFile, "\(what): \(e)")
            #expect(e.description.hasPrefix("/dev/zero: not a regular file (a character device)"), "\(what): \(e)")
        }
    }

    @Test func aDirectoryIsRefusedAsSuch() throws {
        let dir = try boundedTestDirectory("dir")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (what, error) in Self.errors(dir) {
            let e = try #require(error, "\(what)")
            #expect(e.kind == .notARegularFile, "\(what): \(e)")
            #expect(e.description.contains("not a regular file (a directory)"), "\(what): \(e)")
        }
    }

    /// 1 MiB of valid JSON5 loads; one byte more is refused before parsing.
    @Test func aFileOverOneMebibyteIsRefusedAndOneOfExactlyOneIsRead() throws {
        #expect(ConfigLoader.maximumFileBytes == 1_048_576)
        let dir = try boundedTestDirectory("size")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = "{ board: \"simulated\" }\n"
        let fits = dir + "/fits.json5", over = dir + "/over.json5"
        let pad = ConfigLoader.maximumFileBytes - body.utf8.count
        try (body + String(repeating: " ", count: pad)).write(toFile: fits, atomically: true, encoding: .utf8)
        try (body + String(repeating: " ", count: pad + 1)).write(toFile: over, atomically: true, encoding: .utf8)
        #expect(try ConfigLoader.load(AgentConfig.self, from: fits).board == "simulated")
        for (what, error) in Self.errors(over) {
            let e = try #require(error, "\(what)")
            #expect(e.kind == .tooLarge, "\(what): \(e)")
            #expect(e.description.hasPrefix("\(over): larger than 1 MiB (1048577 bytes)"), "\(what): \(e)")
        }
    }

    /// The reader itself: the bound holds when the size lies (a /proc file
    /// reports 0 bytes), and errno is kept.
    @Test func theReaderBoundsWhatItReadsNotWhatFstatSays() throws {
        let status = try readRegularFile("/proc/self/status", limit: 1 << 20)
        #expect(String(decoding: status, as: UTF8.self).contains("Pid:"))
        #expect(throws: BoundedFileError(path: "/proc/self/status", kind: .tooLarge(size: 9, limit: 8))) {
            try readRegularFile("/proc/self/status", limit: 8)
        }
        #expect(throws: BoundedFileError(path: "/nonexistent/x", kind: .failed(operation: "open", errno: ENOENT))) {
            try readRegularFile("/nonexistent/x", limit: 8)
        }
    }
}
