// The fault matrix through the real agent: `edge-agent run` on the
// simulated board (primary IMU 0x68, accessory IMU 0x69, QMC5883L 0x0D,
// BMP280 0x76) while it turns, with every fault kind (`reset`, `nack`,
// `disappear`, `error_every`) on every chip, alone and two at once, and a
// socket client subscribed to every stream. For each outage the client
// checks, on the samples' capture timestamps: the chip's data resume within
// 300 ms of it answering again; a `connection` event said it stopped (with
// a reason) and another that it is back; nothing old or non-finite came in
// between (no north frame without a current field, no repeated reading,
// timestamps strictly increasing). Faults a retry absorbs (every 2nd or
// 7th transfer failing) must stop nothing at all.
//
// The engine-level twin (EdgeEngineTests/FaultMatrixTests) checks every
// pair on a virtual clock; this one checks that what reaches a client of
// the daemon says the same. Each run is one agent process playing a
// scenario with one fault slot every 1.2 s; the scenario's time zero is
// read from the agent's start-up line.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct FaultMatrixDaemonTests {
    struct Chip: Sendable { var address: UInt8; var id: String; var streams: [String] }
    static let chips = [
        Chip(address: 0x68, id: "mpu6050@0x68", streams: ["accelerometer", "deviceMotion"]),
        Chip(address: 0x69, id: "mpu6050@0x69", streams: ["accessoryMotion"]),
        Chip(address: 0x0D, id: "qmc5883l@0x0d", streams: ["magnetometer"]),
        Chip(address: 0x76, id: "bmp280@0x76", streams: ["altitude"]),
    ]

    /// One outage: a fault on a chip from `at` (s of scenario time); the
    /// chip answers again at `back`.
    struct Outage: Sendable, CustomStringConvertible {
        enum Kind: String, Sendable, CaseIterable { case reset, nack, disappear }
        var kind: Kind
        var chip: Int
        var at: Double
        var back: Double { kind == .reset ? at : at + (kind == .nack ? 0.4 : 0.5) }
        var json: String {
            let a = String(format: "0x%02X", Self.addresses[chip])
            switch kind {
            case .reset: return "{ kind: \"reset\", address: \(a), at_s: \(at) }"
            case .nack: return "{ kind: \"nack\", address: \(a), from_s: \(at), to_s: \(back) }"
            case .disappear: return "{ kind: \"disappear\", address: \(a), from_s: \(at), to_s: \(back) }"
            }
        }
        static let addresses: [UInt8] = [0x68, 0x69, 0x0D, 0x76]
        var description: String { "\(kind.rawValue) \(FaultMatrixDaemonTests.chips[chip].id) at \(at) s" }
    }

    /// One agent run: slots of outages (one or two at once), perhaps on a
    /// bus that fails every n-th transfer throughout.
    struct Run: Sendable, CustomStringConvertible {
        var name: String
        var slots: [[Outage]]
        var flaky: (every: Int, errno: String)?
        var duration: Double { 1.0 + Double(slots.count) * 1.2 + 1.0 }
        var description: String { name }
    }

    static let slot = 1.2
    static func slotTime(_ i: Int) -> Double { 1.0 + Double(i) * slot }

    static let runs: [Run] = {
        // Every kind on every chip alone, then pairs: two chips at once, and
        // two kinds on one chip (the second 0.2 s into the first).
        var singles: [[Outage]] = []
        for k in Outage.Kind.allCases { for c in 0..<4 { singles.append([Outage(kind: k, chip: c, at: 0)]) } }
        let pairs: [[Outage]] = [
            [Outage(kind: .reset, chip: 0, at: 0), Outage(kind: .disappear, chip: 2, at: 0.2)],
            [Outage(kind: .nack, chip: 3, at: 0), Outage(kind: .reset, chip: 1, at: 0.2)],
            [Outage(kind: .disappear, chip: 0, at: 0), Outage(kind: .nack, chip: 2, at: 0.2)],
            [Outage(kind: .reset, chip: 3, at: 0), Outage(kind: .disappear, chip: 1, at: 0.2)],
            [Outage(kind: .nack, chip: 0, at: 0), Outage(kind: .reset, chip: 0, at: 0.2)],
            [Outage(kind: .reset, chip: 2, at: 0), Outage(kind: .nack, chip: 2, at: 0.2)],
        ]
        func placed(_ slots: [[Outage]]) -> [[Outage]] {
            slots.enumerated().map { i, s in s.map { var o = $0; o.at += slotTime(i); return o } }
        }
        let onFlaky: [[Outage]] = [[Outage(kind: .reset, chip: 0, at: 0)], [Outage(kind: .disappear, chip: 2, at: 0)],
                                   [Outage(kind: .nack, chip: 3, at: 0)], [Outage(kind: .disappear, chip: 1, at: 0)]]
        return [
            Run(name: "each fault kind on each chip", slots: placed(singles)),
            Run(name: "two at once", slots: placed(pairs)),
            Run(name: "every 2nd transfer NACKed, plus outages", slots: placed(onFlaky), flaky: (2, "EREMOTEIO")),
            Run(name: "every 7th transfer times out, plus outages", slots: placed(onFlaky), flaky: (7, "ETIMEDOUT")),
        ]
    }()

    static func scenario(_ run: Run) -> String {
        var faults = run.slots.flatMap { $0.map(\.json) }
        if let f = run.flaky { faults.append("{ kind: \"error_every\", every: \(f.every), errno: \"\(f.errno)\" }") }
        return """
        { name: "fault-matrix", duration_s: \(run.duration + 30), seed: 5,
          board: { segments: [ { name: "turn", duration_s: \(run.duration + 30), rotate: { axis: "z", rate_dps: 15, ramp_s: 0.3 } } ] },
          accessory: { address: 0x69, segments: [ { name: "nod", duration_s: \(run.duration + 30),
                       oscillate: { axis: "x", amplitude_deg: 10, frequency_hz: 0.5, ramp_s: 0.3 } } ] },
          faults: [ \(faults.joined(separator: ",\n    ")) ] }
        """
    }

    static let board = """
    { name: "fault matrix board", bus: "simulated", simulation: { scenario: "scenario.json5" },
      chips: [ { kind: "mpu6050", address: 0x68 }, { kind: "bmp280", address: 0x76 },
               { kind: "qmc5883l", address: 0x0d, mounting: ["-y", "+x", "+z"] },
               { kind: "mpu6050", address: 0x69, role: "accessory", label: "head" } ] }
    """

    static func config(uid: UInt32) -> String {
        """
        { board: "board.json5",
          sensors: { mpu6050: { sample_rate_hz: 100 }, qmc5883l: { output_rate_hz: 100 } },
          service: { socket_path: "/tmp/edge-fault-matrix-unused.sock" },
          clients: [ { uid: \(uid), entitlements: ["motion", "altitude"] } ],
          faults: { failures_before_reset: 3, reprobe_interval_s: 0.05 } }
        """
    }

    @Test(.timeLimit(.minutes(3)), arguments: runs)
    func faultsReachClientsAsTheyHappenAndDataResume(_ run: Run) throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("faults")
        defer { DaemonPaths.removeTree(dir) }
        try Self.scenario(run).write(toFile: dir + "/scenario.json5", atomically: true, encoding: .utf8)
        try Self.board.write(toFile: dir + "/board.json5", atomically: true, encoding: .utf8)
        try Self.config(uid: getuid()).write(toFile: dir + "/edge-agent.json5", atomically: true, encoding: .utf8)
        let socketPath = dir + "/agent.sock"
        let agent = AgentProcess(
            arguments: ["run", "--config", dir + "/edge-agent.json5", "--socket", socketPath,
                        "--duration", String(run.duration + 5), "--quiet"],
            environment: AgentProcess.environment([:]), outputDirectory: dir)
        try agent.start()
        defer { agent.kill() }

        // Scenario time zero, from the start-up line.
        let startup = DaemonDeadline(seconds: 45)
        var zero: UInt64?
        while zero == nil && !startup.expired && agent.isRunning {
            if let line = agent.stdout.split(separator: "\n").first(where: { $0.contains("scenario time 0 s is CLOCK_MONOTONIC") }),
               let n = line.split(separator: " ").dropLast().last.flatMap({ UInt64($0) }) {
                zero = n
            } else { daemonPause(ms: 20) }
        }
        let t0 = try #require(zero, "no scenario start in the start-up output\n\(agent.transcript)")
        while !DaemonPaths.isSocket(socketPath) && !startup.expired { daemonPause(ms: 20) }
        let client = try DaemonClient(path: socketPath, name: "matrix client")
        _ = client.next(DaemonDeadline(seconds: 10))
        for s in ["accelerometer", "deviceMotion", "magnetometer", "altitude", "accessoryMotion"] {
            client.request(#"{"class":"subscribe","stream":"\#(s)","interval_s":0}"#)
        }
        // Everything until the scenario's last slot is over.
        let end = t0 + UInt64((run.duration - 0.5) * 1e9)
        let deadline = DaemonDeadline(seconds: run.duration + 30)
        while let m = client.next(deadline) {
            if let t = m.timestampNs, t >= end { break }
        }
        try #require(agent.isRunning, "the agent stopped\n\(agent.transcript)")
        check(run, client.received, zero: t0)
    }

    func check(_ run: Run, _ messages: [DaemonMessage], zero t0: UInt64) {
        func abs(_ s: Double) -> UInt64 { t0 + UInt64(s * 1e9) }
        let samples = messages.filter { $0.cls == "sample" }
        let events = messages.filter { $0.cls == "connection" }
        func times(_ stream: String) -> [UInt64] { samples.filter { $0.stream == stream }.compactMap(\.timestampNs) }

        // Per chip: its outages in this run, merged when they overlap.
        for (c, chip) in Self.chips.enumerated() {
            let mine = run.slots.flatMap { $0 }.filter { $0.chip == c }
            let chipEvents = events.filter { $0.string("device") == chip.id }
            // Group overlapping outages of this chip.
            var groups: [(begin: Double, back: Double, what: String)] = []
            for o in mine.sorted(by: { $0.at < $1.at }) {
                if let last = groups.last, o.at <= last.back + 0.35 {
                    groups[groups.count - 1] = (last.begin, max(last.back, o.back), last.what + " + " + o.description)
                } else {
                    groups.append((o.at, o.back, o.description))
                }
            }
            // A connection event carries the time of the loop tick that
            // noticed (its scheduled time), and a tick's transfers happen
            // after it starts - late, on a loaded machine. So the event of
            // a fault that began inside a tick is stamped up to that tick's
            // lateness before the fault: it is looked for after the chip's
            // previous back-event, from `lateTick` before the fault.
            let lateTick = 0.25
            var afterIndex = -1
            func relative(_ e: DaemonMessage) -> String {
                "\(e.bool("connected") == true ? "on" : "off") at \(String(format: "%.3f", Double(Int64(bitPattern: (e.timestampNs ?? 0) &- t0)) / 1e9)) s"
            }
            for g in groups {
                let answers = abs(g.back)
                for s in chip.streams {
                    let resumed = times(s).first { $0 >= answers }
                    #expect(resumed.map { $0 - answers <= 300_000_000 } == true,
                            "\(run): \(g.what): \(s) resumed \(resumed.map { "\(Double($0 - answers) / 1e6) ms" } ?? "never") after the chip answered again")
                }
                let offIndex = chipEvents.indices.first { i in
                    i > afterIndex && chipEvents[i].bool("connected") == false
                        && (chipEvents[i].timestampNs ?? 0) >= abs(g.begin - lateTick)
                }
                let off = offIndex.map { chipEvents[$0] }
                #expect(off != nil, "\(run): \(g.what): no event said it stopped: \(chipEvents.map(relative))")
                if let off {
                    #expect(off.string("reason")?.isEmpty == false, "\(run): \(g.what): the event says why: \(off)")
                    #expect(["degraded", "missing", "failed"].contains(off.string("state") ?? ""), "\(off)")
                }
                let onIndex = chipEvents.indices.first { i in
                    i > (offIndex ?? afterIndex) && chipEvents[i].bool("connected") == true
                        && (chipEvents[i].timestampNs ?? 0) >= answers
                }
                let on = onIndex.map { chipEvents[$0] }
                #expect(on.map { $0.timestampNs! - answers <= 300_000_000 } == true,
                        "\(run): \(g.what): no back-event within 300 ms: \(chipEvents.map(relative)) \(chipEvents.map(\.line))")
                if let onIndex { afterIndex = onIndex }
            }
            if run.flaky != nil {
                // A retry absorbs the flaky bus: outside this chip's outages
                // nothing is reported and nothing stops (no gap beyond a few periods).
                let windows = mine.map { (abs($0.at - 0.01), abs($0.back + 0.35)) }
                // (an outage's events may be stamped up to `lateTick` early)
                let eventWindows = mine.map { (abs($0.at - lateTick), abs($0.back + 0.35)) }
                func excused(_ a: UInt64, _ b: UInt64) -> Bool { windows.contains { w in b >= w.0 && a <= w.1 } }
                let stray = chipEvents.filter { e in !eventWindows.contains { w in (e.timestampNs ?? 0) >= w.0 && (e.timestampNs ?? 0) <= w.1 } }
                #expect(stray.isEmpty, "\(run): \(chip.id) reported outside its outages: \(stray.map(\.line))")
                for st in chip.streams {
                    let t = times(st).filter { $0 > abs(0.5) }
                    let limit: UInt64 = st == "altitude" ? 200_000_000 : 60_000_000
                    let gaps = zip(t.dropFirst(), t).filter { pair in pair.0 - pair.1 > limit && !excused(pair.1, pair.0) }
                    #expect(gaps.isEmpty, "\(run): \(st) gaps \(gaps.map { Double($0.0 - $0.1) / 1e6 }) ms outside the outages")
                }
            }
        }

        // Nothing stale, nothing non-finite.
        let fields = times("magnetometer")
        for s in ["accelerometer", "deviceMotion", "magnetometer", "altitude", "accessoryMotion"] {
            let t = times(s)
            #expect(!t.isEmpty, "\(run): no \(s) samples")
            #expect(zip(t.dropFirst(), t).allSatisfy { $0 > $1 }, "\(run): \(s) timestamps strictly increase")
        }
        var lastAccel: [[Double]] = []
        var checks = SampleChecks(stream: "\(run)")
        for m in samples {
            switch m.stream {
            case "deviceMotion":
                let t = m.timestampNs ?? 0
                let north = m.string("frame") != "xArbitraryZVertical"
                let fresh = fields.contains { $0 <= t && t - $0 <= 60_000_000 }
                checks.check(!north || fresh, "north frame only with a field captured within 60 ms", m)
                checks.check(north || m.isNull("heading_deg"), "no heading without north", m)
                checks.check(m.components("attitude", ["w", "x", "y", "z"]) != nil && m.components("gravity_mps2") != nil
                             && m.components("userAcceleration_mps2") != nil, "finite", m)
            case "accelerometer":
                guard let a = m.components("acceleration_mps2") else { checks.check(false, "finite acceleration", m); continue }
                lastAccel.append(a)
                if lastAccel.count > 3 { lastAccel.removeFirst() }
                checks.check(!(lastAccel.count == 3 && lastAccel.allSatisfy { $0 == lastAccel[0] }), "no frozen reading", m)
            case "magnetometer":
                checks.check(m.components("magneticField_uT") != nil, "finite field", m)
            case "altitude":
                checks.check([m.number("relativeAltitude_m"), m.number("pressure_pa")].allSatisfy { $0?.isFinite == true },
                             "finite altitude", m)
            default:
                break
            }
        }
        checks.report()
    }
}
