import Testing
@testable import EdgeBus

/// A log that a power loss cut off part-way through a line: the writer ends
/// every line with `\n` (TransactionLogWriter), so a last line without one
/// is what was being written when recording stopped.
@Suite struct TransactionLogCutTests {
    /// A header and four complete records, as the writer writes them.
    static func log() -> String {
        let w = TransactionLogWriter(header: TransactionLogHeader(bus: "/dev/i2c-1", startNanoseconds: 5_000_000_000))
        w.addMetadata("config-json", "{ sensors: { mpu6050: { sample_rate_hz: 100 } } }")
        w.append(.transfer(at: 5_000_120_000, 0x68, write: [0x75], read: [0x68]))
        w.append(.transfer(at: 5_000_250_000, 0x68, write: [0x6B, 0x80], read: []))
        w.append(.transfer(at: 5_110_000_000, 0x68, write: [0x3B], read: Array(0..<14)))
        w.append(.transfer(at: 5_120_000_000, 0x68, write: [0x3B], read: Array(14..<28)))
        return w.text
    }

    static func lines(_ text: String) -> [Substring] { text.split(separator: "\n", omittingEmptySubsequences: false) }

    @Test func aRecordCutMidLineKeepsTheCompleteOnesBeforeIt() throws {
        let full = Self.log()
        let lines = Self.lines(full)
        // cut the last record after "5120000000 0x68 w 3b r 14 000102": 3 of its 14 bytes
        let last = try #require(lines.lastIndex { $0.hasPrefix("5120000000") })
        let keep = lines[..<last].joined(separator: "\n") + "\n" + lines[last].prefix(32)
        let (log, cut) = try TransactionLog.parseKeepingCompleteLines(Array(keep.utf8), file: "rec.log")
        #expect(log.records.count == 3)
        #expect(log.records.last?.timeNanoseconds == 5_110_000_000)
        let c = try #require(cut)
        #expect(c.line == last + 1)
        #expect(c.records == 3)
        #expect(c.lastTimeNanoseconds == 5_110_000_000)
        #expect(abs(c.secondsRecorded - 0.11) < 1e-12)
        #expect(c.description.contains("rec.log:\(last + 1):") && c.description.contains("0.11 s"), "\(c)")
        // strictly read, the same file is an error naming the line and the cut
        #expect(throws: TransactionLogError.self) { try TransactionLog.parse(keep, file: "rec.log") }
        do { _ = try TransactionLog.parse(keep, file: "rec.log") } catch {
            #expect(error.kind == .cutOff && error.line == last + 1)
            #expect(error.description.contains("no line end"), "\(error)")
        }
    }

    @Test func aCutThatLeavesAParsableFragmentIsStillACut() throws {
        // "5120000000 0x68 w 3b r 14 …" cut to "5120000000 0x68 w 3b r 1": reads as a
        // different (1-byte) request: kept out all the same, as the line has no end.
        let lines = Self.lines(Self.log())
        let last = try #require(lines.lastIndex { $0.hasPrefix("5120000000") })
        let keep = lines[..<last].joined(separator: "\n") + "\n" + lines[last].prefix(24)
        let (log, cut) = try TransactionLog.parseKeepingCompleteLines(Array(keep.utf8))
        #expect(log.records.count == 3)
        #expect(cut?.line == last + 1)
    }

    @Test func aCutInTheHeaderIsAnErrorNamingTheLine() throws {
        let lines = Self.lines(Self.log())
        let meta = try #require(lines.firstIndex { $0.hasPrefix("@config-json") })
        let keep = lines[..<meta].joined(separator: "\n") + "\n" + lines[meta].prefix(30)
        for keeping in [true, false] {
            do {
                _ = keeping ? try TransactionLog.parseKeepingCompleteLines(Array(keep.utf8), file: "rec.log").log
                            : try TransactionLog.parse(keep, file: "rec.log")
                Issue.record("a cut header must be an error")
            } catch {
                #expect(error.kind == .cutOff && error.line == meta + 1, "\(error)")
                #expect(error.description.hasPrefix("rec.log:\(meta + 1): ") && error.description.contains("header"))
            }
        }
        // and the first line itself
        do { _ = try TransactionLog.parseKeepingCompleteLines(Array("# edge-agent trans".utf8)) } catch {
            #expect(error.kind == .cutOff && error.line == 1)
        }
    }

    @Test func completeFilesAndTheZerosACrashLeavesAreNotCuts() throws {
        let full = Self.log()
        let (log, cut) = try TransactionLog.parseKeepingCompleteLines(Array(full.utf8))
        #expect(cut == nil && log.records.count == 4)
        let zeros = Array(full.utf8) + [UInt8](repeating: 0, count: 4096)
        let (log2, cut2) = try TransactionLog.parseKeepingCompleteLines(zeros)
        #expect(cut2 == nil && log2.records.count == 4)
        // a hand-edited log without its final line end still reads strictly
        let trimmed = String(full.dropLast())
        #expect(try TransactionLog.parse(trimmed).records.count == 4)
    }
}

/// Found by the recording fuzz target (twice): a carriage return inside a
/// failed transfer's error text, then one at its start. The writer writes a
/// space for it and one space before the text; the parser reads it as a
/// space and the spaces before the text as the separator, so a log parsed
/// and written again is the same log.
@Suite struct TransactionLogCarriageReturnTests {
    static let header = "# edge-agent transaction log v1\n@bus simulated\n@start-ns 0\n"

    @Test(arguments: [
        ("10 0x0d w 06 r 1 ! noDevice 6 0x06 read\rX\n", "read X"),
        ("10 0x0d w 06 r 1 ! noDevice 6 0x06 \rderaX\n", "deraX"),       // CI's finding at e1e9fd3
        ("10 0x0d w 06 r 1 ! noDevice 6 0x06  \r \rread\n", "read"),
        ("10 0x0d w 06 r 1 ! noDevice 6 0x06 \r\r\n", ""),
        ("10 0x0d probe ! noDevice 6 - \rprobe\n", "probe"),
    ])
    func aCRInAnErrorsTextSurvivesARewrite(record: String, operation: String) throws {
        let log = try TransactionLog.parse(Self.header + record, file: "cr.log")
        guard case .failed(let e) = log.records.first?.outcome else {
            Issue.record("not a failed record: \(log.records)"); return
        }
        #expect(e.operation == operation)
        let w = TransactionLogWriter(header: log.header)
        for r in log.records { w.append(r) }
        let again = try TransactionLog.parse(w.text, file: "rewritten.log")
        #expect(again.records.map(\.outcome) == log.records.map(\.outcome))
    }

    @Test func aCRAtTheStartOfADataReadyErrorSurvivesARewrite() throws {
        let log = try TransactionLog.parse(Self.header + "10 gpio drdy ! io 5 \rwait\n", file: "cr.log")
        guard case .gpioFailed(let e) = log.records.first?.outcome else {
            Issue.record("not a failed wait: \(log.records)"); return
        }
        #expect(e.operation == "wait")
        let w = TransactionLogWriter(header: log.header)
        for r in log.records { w.append(r) }
        #expect(try TransactionLog.parse(w.text, file: "rewritten.log").records.map(\.outcome) == log.records.map(\.outcome))
    }
}
