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

extension EngineDevice {
    /// A device a stream needs awake.
    public enum Need: Sendable, Hashable { case imu, accessory, magnetometer, barometer }
}

extension StreamName {
    /// The devices this stream's samples come from. Device motion fuses the
    /// magnetometer; altitude fuses the IMU's vertical acceleration.
    public var devices: Set<EngineDevice.Need> {
        switch self {
        case .accelerometer, .gyroscope, .accelerometerBatch: return [.imu]
        case .deviceMotion, .deviceMotionBatch: return [.imu, .magnetometer]
        case .magnetometer: return [.magnetometer]
        case .accessoryMotion, .accessoryConnection: return [.accessory]
        case .altitude, .absoluteAltitude: return [.barometer, .imu]
        case .submersion: return [.barometer]
        }
    }
}
