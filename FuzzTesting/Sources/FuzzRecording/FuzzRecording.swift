// Fuzz target (c): the recording readers.
//
// Every input is tried as both kinds of recording (docs/recordings.md):
//   * a transaction log: `TransactionLog.parse` (EdgeBus
//     TransactionLogParser); when it parses and carries `@board-json`, it is
//     replayed as `edge-agent replay` does (ReplayCommand.replayLog): the
//     embedded profile and configuration through `ConfigLoader.decode`, the
//     real drivers and pipeline on a `ReplayBus`, samples encoded as JSON
//     lines. The replay is cut at 20 000 ticks so a log whose times span
//     hours of virtual time is not reported as a hang.
//   * a sample CSV: `SampleCSV.parse` (EdgeAgentCLI SampleCSVReader).
//
// A thrown typed error (TransactionLogError, ConfigError, SampleCSVError)
// is the right answer to bad input. Findings are traps, sanitizer reports,
// hangs, huge allocations, and these invariants:
//   * a parsed log has times that never decrease and start at or after
//     `@start-ns`, 7-bit addresses, reads of exactly the bytes asked for;
//     written again with `TransactionLogWriter` it parses to the same log;
//   * parsed sample rows have finite values, unit quaternions and
//     timestamps that never decrease; written again with `SampleCSV.write`
//     they parse to the same rows (to the written decimals).
import EdgeBus
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeProtocol
import EdgeValues
@testable import EdgeAgentCLI
@testable import EdgeRuntime
import FuzzSupport

private let fileName = "fuzz.log"
private let maxReplayTicks = 20_000

/// One input (libFuzzer's LLVMFuzzerTestOneInput); returns 0, findings trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecording(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzBytes(data, size)
    if let log = try? TransactionLog.parse(bytes, file: fileName) {
        check(log)
        replay(log)
    }
    // SampleCSV.load reads the file with String(decoding:as:).
    if let rows = try? SampleCSV.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.csv") {
        check(rows)
    }
    return 0
}

// MARK: transaction logs

private func check(_ log: TransactionLog) {
    var previous = log.header.startNanoseconds
    for r in log.records {
        if r.timeNanoseconds < previous {
            invariantBroken("line \(r.line): time \(r.timeNanoseconds) is before \(previous)")
        }
        previous = r.timeNanoseconds
        if case .waitForEdge = r.request {} else if r.address > 0x7f {
            invariantBroken("line \(r.line): address \(r.address) is not 7-bit")
        }
        if case .transfer(_, let n) = r.request, case .read(let b) = r.outcome, b.count != n {
            invariantBroken("line \(r.line): \(n) bytes asked for, \(b.count) read")
        }
    }
    let writer = TransactionLogWriter(header: log.header)
    for r in log.records { writer.append(r) }
    let text = writer.text
    let again: TransactionLog
    do {
        again = try TransactionLog.parse(Array(text.utf8), file: fileName)
    } catch {
        invariantBroken("a parsed log, written again, does not parse: \(error)\n\(text.prefix(2000))")
    }
    if let d = firstDifference(log, again) {
        invariantBroken("a parsed log, written again, parses to another log: \(d)\n\(text.prefix(2000))")
    }
}

/// Where two logs differ first (nil: equal).
private func firstDifference(_ a: TransactionLog, _ b: TransactionLog) -> String? {
    func q(_ s: String?) -> String { s.map { String(reflecting: $0) } ?? "nil" }
    if a.header.bus != b.header.bus { return "@bus \(q(a.header.bus)) became \(q(b.header.bus))" }
    if a.header.startNanoseconds != b.header.startNanoseconds { return "@start-ns changed" }
    if a.header.startUTC != b.header.startUTC { return "@start-utc \(q(a.header.startUTC)) became \(q(b.header.startUTC))" }
    for (i, (x, y)) in zip(a.header.metadata, b.header.metadata).enumerated() where x.key != y.key || x.value != y.value {
        return "metadata \(i): @\(x.key) \(q(x.value)) became @\(y.key) \(q(y.value))"
    }
    if a.header.metadata.count != b.header.metadata.count {
        return "\(a.header.metadata.count) metadata entries became \(b.header.metadata.count)"
    }
    for (i, (x, y)) in zip(a.records, b.records).enumerated() where withoutLine(x) != withoutLine(y) {
        return "record \(i) (line \(x.line)): \(x) became \(y); outcome \(String(reflecting: x.outcome)) became \(String(reflecting: y.outcome))"
    }
    return a.records.count != b.records.count ? "\(a.records.count) records became \(b.records.count)" : nil
}

private func withoutLine(_ r: TransactionRecord) -> TransactionRecord {
    var r = r
    r.line = 0
    return r
}

/// ReplayCommand.replayLog, from the parsed log instead of a file.
private func replay(_ log: TransactionLog) {
    guard let boardText = log.header[TransactionLogHeader.Key.boardJSON] else { return }
    guard let profile = try? ConfigLoader.decode(BoardProfile.self, from: RecordingMetadata.unescape(boardText),
                                                 file: "\(fileName) @board-json") else { return }
    let configText = log.header[TransactionLogHeader.Key.configJSON].map(RecordingMetadata.unescape) ?? "{}"
    guard let config = try? ConfigLoader.decode(AgentConfig.self, from: configText,
                                                file: "\(fileName) @config-json") else { return }
    let sink = JSONLinesSink()
    let clock = ReplayClock(log: log)
    let bus = ReplayBus(log: log, clock: clock)
    let hub = SensorHub(bus: bus, clock: clock, devices: EngineSetup.devices(profile),
                        settings: EngineSetup.settings(config), sink: sink)
    hub.start()
    let loop = EngineLoop(hub: hub, clock: clock)
    loop.run(maxTicks: maxReplayTicks, until: { bus.isAtEnd || bus.divergence != nil })
    _ = bus.divergence?.description
}

// MARK: sample CSV

private func check(_ rows: [SampleRow]) {
    var previous: UInt64 = 0
    for (i, r) in rows.enumerated() {
        if r.timestampNs < previous { invariantBroken("row \(i): timestamp \(r.timestampNs) is before \(previous)") }
        previous = r.timestampNs
        requireFinite(r, "row \(i)")
        if let q = r.orientation, abs(norm(q) - 1) > SampleCSV.unitTolerance {
            invariantBroken("row \(i): orientation norm \(norm(q))")
        }
    }
    let text = SampleCSV.write(rows)
    let again: [SampleRow]
    do {
        again = try SampleCSV.parse(text, file: "rewritten.csv")
    } catch {
        // Rounding to the written decimals can move a norm that was at the
        // edge of the tolerance across it.
        if case .notUnitQuaternion = error.kind,
           rows.contains(where: { $0.orientation.map { abs(norm($0) - 1) > SampleCSV.unitTolerance - 1e-5 } ?? false }) {
            return
        }
        invariantBroken("parsed rows, written again, do not parse: \(error)\n\(text.prefix(2000))")
    }
    guard again.count == rows.count else {
        invariantBroken("\(rows.count) rows, written again, parse to \(again.count)")
    }
    for (i, (a, b)) in zip(rows, again).enumerated() {
        let same = a.timestampNs == b.timestampNs
            && close(a.accel, b.accel, SampleCSV.Decimals.accel) && close(a.gyro, b.gyro, SampleCSV.Decimals.gyro)
            && close(a.mag, b.mag, SampleCSV.Decimals.mag)
            && close(a.orientation.map { [$0.w, $0.x, $0.y, $0.z] }, b.orientation.map { [$0.w, $0.x, $0.y, $0.z] },
                     SampleCSV.Decimals.orientation)
        if !same { invariantBroken("row \(i) \(a), written as \(SampleCSV.line(a)), parses to \(b)") }
    }
}

private func norm(_ q: Quaternion) -> Double { (q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z).squareRoot() }

private func close(_ a: Vector3?, _ b: Vector3?, _ decimals: Int) -> Bool {
    close(a.map { [$0.x, $0.y, $0.z] }, b.map { [$0.x, $0.y, $0.z] }, decimals)
}

/// Equal to the written decimals (half a unit in the last place, plus the
/// double's own rounding for large values).
private func close(_ a: [Double]?, _ b: [Double]?, _ decimals: Int) -> Bool {
    guard let a, let b else { return a == nil && b == nil }
    var unit = 1.0
    for _ in 0..<decimals { unit /= 10 }
    return zip(a, b).allSatisfy { x, y in abs(x - y) <= unit / 2 + abs(x) * 1e-15 }
}
