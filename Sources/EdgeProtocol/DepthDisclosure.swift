/// Which pressures a client may be told, so that no stream reveals a depth
/// beyond what its submersion entitlement admits (issue 16: during a 12 m
/// dive a client holding only `altitude` read 171.8 kPa from the altitude
/// stream, 7 m of depth, past the 6 m `submersion.shallow` allows).
///
/// A pressure reveals a depth once the surface pressure and the water's
/// ρ·g are known: depth = (p − surface) / (ρ·g). Both are taken from the
/// submersion samples the agent publishes (their surface pressure, and
/// (p − surface) / depth once a depth over ``minimumDepthForDensity``
/// gives ρ·g to better than a percent); until then the standard
/// atmosphere and fresh water's ρ·g (the lowest of the agent's waters, so
/// the depth it implies is the largest: nothing deeper slips through).
///
/// Clients holding `submersion.full` may be told pressures down to
/// ``SubmersionSample/fullMaximumDepth`` (40 m); every other client down to
/// ``SubmersionSample/shallowMaximumDepth`` (6 m), as a `submersion.shallow`
/// client sees the submersion stream. Pure: no clock, no I/O.
public struct DepthDisclosure: Sendable, Hashable {
    /// Pressure at the surface, Pa.
    public private(set) var surfacePressure: Double = PressureAltitude.standardSeaLevelPressure
    /// ρ·g of the water, Pa/m.
    public private(set) var pressurePerMetre: Double = 997 * standardGravity
    /// Depths below this do not set ``pressurePerMetre`` (the ratio of two
    /// small numbers), m.
    public static let minimumDepthForDensity = 1.0

    public init() {}

    /// Learns the surface and the water from a submersion sample (one the
    /// engine made, before any capping).
    public mutating func update(_ s: SubmersionSample) {
        if s.surfacePressure.isFinite, s.surfacePressure > 0 { surfacePressure = s.surfacePressure }
        if s.depth.isFinite, s.pressure.isFinite, s.depth >= Self.minimumDepthForDensity {
            let perMetre = (s.pressure - surfacePressure) / s.depth
            // Between brackish-free fresh water at 0.99 and brine at 1.3 kg/L.
            if perMetre >= 990 * standardGravity, perMetre <= 1300 * standardGravity { pressurePerMetre = perMetre }
        }
    }

    /// The deepest a client may learn of, m.
    public static func maximumDepth(full: Bool) -> Double {
        full ? SubmersionSample.fullMaximumDepth : SubmersionSample.shallowMaximumDepth
    }

    /// Whether `pressure` (Pa) is deeper than `maximumDepth` (m) under water.
    public func isBeyond(pressure: Double, maximumDepth: Double) -> Bool {
        pressure.isFinite && (pressure - surfacePressure) / pressurePerMetre > maximumDepth
    }

    /// Whether a pressure altitude (m, the international barometric formula
    /// from the standard sea-level pressure) is a pressure deeper than
    /// `maximumDepth` (m) under water.
    public func isBeyond(altitude: Double, maximumDepth: Double) -> Bool {
        altitude.isFinite && isBeyond(pressure: PressureAltitude.pressure(altitude: altitude), maximumDepth: maximumDepth)
    }

    /// The altitude sample as a client with the given cap may see it:
    /// pressure and relative altitude withheld (NaN, null on the wire) when
    /// the pressure is beyond the cap.
    public func capped(_ a: AltitudeSample, maximumDepth: Double) -> AltitudeSample {
        guard isBeyond(pressure: a.pressure, maximumDepth: maximumDepth) else { return a }
        var s = a
        s.pressure = .nan
        s.relativeAltitude = .nan
        return s
    }

    /// The absolute-altitude sample as a client with the given cap may see
    /// it: the altitude is a pressure altitude (the international barometric
    /// formula), so below the standard atmosphere's sea-level reference it
    /// reveals the pressure; withheld (NaN) beyond the cap. The agent's own
    /// sea-level reference may differ from the standard one by a few kPa,
    /// a few tenths of a metre of water.
    public func capped(_ a: AbsoluteAltitudeSample, maximumDepth: Double) -> AbsoluteAltitudeSample {
        guard isBeyond(altitude: a.altitude, maximumDepth: maximumDepth) else { return a }
        var s = a
        s.altitude = .nan
        return s
    }
}
