// `dive-logger import`: protocol lines → the recorder, bounded and checked.
//
// Every line is at most ``DiveImporter/maximumLineBytes`` (a submersion
// line is about 300 bytes; a longer line is skipped without being held in
// memory), a file at most ``DiveImporter/maximumFileBytes``. A submersion
// sample out of time order or outside what the sensors can report is
// skipped with its line number and the reason (``DiveSampleCheck``); the
// first few of each kind are named, the rest counted, so a reversed file
// does not flood the terminal.
#if canImport(Glibc)
import Glibc
#endif
import EdgeProtocol

public final class DiveImporter {
    /// Longest line read, bytes (with its newline).
    public static let maximumLineBytes = 65_536
    /// Largest input read, bytes (1 GiB: a day of submersion lines at 3 Hz
    /// is about 80 MB; every stream of a 23-minute simulated dive at full
    /// rate about 520 MB).
    public static let maximumFileBytes: Int64 = 1 << 30
    /// How many skipped lines of each kind are named one by one.
    public static let namedPerReason = 3

    public let recorder: DiveRecorder
    var check = DiveSampleCheck.State()
    let limits: DiveSampleLimits
    /// Lines seen (the number of the last one).
    public private(set) var lines = 0
    public private(set) var samples = 0
    public private(set) var skippedSamples = 0
    public private(set) var decoded = 0
    public private(set) var undecodable = 0
    public private(set) var tooLong = 0
    public private(set) var refused = false
    var firstUndecodable: (line: Int, why: String)?
    var firstTooLong: Int?
    var namedSkips: [String: Int] = [:]
    /// What to tell the person running it, in order.
    public var messages: [String] = []

    public init(recorder: DiveRecorder, limits: DiveSampleLimits = DiveSampleLimits()) {
        self.recorder = recorder
        self.limits = limits
    }

    /// A line longer than ``maximumLineBytes`` (its bytes are not kept).
    public func longLine() {
        lines += 1
        tooLong += 1
        if firstTooLong == nil { firstTooLong = lines }
    }

    /// One line (without regard to its newline).
    public func line(_ bytes: UnsafeRawBufferPointer) {
        lines += 1
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return }
        let m: ServerMessage
        do { m = try ServerMessage.decode(line: bytes) } catch {
            undecodable += 1
            if firstUndecodable == nil { firstUndecodable = (lines, "\(error)") }
            return
        }
        decoded += 1
        switch m {
        case .sample(.submersion(let x)):
            samples += 1
            if let why = DiveSampleCheck.check(&check, x, limits) {
                skippedSamples += 1
                let kind = String(why.prefix { $0 != " " }) + (why.contains("before") ? " order" : why.contains("repeats") ? " repeat" : "")
                let n = namedSkips[kind, default: 0]
                namedSkips[kind] = n + 1
                if n < Self.namedPerReason {
                    messages.append("line \(lines): skipped: \(why)")
                } else if n == Self.namedPerReason {
                    messages.append("line \(lines): skipped: \(why); further lines skipped for this reason are only counted")
                }
                return
            }
            recorder.feed(x)
            take()
        case let .error(code, name, message, _, _) where code == .notEntitled || name == "notEntitled":
            refused = true
            messages.append("line \(lines): the agent refused the submersion stream (notEntitled): \(message)")
        default:
            return
        }
    }

    /// The recorder's news, in order.
    func take() {
        if !recorder.log.isEmpty { messages += recorder.log; recorder.log.removeAll() }
    }

    /// The end of the input: the summary lines (the recorder's end is
    /// ``DiveRecorder/finishInput()``, which the caller runs).
    public func summary() -> [String] {
        var out: [String] = []
        if skippedSamples > 0 {
            let kinds = namedSkips.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            out.append("\(skippedSamples) of \(samples) submersion samples were skipped (\(kinds)); nothing of them is in the log")
        }
        if let first = firstTooLong {
            out.append("\(tooLong) lines are longer than \(Self.maximumLineBytes) bytes (no protocol line a dive needs is) and were skipped unread; the first is line \(first)")
        }
        if let (line, why) = firstUndecodable {
            out.append("\(undecodable) of \(lines) lines are not protocol lines and were skipped; the first is line \(line) (\(why))")
        }
        return out
    }
}

/// Reads lines of at most `maximumLineBytes` from a file descriptor, with
/// a fixed buffer: a longer line is reported and skipped, never held.
struct BoundedLineReader {
    let fd: Int32
    let maximumLineBytes: Int
    var buffer: [UInt8]
    var start = 0, end = 0
    var eof = false
    /// Bytes read so far.
    var total: Int64 = 0

    init(fd: Int32, maximumLineBytes: Int) {
        self.fd = fd
        self.maximumLineBytes = maximumLineBytes
        buffer = [UInt8](repeating: 0, count: maximumLineBytes)
    }

    enum Item { case line(ArraySlice<UInt8>), tooLong, end }

    /// Fills the buffer after what it holds; false at end of input.
    mutating func fill() throws(DiveLogError) -> Bool {
        if start > 0 {
            buffer.withUnsafeMutableBytes { b in
                _ = memmove(b.baseAddress!, b.baseAddress! + start, end - start)
            }
            end -= start; start = 0
        }
        guard end < buffer.count else { return true }
        while true {
            let n = buffer.withUnsafeMutableBytes { b in Glibc.read(fd, b.baseAddress! + end, b.count - end) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw .cannotOpen(path: "the input", reason: "read: \(String(cString: strerror(errno)))") }
            if n == 0 { eof = true; return false }
            end += n; total += Int64(n)
            return true
        }
    }

    mutating func next() throws(DiveLogError) -> Item {
        while true {
            if let i = buffer[start..<end].firstIndex(of: 0x0A) {
                let line = buffer[start..<i]
                start = i + 1
                return .line(line)
            }
            if eof {
                if start < end { let line = buffer[start..<end]; start = end; return .line(line) }
                return .end
            }
            if end - start >= buffer.count {
                // A full buffer with no newline: skip to the next one.
                start = 0; end = 0
                while true {
                    guard try fill() else { return .tooLong }
                    if let i = buffer[0..<end].firstIndex(of: 0x0A) { start = i + 1; return .tooLong }
                    start = 0; end = 0
                }
            }
            _ = try fill()
        }
    }
}
