import Testing
import Foundation
import EdgeBus
import EdgeChips
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// Every fault kind on every chip of the simulated board (primary IMU 0x68,
/// accessory IMU 0x69, QMC5883L 0x0D, BMP280 0x76), alone and two at once,
/// while the board turns, on a virtual clock. For each: the engine never
/// stalls; the affected device's data resume within 300 ms of the chip
/// answering again; events say it stopped and came back; nothing old or
/// non-finite is presented as fresh (no north frame without a current
/// field, timestamps strictly increase, no repeated readings).
///
/// The same matrix runs through a real `edge-agent run` and a socket client
/// in the CLI tests (FaultMatrixDaemonTests); this one checks every pair,
/// and it is where the matrix's time bounds live: on a virtual clock they
/// measure the engine, not the machine, so the daemon test checks only
/// what a loaded (or sanitized) machine cannot change - what clients are
/// told and that data resume. The daemon runs the engine's defaults here
/// (MPU-6050 and QMC5883L at 100 Hz, one IMU sample a tick, 3 failures
/// before a reset, probes every 50 ms).
@Suite struct FaultMatrixTests {
    /// The board turns about Z (20 °/s, tilted 10° about X) for the whole run.
    static let scenario = """
    { name: "fault-matrix", duration_s: 10, seed: 3,
      board: { segments: [ { name: "tilt", duration_s: 0.5, rotate: { axis: "x", rate_dps: 20, ramp_s: 0.2 } },
                           { name: "turn", duration_s: 9.5, rotate: { axis: "z", rate_dps: 20, ramp_s: 0.2 } } ] },
      accessory: { address: 0x69, segments: [ { name: "nod", duration_s: 10, oscillate: { axis: "x", amplitude_deg: 15, frequency_hz: 1, ramp_s: 0.2 } } ] } }
    """
    static let seconds = 3.6
    static let chips: [(address: UInt8, id: String)] = [(0x68, "mpu6050@0x68"), (0x69, "mpu6050@0x69"),
                                                         (0x0D, "qmc5883l@0x0d"), (0x76, "bmp280@0x76")]

    /// A fault and when the chip answers again (s since the bus started).
    struct Fault: Sendable, CustomStringConvertible {
        var fault: ScheduledFault
        var address: UInt8?
        /// When the fault begins, s.
        var begins: Double
        /// When the chip answers again, s (nil: it never stops answering).
        var answersAgain: Double?
        var description: String { "\(fault)" }
    }

    /// The outages on one chip, beginning at `t`.
    static func outages(_ a: UInt8, at t: Double) -> [Fault] {
        [Fault(fault: .reset(address: a, at: t), address: a, begins: t, answersAgain: t),
         Fault(fault: .nack(address: a, register: nil, from: t, to: t + 0.4), address: a, begins: t, answersAgain: t + 0.4),
         Fault(fault: .disappear(address: a, from: t, to: t + 0.5), address: a, begins: t, answersAgain: t + 0.5)]
    }

    /// Faults that a retry absorbs: nothing may stop.
    static func flaky(_ a: UInt8?) -> [Fault] {
        [Fault(fault: .errorEvery(address: a, every: 2, errno: EREMOTEIO), address: a, begins: 0, answersAgain: nil),
         Fault(fault: .errorEvery(address: a, every: 7, errno: ETIMEDOUT), address: a, begins: 0, answersAgain: nil)]
    }

    static let singles: [[Fault]] = chips.flatMap { outages($0.address, at: 1.5) + flaky($0.address) }.map { [$0] }
        + flaky(nil).map { [$0] }

    /// Two at once: every pair of outages (the second 0.2 s after the first,
    /// overlapping it), and every outage on a flaky bus.
    static let pairs: [[Fault]] = {
        var out: [[Fault]] = []
        let first = chips.flatMap { c in outages(c.address, at: 1.5).indices.map { (c.address, $0) } }
        for (i, a) in first.enumerated() {
            for b in first[(i + 1)...] {
                out.append([outages(a.0, at: 1.5)[a.1], outages(b.0, at: 1.7)[b.1]])
            }
            // On a bus that fails every 2nd or every 7th transfer throughout.
            out.append([outages(a.0, at: 1.5)[a.1], flaky(nil)[0]])
            out.append([outages(a.0, at: 1.5)[a.1], flaky(nil)[1]])
        }
        return out
    }()

    @Test(arguments: singles) func oneFault(_ faults: [Fault]) throws { try check(faults) }
    @Test(arguments: pairs) func twoFaults(_ faults: [Fault]) throws { try check(faults) }

    /// The other chips (issue 17): the HMC5883L at 0x1E and the BME280 at
    /// 0x76 in place of the QMC5883L and the BMP280, each run by its row of
    /// the engine's ChipTable. Every fault on each alone, every pair of
    /// outages across the two, and each outage on a flaky bus.
    static let otherChips: [(address: UInt8, id: String)] = [(0x1E, "hmc5883l@0x1e"), (0x76, "bme280@0x76")]
    static let otherSingles: [[Fault]] = otherChips.flatMap { outages($0.address, at: 1.5) + flaky($0.address) }.map { [$0] }
    static let otherPairs: [[Fault]] = {
        var out: [[Fault]] = []
        for a in outages(0x1E, at: 1.5) { for b in outages(0x76, at: 1.7) { out.append([a, b]) } }
        for c in otherChips { for o in outages(c.address, at: 1.5) { out += flaky(nil).map { [o, $0] } } }
        return out
    }()
    @Test(arguments: otherSingles + otherPairs) func otherChipsFaults(_ faults: [Fault]) throws {
        try check(faults, chips: Self.otherChips, otherChips: true)
    }

    func check(_ faults: [Fault], chips: [(address: UInt8, id: String)] = Self.chips, otherChips: Bool = false) throws {
        let rig = try Rig(faults: faults.map(\.fault), accessory: !otherChips, scenarioText: Self.scenario, otherChips: otherChips)
        rig.hub.start()
        rig.run(seconds: Self.seconds)
        let bus = rig.board.bus
        let what = faults.map(\.description).joined(separator: " + ")

        // The loop never stalled.
        #expect(rig.loop.statistics.overruns == 0, "\(what): loop overruns")

        // Per chip: its outages (overlapping ones merged: the chip answers
        // again when the last ends) or, if only flaky, no outage at all.
        for chip in chips {
            let mine = faults.filter { $0.address == chip.address || $0.address == nil }
            guard !mine.isEmpty else { continue }
            let id = chip.id
            let events = rig.sink.events.filter { $0.deviceID == id }
            let streams = Self.streams(of: chip.address) + (otherChips && chip.address == 0x76 ? [.humidity] : [])
            let outages = mine.filter { $0.answersAgain != nil }
            guard let back = outages.compactMap(\.answersAgain).max(), let start = outages.map(\.begins).min() else {
                // A retry absorbs it: no event, no gap.
                #expect(events.isEmpty, "\(what): \(id) events \(events.map(\.state))")
                for s in streams { expectNoGap(rig, s, what: what) }
                continue
            }
            let answers = bus.absolute(back)
            for s in streams {
                let t = rig.samples(s).map(\.timestampNs)
                let resumed = t.first { $0 >= answers }
                #expect(resumed.map { $0 - answers <= 300_000_000 } == true,
                        "\(what): \(s) resumed \(resumed.map { "\(Double($0 - answers) / 1e6) ms" } ?? "never") after \(id) answered again")
            }
            let begins = bus.absolute(start)
            let off = events.first { !$0.connected && $0.timestampNs >= begins }
            #expect(off != nil, "\(what): no event said \(id) stopped: \(events.map(\.state))")
            if let off {
                #expect(off.reason?.isEmpty == false, "\(what): the event says why")
                #expect(off.timestampNs - begins <= 200_000_000, "\(what): \(id) stop noticed after \(Double(off.timestampNs - begins) / 1e6) ms")
            }
            #expect(events.last?.connected == true, "\(what): the last event of \(id) says it is back: \(events.map(\.state))")
            if let on = events.last(where: \.connected) {
                #expect(on.timestampNs <= answers + 300_000_000, "\(what): back-event \(Double(on.timestampNs - answers) / 1e6) ms after")
            }
            if mine.contains(where: { $0.answersAgain == nil }) {
                // On a flaky bus a retry absorbs the failures outside the
                // outage: no event and no gap beyond four periods there.
                let from = begins, to = answers + 350_000_000
                let stray = events.filter { $0.timestampNs < from || $0.timestampNs > to }
                #expect(stray.isEmpty, "\(what): \(id) reported outside its outage: \(stray.map { "\($0.state) at \($0.timestampNs)" })")
                for s in streams { expectNoGap(rig, s, what: what, except: (from, to)) }
            }
        }
        // Everything is back at the end.
        for d in rig.sink.devices { #expect(d.state == .present, "\(what): \(d.id) ends \(d.state) (\(d.reason ?? ""))") }
        expectNothingStaleOrNonFinite(rig, what: what)
    }

    static func streams(of address: UInt8) -> [StreamName] {
        switch address {
        case 0x68: return [.accelerometer, .deviceMotion]
        case 0x69: return [.accessoryMotion]
        case 0x0D, 0x1E: return [.magnetometer]
        default: return [.altitude]
        }
    }

    /// No gap longer than four expected periods of the stream (except one
    /// that overlaps `except`, ns: an outage).
    func expectNoGap(_ rig: Rig, _ s: StreamName, what: String, except: (UInt64, UInt64)? = nil) {
        let t = rig.samples(s).map(\.timestampNs).filter { $0 > rig.board.bus.absolute(0.3) }
        let limit: UInt64 = s == .altitude || s == .humidity ? 4 * 45_000_000 : 4 * 10_000_000
        let worst = zip(t.dropFirst(), t).filter { pair in except.map { pair.0 < $0.0 || pair.1 > $0.1 } ?? true }
            .map { $0 - $1 }.max() ?? 0
        #expect(worst <= limit, "\(what): \(s) gap \(Double(worst) / 1e6) ms")
        #expect(t.count > 10, "\(what): \(s) has samples")
    }

    func expectNothingStaleOrNonFinite(_ rig: Rig, what: String) {
        for stream in StreamName.allCases where stream.carriesSamples {
            let t = rig.samples(stream).map(\.timestampNs)
            #expect(zip(t.dropFirst(), t).allSatisfy { $0 > $1 }, "\(what): \(stream) timestamps strictly increase")
        }
        let fields = rig.samples(.magnetometer).map(\.timestampNs)
        var lastAccel: [Vector3] = []
        for sample in rig.sink.samples {
            switch sample {
            case .deviceMotion(let m), .accessoryMotion(let m):
                let v = [m.attitude.w, m.attitude.x, m.attitude.y, m.attitude.z, m.gravity.x, m.gravity.y, m.gravity.z,
                         m.userAcceleration.x, m.userAcceleration.y, m.userAcceleration.z, m.rotationRate.x,
                         m.rotationRate.y, m.rotationRate.z, m.magneticField.x, m.magneticField.y, m.magneticField.z]
                #expect(v.allSatisfy { $0.isFinite }, "\(what): non-finite device motion")
                if m.referenceFrame != .xArbitraryZVertical {
                    // A north frame only with a field captured within a few periods before it.
                    let fresh = fields.contains { $0 <= m.timestampNs && m.timestampNs - $0 <= 60_000_000 }
                    #expect(fresh, "\(what): \(m.referenceFrame) at \(m.timestampNs) without a current field")
                } else {
                    #expect(m.headingDeg == nil && m.magneticField == .zero && m.magneticFieldAccuracy == .uncalibrated)
                }
            case .accelerometer(let a):
                lastAccel.append(a.acceleration)
                if lastAccel.count > 3 { lastAccel.removeFirst() }
                #expect(!(lastAccel.count == 3 && lastAccel.allSatisfy { $0 == lastAccel[0] }),
                        "\(what): the same acceleration three times: a frozen reading")
                #expect(a.acceleration.x.isFinite && a.acceleration.y.isFinite && a.acceleration.z.isFinite)
            case .altitude(let a):
                #expect(a.relativeAltitude.isFinite && a.pressure.isFinite && a.temperature.isFinite)
            case .magnetometer(let m):
                #expect(m.magneticField.x.isFinite && m.magneticField.y.isFinite && m.magneticField.z.isFinite)
            default:
                break
            }
        }
    }
}
