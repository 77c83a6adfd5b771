#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeCommandLine
import EdgeBus
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeProtocol
import EdgeRuntime

/// `edge-agent replay`: feed a recording through the real drivers and
/// pipeline (a transaction log) or through the pipeline (a sample CSV), and
/// write the published samples as JSON lines.
public enum ReplayCommand: Subcommand {
    public static let name = "replay"
    public static let summary = "Replay a recording through the drivers and pipeline; write the samples as JSON lines"
    public static let help = """
    Usage: edge-agent replay FILE [--realtime] [--output OUT]

    FILE is either
      * a transaction log from `edge-agent record FILE`: its header carries the
        board profile and configuration, so the same drivers and pipeline are
        rebuilt and fed the recorded bus transactions, register by register,
        on the recorded clock. A transaction the recording lacks (different
        drivers, settings or order) is a clear error naming the request and
        the recording's line; the replay stops there (exit status 1). The
        end of the recording ends the replay.
      * a sample CSV: from `edge-agent record FILE --csv` (Meta Wearables mock
        motion layout, timestampNs,accelX,...) or from `simulate --csv`
        (t,gx,gy,gz,ax,ay,az,mx,my,mz, t in seconds): the header says which.
        The samples go through the attitude filter.
    Deterministic: the same recording always gives the same output.

    A recording that stops part-way through a line (a power loss or a full
    disk while recording) replays up to its last complete line, with a
    warning naming the line and the time where it ends; a file cut inside
    the transaction log's header is an error naming the line.

    Output: one JSON object per line, exactly as clients receive them
    (EdgeService's protocol: {"class":"sample","stream":...,"timestamp_ns":...}),
    plus {"class":"connection",...} for device events; to standard output or
    --output OUT.

    Options:
      --realtime     pace the replay at the recorded speed (default: as fast as possible)
      --output OUT   write the JSON lines to OUT
    """

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let realtime = a.flag("--realtime")
        let outputPath = try a.option("--output")
        let file = try a.positional("FILE (a transaction log or a sample CSV)")
        try a.finish()
        try OutputFiles.refuseOverlaps(outputs: [outputPath.map { .init("--output", $0) }], inputs: [.init("FILE", file)])
        let sink = JSONLinesSink()
        var status: Int32 = 0
        var firstLine = Substring(try readFirstLine(file))
        while let last = firstLine.last, last == "\n" || last == "\r" || last == "\r\n" { firstLine = firstLine.dropLast() }
        if firstLine.hasPrefix("\u{FEFF}") { firstLine = firstLine.dropFirst() }
        if firstLine.hasPrefix(TransactionLog.magicPrefix)
            || (!firstLine.isEmpty && TransactionLog.magic.hasPrefix(firstLine) && firstLine.count >= 2) {
            status = try replayLog(file, realtime: realtime, sink: sink, console: console)
        } else if SampleCSVFormat.detect(firstLine) != nil
                    || SampleCSVFormat.allCases.contains(where: { $0.header.hasPrefix(firstLine) && firstLine.count >= 2 }) {
            try replayCSV(file, realtime: realtime, sink: sink, console: console)
        } else {
            throw RunError("\(file): neither a transaction log (first line '\(TransactionLog.magic)') nor a sample CSV: "
                + SampleCSVFormat.unknownHeaderMessage(firstLine.prefix(200)))
        }
        var out = OutputFile(path: outputPath, console: console, stdoutWhenNil: true)
        out.write(String(decoding: sink.writer.bytes, as: UTF8.self))
        try out.close()
        return status
    }

    static func readFirstLine(_ path: String) throws -> String {
        guard let fp = fopen(path, "r") else {
            throw FileError(path: path, errno: errno, operation: "open")
        }
        defer { fclose(fp) }
        var buf = [CChar](repeating: 0, count: 512)
        guard fgets(&buf, 512, fp) != nil else { return "" }
        return String(nulTerminated: buf)
    }

    static func replayLog(_ file: String, realtime: Bool, sink: JSONLinesSink, console: Console) throws -> Int32 {
        let (log, cut) = try TransactionLog.loadKeepingCompleteLines(path: file)
        if let cut { console.error("edge-agent replay: warning: \(cut)") }
        guard let boardText = log.header[TransactionLogHeader.Key.boardJSON] else {
            throw RunError("\(file): the header has no @\(TransactionLogHeader.Key.boardJSON): record it again with `edge-agent record`")
        }
        let profile = try ConfigLoader.decode(BoardProfile.self, from: RecordingMetadata.unescape(boardText),
                                              file: "\(file) @\(TransactionLogHeader.Key.boardJSON)")
        let configText = log.header[TransactionLogHeader.Key.configJSON].map(RecordingMetadata.unescape) ?? "{}"
        let config = try ConfigLoader.decode(AgentConfig.self, from: configText,
                                             file: "\(file) @\(TransactionLogHeader.Key.configJSON)")
        let clock = ReplayClock(log: log, realtime: realtime ? MonotonicClock() : nil)
        let bus = ReplayBus(log: log, clock: clock)
        let (hub, loop) = EngineSetup.engine(bus: bus, clock: clock, profile: profile, config: config, sink: sink)
        hub.start()
        loop.run(until: { bus.isAtEnd || bus.divergence != nil })
        if let d = bus.divergence {
            if d.kind == .endOfRecording { return 0 }   // the recording stopped part-way through a tick
            console.error("edge-agent replay: \(d)")
            return 1
        }
        return 0
    }

    static func replayCSV(_ file: String, realtime: Bool, sink: JSONLinesSink, console: Console) throws {
        let (rows, _, cut) = try SampleCSV.loadKeepingCompleteLines(path: file)
        if let cut { console.error("edge-agent replay: warning: \(cut)") }
        let hasMag = rows.contains { $0.mag != nil }
        let frame: ReferenceFrame = hasMag ? .xMagneticNorthZVertical : .xArbitraryZVertical
        let pacing = realtime ? MonotonicClock() : nil
        let origin = pacing?.nowNanoseconds ?? 0
        var filter: AttitudeFilter?
        var last: UInt64?
        for row in rows {
            guard let acc = row.accel, let gyr = row.gyro else { continue }
            let dt = last.map { Double(row.timestampNs &- $0) * 1e-9 } ?? 0.01
            if filter == nil { filter = AttitudeFilter(sampleInterval: dt > 0 ? dt : 0.01) }
            last = row.timestampNs
            if let p = pacing, let first = rows.first?.timestampNs {
                p.sleep(untilNanoseconds: origin &+ (row.timestampNs &- first))
            }
            filter!.update(gyro: gyr, accel: acc, mag: row.mag, dt: dt > 0 && dt < 0.25 ? dt : 0.01)
            let m = filter!.deviceMotion(in: frame)
            let q = m.attitude.quaternion
            let split = filter!.specificForceSplit   // the wire's convention (docs/protocol.md)
            func w(_ v: SIMD3<Double>) -> Vector3 { Vector3(x: v.x, y: v.y, z: v.z) }
            _ = sink.publish(.accelerometer(AccelerometerSample(timestampNs: row.timestampNs, acceleration: w(acc))), wake: false)
            _ = sink.publish(.gyroscope(GyroscopeSample(timestampNs: row.timestampNs, rotationRate: w(m.rotationRate))), wake: false)
            if let mag = row.mag {
                _ = sink.publish(.magnetometer(MagnetometerSample(timestampNs: row.timestampNs, magneticField: w(mag))), wake: false)
            }
            _ = sink.publish(.deviceMotion(DeviceMotionSample(
                timestampNs: row.timestampNs, attitude: Quaternion(w: q.w, x: q.x, y: q.y, z: q.z),
                gravity: split.gravity, userAcceleration: split.userAcceleration,
                rotationRate: w(m.rotationRate), magneticField: w(m.magneticField.field),
                magneticFieldAccuracy: .uncalibrated, headingDeg: hasMag ? m.heading : nil,
                referenceFrame: hasMag ? .xMagneticNorthZVertical : .xArbitraryZVertical)), wake: false)
        }
    }
}

/// The protocol lines a client holding every entitlement receives, in
/// order (the submersion stream capped as for `submersion.full`): for
/// `replay` (every stream) and `simulate --jsonl` (the streams asked for).
final class JSONLinesSink: SampleSink, @unchecked Sendable {
    var writer: JSONWriter
    let wanted: [StreamName: Double]
    /// Per stream, the samples let through on its capture-time grid
    /// (``Decimator``); a stream without one: every sample.
    var decimators: [StreamName: Decimator]
    init(wanted: [StreamName: Double] = StreamName.demandEverything, capacity: Int = 1 << 20,
         decimators: [StreamName: Decimator] = [:]) {
        self.wanted = wanted
        self.decimators = decimators
        writer = JSONWriter(capacity: capacity)
    }
    func publish(_ sample: Sample, wake: Bool) -> Bool {
        guard wanted[sample.stream] != nil else { return true }
        if decimators[sample.stream] != nil, !decimators[sample.stream]!.admit(sample.timestampNs) { return true }
        if case .submersion(let s) = sample {
            MessageEncoder.sample(.submersion(s.capped(shallow: false)), into: &writer)
        } else {
            MessageEncoder.sample(sample, into: &writer)
        }
        return true
    }
    func wakeService() {}
    func publishConnection(_ event: ConnectionEvent) { MessageEncoder.connection(event, into: &writer) }
    func setDevices(_ devices: [DeviceInfo]) {}
    var demandGeneration: Int { 0 }
    func demand() -> [StreamName: Double] { wanted }
    /// The lines so far, emptied.
    func take() -> String {
        let s = String(decoding: writer.bytes, as: UTF8.self)
        writer.reset()
        return s
    }
}
