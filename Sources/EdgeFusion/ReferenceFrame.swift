/// Core Motion's attitude reference frames (`CMAttitudeReferenceFrame`). In
/// all four Z points up (against gravity); they differ in where X points.
public enum ReferenceFrame: String, CaseIterable, Sendable, Codable {
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
    public var needsMagnetometer: Bool { self != .xArbitraryZVertical }
}

extension AttitudeFilter {
    /// The frames this filter can serve: with magnetometer samples seen, and
    /// with the declination configured.
    public var availableReferenceFrames: [ReferenceFrame] {
        ReferenceFrame.available(magnetometer: state.magSamples > 0, declinationKnown: settings.declination != nil)
    }

    /// The yaw (rad, about +Z) that turns the filter's 6D frame into `frame`.
    ///
    /// The 9D frame of the filter is ENU = 6D turned by `delta`. NWU is ENU
    /// turned by −90° (north, formerly +Y, becomes +X). True north: a vector
    /// towards magnetic north lies at azimuth D east of true north, i.e. at
    /// yaw −D in true NWU, so true NWU is magnetic NWU turned by −D.
    @inlinable public func yawOffset(to frame: ReferenceFrame) -> Double {
        switch frame {
        case .xArbitraryZVertical: 0
        case .xArbitraryCorrectedZVertical: state.delta - state.correctedFrameOffset
        case .xMagneticNorthZVertical: state.delta - Double.pi / 2
        case .xTrueNorthZVertical: state.delta - Double.pi / 2 - coefficients.declination
        }
    }

    /// The sensor-to-earth orientation in `frame` (`v_frame = q.rotate(v_sensor)`).
    /// Without magnetometer samples the heading is the 6D one (arbitrary);
    /// true north uses `settings.declination` (0 when not configured).
    @inlinable @inline(__always) public func quaternion(in frame: ReferenceFrame) -> Quaternion {
        let q6 = quaternion6D
        switch frame {
        case .xArbitraryZVertical:
            return q6
        case .xMagneticNorthZVertical:
            // turn by delta − 90°: half angles cos(δ/2 − 45°), sin(δ/2 − 45°)
            let r = 0.5.squareRoot()
            let c = r * (state.deltaCos + state.deltaSin), s = r * (state.deltaSin - state.deltaCos)
            return q6.turnedAboutVertical(cosHalf: c, sinHalf: s)
        default:
            let h = yawOffset(to: frame) / 2
            return q6.turnedAboutVertical(cosHalf: mathCos(h), sinHalf: mathSin(h))
        }
    }
}
