#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import EdgeCommandLine
import EdgeBus
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeProtocol
import EdgeSim
import EdgeRuntime

/// `edge-agent record`: run an engine on the configured board and record
/// every bus transaction (or the samples, with --csv).
public enum RecordCommand: Subcommand {
    public static let name = "record"
    public static let summary = "Record every bus transaction (or the samples, --csv) of an engine on the board"
    public static let help = """
    Usage: edge-agent record FILE [--duration S] [--csv] [--config FILE] [--board NAME|FILE]
                             [--virtual-clock]

    Runs its own engine on the configured board - every sensor on, every
    stream produced - and records it. The bus is locked first, so with an
    agent running this refuses clearly (stop the agent, or use its socket).

    Default: a transaction log (docs/recordings.md): every I2C transfer with
    the monotonic time it completed, its bytes and its errors, plus the board
    profile and configuration in the header, so `edge-agent replay FILE`
    rebuilds the same drivers and pipeline and gets the same samples.

    --csv: the samples instead, one row per IMU sample, in the column layout
    of the mock motion feed of Meta's Wearables Device Access Toolkit:
      timestampNs,accelX,accelY,accelZ,gyroX,gyroY,gyroZ,magX,magY,magZ,
      orientationW,orientationX,orientationY,orientationZ
    (monotonic ns, m/s², rad/s, µT, sensor-to-earth quaternion in the
    configured frame; the magnetometer cells are empty between its samples).

    Options:
      --duration S      seconds to record (default 10); Ctrl-C stops early and
                        keeps everything recorded so far
      --virtual-clock   simulated boards only: run on a virtual clock, as fast
                        as possible and byte-for-byte reproducible (used to make
                        the committed test recordings)
      --config FILE, --board FILE   as for `run`

    Calibration is not applied while recording (a recording holds what the
    chips said; calibration is the consumer's business).
    """

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let csv = a.flag("--csv")
        let virtual = a.flag("--virtual-clock")
        let duration = try a.double("--duration", in: 0.001...86_400) ?? 10
        let env = ProcessInfo.processInfo.environment
        let selection = try BoardSession.select(&a, environment: env)
        let output = try a.positional("FILE (where to write the recording)")
        try a.finish()
        if virtual && selection.profile.bus != .simulated {
            throw UsageError("--virtual-clock works only with a simulated board")
        }
        try OutputFiles.refuseOverlaps(outputs: [.init("FILE", output)], inputs: selection.inputFiles)
        let clock: any TimeSource = virtual ? VirtualClock(startNanoseconds: 1_000_000_000) : MonotonicClock()
        let session = try BoardSession.open(selection, clock: clock, purpose: "record")
        if csv {
            let sink = CSVSink()
            let n = try record(bus: session.bus, clock: clock, selection: selection, sink: sink, duration: duration, virtual: virtual)
            let text = sink.writer.take()
            do {
                try text.write(toFile: output, atomically: true, encoding: .utf8)
            } catch {
                throw RunError("cannot write \(output): \(error)")
            }
            console.error("recorded \(sink.rows) samples in \(n) ticks to \(output)")
            return 0
        }
        var header = TransactionLogHeader(bus: session.bus.name, startNanoseconds: clock.nowNanoseconds,
                                          startUTC: virtual ? nil : TransactionLogWriter.currentUTC())
        header.append(TransactionLogHeader.Key.tool, "edge-agent record")
        header.append(TransactionLogHeader.Key.board, selection.profilePath ?? "(--bus)")
        header.append(TransactionLogHeader.Key.config, selection.configPath ?? "(defaults)")
        header.append(TransactionLogHeader.Key.boardJSON, try RecordingMetadata.embed(file: selection.profilePath, fallback: BoardSession.defaultProfileJSON(session.profile)))
        header.append(TransactionLogHeader.Key.configJSON, try RecordingMetadata.embed(file: selection.configPath, fallback: "{}"))
        let writer = try TransactionLogWriter(header: header, path: output)
        let recording = RecordingBus(session.bus, log: writer, clock: clock)
        let n = try record(bus: recording, clock: clock, selection: selection, sink: DiscardingSink(),
                           duration: duration, virtual: virtual)
        try writer.close()
        if let failure = writer.failure { throw RunError("\(output): \(failure)") }
        console.error("recorded \(n) ticks to \(output)")
        return 0
    }

    /// Runs an engine that produces every stream for `duration`; Ctrl-C or
    /// SIGTERM stop it early (what was recorded is kept).
    static func record<B: I2CBus>(bus: B, clock: any TimeSource, selection: BoardSession.Selection,
                                  sink: any SampleSink, duration: Double, virtual: Bool) throws -> Int {
        let (hub, loop) = EngineSetup.engine(bus: bus, clock: clock, profile: selection.profile, config: selection.config, sink: sink)
        hub.start()
        // Until the clock has advanced by the duration: the loop's period
        // follows demand and may change after the first tick.
        let end = clock.nowNanoseconds &+ UInt64((duration * 1e9).rounded())
        if virtual {
            loop.run(until: { clock.nowNanoseconds >= end })
            return hub.ticks
        }
        AgentSignals.block()
        let thread = try LoopThread(name: "edge-record") { loop.run(until: { loop.clock.nowNanoseconds >= end }) }
        let done = DoneFlag()
        let waiter = try LoopThread(name: "edge-record-join") { thread.join(); done.value.store(true, ordering: .releasing) }
        while !done.value.load(ordering: .acquiring) {
            if let sig = AgentSignals.wait(timeout: 0.1), sig == SIGINT || sig == SIGTERM { loop.stop() }
        }
        waiter.join()
        return hub.ticks
    }
}

/// Set by the joining thread when the recording loop has ended.
final class DoneFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// Collects samples into Meta Wearables mock-motion CSV rows: one row per
/// device-motion sample (one per IMU sample), with the accelerometer and
/// gyroscope of the same instant and the newest magnetometer sample since
/// the previous row.
final class CSVSink: SampleSink, @unchecked Sendable {
    var writer = SampleCSVWriter(header: true)
    var rows = 0
    private var accel: SIMD3<Double>?
    private var gyro: SIMD3<Double>?
    private var mag: SIMD3<Double>?
    func publish(_ sample: Sample, wake: Bool) -> Bool {
        switch sample {
        case .accelerometer(let s): accel = SIMD3(s.acceleration.x, s.acceleration.y, s.acceleration.z)
        case .gyroscope(let s): gyro = SIMD3(s.rotationRate.x, s.rotationRate.y, s.rotationRate.z)
        case .magnetometer(let s): mag = SIMD3(s.magneticField.x, s.magneticField.y, s.magneticField.z)
        case .deviceMotion(let m):
            writer.write(SampleRow(timestampNs: m.timestampNs, accel: accel, gyro: gyro, mag: mag,
                                   orientation: Quaternion(w: m.attitude.w, x: m.attitude.x, y: m.attitude.y, z: m.attitude.z)))
            rows += 1
            mag = nil
        default: break
        }
        return true
    }
    func wakeService() {}
    func publishConnection(_ event: ConnectionEvent) {}
    func setDevices(_ devices: [DeviceInfo]) {}
    var demandGeneration: Int { 0 }
    func demand() -> [StreamName: Double] { StreamName.demandEverything }
}

/// The board profile and configuration travel inside a transaction log's
/// header, one line each: the file's text with `\` and newlines escaped.
enum RecordingMetadata {
    static func embed(file: String?, fallback: String) throws -> String {
        guard let file else { return escape(fallback) }
        do {
            return escape(try ConfigLoader.readText(file))
        } catch {
            throw RunError("cannot read \(file) to embed it in the recording: \(error)")
        }
    }

    static func escape(_ s: String) -> String {
        var o = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": o += "\\\\"
            case "\n": o += "\\n"
            case "\r": o += "\\r"
            default: o.unicodeScalars.append(c)
            }
        }
        return o
    }

    static func unescape(_ s: String) -> String {
        var o = ""
        var it = s.unicodeScalars.makeIterator()
        while let c = it.next() {
            guard c == "\\" else { o.unicodeScalars.append(c); continue }
            switch it.next() {
            case "n"?: o += "\n"
            case "r"?: o += "\r"
            case "\\"?: o += "\\"
            case let other?: o += "\\"; o.unicodeScalars.append(other)
            case nil: o += "\\"
            }
        }
        return o
    }
}

extension BoardSession {
    /// JSON5 for a profile made up from `--bus N` (no file to embed).
    static func defaultProfileJSON(_ p: BoardProfile) -> String {
        let bus: String
        switch p.bus {
        case .linux(let n): bus = String(n)
        case .simulated: bus = "\"simulated\""
        }
        let chips = p.chips.map { "{ kind: \"\($0.kind.rawValue)\", address: \($0.address) }" }.joined(separator: ", ")
        return "{ name: \"\(p.name)\", bus: \(bus), chips: [\(chips)] }"
    }
}
