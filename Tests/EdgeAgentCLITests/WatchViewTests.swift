#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import EdgeAgentCLI

/// Core Motion's Euler angles to a quaternion: Rz(yaw) · Rx(pitch) · Ry(roll),
/// degrees (the convention `WatchMotion` decodes; EdgeSim's scenarios use it too).
func quaternion(rollDeg: Double, pitchDeg: Double, yawDeg: Double) -> (w: Double, x: Double, y: Double, z: Double) {
    let r = rollDeg * .pi / 360, p = pitchDeg * .pi / 360, y = yawDeg * .pi / 360
    // qz = (cos y, 0, 0, sin y), qx = (cos p, sin p, 0, 0), qy = (cos r, 0, sin r, 0)
    let (cz, sz, cx, sx, cy, sy) = (cos(y), sin(y), cos(p), sin(p), cos(r), sin(r))
    // qz * qx
    let a = (w: cz * cx, x: cz * sx, y: sz * sx, z: sz * cx)
    // (qz * qx) * qy
    return (w: a.w * cy - a.y * sy, x: a.x * cy - a.z * sy, y: a.w * sy + a.y * cy, z: a.z * cy + a.x * sy)
}

func motion(rollDeg: Double, pitchDeg: Double, yawDeg: Double, timestampNs: UInt64 = 5_000_000_000) -> WatchMotion {
    let q = quaternion(rollDeg: rollDeg, pitchDeg: pitchDeg, yawDeg: yawDeg)
    return WatchMotion(timestampNs: timestampNs, w: q.w, x: q.x, y: q.y, z: q.z,
                       rotationRate: (0.001, -0.002, 0.52), userAcceleration: (0.012, -0.004, 0.031),
                       headingDeg: 330, frame: "xMagneticNorthZVertical", magneticAccuracy: "high")
}

/// A state with every section filled.
func fullState() -> WatchState {
    var s = WatchState(socketPath: "/run/edge-agent/agent.sock")
    s.agent = "edge-agent 0.1.0"
    s.protocolVersion = 1
    s.motion = motion(rollDeg: 9, pitchDeg: -12, yawDeg: 30)
    s.altitude = WatchAltitude(timestampNs: 5_000_000_000, relative: 1.25, pressure: 100812.5, temperature: 22.5)
    s.absoluteAltitude = WatchAbsoluteAltitude(timestampNs: 5_000_000_000, altitude: 312.4, accuracy: 8.5, precision: 0.1)
    s.accessoryConfigured = true
    s.accessoryConnected = false
    s.devices = [
        WatchDevice(id: "imu", kind: "mpu6050", state: "present", errorCount: 0, resetCount: 0),
        WatchDevice(id: "baro", kind: "bmp280", state: "present", errorCount: 3, resetCount: 0),
        WatchDevice(id: "accessoryImu", kind: "mpu6050", state: "missing", errorCount: 12, resetCount: 1,
                    lastError: "read 14 bytes at 0x3B: no device (ENXIO)", streams: ["accessoryMotion"]),
    ]
    s.streams = ["deviceMotion": .subscribed, "altitude": .subscribed, "absoluteAltitude": .subscribed,
                 "accessoryMotion": .subscribed]
    s.dropped = 37
    s.motionRateHz = 20
    s.updates = 42
    return s
}

/// `edge-agent watch`'s rendering: a pure function of `WatchState`, so
/// every character is checked.
@Suite struct WatchViewTests {
    @Test func fullViewOfAKnownState() {
        let expected = """
        edge-agent watch  /run/edge-agent/agent.sock  edge-agent 0.1.0, protocol 1
        deviceMotion 20.0 Hz  updates 42  dropped 37

        Attitude                                +-------------+
          roll       +9.0°                      |      |      |
          pitch     -12.0°                      |      |      |
          yaw       +30.0°                      |      |      |
          heading   330.0°                      |------+------|
          frame   xMagneticNorthZVertical       |      |      |
          field   high                          |   O  |      |
                                                |      |      |
                                                +-------------+
        Rotation rate  x  +0.001  y  -0.002  z  +0.520  rad/s
        User accel.    x  +0.012  y  -0.004  z  +0.031  m/s²
        Altitude       relative +1.25 m  pressure 1008.13 hPa  22.5 °C
        Absolute       312.4 m ±8.5 m  precision 0.10 m
        Accessory      not connected

        Devices
          imu           mpu6050  present  errors 0    resets 0
          baro          bmp280   present  errors 3    resets 0
          accessoryImu  mpu6050  missing  errors 12   resets 1
            last error: read 14 bytes at 0x3B: no device (ENXIO)
        """
        let got = WatchView.render(fullState())
        #expect(got == expected, "\n\(got)")
        // Fits an 80-column terminal, so in-place redraws never wrap.
        #expect(got.split(separator: "\n").allSatisfy { $0.count <= 80 })
    }

    @Test func plainLineOfAKnownState() {
        #expect(WatchView.plainLine(fullState()) == "t_s=5.000 roll_deg=+9.0 pitch_deg=-12.0 yaw_deg=+30.0 heading_deg=330.0 magneticFieldAccuracy=high rotationRate_radps=+0.001,-0.002,+0.520 userAcceleration_mps2=+0.012,-0.004,+0.031 relativeAltitude_m=+1.25 pressure_pa=100812.5 altitude_m=312.4 accuracy_m=8.5 accessory=disconnected devices=imu:present:0,baro:present:3,accessoryImu:missing:12 dropped=37 rate_hz=20.0")
    }

    /// 3° per column, 6° per row, centre (6, 3); the bubble floats to the
    /// high side and stops at the rim (±18°).
    @Test(arguments: [
        (0.0, 0.0, 6, 3),
        (1.4, -2.9, 6, 3),      // within half a step: still level
        (1.5, 3.0, 5, 2),       // half a step rounds away from zero
        (9.0, -12.0, 3, 5),     // right edge down: left; forward edge down: toward the viewer
        (-9.0, 12.0, 9, 1),
        (18.0, 18.0, 0, 0),     // full scale: the rim
        (90.0, -80.0, 0, 6),    // beyond: stays on the rim
        (-179.0, 0.0, 12, 3),
    ])
    func bubblePosition(roll: Double, pitch: Double, column: Int, row: Int) {
        let p = WatchView.bubblePosition(rollDeg: roll, pitchDeg: pitch)
        #expect(p.column == column && p.row == row, "roll \(roll) pitch \(pitch) → \(p)")
    }

    @Test func levelIndicatorDrawsTheBubbleFromTheAttitudeQuaternion() {
        let m = motion(rollDeg: -6, pitchDeg: 6, yawDeg: 120)
        #expect(abs(m.rollDeg - -6) < 1e-9 && abs(m.pitchDeg - 6) < 1e-9 && abs(m.yawDeg - 120) < 1e-9)
        #expect(WatchView.levelIndicator(rollDeg: m.rollDeg, pitchDeg: m.pitchDeg) == [
            "+-------------+",
            "|      |      |",
            "|      |      |",
            "|      | O    |",  // roll −6°: two columns right of centre; pitch +6°: one row up
            "|------+------|",
            "|      |      |",
            "|      |      |",
            "|      |      |",
            "+-------------+",
        ])
        // Level: the bubble covers the cross.
        #expect(WatchView.levelIndicator(rollDeg: 0, pitchDeg: 0)[4] == "|------O------|")
        // No attitude yet: cross hairs only.
        #expect(WatchView.levelIndicator(rollDeg: nil, pitchDeg: nil)[4] == "|------+------|")
    }

    @Test func missingStreamsSayWhy() {
        var s = WatchState(socketPath: "/tmp/a.sock")
        s.streams = ["deviceMotion": .notEntitled("motion"), "altitude": .requested,
                     "absoluteAltitude": .failed("unknownStream: no stream named \"absoluteAltitude\"")]
        let expected = """
        edge-agent watch  /tmp/a.sock
        deviceMotion -  updates 0  dropped -

        Attitude                                +-------------+
          not entitled (needs "motion")         |      |      |
                                                |      |      |
                                                |      |      |
                                                |------+------|
                                                |      |      |
                                                |      |      |
                                                |      |      |
                                                +-------------+
        Altitude       waiting for samples
        Absolute       unavailable: unknownStream: no stream named "absoluteAltitude"

        Devices
          (none reported)
        """
        #expect(WatchView.render(s) == expected, "\n\(WatchView.render(s))")
        #expect(WatchView.plainLine(s) == "dropped=- rate_hz=-")
    }

    @Test func headingIsADashWithoutNorth() {
        var s = fullState()
        s.motion?.headingDeg = nil
        s.accessoryConnected = true
        s.accessory = motion(rollDeg: 0, pitchDeg: 45, yawDeg: -90)
        #expect(WatchView.render(s).contains("\n  heading       - (no north)  "))
        #expect(WatchView.render(s).contains("\nAccessory      roll +0.0°  pitch +45.0°  yaw -90.0°\n"))
        #expect(WatchView.plainLine(s).contains(" heading_deg=- "))
        #expect(WatchView.plainLine(s).contains(" accessory_roll_deg=+0.0 accessory_pitch_deg=+45.0 accessory_yaw_deg=-90.0 "))
    }

    @Test(arguments: [
        (0.0, 1, false, "0.0"), (0.0, 1, true, "+0.0"), (-0.04, 1, true, "+0.0"), (-0.05, 1, false, "-0.1"),
        (2.5, 0, false, "3"), (-2.5, 0, false, "-3"), (100812.5, 1, false, "100812.5"),
        (0.52, 3, true, "+0.520"), (-12.0, 1, true, "-12.0"), (359.96, 1, false, "360.0"),
        (Double.nan, 2, false, "nan"), (Double.infinity, 2, true, "nan"),
    ])
    func fixedPointFormatting(value: Double, decimals: Int, sign: Bool, expected: String) {
        #expect(fixed(value, decimals, sign: sign) == expected)
    }

    @Test func terminalFramesRedrawInPlace() {
        let first = WatchView.terminalFrame("a\nbb", first: true)
        #expect(first == "\u{1B}[?25l\u{1B}[H\u{1B}[2Ja\u{1B}[K\nbb\u{1B}[K\n\u{1B}[J")
        let next = WatchView.terminalFrame("a\nbb", first: false)
        #expect(next == "\u{1B}[Ha\u{1B}[K\nbb\u{1B}[K\n\u{1B}[J")
        #expect(WatchView.terminalRestore == "\u{1B}[?25h")
    }
}
