import Testing
import CoreMotion
import CoreMotionTestSupport

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

@Suite struct WaterSubmersionAppTests {
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
    /// authorized, 6 m maximum, an event `notSubmerged`, a measurement at
    /// the surface in Apple's units (m, kPa) and a temperature in °C.
    @Test func shallowEntitlementOutOfWater() async throws {
        try await withAgent(.diver(full: false)) { _ in
            #expect(CMWaterSubmersionManager.waterSubmersionAvailable)
            #expect(CMWaterSubmersionManager.authorizationStatus == .authorized)
            let manager = CMWaterSubmersionManager()
            #expect(manager.maximumDepth == Measurement(value: 6, unit: UnitLength.meters))
            let inbox = SubmersionInbox()
            manager.delegate = inbox
            #expect(await eventually { !inbox.measurements.isEmpty && !inbox.temperatures.isEmpty })
            #expect(inbox.errors.isEmpty)
            #expect(inbox.events.first?.state == .notSubmerged)
            let m = try #require(inbox.measurements.first)
            #expect(m.submersionState == .notSubmerged)
            let depth = try #require(m.depth).converted(to: .meters).value
            #expect(abs(depth) < 0.05)
            let kPa = try #require(m.pressure).converted(to: .kilopascals).value
            #expect(abs(kPa - 101.325) < 0.2)
            #expect(abs(m.surfacePressure.converted(to: .kilopascals).value - 101.325) < 0.2)
            #expect(abs(m.date.timeIntervalSinceNow) < 10)
            let t = try #require(inbox.temperatures.first)
            #expect(t.temperature.unit == UnitTemperature.celsius && t.temperatureUncertainty.value > 0)
            manager.delegate = nil
        }
    }

    @Test func fullEntitlementMaximumIsFortyMetres() async throws {
        try await withAgent(.diver(full: true)) { _ in
            #expect(CMWaterSubmersionManager.authorizationStatus == .authorized)
            #expect(CMWaterSubmersionManager().maximumDepth == Measurement(value: 40, unit: UnitLength.meters))
        }
    }
}
