// Pressure altitude: the international barometric formula and its inverse.
// Pure functions, no state. Source: ICAO standard atmosphere troposphere
// (T0 = 288.15 K, lapse 6.5 K/km), as quoted in the BMP280 datasheet §3.6
// and Bosch's BMP180 datasheet: h = 44330.77 m · (1 − (p/p0)^0.190263).
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Conversion between static pressure (Pa) and pressure altitude (m above the
/// level where the pressure is `seaLevelPressure`).
public enum PressureAltitude {
    /// 101325 Pa: ICAO standard sea-level pressure, the default reference.
    public static let standardSeaLevelPressure: Double = 101_325
    /// Scale height factor of the formula, metres.
    public static let scale: Double = 44_330.77
    /// Exponent R·L/(g·M) of the formula.
    public static let exponent: Double = 0.190263

    /// Altitude in metres for `pressure` (Pa) given the reference pressure
    /// `seaLevelPressure` (Pa). Non-positive pressures give the formula's
    /// upper limit (`scale`); programmer errors are not trapped here.
    @inlinable
    public static func altitude(pressure: Double, seaLevelPressure: Double = standardSeaLevelPressure) -> Double {
        let ratio = pressure / seaLevelPressure
        return scale * (1 - (ratio > 0 ? pow(ratio, exponent) : 0))
    }

    /// Inverse: the pressure (Pa) at `altitude` metres.
    @inlinable
    public static func pressure(altitude: Double, seaLevelPressure: Double = standardSeaLevelPressure) -> Double {
        let base = 1 - altitude / scale
        return seaLevelPressure * (base > 0 ? pow(base, 1 / exponent) : 0)
    }

    /// ∂h/∂p in m/Pa at `pressure` (negative: height falls as pressure rises).
    /// About −0.083 m/Pa near sea level, −0.093 m/Pa at 1000 m.
    @inlinable
    public static func altitudePerPascal(pressure: Double, seaLevelPressure: Double = standardSeaLevelPressure) -> Double {
        let ratio = pressure / seaLevelPressure
        guard ratio > 0 else { return 0 }
        return -scale * exponent * pow(ratio, exponent - 1) / seaLevelPressure
    }

    /// ∂h/∂p0 in m/Pa: how much the altitude moves per pascal of error in
    /// the assumed sea-level pressure (positive, ≈ +0.083 m/Pa).
    @inlinable
    public static func altitudePerSeaLevelPascal(pressure: Double, seaLevelPressure: Double = standardSeaLevelPressure) -> Double {
        let ratio = pressure / seaLevelPressure
        guard ratio > 0 else { return 0 }
        return scale * exponent * pow(ratio, exponent) / seaLevelPressure
    }
}
