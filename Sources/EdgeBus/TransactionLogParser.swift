#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeLocations

/// A transaction log that cannot be read: which file, which line, what was
/// expected and what was found.
public struct TransactionLogError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// The file could not be opened or read.
        case cannotRead(errno: Int32)
        /// The first line is not `# edge-agent transaction log vN`.
        case notATransactionLog
        /// A log of a version this code does not read.
        case unsupportedVersion(Int)
        /// `@bus` or `@start-ns` is missing from the header.
        case missingMetadata(key: String)
        /// A `@key value` line that cannot be read (bad key, bad escape, bad value).
        case badMetadata
        /// A `@key value` line after the first record.
        case metadataAfterRecords
        /// A record line that does not have the documented shape.
        case badRecord
        /// The time field is not a whole number of nanoseconds.
        case badTime
        /// A record earlier than the one before it (or than `@start-ns`).
        case timeWentBackwards(previous: UInt64)
        /// The address is not `0xNN` below 0x80.
        case badAddress
        /// A byte field is not pairs of hex digits.
        case badHex
        /// The read count is not a whole number.
        case badReadCount
        /// The bytes read are not as many as the read count says.
        case readLengthMismatch(expected: Int, found: Int)
        /// The error kind is not one of `I2CError.Kind`.
        case unknownErrorKind(String)
        /// The errno or register of an error is malformed.
        case badError
        /// The file ends part-way through a line (no line end after it) that
        /// cannot be read: what a power loss or a full disk leaves. In the
        /// header this is always an error; after records,
        /// ``TransactionLog/loadKeepingCompleteLines(path:)`` replays what
        /// came before.
        case cutOff
    }

    public var file: String
    /// 1-based line (0: the file as a whole).
    public var line: Int
    public var kind: Kind
    /// What was wrong, in words, quoting the offending text.
    public var message: String

    public init(file: String, line: Int, kind: Kind, message: String) {
        self.file = file; self.line = line; self.kind = kind; self.message = message
    }

    public var description: String {
        (line > 0 ? "\(file):\(line): " : "\(file): ") + message
    }
}

extension TransactionLog {
    /// Reads and parses the log at `path`. Any damage is an error, a line cut
    /// off at the end of the file included (kind ``TransactionLogError/Kind/cutOff``).
    public static func load(path: String) throws(TransactionLogError) -> TransactionLog {
        try parse(try readLog(path), file: path)
    }

    /// Reads the log at `path` the way a replay wants a recording that may
    /// have been cut short by a power loss or a full disk: when the file ends
    /// part-way through a record line (the writer ends every line with
    /// `\n`), that line is left out and the records before it are returned
    /// with a ``TransactionLogCut`` saying where the recording ends. A cut in
    /// the header (`@` lines, before the first record) is still an error:
    /// without the whole header the drivers cannot be rebuilt.
    public static func loadKeepingCompleteLines(path: String) throws(TransactionLogError) -> (log: TransactionLog, cut: TransactionLogCut?) {
        try parseKeepingCompleteLines(try readLog(path), file: path)
    }

    static func readLog(_ path: String) throws(TransactionLogError) -> [UInt8] {
        do {
            return try readWholeFile(path)
        } catch {
            throw TransactionLogError(file: path, line: 0, kind: .cannotRead(errno: error.errno), message: error.message)
        }
    }

    /// Parses a log held in a string. `file` names it in errors.
    public static func parse(_ text: String, file: String = "(memory)") throws(TransactionLogError) -> TransactionLog {
        try parse(Array(text.utf8), file: file)
    }

    /// Parses a log held in bytes (UTF-8). `file` names it in errors.
    public static func parse(_ bytes: [UInt8], file: String = "(memory)") throws(TransactionLogError) -> TransactionLog {
        try parse(bytes, file: file, keepingCompleteLines: false).log
    }

    /// ``loadKeepingCompleteLines(path:)`` for bytes in memory.
    public static func parseKeepingCompleteLines(_ bytes: [UInt8], file: String = "(memory)") throws(TransactionLogError) -> (log: TransactionLog, cut: TransactionLogCut?) {
        try parse(bytes, file: file, keepingCompleteLines: true)
    }

    static func parse(_ bytes: [UInt8], file: String, keepingCompleteLines: Bool) throws(TransactionLogError) -> (log: TransactionLog, cut: TransactionLogCut?) {
        var parser = TransactionLogParser(file: file)
        var cut: TransactionLogCut?
        try bytes.withUnsafeBufferPointer { (all) throws(TransactionLogError) in
            var start = 0
            var lineNumber = 0
            while start < all.count {
                var end = start
                while end < all.count && all[end] != 0x0A { end += 1 }
                var stop = end
                if stop > start && all[stop - 1] == 0x0D { stop -= 1 }
                lineNumber += 1
                let line = UnsafeBufferPointer(rebasing: all[start..<stop])
                if end == all.count {
                    // No line end: the file stops part-way through this line.
                    if let c = try parser.lastLine(line, number: lineNumber, keepingCompleteLines: keepingCompleteLines) { cut = c }
                } else {
                    try parser.line(line, number: lineNumber)
                }
                start = end + 1
            }
        }
        return (try parser.finish(), cut)
    }
}

/// Where a recording that was cut short ends: the line the file stops in
/// the middle of, and the last complete record before it.
public struct TransactionLogCut: Equatable, Sendable, CustomStringConvertible {
    public var file: String
    /// The line that is cut off (1-based).
    public var line: Int
    /// What is left of it (at most 60 characters).
    public var fragment: String
    /// Complete records before it.
    public var records: Int
    /// Line of the last complete record (0: none).
    public var lastRecordLine: Int
    /// Monotonic ns of the last complete record (`@start-ns` when there is none).
    public var lastTimeNanoseconds: UInt64
    public var startNanoseconds: UInt64

    /// Seconds from `@start-ns` to the last complete record.
    public var secondsRecorded: Double { Double(lastTimeNanoseconds &- startNanoseconds) / 1e9 }

    public var description: String {
        let s = (secondsRecorded * 1000).rounded() / 1000
        return "\(file):\(line): the recording is cut off in the middle of this line ('\(fragment)'), as a power loss "
            + "or a full disk leaves it: the \(records) complete record\(records == 1 ? "" : "s") before it are used, "
            + "so the recording ends at \(s) s (monotonic \(lastTimeNanoseconds) ns"
            + (lastRecordLine > 0 ? ", line \(lastRecordLine))" : ")")
    }
}

/// Line-by-line state of a parse.
struct TransactionLogParser {
    let file: String
    var sawMagic = false
    var bus: String?
    var start: UInt64?
    var startUTC: String?
    var metadata: [TransactionLogHeader.Entry] = []
    var records: [TransactionRecord] = []
    var lastTime: UInt64 = 0

    init(file: String) { self.file = file }

    func fail(_ line: Int, _ kind: TransactionLogError.Kind, _ message: String) -> TransactionLogError {
        TransactionLogError(file: file, line: line, kind: kind, message: message)
    }

    static func text(_ b: UnsafeBufferPointer<UInt8>) -> String { String(decoding: b, as: UTF8.self) }
    static func text(_ b: Slice<UnsafeBufferPointer<UInt8>>) -> String { String(decoding: b, as: UTF8.self) }
    /// An error's free text: a stray carriage return reads as the space the
    /// writer puts in its place, and spaces before the text (a carriage return
    /// among them) are the separator, as they are when the text is written
    /// again, so a log parsed and written again is the same log.
    static func freeText(_ b: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        let text = b.drop { $0 == 0x20 || $0 == 0x0D }
        return String(decoding: text.map { $0 == 0x0D ? 0x20 : $0 }, as: UTF8.self)
    }

    mutating func line(_ l: UnsafeBufferPointer<UInt8>, number n: Int) throws(TransactionLogError) {
        if !sawMagic {
            let s = Self.text(l)
            guard s.hasPrefix(TransactionLog.magicPrefix) else {
                throw fail(n, .notATransactionLog,
                           "not a transaction log: the first line must be '\(TransactionLog.magic)', found '\(s.prefix(60))'")
            }
            let v = s.dropFirst(TransactionLog.magicPrefix.count)
            guard let version = Int(v) else {
                throw fail(n, .notATransactionLog, "cannot read the version in '\(s)'")
            }
            guard version == TransactionLog.version else {
                throw fail(n, .unsupportedVersion(version),
                           "transaction log version \(version) is not supported (this edge-agent reads v\(TransactionLog.version))")
            }
            sawMagic = true
            return
        }
        guard let first = l.first else { return }                    // blank line
        if first == 0x23 { return }                                   // # comment
        if first == 0x40 { try metadataLine(l, number: n); return }   // @key value
        try recordLine(l, number: n)
    }

    /// The last line of a file that does not end with a line end. In the
    /// header it is an error; after records, with `keepingCompleteLines`, it
    /// is left out (the writer ends every line, so it was cut); otherwise it
    /// is read like any line, and an error says it was cut off.
    mutating func lastLine(_ l: UnsafeBufferPointer<UInt8>, number n: Int,
                           keepingCompleteLines: Bool) throws(TransactionLogError) -> TransactionLogCut? {
        var content = l[...]
        while let last = content.last, last == 0x20 || last == 0x09 || last == 0x00 { content = content.dropLast() }
        let fragment = String(Self.text(l).unicodeScalars.filter { $0.value >= 0x20 }.prefix(60).map(Character.init))
        if content.isEmpty { return nil }                    // trailing blanks or the zeros a crash leaves
        if content.first == 0x23 && sawMagic { return nil }   // a comment: nothing lost
        let inHeader = !sawMagic || content.first == 0x40
        if inHeader {
            let what = !sawMagic ? "the first line" : "the header line '\(fragment)'"
            do {
                try line(l, number: n)
            } catch {
                throw fail(n, .cutOff, "the file ends in the middle of \(what): \(error.message). The header (the board profile and configuration) is incomplete, so nothing can be replayed; record again")
            }
            if content.first == 0x40 {
                // A metadata line may parse and still have lost its end (the embedded JSON).
                throw fail(n, .cutOff, "the file ends in the middle of \(what) (no line end): the header (the board profile and configuration) is incomplete, so nothing can be replayed; record again")
            }
            return nil
        }
        if keepingCompleteLines {
            return TransactionLogCut(file: file, line: n, fragment: fragment, records: records.count,
                                     lastRecordLine: records.last?.line ?? 0, lastTimeNanoseconds: lastTime,
                                     startNanoseconds: start ?? 0)
        }
        do {
            try line(l, number: n)
        } catch {
            throw fail(n, .cutOff, "the file ends in the middle of this line (no line end), as a power loss or a full disk leaves it: \(error.message)")
        }
        return nil
    }

    mutating func metadataLine(_ l: UnsafeBufferPointer<UInt8>, number n: Int) throws(TransactionLogError) {
        guard records.isEmpty else {
            throw fail(n, .metadataAfterRecords,
                       "metadata '\(Self.text(l))' after the first record: @key lines belong to the header")
        }
        let body = l[(l.startIndex + 1)...]
        let space = body.firstIndex(of: 0x20) ?? body.endIndex
        let key = Self.text(body[body.startIndex..<space])
        guard TransactionLogHeader.isValidKey(key) else {
            throw fail(n, .badMetadata, "bad metadata key '\(key)' (expected letters, digits, '.', '_' or '-')")
        }
        var value: [UInt8] = []
        var i = space < body.endIndex ? space + 1 : space
        while i < body.endIndex {
            let c = body[i]
            if c == 0x5C {
                guard i + 1 < body.endIndex else {
                    throw fail(n, .badMetadata, "metadata '\(key)': a '\\' ends the line (write '\\\\' for a backslash)")
                }
                switch body[i + 1] {
                case 0x5C: value.append(0x5C)
                case 0x6E: value.append(0x0A)
                case 0x72: value.append(0x0D)
                default:
                    throw fail(n, .badMetadata,
                               "metadata '\(key)': unknown escape '\\\(Character(Unicode.Scalar(body[i + 1])))' (only \\\\, \\n and \\r)")
                }
                i += 2
            } else {
                value.append(c)
                i += 1
            }
        }
        let v = String(decoding: value, as: UTF8.self)
        switch key {
        case TransactionLogHeader.Key.bus:
            guard bus == nil else { throw fail(n, .badMetadata, "@bus given twice") }
            bus = v
        case TransactionLogHeader.Key.startNanoseconds:
            guard start == nil else { throw fail(n, .badMetadata, "@start-ns given twice") }
            guard let t = UInt64(v) else {
                throw fail(n, .badMetadata, "@start-ns must be whole monotonic nanoseconds, found '\(v)'")
            }
            start = t
            lastTime = t
        case TransactionLogHeader.Key.startUTC:
            startUTC = v
        default:
            metadata.append(.init(key: key, value: v, line: n))
        }
    }

    mutating func recordLine(_ l: UnsafeBufferPointer<UInt8>, number n: Int) throws(TransactionLogError) {
        guard bus != nil, start != nil else {
            throw fail(n, .missingMetadata(key: bus == nil ? "bus" : "start-ns"),
                       "the header needs @bus and @start-ns before the first record")
        }
        // Split on single spaces; the error's operation text keeps its spaces.
        var fields = Fields(line: l)
        let whole = Self.text(l)
        func shape(_ why: String) -> TransactionLogError {
            fail(n, .badRecord, "\(why) in '\(whole)'; expected 'TIME 0xAA w HEX|- r N [HEX | ! KIND ERRNO REG OP]' or 'TIME 0xAA probe yes|no|! ...'")
        }
        guard let tField = fields.next() else { throw shape("empty record") }
        guard let time = Self.decimal(tField) else {
            throw fail(n, .badTime, "the time '\(Self.text(tField))' is not whole nanoseconds")
        }
        guard time >= lastTime else {
            throw fail(n, .timeWentBackwards(previous: lastTime),
                       "time \(time) is before the previous record's (or @start-ns) \(lastTime): monotonic time never goes back")
        }
        guard let aField = fields.next() else { throw shape("no address") }
        if Self.equals(aField, "gpio") {
            let r = try gpioRecord(&fields, time: time, number: n, whole: whole)
            lastTime = time
            records.append(r)
            return
        }
        guard let address = Self.address(aField) else {
            throw fail(n, .badAddress, "the address '\(Self.text(aField))' is not a 7-bit address written 0xNN")
        }
        guard let op = fields.next() else { throw shape("no operation") }
        let record: TransactionRecord
        if Self.equals(op, "probe") {
            guard let answer = fields.next() else { throw shape("probe without an answer") }
            if Self.equals(answer, "yes") || Self.equals(answer, "no") {
                guard fields.isAtEnd else { throw shape("extra fields after the probe's answer") }
                record = TransactionRecord(timeNanoseconds: time, address: address, request: .probe,
                                           outcome: .present(Self.equals(answer, "yes")), line: n)
            } else if Self.equals(answer, "!") {
                let e = try error(&fields, address: address, number: n)
                record = TransactionRecord(timeNanoseconds: time, address: address, request: .probe,
                                           outcome: .failed(e), line: n)
            } else {
                throw shape("probe answer '\(Self.text(answer))' is not yes, no or '!'")
            }
        } else if Self.equals(op, "w") {
            guard let wField = fields.next() else { throw shape("no bytes after 'w'") }
            let write: [UInt8]
            if Self.equals(wField, "-") { write = [] } else {
                guard let w = Self.hexBytes(wField) else {
                    throw fail(n, .badHex, "written bytes '\(Self.text(wField))' are not pairs of hex digits (or '-')")
                }
                write = w
            }
            guard let r = fields.next(), Self.equals(r, "r") else { throw shape("no 'r' after the written bytes") }
            guard let nField = fields.next() else { throw shape("no read count after 'r'") }
            guard let count = Self.decimal(nField), count <= 65_535 else {
                throw fail(n, .badReadCount, "the read count '\(Self.text(nField))' is not a whole number of bytes (at most 65535)")
            }
            let readCount = Int(count)
            if let next = fields.next() {
                if Self.equals(next, "!") {
                    let e = try error(&fields, address: address, number: n)
                    record = TransactionRecord(timeNanoseconds: time, address: address,
                                               request: .transfer(write: write, readCount: readCount),
                                               outcome: .failed(e), line: n)
                } else {
                    guard let bytes = Self.hexBytes(next) else {
                        throw fail(n, .badHex, "bytes read '\(Self.text(next))' are not pairs of hex digits")
                    }
                    guard bytes.count == readCount else {
                        throw fail(n, .readLengthMismatch(expected: readCount, found: bytes.count),
                                   "the read count says \(readCount) bytes but \(bytes.count) follow")
                    }
                    guard fields.isAtEnd else { throw shape("extra fields after the bytes read") }
                    record = TransactionRecord(timeNanoseconds: time, address: address,
                                               request: .transfer(write: write, readCount: readCount),
                                               outcome: .read(bytes), line: n)
                }
            } else {
                guard readCount == 0 else {
                    throw fail(n, .readLengthMismatch(expected: readCount, found: 0),
                               "the read count says \(readCount) bytes but none follow (a failed transfer needs '! KIND ERRNO REG')")
                }
                record = TransactionRecord(timeNanoseconds: time, address: address,
                                           request: .transfer(write: write, readCount: 0), outcome: .read([]), line: n)
            }
        } else {
            throw shape("unknown operation '\(Self.text(op))'")
        }
        lastTime = time
        records.append(record)
    }

    /// `NAME edge EDGE_NS`, `NAME timeout` or `NAME ! KIND ERRNO [operation]` after `TIME gpio`.
    func gpioRecord(_ fields: inout Fields, time: UInt64, number n: Int,
                    whole: String) throws(TransactionLogError) -> TransactionRecord {
        func shape(_ why: String) -> TransactionLogError {
            fail(n, .badRecord, "\(why) in '\(whole)'; expected 'TIME gpio NAME edge EDGE_NS', 'TIME gpio NAME timeout' or 'TIME gpio NAME ! KIND ERRNO OP'")
        }
        guard let nameField = fields.next() else { throw shape("no line name after 'gpio'") }
        let name = Self.text(nameField)
        guard TransactionLogHeader.isValidKey(name) else {
            throw fail(n, .badRecord, "bad data-ready line name '\(name)' (expected letters, digits, '.', '_' or '-')")
        }
        guard let what = fields.next() else { throw shape("no 'edge', 'timeout' or '!' after the line name") }
        let outcome: TransactionRecord.Outcome
        if Self.equals(what, "edge") {
            guard let tField = fields.next(), let edge = Self.decimal(tField) else {
                throw fail(n, .badTime, "the edge time after 'edge' is missing or not whole nanoseconds")
            }
            outcome = .edge(edge)
        } else if Self.equals(what, "timeout") {
            outcome = .edge(nil)
        } else if Self.equals(what, "!") {
            guard let k = fields.next() else {
                throw fail(n, .badError, "'!' must be followed by KIND ERRNO (e.g. '! io 5')")
            }
            let kindName = Self.text(k)
            guard let kind = GPIOError.Kind(rawValue: kindName) else {
                throw fail(n, .unknownErrorKind(kindName),
                           "unknown GPIO error kind '\(kindName)' (one of \(GPIOError.Kind.all.map(\.rawValue).joined(separator: ", ")))")
            }
            guard let eField = fields.next(), let e = Int32(Self.text(eField)) else {
                throw fail(n, .badError, "the errno after '\(kindName)' is missing or not a number")
            }
            outcome = .gpioFailed(GPIOError(kind: kind, errno: e, chip: name, operation: Self.freeText(fields.rest())))
        } else {
            throw shape("'\(Self.text(what))' after the line name is not edge, timeout or '!'")
        }
        guard fields.isAtEnd else { throw shape("extra fields after the data-ready record") }
        return TransactionRecord(timeNanoseconds: time, address: 0, request: .waitForEdge(line: name),
                                 outcome: outcome, line: n)
    }

    /// `KIND ERRNO REG [operation text...]` after a `!`.
    func error(_ fields: inout Fields, address: UInt8, number n: Int) throws(TransactionLogError) -> I2CError {
        guard let k = fields.next() else {
            throw fail(n, .badError, "'!' must be followed by KIND ERRNO REG (e.g. '! noDevice 121 0x3b')")
        }
        let kindName = Self.text(k)
        guard let kind = I2CError.Kind(rawValue: kindName) else {
            throw fail(n, .unknownErrorKind(kindName),
                       "unknown error kind '\(kindName)' (one of \(I2CError.Kind.all.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let eField = fields.next(), let e = Int32(Self.text(eField)) else {
            throw fail(n, .badError, "the errno after '\(kindName)' is missing or not a number")
        }
        guard let rField = fields.next() else {
            throw fail(n, .badError, "the register after the errno is missing (write '-' for none)")
        }
        let register: UInt8?
        if Self.equals(rField, "-") { register = nil } else {
            guard let r = Self.address(rField, limit: 0x100) else {
                throw fail(n, .badError, "the register '\(Self.text(rField))' is not 0xNN or '-'")
            }
            register = r
        }
        let operation = Self.freeText(fields.rest())
        return I2CError(kind: kind, errno: e, bus: bus ?? "", address: address, register: register,
                        operation: operation)
    }

    func finish() throws(TransactionLogError) -> TransactionLog {
        guard sawMagic else {
            throw fail(1, .notATransactionLog, "empty file: a transaction log starts with '\(TransactionLog.magic)'")
        }
        guard let bus else { throw fail(0, .missingMetadata(key: "bus"), "the header has no @bus line") }
        guard let start else { throw fail(0, .missingMetadata(key: "start-ns"), "the header has no @start-ns line") }
        return TransactionLog(header: TransactionLogHeader(bus: bus, startNanoseconds: start, startUTC: startUTC,
                                                           metadata: metadata),
                              records: records, file: file)
    }

    // MARK: field helpers

    struct Fields {
        let line: UnsafeBufferPointer<UInt8>
        var index: Int
        init(line: UnsafeBufferPointer<UInt8>) { self.line = line; index = line.startIndex }
        var isAtEnd: Bool { index >= line.endIndex }
        /// The next space-separated field (runs of spaces count as one).
        mutating func next() -> Slice<UnsafeBufferPointer<UInt8>>? {
            while index < line.endIndex && line[index] == 0x20 { index += 1 }
            guard index < line.endIndex else { return nil }
            let s = index
            while index < line.endIndex && line[index] != 0x20 { index += 1 }
            return line[s..<index]
        }
        /// Everything after the current field, leading spaces skipped.
        mutating func rest() -> Slice<UnsafeBufferPointer<UInt8>> {
            while index < line.endIndex && line[index] == 0x20 { index += 1 }
            defer { index = line.endIndex }
            return line[index..<line.endIndex]
        }
    }

    static func equals(_ f: Slice<UnsafeBufferPointer<UInt8>>, _ s: StaticString) -> Bool {
        guard f.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        var i = 0
        for c in f { if c != p[i] { return false }; i += 1 }
        return true
    }

    static func decimal(_ f: Slice<UnsafeBufferPointer<UInt8>>) -> UInt64? {
        guard !f.isEmpty, f.count <= 20 else { return nil }
        var v: UInt64 = 0
        for c in f {
            guard c >= 0x30 && c <= 0x39 else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(UInt64(c - 0x30))
            if o1 || o2 { return nil }
            v = a
        }
        return v
    }

    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }

    /// `0xNN` (one or two hex digits) below `limit`.
    static func address(_ f: Slice<UnsafeBufferPointer<UInt8>>, limit: Int = 0x80) -> UInt8? {
        guard f.count == 3 || f.count == 4, f[f.startIndex] == 0x30,
              f[f.startIndex + 1] == 0x78 || f[f.startIndex + 1] == 0x58 else { return nil }
        var v = 0
        for c in f.dropFirst(2) {
            guard let d = nibble(c) else { return nil }
            v = v << 4 | Int(d)
        }
        return v < limit ? UInt8(v) : nil
    }

    static func hexBytes(_ f: Slice<UnsafeBufferPointer<UInt8>>) -> [UInt8]? {
        guard !f.isEmpty, f.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(f.count / 2)
        var i = f.startIndex
        while i < f.endIndex {
            guard let h = nibble(f[i]), let l = nibble(f[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }
}
