import EdgeChips
import EdgeProtocol

/// What the engine must run for what its clients asked: which streams are
/// wanted, which devices must be awake, and the IMU rate. Pure: the same
/// demand always gives the same answer; no I/O, no clock.
///
/// The device each stream needs is a table (``StreamName/devices``), so a
/// new stage's streams declare their devices in one place.
public struct EngineDemand: Sendable, Equatable {
    /// Per ``StreamName/index``: someone subscribed, or the stream is always on.
    public var wanted: [Bool]
    /// Devices to keep awake.
    public var devices: Set<EngineDevice.Need>
    /// The rate the primary IMU should run at, Hz.
    public var imuRateHz: Double

    /// - Parameters:
    ///   - demand: fastest requested interval per stream, seconds (0: every sample).
    ///   - alwaysOn: streams kept running with no subscriber.
    ///   - configured: the configured MPU-6050 settings (its rate is the maximum).
    public init(demand: [StreamName: Double], alwaysOn: Set<StreamName>, configured: MPU6050Configuration) {
        wanted = StreamName.allCases.map { demand[$0] != nil || alwaysOn.contains($0) }
        var need = Set<EngineDevice.Need>()
        for s in StreamName.allCases where wanted[s.index] { need.formUnion(s.devices) }
        devices = need
        imuRateHz = Self.imuRate(demand: demand, alwaysOn: alwaysOn, configured: configured)
    }

    public func wants(_ s: StreamName) -> Bool { wanted[s.index] }

    /// Below this the attitude filter's gyro integration and the altitude
    /// filter's acceleration input degrade, Hz.
    public static var minimumIMURateHz: Double { 50 }

    /// The IMU rate for a demand: the lowest rate the divider can make from
    /// the configured one (configured/k) that is at least the fastest
    /// requested rate and ``minimumIMURateHz``, and of which every requested
    /// interval is a whole number of periods - so decimation by capture time
    /// delivers exactly the requested interval. Interval 0, an always-on
    /// stream, or no such rate: the configured rate.
    public static func imuRate(demand: [StreamName: Double], alwaysOn: Set<StreamName>,
                               configured: MPU6050Configuration) -> Double {
        let maxRate = configured.achievedSampleRateHz
        let streams: [StreamName] = [.accelerometer, .gyroscope, .deviceMotion, .accelerometerBatch, .deviceMotionBatch,
                                     .altitude, .absoluteAltitude]
        var intervals: [Double] = []
        var need = min(minimumIMURateHz, maxRate)
        for s in streams {
            if alwaysOn.contains(s) { return maxRate }
            guard let interval = demand[s] else { continue }
            if s == .altitude || s == .absoluteAltitude { continue }   // needs only the floor
            guard interval > 0, interval.isFinite else { return maxRate }
            intervals.append(interval)
            need = max(need, 1 / interval)
        }
        let base = configured.dlpf.gyroOutputRateHz
        let d0 = Int(configured.sampleRateDivider) + 1
        var k = 256 / d0
        while k >= 1 {
            let rate = base / Double(d0 * k)
            k -= 1
            guard rate >= need * (1 - 1e-9) else { continue }
            let whole = intervals.allSatisfy { i in
                let n = i * rate
                return n.rounded() >= 1 && abs(n - n.rounded()) <= 1e-6 * n
            }
            if whole { return rate }
        }
        return maxRate
    }
}

extension EngineDemand {
    /// Most IMU samples one tick drains from the FIFO (1024 bytes hold 73
    /// records; the driver resets it within three records of full).
    public static var maximumAutomaticBatch: Int { 32 }

    /// IMU samples per loop tick. `fixed` > 0: that. Otherwise automatic:
    /// as many samples as fit in one delivery interval (the service hands
    /// samples to clients no more often, so ticking faster only costs
    /// wake-ups), but a tick at least as often as a client wants the
    /// magnetometer (it has no FIFO: one field a tick), and one sample a
    /// tick when the loop wakes on the data-ready edge.
    /// - Parameters:
    ///   - rateHz: the IMU rate.
    ///   - deliveryInterval: ``EngineSettings/deliveryInterval``, s.
    ///   - demand: fastest requested interval per stream, s.
    ///   - magnetometerPeriod: the QMC5883L's output period, s.
    public static func imuBatch(fixed: Int, rateHz: Double, deliveryInterval: Double, demand: [StreamName: Double],
                                magnetometerPeriod: Double, dataReady: Bool) -> Int {
        if fixed > 0 { return fixed }
        guard !dataReady, rateHz.isFinite, rateHz > 0 else { return 1 }
        let period = 1 / rateHz
        var target = deliveryInterval.isFinite && deliveryInterval > 0 ? deliveryInterval : period
        // The magnetometer stream: as often as asked, but no faster than the chip makes fields.
        if let m = demand[.magnetometer] { target = min(target, max(m, magnetometerPeriod)) }
        let k = Int((target / period + 1e-9).rounded(.down))
        return min(max(1, k), maximumAutomaticBatch)
    }
}

extension EngineDevice {
    /// A device a stream needs awake.
    public enum Need: Sendable, Hashable { case imu, accessory, magnetometer, barometer }
}

extension StreamName {
    /// The devices this stream's samples come from: the inputs the stage
    /// that produces it needs (``StageTable``; device motion fuses the
    /// magnetometer, altitude the IMU's vertical acceleration).
    public var devices: Set<EngineDevice.Need> {
        Set(StageTable.needs[index].members.compactMap(\.need))
    }
}
