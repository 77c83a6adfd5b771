import Testing
@testable import EdgeFusion

/// The offline smoother against synthetic truth (the orientation that
/// produced the readings), next to the causal filter on the same readings.
@Suite struct AttitudeSmootherTests {
    /// Tumbling about all three axes with pauses, with a horizontal
    /// acceleration that disturbs the inclination now and then.
    static func motion(_ t: Double) -> Quaternion {
        MagnetometerSelfCalibrationTests.tumble(t)
    }
    static func shaking(_ t: Double) -> Vector3 {
        Vector3(2 * mathSin(3.1 * t), 1.5 * mathSin(2.3 * t + 0.4), 0) * (mathSin(0.2 * t) > 0.3 ? 1 : 0)
    }

    static func input(_ samples: [Synthetic.Sample], magEvery: Int = 1) -> AttitudeSmoother.Input {
        AttitudeSmoother.Input(t: samples.map(\.t), gyro: samples.map(\.gyro), accel: samples.map(\.accel),
                               mag: samples.enumerated().map { i, s in
                                   i % magEvery == 0 ? (s.mag ?? .zero) : Vector3(repeating: .nan) })
    }

    /// The causal filter as `fuse` runs it (continuous calibration included): NWU per sample.
    static func causal(_ samples: [Synthetic.Sample], settings: AttitudeFilter.Settings = .init(), magEvery: Int = 1,
                       frame: ReferenceFrame = .xMagneticNorthZVertical) -> [Quaternion] {
        let dt = samples[1].t - samples[0].t
        var filter = AttitudeFilter(settings: settings.running, sampleInterval: dt)
        var learning = MagneticFieldLearning(enabled: settings.magnetometerSelfCalibration)
        return samples.enumerated().map { i, s in
            learning.update(&filter, gyro: s.gyro, accel: s.accel, mag: i % magEvery == 0 ? s.mag : nil, dt: dt)
            return filter.quaternion(in: frame)
        }
    }

    /// The smoother: NWU per sample, through the filter's frame conversion.
    static func smoothed(_ samples: [Synthetic.Sample], settings: AttitudeFilter.Settings = .init(), magEvery: Int = 1,
                         useMag: Bool = true, frame: ReferenceFrame = .xMagneticNorthZVertical) -> [Quaternion] {
        let out = AttitudeSmoother.smooth(input(samples, magEvery: magEvery), settings: settings, useMag: useMag)
        var view = AttitudeFilter(settings: settings, sampleInterval: 0.005)
        return samples.indices.map { i in
            view.show(out, at: i, gyro: samples[i].gyro, accel: samples[i].accel)
            return view.quaternion(in: frame)
        }
    }

    static func rms(_ e: [Double]) -> Double { (e.map { $0 * $0 }.reduce(0, +) / Double(e.count)).squareRoot() }
    static func totalRMS(_ q: [Quaternion], _ s: [Synthetic.Sample], from: Double = 0, to: Double = .infinity) -> Double {
        rms(s.indices.filter { s[$0].t >= from && s[$0].t < to }.map { angleDegrees(q[$0], s[$0].truth) })
    }
    static func inclinationRMS(_ q: [Quaternion], _ s: [Synthetic.Sample]) -> Double {
        rms(s.indices.map { inclinationError(q[$0], s[$0].truth) })
    }

    /// A gyroscope with a bias of 0.6 °/s and noise, shaken now and then:
    /// the causal filter lags the bias and the inclination; the smoother
    /// knows both from the samples after each one.
    @Test func offlineErrorIsBelowTheCausalFiltersOnARecordingWithKnownTruth() {
        var sim = Synthetic()
        sim.gyroBias = Vector3(0.6, -0.4, 0.5) * deg
        sim.gyroNoise = 0.004
        let samples = sim.generate(duration: 120, orientation: Self.motion, acceleration: Self.shaking)
        let causal = Self.causal(samples), offline = Self.smoothed(samples)
        let c = Self.totalRMS(causal, samples), o = Self.totalRMS(offline, samples)
        let ci = Self.inclinationRMS(causal, samples), oi = Self.inclinationRMS(offline, samples)
        #expect(o < 0.7 * c, "9D total RMS: offline \(o)°, causal \(c)°")
        #expect(oi < 0.7 * ci, "inclination RMS: offline \(oi)°, causal \(ci)°")
        #expect(o < 2, "offline \(o)°")
    }

    /// 6D: the inclination improves the same way without a magnetometer.
    @Test func sixDInclinationIsBelowTheCausalFilters() {
        var sim = Synthetic()
        sim.gyroBias = Vector3(0.6, -0.4, 0.5) * deg
        let samples = sim.generate(duration: 90, orientation: Self.motion, acceleration: Self.shaking, withMag: false)
        var settings = AttitudeFilter.Settings()
        settings.magnetometerSelfCalibration = false
        let causal = Self.causal(samples, settings: settings, frame: .xArbitraryZVertical)
        let offline = Self.smoothed(samples, settings: settings, useMag: false, frame: .xArbitraryZVertical)
        let ci = Self.inclinationRMS(causal, samples), oi = Self.inclinationRMS(offline, samples)
        #expect(oi < 0.7 * ci, "inclination RMS: offline \(oi)°, causal \(ci)°")
    }

    /// A magnet carried with the sensor: the causal filter knows the offset
    /// only once it has learned it; the smoother removes what it learned
    /// from the start of the recording too.
    @Test func aCarriedMagnetLearnedLaterIsRemovedFromTheStart() {
        let offset = Vector3(15, -25, 10)
        let samples = Synthetic().generate(duration: 120, orientation: Self.motion, magDisturbance: { _ in offset })
        let causal = Self.causal(samples), offline = Self.smoothed(samples)
        let c = Self.totalRMS(causal, samples, to: 30), o = Self.totalRMS(offline, samples, to: 30)
        #expect(o < 2, "first 30 s: offline \(o)°, causal \(c)°")
        #expect(o < 0.5 * c, "first 30 s: offline \(o)°, causal \(c)°")
        // without the continuous calibration the offset stays in the heading
        var off = AttitudeFilter.Settings()
        off.magnetometerSelfCalibration = false
        let raw = Self.totalRMS(Self.smoothed(samples, settings: off), samples)
        #expect(raw > 2 * Self.totalRMS(offline, samples), "offline without learning \(raw)°")
    }

    /// A magnet for 30 s in the middle (BROAD's attached-magnet trial: 58 s):
    /// shorter than the rejection can bridge, so the smoother bridges it with
    /// the gyroscope from both sides, as VQF's offline mode does, rather
    /// than trust an offset learned in it: the same output as without the
    /// learning. (Not better everywhere: here the causal learning's heading
    /// is better than the bridging's; docs/fusion.md, known limits.)
    @Test func aShortDisturbanceIsBridgedNotLearned() {
        let samples = Synthetic().generate(duration: 120, orientation: Self.motion,
                                           magDisturbance: { $0 >= 40 && $0 < 70 ? Vector3(15, -25, 10) : .zero })
        var off = AttitudeFilter.Settings()
        off.magnetometerSelfCalibration = false
        off.tauMag = off.tauMagSelfCalibrated      // the learning is the only difference
        let on = Self.smoothed(samples), raw = Self.smoothed(samples, settings: off)
        let most = samples.indices.map { angleDegrees(on[$0], raw[$0]) }.max()!
        #expect(most < 1e-9, "learning on and off differ by up to \(most)°")
    }

    /// A magnetometer at a quarter of the IMU's rate (rows without a field
    /// in between): the heading is interpolated, the error stays that of
    /// every-row fields to within a fraction of a degree.
    @Test func aSlowerMagnetometerIsInterpolated() {
        let samples = Synthetic().generate(duration: 60, orientation: Self.motion)
        let every = Self.totalRMS(Self.smoothed(samples), samples)
        let quarter = Self.totalRMS(Self.smoothed(samples, magEvery: 4), samples)
        #expect(quarter < every + 0.3, "every row \(every)°, every 4th \(quarter)°")
        #expect(quarter < 1.5)
    }

    /// Reversing the recording in time (gyroscope negated) reverses the
    /// smoothed attitude: the smoother has no preferred direction beyond
    /// the one-sample shift of the backward pass's gyroscope samples.
    @Test func theSmootherIsTheSameBackwards() {
        let samples = Synthetic().generate(duration: 40, orientation: Self.motion)
        let n = samples.count
        let reversed = (0..<n).map { k -> Synthetic.Sample in
            var s = samples[n - 1 - k]
            s.t = samples[k].t
            // the rate that takes the truth at n-k back to the one at n-1-k
            s.gyro = k > 0 ? -samples[n - k].gyro : -s.gyro
            return s
        }
        let forward = Self.smoothed(samples), backward = Self.smoothed(reversed)
        let diff = Self.rms((0..<n).map { angleDegrees(forward[$0], backward[n - 1 - $0]) })
        #expect(diff < 0.5, "forwards and backwards differ by \(diff)° RMS")
    }

    @Test func anEmptyRecordingGivesNothing() {
        let out = AttitudeSmoother.smooth(.init(t: [], gyro: [], accel: [], mag: []), settings: .init())
        #expect(out.count == 0 && out.gyroQuat.isEmpty)
    }
}
