import Testing
import Glibc
@testable import EdgeBus

/// The transaction log's text: what the writer writes, what the parser
/// accepts, and what it rejects (with the line).
@Suite struct RecordingLogFormatTests {
    static let header = TransactionLogHeader(bus: "/dev/i2c-1", startNanoseconds: 5_000_000_000,
                                             startUTC: "2026-11-29T16:32:38Z")

    /// Writes the records every record kind produces and checks the exact text.
    @Test func writerWritesTheDocumentedLines() {
        let w = TransactionLogWriter(header: Self.header)
        w.addMetadata("board", "boards/reference.json5")
        w.addMetadata("config-json", "{\"a\": \"x\\y\"}\nsecond line")
        w.comment("bring-up")
        w.append(.transfer(at: 5_000_120_000, 0x68, write: [0x75], read: [0x68]))
        w.append(.transfer(at: 5_000_250_000, 0x68, write: [0x6B, 0x80], read: []))
        w.append(.transfer(at: 5_000_300_000, 0x1E, write: [], read: [0x48, 0x34]))
        w.append(.failedTransfer(at: 5_100_900_000, 0x76, write: [0xD0], readCount: 1,
                                 error: I2CError(errno: EREMOTEIO, bus: "/dev/i2c-1", address: 0x76, register: 0xD0,
                                                 operation: "read 1 byte after writing 1")))
        w.append(.failedTransfer(at: 5_100_900_001, 0x76, write: [], readCount: 0,
                                 error: I2CError(kind: .unsupported, errno: 0, bus: "x", operation: "")))
        w.append(.probe(at: 5_101_000_000, 0x0D, present: true))
        w.append(.probe(at: 5_101_000_000, 0x50, present: false))
        w.recordFailedProbe(at: 5_101_000_001, address: 0x51,
                            error: I2CError(errno: EBUSY, bus: "/dev/i2c-1", operation: "ioctl(I2C_SLAVE)"))
        w.append(.edge(at: 5_102_000_000, line: "mpu-int", edge: 5_101_999_000))
        w.append(.edge(at: 5_103_000_000, line: "mpu-int", edge: nil))
        w.recordFailedEdgeWait(at: 5_103_000_001, line: "mpu-int",
                               error: GPIOError(kind: .lineBusy, errno: EBUSY, chip: "pinctrl-bcm2711", operation: "request"))
        #expect(w.text == """
        # edge-agent transaction log v1
        @bus /dev/i2c-1
        @start-ns 5000000000
        @start-utc 2026-11-29T16:32:38Z
        @board boards/reference.json5
        @config-json {"a": "x\\\\y"}\\nsecond line
        # bring-up
        5000120000 0x68 w 75 r 1 68
        5000250000 0x68 w 6b80 r 0
        5000300000 0x1e w - r 2 4834
        5100900000 0x76 w d0 r 1 ! noDevice 121 0xd0 read 1 byte after writing 1
        5100900001 0x76 w - r 0 ! unsupported 0 -
        5101000000 0x0d probe yes
        5101000000 0x50 probe no
        5101000001 0x51 probe ! addressInUse 16 - ioctl(I2C_SLAVE)
        5102000000 gpio mpu-int edge 5101999000
        5103000000 gpio mpu-int timeout
        5103000001 gpio mpu-int ! lineBusy 16 request

        """)
        #expect(w.recordCount == 11)
    }

    @Test func whatIsWrittenParsesBackToTheSameRecords() throws {
        let w = TransactionLogWriter(header: Self.header)
        w.addMetadata("board", "C:\\boards\\x.json5")
        w.addMetadata("note", "line one\nline two\r")
        w.addMetadata("note", "")
        let records: [TransactionRecord] = [
            .transfer(at: 5_000_000_000, 0x68, write: [0x75], read: [0x68]),
            .transfer(at: 5_000_000_001, 0x68, write: [0x3B], read: Array(0..<14)),
            .transfer(at: 5_000_000_001, 0x7F, write: [0x00, 0xFF, 0x10], read: []),
            .failedTransfer(at: 5_000_000_002, 0x76, write: [0xF7], readCount: 6,
                            error: I2CError(errno: ETIMEDOUT, bus: "/dev/i2c-1", address: 0x76, register: 0xF7,
                                            operation: "read 6 bytes after writing 1 (SMBus)")),
            .probe(at: 5_000_000_003, 0x0D, present: true),
            .probe(at: 5_000_000_004, 0x00, present: false),
            .edge(at: 5_000_000_005, line: "mpu-int", edge: 5_000_000_001),
            .edge(at: 5_000_000_006, line: "mag.drdy_1", edge: nil),
            TransactionRecord(timeNanoseconds: 5_000_000_007, address: 0, request: .waitForEdge(line: "mpu-int"),
                              outcome: .gpioFailed(GPIOError(kind: .io, errno: EIO, chip: "mpu-int", operation: "read event"))),
        ]
        for r in records { w.append(r) }
        let log = try TransactionLog.parse(w.text, file: "t.log")
        #expect(log.header.bus == "/dev/i2c-1")
        #expect(log.header.startNanoseconds == 5_000_000_000)
        #expect(log.header.startUTC == "2026-11-29T16:32:38Z")
        #expect(log.header["board"] == "C:\\boards\\x.json5")
        #expect(log.header.values(forKey: "note") == ["line one\nline two\r", ""])
        #expect(log.header.metadata.map(\.line) == [5, 6, 7])
        #expect(log.records.count == records.count)
        for (i, (a, b)) in zip(log.records, records).enumerated() {
            var a = a
            #expect(a.line == 8 + i)
            a.line = 0
            #expect(a == b)
        }
        // Rewriting the parsed records gives the same text.
        let again = TransactionLogWriter(header: log.header)
        for r in log.records { again.append(r) }
        #expect(again.text == w.text)
    }

    @Test func commentsBlankLinesAndCRLFAreAccepted() throws {
        let text = "# edge-agent transaction log v1\r\n# recorded on the bench\r\n\r\n@bus simulated\r\n@start-ns 0\r\n"
            + "10 0x68 w 75 r 1 68\r\n# between\r\n\r\n20  0x68  w 3b  r 2  0A0b\r\n"
        let log = try TransactionLog.parse(text)
        #expect(log.records.map(\.line) == [6, 9])
        #expect(log.records[1].outcome == .read([0x0A, 0x0B]))
        #expect(log.endNanoseconds == 20)
    }

    // MARK: errors

    static let good = "# edge-agent transaction log v1\n@bus b\n@start-ns 100\n"

    @Test(arguments: [
        // (text, line, what the message must say)
        ("hello\n", 1, "not a transaction log"),
        ("", 1, "empty file"),
        ("# edge-agent transaction log v2\n", 1, "version 2 is not supported"),
        ("# edge-agent transaction log v1\n@start-ns 1\n5 0x68 w 75 r 0\n", 3, "@bus and @start-ns"),
        ("# edge-agent transaction log v1\n@bus b\n", 0, "no @start-ns"),
        (good + "@start-ns 5\n", 4, "@start-ns given twice"),
        (good + "@b/d x\n", 4, "bad metadata key"),
        (good + "@k a\\tb\n", 4, "unknown escape"),
        (good + "@k trailing\\\n", 4, "ends the line"),
        (good + "@start-ns\n", 4, "@start-ns given twice"),
        (good + "200 0x68 w 75 r 1 68\n@board x\n", 5, "after the first record"),
        (good + "2x0 0x68 w 75 r 1 68\n", 4, "is not whole nanoseconds"),
        (good + "99 0x68 w 75 r 1 68\n", 4, "before the previous record's"),
        (good + "200 0x68 w 75 r 0\n150 0x68 w 75 r 0\n", 5, "before the previous record's"),
        (good + "200 0x80 w 75 r 0\n", 4, "is not a 7-bit address"),
        (good + "200 68 w 75 r 0\n", 4, "is not a 7-bit address"),
        (good + "200 0x68 w 7 r 0\n", 4, "not pairs of hex digits"),
        (good + "200 0x68 w 7g r 0\n", 4, "not pairs of hex digits"),
        (good + "200 0x68 w 75 r 1 6\n", 4, "not pairs of hex digits"),
        (good + "200 0x68 w 75 r 2 68\n", 4, "says 2 bytes but 1 follow"),
        (good + "200 0x68 w 75 r 1\n", 4, "but none follow"),
        (good + "200 0x68 w 75 r x\n", 4, "read count 'x'"),
        (good + "200 0x68 w 75 x 1 68\n", 4, "no 'r' after"),
        (good + "200 0x68 w 75\n", 4, "no 'r' after"),
        (good + "200 0x68 w 75 r 1 68 extra\n", 4, "extra fields"),
        (good + "200 0x68 read 75\n", 4, "unknown operation 'read'"),
        (good + "200\n", 4, "no address"),
        (good + "200 0x68 w 75 r 1 ! broken 5 -\n", 4, "unknown error kind 'broken'"),
        (good + "200 0x68 w 75 r 1 ! io\n", 4, "errno after 'io'"),
        (good + "200 0x68 w 75 r 1 ! io 5\n", 4, "register after the errno"),
        (good + "200 0x68 w 75 r 1 ! io 5 75\n", 4, "register '75'"),
        (good + "200 0x68 probe maybe\n", 4, "is not yes, no or '!'"),
        (good + "200 0x68 probe yes no\n", 4, "extra fields"),
        (good + "200 gpio\n", 4, "no line name after 'gpio'"),
        (good + "200 gpio a/b edge 1\n", 4, "bad data-ready line name 'a/b'"),
        (good + "200 gpio int\n", 4, "no 'edge', 'timeout' or '!'"),
        (good + "200 gpio int edge\n", 4, "edge time after 'edge'"),
        (good + "200 gpio int edge 1 2\n", 4, "extra fields after the data-ready record"),
        (good + "200 gpio int rising\n", 4, "'rising' after the line name"),
        (good + "200 gpio int ! stuck 5\n", 4, "unknown GPIO error kind 'stuck'"),
        (good + "200 gpio int ! io\n", 4, "errno after 'io'"),
    ])
    func badLogsNameTheLine(_ text: String, _ line: Int, _ says: String) {
        let e = #expect(throws: TransactionLogError.self) { try TransactionLog.parse(text, file: "bad.log") }
        #expect(e?.line == line, "\(e?.description ?? "")")
        #expect(e?.description.contains(says) == true, "\(e?.description ?? "")")
        #expect(e?.description.hasPrefix(line > 0 ? "bad.log:\(line): " : "bad.log: ") == true)
    }

    @Test func errorKindsAreTyped() {
        func kind(_ text: String) -> TransactionLogError.Kind? {
            do { _ = try TransactionLog.parse(text); return nil } catch { return error.kind }
        }
        #expect(kind("# edge-agent transaction log v7\n") == .unsupportedVersion(7))
        #expect(kind(Self.good + "200 0x68 w 75 r 2 68\n") == .readLengthMismatch(expected: 2, found: 1))
        #expect(kind(Self.good + "50 0x68 w 75 r 0\n") == .timeWentBackwards(previous: 100))
        #expect(kind(Self.good + "200 0x68 w 75 r 1 ! bad 1 -\n") == .unknownErrorKind("bad"))
        #expect(kind("# edge-agent transaction log v1\n@bus b\n") == .missingMetadata(key: "start-ns"))
        #expect(kind(Self.good + "200 0x68 w 75 r 0\n@x y\n") == .metadataAfterRecords)
    }

    @Test func aMissingFileIsATypedError() {
        let e = #expect(throws: TransactionLogError.self) {
            try TransactionLog.load(path: "/nonexistent/edge-agent/recording.log")
        }
        #expect(e?.kind == .cannotRead(errno: ENOENT))
        #expect(e?.description.contains("/nonexistent/edge-agent/recording.log") == true)
    }

    // MARK: files

    @Test func fileWriterFlushesInChunksAndLoadsBack() throws {
        let path = try TempFile.path("file-writer")
        defer { unlink(path) }
        let w = try TransactionLogWriter(header: Self.header, path: path, flushThreshold: 100)
        w.addMetadata("board", "boards/reference.json5")
        var t: UInt64 = 5_000_000_000
        var reply: [UInt8] = Array(repeating: 0xAB, count: 14)
        let reg: [UInt8] = [0x3B]
        for i in 0..<500 {
            t += 10_000_000
            reply[0] = UInt8(truncatingIfNeeded: i)
            reg.withUnsafeBytes { wb in reply.withUnsafeBytes { rb in
                w.recordTransfer(at: t, address: 0x68, write: wb, read: rb)
            } }
        }
        // Most of it is on disk already; the rest is in the buffer.
        #expect(w.text.utf8.count < 100 + 60)
        try w.close()
        let log = try TransactionLog.load(path: path)
        #expect(log.file == path)
        #expect(log.records.count == 500)
        #expect(log.header["board"] == "boards/reference.json5")
        #expect(log.records[499].outcome == .read([0xF3] + Array(repeating: 0xAB, count: 13)))
        #expect(log.endNanoseconds == 10_000_000_000)
    }

    @Test func aWriteFailureIsKeptAndLaterRecordsAreCounted() throws {
        let path = try TempFile.path("write-failure")
        defer { unlink(path) }
        let fd = open(path, O_RDONLY)            // writes to it fail with EBADF
        defer { close(fd) }
        let w = TransactionLogWriter(header: Self.header, fileDescriptor: fd, name: path, flushThreshold: 1)
        #expect(w.failure == nil)
        w.append(.probe(at: 5_000_000_001, 0x68, present: true))
        #expect(w.failure?.errno == EBADF)
        #expect(w.failure?.description.contains(path) == true)
        w.append(.probe(at: 5_000_000_002, 0x68, present: true))
        w.append(.probe(at: 5_000_000_003, 0x68, present: true))
        #expect(w.recordCount == 1)
        #expect(w.droppedRecords == 2)
        #expect(throws: TransactionLogWriteError.self) { try w.flush() }
        #expect(throws: TransactionLogWriteError.self) { try w.close() }
    }

    @Test func aLogThatCannotBeCreatedSaysWhere() {
        let e = #expect(throws: TransactionLogWriteError.self) {
            _ = try TransactionLogWriter(header: Self.header, path: "/nonexistent/dir/rec.log")
        }
        #expect(e?.operation == "create")
        #expect(e?.errno == ENOENT)
    }

    @Test func currentUTCLooksLikeISO8601() {
        let s = TransactionLogWriter.currentUTC()
        #expect(s.count == 20)
        #expect(s.hasSuffix("Z"))
        #expect(Array(s)[10] == "T")
        #expect(s.hasPrefix("20"))
    }

    // MARK: the documentation

    /// docs/recordings.md's transaction-log example parses and says what the text says.
    @Test func documentationExampleParses() throws {
        let example = try DocExample.block(after: "<!-- example: transaction-log -->")
        let log = try TransactionLog.parse(example, file: "docs/recordings.md")
        #expect(log.header.bus == "/dev/i2c-1")
        #expect(log.header[TransactionLogHeader.Key.board] == "boards/reference.json5")
        #expect(log.records.count >= 8)
        #expect(log.records.contains { if case .failed(let e) = $0.outcome { e.kind == .noDevice } else { false } })
        #expect(log.records.contains { $0.request == .probe })
    }
}

/// Unique temporary paths for tests that run in parallel.
enum TempFile {
    static func path(_ tag: String) throws -> String {
        var template = Array("/tmp/edge-\(tag)-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw Failure(errno: errno) }
        close(fd)
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    struct Failure: Error { var errno: Int32 }
}

/// Fenced code blocks from docs/recordings.md, found through #filePath.
enum DocExample {
    static func docs() throws -> String {
        let here = #filePath
        var parts = here.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)                     // Tests/EdgeBusTests/<file>
        let path = parts.joined(separator: "/") + "/docs/recordings.md"
        let f = open(path, O_RDONLY)
        guard f >= 0 else { throw TempFile.Failure(errno: errno) }
        defer { close(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 14)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(f, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first fenced block after the line `marker`.
    static func block(after marker: String) throws -> String {
        let lines = try docs().split(separator: "\n", omittingEmptySubsequences: false)
        guard let m = lines.firstIndex(where: { $0.trimmingSpaces == marker }),
              let open = lines[(m + 1)...].firstIndex(where: { $0.hasPrefix("```") }),
              let close = lines[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") }) else {
            throw Missing(marker: marker)
        }
        return lines[(open + 1)..<close].joined(separator: "\n") + "\n"
    }
    struct Missing: Error { var marker: String }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}
