import Testing
@testable import EdgeFusion

/// Static attitudes: sensor-to-NWU truths (with a non-trivial heading).
let staticCases: [(String, Quaternion)] = {
    let heading = Quaternion(yaw: 0.6)
    let x = Vector3(1, 0, 0), y = Vector3(0, 1, 0)
    return [
        ("flat", heading),
        ("upside down", heading * Quaternion(axis: x, angle: .pi)),
        ("x +90", heading * Quaternion(axis: x, angle: .pi / 2)),
        ("x -90", heading * Quaternion(axis: x, angle: -.pi / 2)),
        ("y +90", heading * Quaternion(axis: y, angle: .pi / 2)),
        ("y -90", heading * Quaternion(axis: y, angle: -.pi / 2)),
        ("z +90", Quaternion(yaw: .pi / 2)),
        ("z -90", Quaternion(yaw: -.pi / 2)),
    ]
}()

@Suite struct AttitudeFilterTests {
    @Test(arguments: staticCases.indices)
    func staticAttitudeConvergesWithinOneSecond(_ index: Int) {
        let (name, truth) = staticCases[index]
        let data = Synthetic().generate(duration: 3, orientation: { _ in truth })
        let (_, qs) = Synthetic.run(data)
        // after 1 s (200 samples) the 9D attitude is right, in total
        for i in stride(from: 200, to: data.count, by: 50) {
            #expect(angleDegrees(qs[i], truth) < 1.5, "\(name) at t=\(data[i].t): \(angleDegrees(qs[i], truth))°")
        }
        // and the 6D attitude in inclination
        let (_, q6) = Synthetic.run(Synthetic().generate(duration: 3, orientation: { _ in truth }, withMag: false),
                                    frame: .xArbitraryZVertical)
        #expect(inclinationError(q6.last!, truth) < 0.5, "\(name) 6D")
    }

    @Test func gravityPlusUserAccelerationIsTheMeasurement() {
        // moving with translation: the identity holds exactly, every sample
        let data = Synthetic().generate(duration: 4, orientation: { t in
            Quaternion(axis: Vector3(1, 0.5, 0.2), angle: 0.8 * mathSin(1.3 * t))
        }, acceleration: { t in Vector3(2 * mathSin(3 * t), 0, 1.5 * mathCos(2 * t)) })
        var f = AttitudeFilter(sampleInterval: 0.005)
        for s in data {
            f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005)
            for frame in ReferenceFrame.allCases {
                let m = f.deviceMotion(in: frame)
                // Core Motion sign: accelerometer reading = −specific force / g
                let reading = -s.accel / standardGravity
                #expect((m.gravity + m.userAcceleration - reading).norm < 1e-12)
                #expect(abs(m.gravity.norm - 1) < 1e-9)
            }
        }
        // at rest and flat: gravity (0,0,−1) g, no user acceleration
        let flat = Synthetic().generate(duration: 3, orientation: { _ in .identity })
        var g = AttitudeFilter(sampleInterval: 0.005)
        for s in flat { g.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005) }
        let m = g.deviceMotion(in: .xMagneticNorthZVertical)
        #expect((m.gravity - Vector3(0, 0, -1)).norm < 0.01)
        #expect(m.userAcceleration.norm < 0.01)
        #expect(abs(m.attitude.pitch) < 0.01 && abs(m.attitude.roll) < 0.01)
    }

    /// Device flat, top edge (Y) pointing at compass `heading` degrees (east of north).
    static func flatFacing(_ heading: Double) -> Quaternion {
        // Y → north is a yaw of −90° in NWU; compass heading turns clockwise (negative yaw)
        Quaternion(yaw: -(heading + 90) * deg)
    }

    @Test(arguments: [0.0, 45, 90, 180, 270, 330])
    func headingInEachFrame(_ compass: Double) {
        var settings = AttitudeFilter.Settings()
        settings.declination = 10  // magnetic north 10° east of true north
        let truth = Self.flatFacing(compass)
        let data = Synthetic().generate(duration: 3, orientation: { _ in truth })
        var f = AttitudeFilter(settings: settings, sampleInterval: 0.005)
        for s in data { f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005) }
        func heading(_ frame: ReferenceFrame) -> Double { f.deviceMotion(in: frame).heading }
        func close(_ a: Double, _ b: Double) -> Bool { let d = abs(a - b).truncatingRemainder(dividingBy: 360); return min(d, 360 - d) < 1 }
        #expect(close(heading(.xMagneticNorthZVertical), compass))
        #expect(close(heading(.xTrueNorthZVertical), compass + 10))
        #expect(f.deviceMotion(in: .xMagneticNorthZVertical).attitude.quaternion.angle(to: truth) < 1 * deg)
        let h = heading(.xMagneticNorthZVertical)
        #expect(h >= 0 && h < 360)
        #expect(f.availableReferenceFrames == ReferenceFrame.allCases)
    }

    @Test func arbitraryFramesTurnWithTheDevice() {
        // start facing 30°, turn to 120° over 2 s, hold
        let data = Synthetic().generate(duration: 8, orientation: { t in
            let c = t < 3 ? 30 : (t < 5 ? 30 + 45 * (t - 3) : 120)
            return Self.flatFacing(c)
        })
        var f = AttitudeFilter(sampleInterval: 0.005)
        var start: [ReferenceFrame: Double] = [:]
        for (i, s) in data.enumerated() {
            f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005)
            if i == 500 { for fr in ReferenceFrame.allCases { start[fr] = f.deviceMotion(in: fr).heading } }
        }
        for fr in ReferenceFrame.allCases {
            var d = f.deviceMotion(in: fr).heading - start[fr]!
            if d < 0 { d += 360 }
            #expect(abs(d - 90) < 1.5, "\(fr): turned \(d)°")
        }
        // corrected-arbitrary started where the arbitrary frame was when the magnetometer came in
        let a = f.deviceMotion(in: .xArbitraryZVertical).heading, c = f.deviceMotion(in: .xArbitraryCorrectedZVertical).heading
        #expect(min(abs(a - c), 360 - abs(a - c)) < 2)
    }

    @Test func restBiasEstimationRecoversAnInjectedBias() {
        var gen = Synthetic()
        gen.gyroBias = Vector3(0.8, -0.5, 0.6) * deg
        let data = gen.generate(duration: 20, orientation: { _ in Quaternion(axis: Vector3(1, 1, 0), angle: 0.4) })
        let (f, qs) = Synthetic.run(data)
        #expect(f.isAtRest)
        #expect((f.gyroBias - gen.gyroBias).norm < 0.03 * deg, "bias \(f.gyroBias / deg) °/s")
        #expect(f.gyroBiasUncertainty < 0.1 * deg)
        let m = f.deviceMotion(in: .xMagneticNorthZVertical)
        #expect(m.rotationRate.norm < 0.01)  // noise only: 0.002 rad/s per axis
        #expect(angleDegrees(qs.last!, data.last!.truth) < 1)
    }

    @Test func biasDriftingWithTemperatureIsTracked() {
        // bias ramps by 0.5 °/s over 60 s (warming up) while still
        var gen = Synthetic()
        let bias: (Double) -> Vector3 = { t in Vector3(0.3 + 0.5 * t / 60, -0.2, 0.1 - 0.3 * t / 60) * deg }
        let data = gen.generate(duration: 60, orientation: { _ in .identity }, biasAt: bias)
        gen.seed = 2
        let (f, _) = Synthetic.run(data)
        // tracked with a lag of a few seconds: far closer than the drift itself
        let drift = (bias(60) - bias(0)).norm
        #expect((f.gyroBias - bias(60)).norm < 0.25 * drift, "bias \(f.gyroBias / deg) vs \(bias(60) / deg) °/s")
    }

    @Test func motionBiasEstimationReducesTheBiasWhileMoving() {
        var gen = Synthetic()
        gen.gyroBias = Vector3(0.5, -0.4, 0.3) * deg
        // never at rest: continuous tilting about changing axes
        let data = gen.generate(duration: 90, orientation: { t in
            Quaternion(axis: Vector3(mathCos(0.2 * t), mathSin(0.2 * t), 0.3), angle: 0.5 * mathSin(1.1 * t))
                * Quaternion(yaw: 0.4 * mathSin(0.37 * t))
        })
        let (f, qs) = Synthetic.run(data)
        #expect(!f.isAtRest)
        #expect((f.gyroBias - gen.gyroBias).norm < 0.5 * gen.gyroBias.norm, "bias \(f.gyroBias / deg) °/s")
        #expect(inclinationError(qs.last!, data.last!.truth) < 1)
    }

    /// 8 s of turning (VQF accepts the first reference field only after 5 s
    /// of turning faster than 20 °/s), then swinging ±30° about north-north-east.
    /// (Slow turning under 2 °/s for more than 1.5 s would look like rest
    /// with a gyroscope bias, as in VQF.)
    static func turnThenHold(_ t: Double) -> Quaternion {
        if t < 8 { return Quaternion(axis: Vector3(1, 0, 0), angle: 0.3 * mathSin(2 * t)) * flatFacing(20 + 45 * t) }
        return flatFacing(20 + 45 * 8 + 30 * mathSin(2 * .pi * 0.3 * (t - 8)))
    }

    @Test func magneticDisturbanceIsRejectedWithoutLosingHeading() {
        // a magnet near the sensor from 12 s to 22 s. (VQF's rejection budget:
        // magMaxRejectionTime = 60 s, refilled at 2 s per undisturbed second
        // from the moment the reference field is known — here 14 s by t = 12 s;
        // beyond it the heading is corrected at half gain.)
        let dist: (Double) -> Vector3 = { t in t > 12 && t < 22 ? Vector3(25, -15, 10) : .zero }
        let data = Synthetic().generate(duration: 30, orientation: Self.turnThenHold, magDisturbance: dist)
        let (f, qs) = Synthetic.run(data)
        var worst = 0.0
        for (i, s) in data.enumerated() where s.t > 3 { worst = max(worst, angleDegrees(qs[i], s.truth)) }
        #expect(worst < 2, "worst error \(worst)°")
        #expect(!f.isMagneticallyDisturbed)
        // without rejection the same data pulls the heading far off
        var s = AttitudeFilter.Settings()
        s.magneticDisturbanceRejection = false
        let (_, naive) = Synthetic.run(data, settings: s)
        var naiveWorst = 0.0
        for (i, d) in data.enumerated() where d.t > 3 { naiveWorst = max(naiveWorst, angleDegrees(naive[i], d.truth)) }
        #expect(naiveWorst > 10)
    }

    @Test func disturbanceIsFlaggedAndAccuracyDrops() {
        var settings = AttitudeFilter.Settings()
        settings.magnetometerCalibration = MagnetometerCalibration(residual: 0.01)
        let data = Synthetic().generate(duration: 14, orientation: Self.turnThenHold,
                                        magDisturbance: { t in t > 11 ? Vector3(40, 0, 0) : .zero })
        var f = AttitudeFilter(settings: settings, sampleInterval: 0.005)
        for s in data where s.t < 10.9 { f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005) }
        #expect(!f.isMagneticallyDisturbed)
        #expect(f.magneticFieldAccuracy == .high)
        for s in data where s.t >= 10.9 { f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005) }
        #expect(f.isMagneticallyDisturbed)
        #expect(f.magneticFieldAccuracy == .low)
        var raw = AttitudeFilter(sampleInterval: 0.005)
        #expect(raw.magneticFieldAccuracy == .uncalibrated)
        raw.update(gyro: .zero, accel: Vector3(0, 0, 9.81), mag: Vector3(20, 0, -45), dt: 0.005)
        #expect(raw.magneticFieldAccuracy == .uncalibrated)
    }

    @Test func externalAccelerationIsRejectedWithoutLosingTilt() {
        // 3 m/s² horizontal shaking at 0.8 Hz while slowly tilting
        let truth: (Double) -> Quaternion = { t in Quaternion(axis: Vector3(1, 0, 0), angle: 0.3 * mathSin(0.3 * t)) }
        let accel: (Double) -> Vector3 = { t in Vector3(3 * mathSin(2 * .pi * 0.8 * t), 2 * mathCos(2 * .pi * 0.5 * t), 0) }
        let data = Synthetic().generate(duration: 30, orientation: truth, acceleration: accel)
        let (_, qs) = Synthetic.run(data, frame: .xArbitraryZVertical)
        var worst = 0.0, naive = 0.0
        // after the start-up averaging of the accelerometer low-pass (tauAcc = 3 s)
        for (i, s) in data.enumerated() where s.t > 6 {
            worst = max(worst, inclinationError(qs[i], s.truth))
            // tilt from the accelerometer alone
            let up = s.truth.inverseRotate(Vector3(0, 0, 1))
            naive = max(naive, mathAcos(min(1, s.accel.normalized.dot(up))) * 180 / .pi)
        }
        #expect(worst < 1.5, "inclination error \(worst)°")
        #expect(naive > 10)
    }

    @Test func sixDimensional() {
        let truth: (Double) -> Quaternion = { t in
            Quaternion(axis: Vector3(0.2, 1, 0.1), angle: 0.6 * mathSin(0.7 * t)) * Quaternion(yaw: 0.5 * t)
        }
        let data = Synthetic().generate(duration: 20, orientation: truth, withMag: false)
        var f = AttitudeFilter(sampleInterval: 0.005)
        var worst = 0.0
        for s in data {
            f.update(gyro: s.gyro, accel: s.accel, mag: nil, dt: 0.005)
            if s.t > 1 { worst = max(worst, inclinationError(f.quaternion(in: .xArbitraryZVertical), s.truth)) }
        }
        #expect(worst < 1)
        #expect(f.availableReferenceFrames == [.xArbitraryZVertical])
        #expect(f.deviceMotion(in: .xArbitraryZVertical).magneticField.accuracy == .uncalibrated)
        // without a magnetometer every frame is the 6D one (heading arbitrary)
        #expect(f.quaternion(in: .xMagneticNorthZVertical).angle(to: f.quaternion6D.turnedAboutVertical(
            cosHalf: mathCos(-.pi / 4), sinHalf: mathSin(-.pi / 4))) < 1e-7)
    }

    @Test func stateHandOverGivesIdenticalOutput() {
        var gen = Synthetic()
        gen.gyroBias = Vector3(0.2, 0.1, -0.3) * deg
        let data = gen.generate(duration: 12, orientation: { t in
            Quaternion(axis: Vector3(1, -0.5, 0.3), angle: 0.7 * mathSin(0.9 * t)) * Quaternion(yaw: 0.3 * t)
        }, magDisturbance: { t in t > 6 && t < 8 ? Vector3(30, 0, 0) : .zero })
        var settings = AttitudeFilter.Settings()
        settings.declination = 3.5
        var whole = AttitudeFilter(settings: settings, sampleInterval: 0.005)
        var expected: [DeviceMotion] = []
        for s in data {
            whole.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005)
            expected.append(whole.deviceMotion(in: .xTrueNorthZVertical))
        }
        var first = AttitudeFilter(settings: settings, sampleInterval: 0.005)
        let half = data.count / 2
        var got: [DeviceMotion] = []
        for s in data[..<half] {
            first.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005)
            got.append(first.deviceMotion(in: .xTrueNorthZVertical))
        }
        let saved: AttitudeFilter.State = first.state
        var second = AttitudeFilter(settings: settings, state: saved)
        for s in data[half...] {
            second.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005)
            got.append(second.deviceMotion(in: .xTrueNorthZVertical))
        }
        #expect(got == expected)
        #expect(second.state == whole.state)
    }

    @Test func multiRateDroppedSamplesAndIrregularIntervals() {
        // IMU ~200 Hz with ±20 % jitter and gaps; magnetometer at 20 Hz via updateMag
        let truth: (Double) -> Quaternion = { t in
            Quaternion(axis: Vector3(1, 0.3, 0), angle: 0.5 * mathSin(0.8 * t)) * Self.flatFacing(40 + 30 * mathSin(0.2 * t))
        }
        var rng = Synthetic.Random(seed: 7)
        var f = AttitudeFilter(sampleInterval: 0.005, magInterval: 0.05)
        var t = 0.0, lastMag = -1.0
        var previous = truth(0)
        var worst = 0.0
        var step = 0
        while t < 30 {
            var dt = 0.005 * (0.8 + 0.4 * rng.uniform())
            step += 1
            if step % 97 == 0 { dt += 0.02 }  // four dropped samples
            t += dt
            let q = truth(t)
            let gyro = (previous.conjugate * q).rotationVector / dt
            previous = q
            f.updateGyro(gyro, dt: dt)
            f.updateAccel(q.inverseRotate(Vector3(0, 0, 9.81)), dt: dt)
            if t - lastMag >= 0.05 {
                f.updateMag(q.inverseRotate(Synthetic.earthField), dt: lastMag < 0 ? 0.05 : t - lastMag)
                lastMag = t
            }
            if t > 1 { worst = max(worst, angleDegrees(f.quaternion(in: .xMagneticNorthZVertical), q)) }
        }
        #expect(worst < 2, "worst \(worst)°")
    }

    @Test func headingCorrectionHalfAngleStaysInStepWithDelta() {
        // an uncorrected vertical gyro bias turns the 6D frame by 90° per minute,
        // so delta sweeps ~65° (less the heading filter's lag); start headings
        // 30° apart make one of them cross ±180° (a wrap)
        var settings = AttitudeFilter.Settings()
        settings.restBiasEstimation = false
        settings.motionBiasEstimation = false
        var wraps = 0
        for start in stride(from: 0.0, to: 360, by: 30) {
            var gen = Synthetic()
            gen.dt = 0.01
            gen.gyroBias = Vector3(0, 0, 1.5 * deg)
            let data = gen.generate(duration: 60, orientation: { _ in Self.flatFacing(start) })
            var f = AttitudeFilter(settings: settings, sampleInterval: 0.01)
            var last = 0.0
            for s in data {
                f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.01)
                #expect(abs(f.state.deltaCos - mathCos(f.state.delta / 2)) < 1e-12)
                #expect(abs(f.state.deltaSin - mathSin(f.state.delta / 2)) < 1e-12)
                if abs(f.state.delta - last) > .pi { wraps += 1 }
                last = f.state.delta
            }
        }
        #expect(wraps >= 1)
    }

    @Test func coefficientsFollowTheSampleIntervalOnlyWhenItChangesMaterially() {
        var f = AttitudeFilter(sampleInterval: 0.005)
        let c0 = f.coefficients
        f.update(gyro: .zero, accel: Vector3(0, 0, 9.81), mag: nil, dt: 0.0052)  // within tolerance
        #expect(f.coefficients == c0)
        f.update(gyro: .zero, accel: Vector3(0, 0, 9.81), mag: nil, dt: 0.01)
        #expect(f.coefficients.accelDt == 0.01 && f.coefficients.gyroDt == 0.01)
        #expect(f.coefficients.accLp != c0.accLp)
    }

    @Test func ignoresZeroAndNonFiniteInputsGracefully() {
        var f = AttitudeFilter(sampleInterval: 0.005)
        f.update(gyro: .zero, accel: Vector3(0, 0, 9.81), mag: Vector3(20, 0, -45), dt: 0.005)
        let q = f.quaternion9D
        f.updateAccel(.zero, dt: 0.005)
        f.updateMag(.zero, dt: 0.005)
        f.updateGyro(Vector3(1, 0, 0), dt: 0)
        f.updateGyro(Vector3(.nan, 0, 0), dt: 0.005)
        f.updateGyro(Vector3(0, .infinity, 0), dt: 0.005)
        f.updateAccel(Vector3(0, 0, .nan), dt: 0.005)
        f.updateMag(Vector3(.infinity, 0, 0), dt: 0.005)
        #expect(f.quaternion9D == q)
        f.update(gyro: Vector3(0.01, 0, 0), accel: Vector3(0, 0, 9.81), mag: Vector3(20, 0, -45), dt: 0.005)
        #expect(f.quaternion9D.norm.isFinite && abs(f.quaternion9D.norm - 1) < 1e-12)
    }
}

@Suite struct DeclinationTests {
    @Test func dipoleDeclinationFollowsTheDipoleGeometry() {
        let poleLon = MagneticDeclination.dipolePoleLongitude
        // on the pole's meridian the field points straight north
        #expect(abs(MagneticDeclination.dipoleEstimate(latitude: 40, longitude: poleLon)) < 1e-9)
        // on the equator 90° east of it: atan(cos φp / sin φp) west
        let expected = mathAtan2(mathCos(80.65 * deg), mathSin(80.65 * deg)) / deg
        #expect(abs(MagneticDeclination.dipoleEstimate(latitude: 0, longitude: poleLon + 90) + expected) < 1e-9)
        #expect(abs(MagneticDeclination.dipoleEstimate(latitude: 0, longitude: poleLon - 90) - expected) < 1e-9)
        // Seattle (charted ≈ +15° E): east
        #expect(MagneticDeclination.dipoleEstimate(latitude: 47.6, longitude: -122.3) > 5)
    }
}
