/// Core Motion's attitude reference frames (`CMAttitudeReferenceFrame`). In
/// all four Z points up (against gravity); they differ in where X points.
/// The raw value is the name, as on the wire and in configuration files.
public enum ReferenceFrame: String, CaseIterable, Sendable, Hashable, Codable, BitwiseCopyable {
    /// X in an arbitrary horizontal direction fixed at start; heading drifts
    /// with the gyroscope (gyroscope + accelerometer only).
    case xArbitraryZVertical
    /// As `xArbitraryZVertical`, but the magnetometer corrects the heading
    /// drift: X is where the arbitrary frame's X was when the first
    /// magnetometer sample arrived.
    case xArbitraryCorrectedZVertical
    /// X to magnetic north, Y west, Z up (NWU).
    case xMagneticNorthZVertical
    /// X to true (geographic) north, Y west, Z up: magnetic north turned by
    /// the magnetic declination.
    case xTrueNorthZVertical

    /// The frames that can be served with the given sensors: the arbitrary
    /// frame always; the corrected and magnetic-north frames with a
    /// magnetometer; true north when the declination is also known (given,
    /// or computed from a configured location).
    public static func available(magnetometer: Bool, declinationKnown: Bool) -> [ReferenceFrame] {
        guard magnetometer else { return [.xArbitraryZVertical] }
        var frames: [ReferenceFrame] = [.xArbitraryZVertical, .xArbitraryCorrectedZVertical, .xMagneticNorthZVertical]
        if declinationKnown { frames.append(.xTrueNorthZVertical) }
        return frames
    }

    /// True when the frame needs a magnetometer.
    @inlinable public var needsMagnetometer: Bool { self != .xArbitraryZVertical }

    /// True when X points to a north (magnetic or true), so a heading exists.
    @inlinable public var hasNorth: Bool { self == .xMagneticNorthZVertical || self == .xTrueNorthZVertical }

    /// The name as a static string (written to the wire without allocating).
    public var wireName: StaticString {
        switch self {
        case .xArbitraryZVertical: return "xArbitraryZVertical"
        case .xArbitraryCorrectedZVertical: return "xArbitraryCorrectedZVertical"
        case .xMagneticNorthZVertical: return "xMagneticNorthZVertical"
        case .xTrueNorthZVertical: return "xTrueNorthZVertical"
        }
    }
}
