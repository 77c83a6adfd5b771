// The transaction log: every bus transfer and probe with its time, in a
// line-oriented text format (docs/recordings.md). Types shared by the
// writer, the parser, RecordingBus and ReplayBus.

/// A parsed transaction log: the header (bus, start time, metadata) and the
/// records in the order they happened.
///
/// Format (v1), one item a line, fields separated by one space:
///
/// ```
/// # edge-agent transaction log v1
/// @bus /dev/i2c-1
/// @start-ns 5000000000
/// @start-utc 2026-11-29T16:32:38Z
/// @board boards/reference.json5
/// # a comment
/// 5000120000 0x68 w 75 r 1 68
/// 5000250000 0x68 w 6b80 r 0
/// 5100400000 0x68 w 3b r 14 0044ff9c40280b600000000000000000
/// 5100900000 0x76 w d0 r 1 ! noDevice 121 0xd0 read 1 byte after writing 1
/// 5101000000 0x0d probe yes
/// 5110000000 gpio mpu-int edge 5109990000
/// ```
///
/// See ``TransactionLogWriter`` for writing and ``TransactionLog/parse(_:file:)``
/// for reading.
public struct TransactionLog: Equatable, Sendable {
    /// The first line of every v1 log.
    public static let magic = "# edge-agent transaction log v1"
    /// The prefix the version number follows (`# edge-agent transaction log v`).
    public static let magicPrefix = "# edge-agent transaction log v"
    /// The format version this code writes and reads.
    public static let version = 1

    public var header: TransactionLogHeader
    public var records: [TransactionRecord]
    /// Where it was read from (a path, or a name given to ``parse(_:file:)``).
    public var file: String

    public init(header: TransactionLogHeader, records: [TransactionRecord], file: String = "(memory)") {
        self.header = header; self.records = records; self.file = file
    }

    /// Time of the last record, or the start time when there is none.
    public var endNanoseconds: UInt64 { records.last?.timeNanoseconds ?? header.startNanoseconds }
}

/// The header of a transaction log: `@key value` lines before the first
/// record. `bus` and `start-ns` are required; `start-utc` is optional; any
/// other key is free-form metadata kept in order (the board profile and the
/// configuration used, so a replay can rebuild the same drivers).
public struct TransactionLogHeader: Equatable, Sendable {
    /// Metadata keys with a meaning in this project. Keys are
    /// `[A-Za-z0-9._-]+`; values are one line of text (the writer escapes
    /// `\`, newline and carriage return as `\\`, `\n`, `\r`).
    public enum Key {
        /// Name of the recorded bus (`/dev/i2c-1`, `simulated`). Required.
        public static let bus = "bus"
        /// Monotonic ns when recording began. Required.
        public static let startNanoseconds = "start-ns"
        /// Wall-clock start, ISO 8601 UTC (`2026-11-29T16:32:38Z`), for people.
        public static let startUTC = "start-utc"
        /// Path of the board profile the recording ran with, as given.
        public static let board = "board"
        /// The resolved board profile, as one-line JSON.
        public static let boardJSON = "board-json"
        /// Path of the agent configuration, as given.
        public static let config = "config"
        /// The resolved configuration (or its sensor settings), one-line JSON.
        public static let configJSON = "config-json"
        /// What produced the log, e.g. `edge-agent record`.
        public static let tool = "tool"
    }

    /// One `@key value` line.
    public struct Entry: Equatable, Sendable {
        public var key: String
        public var value: String
        /// 1-based line in the file (0 when not read from a file).
        public var line: Int
        public init(key: String, value: String, line: Int = 0) {
            self.key = key; self.value = value; self.line = line
        }
    }

    /// Name of the recorded bus (a ``ReplayBus`` takes it by default, so
    /// replayed errors name the same bus).
    public var bus: String
    /// Monotonic ns when recording began; a ``ReplayClock`` starts here.
    public var startNanoseconds: UInt64
    /// Wall-clock start, ISO 8601 UTC, or nil.
    public var startUTC: String?
    /// Every other `@key value`, in file order (keys may repeat).
    public var metadata: [Entry]

    public init(bus: String, startNanoseconds: UInt64, startUTC: String? = nil, metadata: [Entry] = []) {
        self.bus = bus; self.startNanoseconds = startNanoseconds; self.startUTC = startUTC
        self.metadata = metadata
    }

    /// The first value for `key` (also answers `bus`, `start-ns`, `start-utc`).
    public subscript(key: String) -> String? {
        switch key {
        case Key.bus: return bus
        case Key.startNanoseconds: return String(startNanoseconds)
        case Key.startUTC: return startUTC
        default: return metadata.first { $0.key == key }?.value
        }
    }

    /// Every value for `key`, in file order.
    public func values(forKey key: String) -> [String] {
        metadata.filter { $0.key == key }.map(\.value)
    }

    /// Adds a metadata entry. `key`: `[A-Za-z0-9._-]+`, not `bus`,
    /// `start-ns` or `start-utc` (those are the fields above); a bad key is
    /// a programmer error.
    public mutating func append(_ key: String, _ value: String) {
        precondition(Self.isValidKey(key), "invalid transaction log metadata key '\(key)'")
        precondition(key != Key.bus && key != Key.startNanoseconds && key != Key.startUTC,
                     "'\(key)' is a field of the header, not metadata")
        metadata.append(Entry(key: key, value: value))
    }

    /// Whether `key` is a valid metadata key: `[A-Za-z0-9._-]+`.
    public static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == 0x2E || c == 0x5F || c == 0x2D
        }
    }
}

/// One recorded bus operation: what the driver asked for and what the bus
/// answered, with the monotonic time the operation completed.
public struct TransactionRecord: Equatable, Sendable, CustomStringConvertible {
    /// What was asked of the bus.
    public enum Request: Equatable, Sendable {
        /// ``I2CBus/transfer(address:write:read:)``: bytes written, then
        /// `readCount` bytes read.
        case transfer(write: [UInt8], readCount: Int)
        /// ``I2CBus/probe(address:)``.
        case probe
        /// ``DataReadyLine/waitForEdge(timeoutNanoseconds:)`` on the line
        /// named `line` (the record's address is 0).
        case waitForEdge(line: String)
    }

    /// What the bus answered.
    public enum Outcome: Equatable, Sendable {
        /// A transfer completed; the bytes read (`readCount` of them).
        case read([UInt8])
        /// A probe completed: whether the address acknowledged.
        case present(Bool)
        /// The operation threw this error (kind, errno, register, operation
        /// as recorded; bus and address are filled in from the log).
        indirect case failed(I2CError)
        /// A data-ready wait returned: the edge's timestamp, or nil on timeout.
        case edge(UInt64?)
        /// A data-ready wait threw this error (kind, errno, operation as
        /// recorded; the chip is the line's name).
        indirect case gpioFailed(GPIOError)
    }

    /// Monotonic ns when the operation completed (or failed).
    public var timeNanoseconds: UInt64
    /// 7-bit address.
    public var address: UInt8
    public var request: Request
    public var outcome: Outcome
    /// 1-based line in the log (0 when not read from a file).
    public var line: Int

    public init(timeNanoseconds: UInt64, address: UInt8, request: Request, outcome: Outcome, line: Int = 0) {
        self.timeNanoseconds = timeNanoseconds; self.address = address
        self.request = request; self.outcome = outcome; self.line = line
    }

    /// A transfer that returned `read`.
    public static func transfer(at t: UInt64, _ address: UInt8, write: [UInt8], read: [UInt8]) -> TransactionRecord {
        TransactionRecord(timeNanoseconds: t, address: address, request: .transfer(write: write, readCount: read.count),
                          outcome: .read(read))
    }

    /// A transfer that failed with `error`.
    public static func failedTransfer(at t: UInt64, _ address: UInt8, write: [UInt8], readCount: Int,
                                      error: I2CError) -> TransactionRecord {
        TransactionRecord(timeNanoseconds: t, address: address, request: .transfer(write: write, readCount: readCount),
                          outcome: .failed(error))
    }

    /// A data-ready wait on `line` that returned `edge` (nil: timed out).
    public static func edge(at t: UInt64, line: String, edge: UInt64?) -> TransactionRecord {
        TransactionRecord(timeNanoseconds: t, address: 0, request: .waitForEdge(line: line), outcome: .edge(edge))
    }

    /// A probe that answered `present`.
    public static func probe(at t: UInt64, _ address: UInt8, present: Bool) -> TransactionRecord {
        TransactionRecord(timeNanoseconds: t, address: address, request: .probe, outcome: .present(present))
    }

    /// `0x68 write [3b] read 14` / `0x0d probe`: the request, for messages.
    public var requestDescription: String {
        Self.describe(address: address, request: request)
    }

    static func describe(address: UInt8, request: Request) -> String {
        switch request {
        case .transfer(let w, let n):
            return "\(hex(address)) write [\(w.map { hexByte($0) }.joined(separator: " "))] read \(n)"
        case .probe:
            return "\(hex(address)) probe"
        case .waitForEdge(let line):
            return "gpio \(line) wait for edge"
        }
    }

    public var description: String {
        var s = requestDescription
        switch outcome {
        case .read(let r): if !r.isEmpty { s += " -> [" + r.map { hexByte($0) }.joined(separator: " ") + "]" }
        case .present(let p): s += p ? " -> yes" : " -> no"
        case .failed(let e): s += " -> \(e.kind.rawValue) (errno \(e.errno))"
        case .edge(let t): s += t.map { " -> edge at \($0)" } ?? " -> timeout"
        case .gpioFailed(let e): s += " -> \(e.kind.rawValue) (errno \(e.errno))"
        }
        return s
    }
}

/// `3b`: two lowercase hex digits.
@usableFromInline
func hexByte(_ v: UInt8) -> String {
    let d: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
    return String(d[Int(v >> 4)]) + String(d[Int(v & 0xF)])
}

extension GPIOError.Kind {
    /// Every kind, for parsing the log's error field.
    static let all: [GPIOError.Kind] = [.chipNotFound, .lineNotFound, .lineBusy, .permissionDenied, .io]
}

extension I2CError.Kind {
    /// Every kind, for parsing the log's error field.
    static let all: [I2CError.Kind] = [.noDevice, .addressInUse, .permissionDenied, .busNotFound, .busTimeout,
                                       .unsupported, .io]
}
