// Pressure to depth, as Core Motion's CMWaterSubmersionManager reports it:
// metres below the surface, positive downward. Pure: no I/O, no clock.
import EdgeValues

/// The water above the sensor.
public enum WaterType: Sendable, Equatable, Hashable {
    /// Fresh water, 997 kg/m³ (pure water at 25 °C).
    case fresh
    /// EN 13319 (diving accessories: depth gauges) conventional density,
    /// 1019.716 kg/m³: with standard gravity, 10 m of depth per bar.
    case en13319
    /// Sea water, 1025 kg/m³ (a typical near-surface value).
    case salt
    /// A density given in kg/m³.
    case density(Double)
    /// The TEOS-10 relation between sea pressure and height (GSW
    /// `gsw_z_from_p`): compressible sea water at Standard Ocean Salinity and
    /// 0 °C Conservative Temperature, with latitude-dependent gravity and its
    /// change with depth. Needs a latitude.
    case teos10

    /// Density in kg/m³ for the hydrostatic types; nil for `teos10`.
    public var densityKilogramsPerCubicMetre: Double? {
        switch self {
        case .fresh: 997
        case .en13319: 1019.716
        case .salt: 1025
        case .density(let d): d
        case .teos10: nil
        }
    }

    /// Parses `fresh`, `en13319`, `salt`, `teos10` or a density in kg/m³
    /// (500...2000); nil otherwise.
    public init?(name: String) {
        switch name.lowercased() {
        case "fresh": self = .fresh
        case "en13319": self = .en13319
        case "salt": self = .salt
        case "teos10": self = .teos10
        default:
            guard let d = Double(name), d.isFinite, d >= 500, d <= 2000 else { return nil }
            self = .density(d)
        }
    }

    public var name: String {
        switch self {
        case .fresh: "fresh"
        case .en13319: "en13319"
        case .salt: "salt"
        case .teos10: "teos10"
        case .density(let d): "\(d)"
        }
    }
}

/// Which gravity the hydrostatic modes use.
public enum GravityModel: Sendable, Equatable {
    /// 9.80665 m/s² (``standardGravity``).
    case standard
    /// Normal gravity on the WGS 84 ellipsoid at a geodetic latitude
    /// (Somigliana's closed formula; NIMA TR8350.2, 3rd ed., §4.2.1, eq. 4-1).
    case normal(latitudeDegrees: Double)

    public var metresPerSecondSquared: Double {
        switch self {
        case .standard: standardGravity
        case .normal(let lat): normalGravity(latitudeDegrees: lat)
        }
    }
}

/// WGS 84 normal gravity at the ellipsoid surface, m/s²:
/// γ = γe (1 + k sin²φ) / √(1 − e² sin²φ), γe = 9.7803253359 m/s²,
/// k = 0.00193185265241, e² = 0.00669437999013 (NIMA TR8350.2 Table 3.4).
public func normalGravity(latitudeDegrees: Double) -> Double {
    let s = sinDegrees(latitudeDegrees)
    let s2 = s * s
    return 9.7803253359 * (1 + 0.00193185265241 * s2) / (1 - 0.00669437999013 * s2).squareRoot()
}

func sinDegrees(_ deg: Double) -> Double {
    // sin of degrees with exact values at multiples of 90 (no Foundation).
    let r = deg * .pi / 180
    return mathSin(r)
}

/// Settings of the depth model.
public struct DepthSettings: Sendable, Equatable {
    public var water: WaterType
    public var gravity: GravityModel
    /// Latitude for `teos10` (and for `gravity: .normal`), degrees north.
    public var latitudeDegrees: Double?

    public init(water: WaterType = .salt, gravity: GravityModel = .standard, latitudeDegrees: Double? = nil) {
        self.water = water; self.gravity = gravity; self.latitudeDegrees = latitudeDegrees
    }
}

/// Why a depth cannot be computed from these settings.
public enum DepthModelError: Error, Sendable, Equatable, CustomStringConvertible {
    case teos10NeedsLatitude
    case latitudeOutOfRange(Double)
    case notFinite(String)

    public var description: String {
        switch self {
        case .teos10NeedsLatitude: "water type teos10 needs a latitude (--latitude DEG, −90…90)"
        case .latitudeOutOfRange(let l): "latitude \(l)° is outside −90…90"
        case .notFinite(let what): "\(what) is not a finite number"
        }
    }
}

/// Pressure → depth.
public enum WaterDepth {
    /// Depth below the surface, m, positive downward, for absolute pressure
    /// `pressurePascals` under surface (air) pressure `surfacePascals`.
    /// Hydrostatic: h = (p − p_surface) / (ρ g). TEOS-10: h = −z(p_sea, φ)
    /// with p_sea = p − p_surface in dbar (``Teos10/heightFromSeaPressure``).
    /// Above the surface (p < p_surface) the depth is negative.
    public static func depth(pressurePascals: Double, surfacePascals: Double,
                             _ s: DepthSettings) throws(DepthModelError) -> Double {
        guard pressurePascals.isFinite else { throw .notFinite("pressure") }
        guard surfacePascals.isFinite else { throw .notFinite("surface pressure") }
        if let lat = s.latitudeDegrees, !(lat >= -90 && lat <= 90) { throw .latitudeOutOfRange(lat) }
        let sea = pressurePascals - surfacePascals
        if let rho = s.water.densityKilogramsPerCubicMetre {
            return sea / (rho * s.gravity.metresPerSecondSquared)
        }
        guard let lat = s.latitudeDegrees else { throw .teos10NeedsLatitude }
        return -Teos10.heightFromSeaPressure(decibars: sea / 1e4, latitudeDegrees: lat)
    }

    /// The pressure difference a depth means (inverse of the hydrostatic
    /// modes; TEOS-10 by Newton iteration on ``depth``).
    public static func seaPressure(depthMetres: Double, _ s: DepthSettings) throws(DepthModelError) -> Double {
        if let rho = s.water.densityKilogramsPerCubicMetre { return depthMetres * rho * s.gravity.metresPerSecondSquared }
        guard let lat = s.latitudeDegrees else { throw .teos10NeedsLatitude }
        var p = depthMetres * 1025 * standardGravity
        for _ in 0..<20 {
            let h = -Teos10.heightFromSeaPressure(decibars: p / 1e4, latitudeDegrees: lat)
            let dh = -Teos10.heightFromSeaPressure(decibars: (p + 1) / 1e4, latitudeDegrees: lat) - h
            let step = (depthMetres - h) / dh
            p += step
            if abs(step) < 1e-9 { break }
        }
        return p
    }
}

/// TEOS-10's height from sea pressure, as the GSW toolbox's
/// `gsw_z_from_p(p, lat)` computes it (geostrophic dynamic height and sea
/// surface geopotential zero). Sources: IOC, SCOR and IAPSO (2010), "The
/// international thermodynamic equation of seawater – 2010", Manuals and
/// Guides No. 56, UNESCO (the TEOS-10 Manual), §3.32 and appendix A.30 (the
/// height–pressure relation with gravity g(φ, z) = g(φ)(1 − γ z)); McDougall
/// & Barker (2011), "Getting started with TEOS-10 and the Gibbs Seawater
/// (GSW) Oceanographic Toolbox", SCOR/IAPSO WG127; the enthalpy polynomial
/// of Roquet et al. (2015), Ocean Modelling 90, 29–43. The coefficients are
/// the GSW-C library's (BSD 3-clause licence, THIRD_PARTY_NOTICES).
public enum Teos10 {
    /// γ of gravity's decrease with height, 1/m (GSW's `gamma`).
    static let gamma = 2.26e-7

    /// Enthalpy at Standard Ocean Salinity and Conservative Temperature 0 °C
    /// minus its surface value, J/kg, for sea pressure `p` in dbar
    /// (GSW `gsw_enthalpy_sso_0`).
    public static func enthalpySSO0(decibars p: Double) -> Double {
        let z = p * 1e-4
        let h006 = -2.1078768810e-9, h007 = 2.8019291329e-10
        let dyn = z * (9.726613854843870e-4 + z * (-2.252956605630465e-5
            + z * (2.376909655387404e-6 + z * (-1.664294869986011e-7
            + z * (-5.988108894465758e-9 + z * (h006 + h007 * z))))))
        return dyn * 1e4 * 1e4   // db2Pa · 1e4
    }

    /// Height z, m (negative below the sea surface), for sea pressure `p`
    /// (dbar) at latitude `lat` (degrees): the root of
    /// g(φ) z − ½ γ g(φ) z² ... = −h(p), i.e. z = −2c / (b + √(b² − 4ac)).
    public static func heightFromSeaPressure(decibars p: Double, latitudeDegrees lat: Double) -> Double {
        let x = sinDegrees(lat)
        let sin2 = x * x
        let b = 9.780327 * (1 + (5.2792e-3 + 2.32e-5 * sin2) * sin2)
        let a = -0.5 * gamma * b
        let c = enthalpySSO0(decibars: p)
        return -2 * c / (b + (b * b - 4 * a * c).squareRoot())
    }
}
