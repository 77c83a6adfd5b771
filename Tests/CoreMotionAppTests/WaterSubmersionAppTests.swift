import Testing
import CoreMotion
import CoreMotionTestSupport
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

final class SubmersionInbox: NSObject, CMWaterSubmersionManagerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [CMWaterSubmersionEvent] = []
    private var _measurements: [CMWaterSubmersionMeasurement] = []
    private var _temperatures: [CMWaterTemperature] = []
    private var _errors: [NSError] = []
    var events: [CMWaterSubmersionEvent] { lock.withLock { _events } }
    var measurements: [CMWaterSubmersionMeasurement] { lock.withLock { _measurements } }
    var temperatures: [CMWaterTemperature] { lock.withLock { _temperatures } }
    var errors: [NSError] { lock.withLock { _errors } }
    func manager(_ manager: CMWaterSubmersionManager, didUpdate event: CMWaterSubmersionEvent) { lock.withLock { _events.append(event) } }
    func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterSubmersionMeasurement) {
        lock.withLock { _measurements.append(measurement) }
    }
    func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterTemperature) {
        lock.withLock { _temperatures.append(measurement) }
    }
    func manager(_ manager: CMWaterSubmersionManager, errorOccurred error: any Error) { lock.withLock { _errors.append(error as NSError) } }
}

@Suite(.ownThread) struct WaterSubmersionAppTests {
    /// Without a submersion entitlement: `.denied`, no maximum depth, one
    /// CMErrorNotEntitled error and no data, as on the Watch.
    @Test func withoutTheEntitlementNotEntitledAndNoData() async throws {
        try await withAgent(.restricted) { _ in
            #expect(CMWaterSubmersionManager.waterSubmersionAvailable)   // the BMP280 feeds it
            #expect(CMWaterSubmersionManager.authorizationStatus == .denied)
            let manager = CMWaterSubmersionManager()
            #expect(manager.maximumDepth == nil)
            let inbox = SubmersionInbox()
            manager.delegate = inbox
            #expect(await eventually { !inbox.errors.isEmpty })
            let e = try #require(inbox.errors.first)
            #expect(e.domain == CMErrorDomain && e.code == Int(CMErrorNotEntitled.rawValue))
            #expect(inbox.events.isEmpty && inbox.measurements.isEmpty && inbox.temperatures.isEmpty)
            manager.delegate = nil
        }
    }

    /// With `submersion.shallow` on a board with an MS5837 out of water:
    /// authorized, 6 m maximum, an event `notSubmerged`, measurements at
    /// the surface with the surface pressure in kPa and the state only, no
    /// temperature. Apple, CMWaterSubmersionManagerDelegate
    /// (developer.apple.com/documentation/coremotion/cmwatersubmersionmanagerdelegate):
    /// "When the watch isn't submerged, your app receives event,
    /// measurement, and error messages. However, the measurement updates
    /// include only surface pressure and submersion state data. After
    /// submersion, the measurement updates include depth and water pressure
    /// data. The watch also begins receiving water temperature updates."
    @Test func shallowEntitlementOutOfWater() async throws {
        let started = Date()
        try await withAgent(.diver(full: false)) { _ in
            #expect(CMWaterSubmersionManager.waterSubmersionAvailable)
            #expect(CMWaterSubmersionManager.authorizationStatus == .authorized)
            let manager = CMWaterSubmersionManager()
            #expect(manager.maximumDepth == Measurement(value: 6, unit: UnitLength.meters))
            let inbox = SubmersionInbox()
            manager.delegate = inbox
            #expect(await eventually(seconds: 30) { inbox.measurements.count >= 3 }, "\(inbox.measurements.count) surface measurements")
            #expect(inbox.errors.isEmpty)
            #expect(inbox.events.first?.state == .notSubmerged)
            #expect(inbox.events.count == 1)
            let m = try #require(inbox.measurements.first)
            for m in inbox.measurements {
                #expect(m.submersionState == .notSubmerged)
                #expect(m.depth == nil && m.pressure == nil, "at the surface: \(String(describing: m.depth)) \(String(describing: m.pressure))")
                #expect(abs(m.surfacePressure.converted(to: .kilopascals).value - 101.325) < 0.2)
            }
            #expect(inbox.temperatures.isEmpty)
            // A wall-clock date of this run (not the boot clock, not 1970):
            // taken after the agent was started and not in the future (2 s
            // for mapping the sample's monotonic time to the wall clock).
            // No bound on the delivery latency, which a loaded machine
            // stretches: CI once saw 12 s between the sample and this line.
            #expect(m.date.timeIntervalSince(started) > -2 && m.date.timeIntervalSinceNow < 2,
                    "\(m.date) vs agent started at \(started)")
            manager.delegate = nil
        }
    }

    /// Apple declares all four delegate methods `optional`
    /// (developer.apple.com/documentation/coremotion/cmwatersubmersionmanagerdelegate/manager(_:didupdate:)-7nhjb:
    /// `optional func manager(_:didUpdate measurement:)`): a delegate with
    /// only that method compiles, and gets the surface measurements.
    @Test func aDelegateWithOneMethodGetsSurfaceMeasurements() async throws {
        final class DepthOnly: NSObject, CMWaterSubmersionManagerDelegate, @unchecked Sendable {
            private let lock = NSLock()
            private var _measurements: [CMWaterSubmersionMeasurement] = []
            var measurements: [CMWaterSubmersionMeasurement] { lock.withLock { _measurements } }
            func manager(_ manager: CMWaterSubmersionManager, didUpdate measurement: CMWaterSubmersionMeasurement) {
                lock.withLock { _measurements.append(measurement) }
            }
        }
        try await withAgent(.diver(full: true)) { _ in
            let manager = CMWaterSubmersionManager()
            let delegate = DepthOnly()
            manager.delegate = delegate
            #expect(await eventually(seconds: 30) { delegate.measurements.count >= 3 }, "\(delegate.measurements.count) measurements")
            manager.delegate = nil
            let stamps = delegate.measurements.map(\.date)
            #expect(zip(stamps.dropFirst(), stamps).allSatisfy { $0 > $1 }, "one per sample, in order: \(stamps)")
        }
    }

    @Test func fullEntitlementMaximumIsFortyMetres() async throws {
        try await withAgent(.diver(full: true)) { _ in
            #expect(CMWaterSubmersionManager.authorizationStatus == .authorized)
            #expect(CMWaterSubmersionManager().maximumDepth == Measurement(value: 40, unit: UnitLength.meters))
        }
    }

    // In the Swift 6 language mode only (the mode changes nothing for a
    // delegate; these two are on the agent tests' critical path).
    #if swift(>=6)
    /// Going down to 10 m with `submersion.shallow` (6 m maximum): depths
    /// on the way down, never beyond the maximum; past it the state says so
    /// and neither depth nor pressure is given (the agent withholds them
    /// for this client), as on the Watch.
    @Test func pastTheShallowMaximumTheDepthIsWithheld() async throws {
        try await withAgent(.diving(full: false)) { _ in
            let manager = CMWaterSubmersionManager()
            let inbox = SubmersionInbox()
            manager.delegate = inbox
            #expect(await eventually(seconds: 40) { inbox.measurements.contains { $0.submersionState == .pastMaxDepth } })
            manager.delegate = nil
            let all = inbox.measurements
            let past = all.filter { $0.submersionState == .pastMaxDepth }
            #expect(!past.isEmpty && past.allSatisfy { $0.depth == nil && $0.pressure == nil })
            let given = all.compactMap { $0.depth?.converted(to: .meters).value }
            #expect(given.contains { $0 > 3 }, "depths on the way down: \(given)")
            #expect(given.allSatisfy { $0 <= 6.5 }, "no depth beyond the maximum: \(given.max() ?? 0) m")
            #expect(inbox.events.contains { $0.state == .submerged })
            #expect(inbox.errors.isEmpty, "\(inbox.errors)")
            // copies and keyed archives keep every value (CodingAppTests):
            // a measurement with a depth, one past the maximum (none), one
            // at the surface if it came; the events; a temperature
            for m in [all.first { $0.depth != nil }, past.first] { try Coding.checkMeasurement(try #require(m)) }
            if let surface = all.first(where: { $0.submersionState == .notSubmerged }) { try Coding.checkMeasurement(surface) }
            for e in inbox.events { try Coding.checkSubmersionEvent(e) }
            try Coding.checkTemperature(try #require(inbox.temperatures.first))
        }
    }

    /// The same dive with `submersion.full` (40 m): the depth at 10 m, deep;
    /// then the agent crashes: the delegate is told (never a frozen depth
    /// that looks live).
    @Test func aFullEntitlementGetsTheDepthAndLearnsOfALostAgent() async throws {
        try await withAgent(.diving(full: true)) { agent in
            let manager = CMWaterSubmersionManager()
            let inbox = SubmersionInbox()
            manager.delegate = inbox
            #expect(await eventually(seconds: 40) {
                inbox.measurements.contains { m in
                    m.submersionState == .submergedDeep && m.depth.map { abs($0.converted(to: .meters).value - 10) < 0.2 } == true
                }
            }, "\(inbox.measurements.last.map { "\($0.submersionState) \(String(describing: $0.depth))" } ?? "nothing")")
            // Sea water at the measurement's depth: 101.325 kPa + 1025 kg/m³ ·
            // 9.80665 m/s² · d (≈ 201.85 kPa at 10 m). The measurement near 10
            // m, not the last: the dive goes on while the test looks; and the
            // expected pressure is that of its own depth, since on a loaded
            // machine fewer measurements arrive and the first within 0.2 m of
            // 10 m may be 9.83 m (2 kPa less than at 10 m: seen beside a load).
            let atTen = inbox.measurements.first { m in
                m.submersionState == .submergedDeep && m.depth.map { abs($0.converted(to: .meters).value - 10) < 0.2 } == true
            }
            let p = try #require(atTen?.pressure).converted(to: .kilopascals).value
            let d = try #require(atTen?.depth).converted(to: .meters).value
            #expect(abs(p - (101.325 + 1025 * 9.80665 * d / 1000)) < 1, "\(p) kPa at \(d) m")
            #expect(inbox.errors.isEmpty)
            agent.terminate(with: SIGKILL)
            #expect(await eventually(seconds: 10) { !inbox.errors.isEmpty }, "the delegate must learn of the loss")
            #expect(inbox.errors.first?.code == Int(CMErrorNotAvailable.rawValue))
            manager.delegate = nil
        }
    }
    #endif
}
