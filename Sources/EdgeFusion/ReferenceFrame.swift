@_exported import EdgeValues

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
