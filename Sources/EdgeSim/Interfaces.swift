// The contract between the world (scenarios) and the chip models.
// Scenario code produces PhysicalTruth; chip models turn it into register
// contents. Neither side imports the drivers (EdgeChips).
import EdgeBus
import EdgeValues

/// Which rigid body a chip is attached to: the board itself, or an accessory
/// (a second MPU-6050 at 0x69 worn on the head or a limb).
public enum SimBody: String, Sendable, Codable, CaseIterable {
    case board
    case accessory
}

/// The physical truth at one instant, in the frame of the body the chip sits
/// on (board frame: X right, Y forward, Z up out of the component side).
public struct PhysicalTruth: Sendable, Equatable {
    /// Specific force (what an accelerometer measures: a - g), m/s². At rest
    /// and level, (0, 0, +9.80665).
    public var specificForce: Vector3
    /// Angular rate, rad/s, body frame.
    public var angularRate: Vector3
    /// Magnetic flux density, µT, body frame (Earth's field plus disturbances).
    public var magneticField: Vector3
    /// Absolute pressure at the chip, Pa.
    public var pressure: Double
    /// Ambient temperature, °C.
    public var temperature: Double
    /// Relative humidity of the ambient air, % (0...100).
    public var relativeHumidity: Double

    public init(specificForce: Vector3, angularRate: Vector3, magneticField: Vector3,
                pressure: Double, temperature: Double, relativeHumidity: Double = 45) {
        self.specificForce = specificForce; self.angularRate = angularRate
        self.magneticField = magneticField; self.pressure = pressure; self.temperature = temperature
        self.relativeHumidity = relativeHumidity
    }

    /// Level and still at sea level, 20 °C, 45 % relative humidity, a mid-latitude northern field
    /// (48 µT, 60° inclination) with X pointing north.
    public static let restingLevel = PhysicalTruth(
        specificForce: Vector3(0, 0, 9.80665), angularRate: .zero,
        magneticField: Vector3(24.0, 0, -41.569219381653056), pressure: 101_325, temperature: 20)
}

/// What an inertial chip (the MPU-6050) measures of the world: the inertial
/// part of ``PhysicalTruth`` and the ambient temperature, same units and frame.
public struct InertialTruth: Sendable, Equatable {
    /// Specific force, m/s², body frame.
    public var specificForce: Vector3
    /// Angular rate, rad/s, body frame.
    public var angularRate: Vector3
    /// Ambient temperature, °C.
    public var temperature: Double

    public init(specificForce: Vector3, angularRate: Vector3, temperature: Double) {
        self.specificForce = specificForce; self.angularRate = angularRate; self.temperature = temperature
    }
}

/// What a magnetometer measures of the world: the field (µT, body frame)
/// and the ambient temperature (°C), as in ``PhysicalTruth``.
public struct FieldTruth: Sendable, Equatable {
    public var magneticField: Vector3
    public var temperature: Double

    public init(magneticField: Vector3, temperature: Double) {
        self.magneticField = magneticField; self.temperature = temperature
    }
}

/// Anything that can say what the world is like at a time: a scenario, or a
/// constant for tests. Times are the simulation clock's monotonic ns.
///
/// A chip asks only for what it measures (``inertialTruth(atNanoseconds:body:)``,
/// ``fieldTruth(atNanoseconds:body:)``): the IMU asks at its sample rate, and
/// a scenario's pressure (a power law) and field are not worth computing
/// there. Both default to the fields of ``truth(atNanoseconds:body:)``; a
/// source that implements them must give exactly those values.
public protocol TruthSource: AnyObject {
    func truth(atNanoseconds t: UInt64, body: SimBody) -> PhysicalTruth
    func inertialTruth(atNanoseconds t: UInt64, body: SimBody) -> InertialTruth
    func fieldTruth(atNanoseconds t: UInt64, body: SimBody) -> FieldTruth
}

extension TruthSource {
    public func inertialTruth(atNanoseconds t: UInt64, body: SimBody) -> InertialTruth {
        let w = truth(atNanoseconds: t, body: body)
        return InertialTruth(specificForce: w.specificForce, angularRate: w.angularRate, temperature: w.temperature)
    }

    public func fieldTruth(atNanoseconds t: UInt64, body: SimBody) -> FieldTruth {
        let w = truth(atNanoseconds: t, body: body)
        return FieldTruth(magneticField: w.magneticField, temperature: w.temperature)
    }
}

/// A world that never changes.
public final class ConstantTruth: TruthSource, @unchecked Sendable {
    public var value: PhysicalTruth
    public init(_ value: PhysicalTruth = .restingLevel) { self.value = value }
    public func truth(atNanoseconds t: UInt64, body: SimBody) -> PhysicalTruth { value }
}

/// A fault the simulated bus injects on schedule (part of a scenario).
/// Times are seconds since the simulation started.
public enum ScheduledFault: Sendable, Equatable {
    /// Transfers to `address` touching `register` (any register if nil) are not
    /// acknowledged (EREMOTEIO) between `from` and `to`.
    case nack(address: UInt8, register: UInt8?, from: Double, to: Double)
    /// Every `every`-th transfer to `address` (any device if nil) fails with `errno`.
    case errorEvery(address: UInt8?, every: Int, errno: Int32)
    /// The chip at `address` goes through a power-on reset at time `at`.
    case reset(address: UInt8, at: Double)
    /// The chip at `address` vanishes from the bus (ENXIO, as if unplugged)
    /// between `from` and `to`, and comes back power-on reset.
    case disappear(address: UInt8, from: Double, to: Double)
}
