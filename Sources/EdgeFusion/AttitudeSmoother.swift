// SPDX-License-Identifier: Apache-2.0 AND MIT
// SPDX-FileCopyrightText: 2021 Daniel Laidig <laidig@control.tu-berlin.de>
//
// The smoothing steps follow VQF's offline implementation (github.com/dlaidig/vqf,
// vqf/cpp/offline_vqf.cpp, MIT licence). VQF's copyright and permission notice
// is reproduced in THIRD_PARTY_NOTICES at the repository root.

/// The offline smoother: attitude for data that is already recorded, from
/// every sample before and after each one (`edge-agent fuse --offline`).
///
/// This is VQF's offline mode (D. Laidig and T. Seel, Information Fusion 91
/// (2023) 187–204, and the reference `offlineVQF`, `vqf/cpp/offline_vqf.cpp`):
///
/// 1. the causal filter (``AttitudeFilter``) runs forwards, and again
///    backwards over the time-reversed recording with the gyroscope negated;
///    the two gyroscope-bias estimates are averaged, each weighted by its
///    inverse covariance; rest is where either pass saw rest, a magnetic
///    disturbance where both saw one;
/// 2. the gyroscope, less that bias, is integrated once from the start;
/// 3. the accelerometer, turned into that almost-inertial frame, is
///    low-passed forwards and backwards (zero phase) and corrects the
///    inclination sample by sample;
/// 4. the heading disagreement of every magnetometer sample is filtered
///    forwards and then backwards with the filter's gain and disturbance
///    rejection.
///
/// What is ours: per-sample `dt` (irregular intervals; the zero-phase
/// low-pass and the heading gain use the mean interval), a magnetometer that
/// may run slower than the IMU (the heading is interpolated between its
/// samples), and the continuous magnetometer calibration
/// (``MagneticFieldLearning``): both passes run again with it, and where a
/// learned offset holds (in both) for longer than the disturbance
/// rejection can bridge with the gyroscope (`magMaxRejectionTime`), the
/// heading is taken from the field with the offset learned before it
/// (forward pass) or after it (backward pass), whichever fits, and a hard
/// iron carried with the sensor all along is removed from the start of the
/// recording. A shorter one is left to VQF's rejection, bridged from both
/// sides by the gyroscope (on BROAD's attached-magnet trial, a magnet for
/// 58 s, that is better than the offset learned in it; not everywhere).
///
/// Pure and deterministic; unlike the causal filter it allocates (arrays of
/// the recording's length): it is for recordings, not for the loop.
public enum AttitudeSmoother {
    /// One recording, column-wise; all arrays of the same length. `t` in s
    /// (non-decreasing), gyroscope rad/s, accelerometer m/s² (specific
    /// force), magnetometer µT raw (NaN or all zero where a row has none).
    public struct Input {
        public var t: [Double], gyro: [Vector3], accel: [Vector3], mag: [Vector3]
        public init(t: [Double], gyro: [Vector3], accel: [Vector3], mag: [Vector3]) {
            precondition(gyro.count == t.count && accel.count == t.count && mag.count == t.count,
                         "AttitudeSmoother.Input: columns of different lengths")
            self.t = t; self.gyro = gyro; self.accel = accel; self.mag = mag
        }
        public var count: Int { t.count }
        /// Mean sample interval, s (0.01 for fewer than two distinct times).
        public var nominalInterval: Double {
            guard count > 1, let first = t.first, let last = t.last, last > first else { return 0.01 }
            return (last - first) / Double(count - 1)
        }
        @inlinable func hasMag(_ i: Int) -> Bool {
            let m = mag[i]
            return !(m.x == 0 && m.y == 0 && m.z == 0) && (m.x + m.y + m.z).isFinite
        }
    }

    /// Per sample: the smoothed attitude's parts, in the causal filter's
    /// terms (so ``AttitudeFilter/deviceMotion(in:)`` and
    /// ``AttitudeFilter/quaternion(in:)`` serve every reference frame).
    public struct Output {
        /// Gyroscope integration (almost-inertial frame) and the inclination
        /// correction: the 6D attitude is `accQuat * gyroQuat`.
        public var gyroQuat: [Quaternion], accQuat: [Quaternion]
        /// Heading correction, rad: 6D frame to ENU.
        public var delta: [Double]
        /// Smoothed gyroscope bias, rad/s.
        public var bias: [Vector3]
        /// The field the heading was taken from (calibrated; a learned offset removed where it was used), µT.
        public var field: [Vector3]
        /// The field's accuracy: the better of the two passes'.
        public var accuracy: [MagneticFieldCalibrationAccuracy]
        /// Rest (either pass) and magnetic disturbance (both passes).
        public var rest: [Bool], magneticDisturbance: [Bool]
        /// Whether the recording has magnetometer samples (else `delta` is 0).
        public var hasMagnetometer: Bool
        /// Heading correction at the first magnetometer sample (the corrected-arbitrary frame's origin).
        public var firstDelta: Double
        public var count: Int { delta.count }

        /// The 9D attitude, sensor to ENU.
        public func quaternion9D(_ i: Int) -> Quaternion {
            (accQuat[i] * gyroQuat[i]).turnedAboutVertical(cosHalf: mathCos(delta[i] / 2), sinHalf: mathSin(delta[i] / 2))
        }
    }

    /// Smooths `input` with the filter's `settings` (its
    /// `magnetometerCalibration` applied to the raw field, or, with the
    /// continuous calibration on, applied before it) and the continuous
    /// calibration's `learning` settings; `useMag` false ignores the
    /// magnetometer (6D).
    public static func smooth(_ input: Input, settings: AttitudeFilter.Settings,
                              learning learningSettings: MagnetometerSelfCalibration.Settings = .init(),
                              useMag: Bool = true) -> Output {
        let n = input.count
        let nominal = input.nominalInterval
        var out = Output(gyroQuat: [], accQuat: [], delta: [Double](repeating: 0, count: n),
                         bias: [Vector3](repeating: .zero, count: n), field: [Vector3](repeating: .zero, count: n),
                         accuracy: [MagneticFieldCalibrationAccuracy](repeating: .uncalibrated, count: n),
                         rest: [Bool](repeating: false, count: n), magneticDisturbance: [Bool](repeating: false, count: n),
                         hasMagnetometer: false, firstDelta: 0)
        guard n > 0 else { return out }

        // as `fuse` and the agent: with the continuous calibration the guided
        // one is applied first and the learning sees the result
        var filterSettings = settings.running
        let guided = settings.magnetometerSelfCalibration ? settings.magnetometerCalibration : nil
        if guided != nil { filterSettings.magnetometerCalibration = nil }
        let hasMag = (0..<n).map { useMag && input.hasMag($0) }
        out.hasMagnetometer = hasMag.contains(true)

        // 1. the causal filter forwards, then backwards with the gyroscope
        //    negated: on the field as it comes (VQF's passes) and, with the
        //    continuous calibration, again on the field it learns
        let learningOn = settings.magnetometerSelfCalibration && out.hasMagnetometer
        let pass = { (backward: Bool, learn: Bool) in
            Pass(input, hasMag: hasMag, settings: filterSettings, guided: guided, learning: learn ? learningSettings : nil,
                 nominal: nominal, backward: backward)
        }
        let forward = pass(false, false), backward = pass(true, false)
        for i in 0..<n {
            out.rest[i] = forward.rest[i] || backward.rest[i]
            out.magneticDisturbance[i] = forward.disturbed[i] && backward.disturbed[i]
            out.field[i] = forward.field[i]
            out.accuracy[i] = Self.best(forward.accuracy[i], backward.accuracy[i])
            // (P₁⁻¹ + P₂⁻¹)⁻¹ (P₁⁻¹ b₁ − P₂⁻¹ b₂): the backward pass estimates −b
            let (i1, i2) = (forward.biasInformation[i], backward.biasInformation[i])
            out.bias[i] = (i1 + i2).inverse.map { $0 * (i1 * forward.bias[i] - i2 * backward.bias[i]) } ?? forward.bias[i]
        }
        if learningOn {
            // The learned field where both passes hold a learned offset for
            // longer than the disturbance rejection can bridge with the
            // gyroscope (`magMaxRejectionTime`); a shorter one is a
            // disturbance the passes above bridge from both sides, as VQF's
            // offline mode does (better than the learned offset on BROAD's
            // attached-magnet trial, not everywhere: docs/fusion.md).
            let learnedForward = pass(false, true), learnedBackward = pass(true, true)
            // Spans where either pass removes an offset; used where, within
            // the span, both do for long enough.
            var spanStart: Int?, bothSince: Int?, long = false
            for i in 0...n {
                let either = i < n && (learnedForward.applied[i] || learnedBackward.applied[i])
                let both = either && learnedForward.applied[i] && learnedBackward.applied[i]
                if either && spanStart == nil { spanStart = i; long = false }
                if both {
                    if bothSince == nil { bothSince = i }
                    if input.t[i] - input.t[bothSince!] > settings.magMaxRejectionTime { long = true }
                } else {
                    bothSince = nil
                }
                guard !either, let a = spanStart else { continue }
                spanStart = nil
                guard long else { continue }
                for j in a..<i {
                    out.field[j] = Self.better(learnedForward, learnedBackward, at: j)
                    out.magneticDisturbance[j] = learnedForward.disturbed[j] && learnedBackward.disturbed[j]
                }
            }
            for i in 0..<n {
                out.accuracy[i] = Self.best(out.accuracy[i], Self.best(learnedForward.accuracy[i], learnedBackward.accuracy[i]))
            }
        }

        // 2. integrate the gyroscope less the smoothed bias
        out.gyroQuat = [Quaternion](repeating: .identity, count: n)
        var q = Quaternion.identity
        var previous = input.t[0] - nominal
        for i in 0..<n {
            let dt = input.t[i] - previous
            previous = input.t[i]
            let w = input.gyro[i]
            if dt > 0, (w.x + w.y + w.z).isFinite {
                q = (q * AttitudeFilter.strapdownStep(w - out.bias[i], dt: dt)).renormalized
            }
            out.gyroQuat[i] = q
        }

        // 3. the accelerometer in that frame, low-passed forwards and backwards
        var accInertial = [Vector3](repeating: .zero, count: n)
        var last = Vector3(0, 0, 1)
        for i in 0..<n {
            let a = input.accel[i]
            if !(a.x == 0 && a.y == 0 && a.z == 0) && (a.x + a.y + a.z).isFinite {
                last = out.gyroQuat[i].rotate(a)
            }
            accInertial[i] = last  // a row without a reading holds the previous one
        }
        let lp = LowPassCoefficients(tau: settings.tauAcc, dt: nominal)
        var lowPass = LowPassState<Vector3>()
        for i in 0..<n { accInertial[i] = lowPass.step(accInertial[i], lp, tau: settings.tauAcc, dt: nominal) }
        lowPass = LowPassState<Vector3>()
        lowPass.start(at: accInertial[n - 1], lp)
        for i in stride(from: n - 1, through: 0, by: -1) {
            accInertial[i] = lowPass.step(accInertial[i], lp, tau: settings.tauAcc, dt: nominal)
        }
        out.accQuat = [Quaternion](repeating: .identity, count: n)
        var accQuat = Quaternion.identity
        for i in 0..<n {
            let accEarth = accQuat.rotate(accInertial[i]).normalized
            accQuat = (AttitudeFilter.inclinationCorrection(accEarth) * accQuat).normalized
            out.accQuat[i] = accQuat
        }

        // 4. heading: the disagreement of every magnetometer sample, filtered forwards and backwards
        let rows = (0..<n).filter { hasMag[$0] }
        guard let firstRow = rows.first else { return out }
        var delta = rows.map { i -> Double in
            let e = (out.accQuat[i] * out.gyroQuat[i]).rotate(out.field[i])
            return mathAtan2(e.x, e.y)
        }
        let magInterval = rows.count > 1 && input.t[rows.last!] > input.t[firstRow]
            ? (input.t[rows.last!] - input.t[firstRow]) / Double(rows.count - 1) : nominal
        let disturbed = rows.map { out.magneticDisturbance[$0] }
        filterHeading(&delta, disturbed: disturbed, interval: magInterval, settings: filterSettings, backward: false)
        filterHeading(&delta, disturbed: disturbed, interval: magInterval, settings: filterSettings, backward: true)
        // rows between magnetometer samples: interpolated along the shorter way round
        var k = 0
        for i in 0..<n {
            while k + 1 < rows.count && rows[k + 1] <= i { k += 1 }
            if i <= rows[0] { out.delta[i] = delta[0]; continue }
            if k + 1 >= rows.count { out.delta[i] = delta[k]; continue }
            let (a, b) = (rows[k], rows[k + 1])
            var d = delta[k + 1] - delta[k]
            if d > .pi { d -= 2 * .pi } else if d < -.pi { d += 2 * .pi }
            let span = input.t[b] - input.t[a]
            let f = span > 0 ? (input.t[i] - input.t[a]) / span : Double(i - a) / Double(b - a)
            out.delta[i] = wrapped(delta[k] + f * d)
        }
        out.firstDelta = out.delta[firstRow]
        return out
    }

    /// One run of the causal filter over the recording, forwards or
    /// backwards (time reversed, gyroscope negated), with the continuous
    /// calibration (`learning` its settings) or without: per sample what
    /// the smoother takes from it.
    struct Pass {
        var bias: [Vector3], biasInformation: [Matrix3]
        var rest: [Bool], disturbed: [Bool]
        /// The field the filter got (calibrated), µT; whether a learned
        /// offset (or soft iron, `MagnetometerSelfCalibration.Settings.softIron`)
        /// was removed from it, the offset's uncertainty and the learned
        /// field strength, µT.
        var field: [Vector3], applied: [Bool], uncertainty: [Double], strength: [Double]
        var accuracy: [MagneticFieldCalibrationAccuracy]

        init(_ input: Input, hasMag: [Bool], settings: AttitudeFilter.Settings, guided: MagnetometerCalibration?,
             learning learningSettings: MagnetometerSelfCalibration.Settings?, nominal: Double, backward: Bool) {
            let n = input.count
            bias = [Vector3](repeating: .zero, count: n); biasInformation = [Matrix3](repeating: .zero, count: n)
            rest = [Bool](repeating: false, count: n); disturbed = rest; applied = rest
            field = bias; uncertainty = [Double](repeating: .infinity, count: n); strength = uncertainty
            accuracy = [MagneticFieldCalibrationAccuracy](repeating: .uncalibrated, count: n)
            var filter = AttitudeFilter(settings: settings, sampleInterval: nominal)
            filter.inputCalibration = guided
            var learning = MagneticFieldLearning(enabled: learningSettings != nil, settings: learningSettings ?? .init())
            learning.prepare(guided: guided)
            var previous = input.t[0] - nominal
            for step in 0..<n {
                let i = backward ? n - 1 - step : step
                // forwards each sample closes the interval before it; backwards, the one after it
                let dt: Double
                if backward {
                    dt = i == n - 1 ? nominal : input.t[i + 1] - input.t[i]
                } else {
                    dt = input.t[i] - previous
                    previous = input.t[i]
                }
                let gyro = backward ? -input.gyro[i] : input.gyro[i]
                let m = input.mag[i]
                learning.update(&filter, gyro: gyro, accel: input.accel[i], mag: hasMag[i] ? guided?.apply(m) ?? m : nil, dt: dt)
                rest[i] = filter.isAtRest
                disturbed[i] = filter.isMagneticallyDisturbed
                bias[i] = filter.gyroBias
                biasInformation[i] = filter.state.biasP.inverse ?? .zero
                field[i] = filter.state.lastMag
                // the learned hard iron removed, or the learned soft iron with its own
                if let e = learning.estimator, e.isApplied || e.isSoftIronApplied {
                    applied[i] = true
                    uncertainty[i] = e.state.uncertainty
                    strength[i] = e.state.fieldStrength
                }
                accuracy[i] = learning.accuracy(filter)
            }
        }
    }

    static func best(_ a: MagneticFieldCalibrationAccuracy, _ b: MagneticFieldCalibrationAccuracy) -> MagneticFieldCalibrationAccuracy {
        a.rawValue >= b.rawValue ? a : b
    }

    /// Of the two learned passes' fields at `i`, the one whose offset is
    /// applied; both: the one whose strength is nearer what it learned the
    /// field's strength to be (right after an offset changed, the pass
    /// that has not yet noticed removes the old one and is far off), then
    /// the better known.
    static func better(_ f: Pass, _ b: Pass, at i: Int) -> Vector3 {
        switch (f.applied[i], b.applied[i]) {
        case (true, false): return f.field[i]
        case (false, true): return b.field[i]
        case (false, false): return f.field[i]
        case (true, true):
            let ef = abs(f.field[i].norm - f.strength[i]), eb = abs(b.field[i].norm - b.strength[i])
            if abs(ef - eb) > 0.1 * f.strength[i] { return ef < eb ? f.field[i] : b.field[i] }
            return f.uncertainty[i] <= b.uncertainty[i] ? f.field[i] : b.field[i]
        }
    }

    /// A first-order filter of the heading disagreement `delta` (rad, in
    /// place) in one direction, with the filter's gain, its fast start and
    /// its disturbance rejection (VQF `filterDelta`).
    static func filterHeading(_ delta: inout [Double], disturbed: [Bool], interval: Double,
                              settings s: AttitudeFilter.Settings, backward: Bool) {
        let n = delta.count
        guard n > 0 else { return }
        var d = backward ? delta[n - 1] : delta[0]
        let kMag = AttitudeFilter.Coefficients.gain(tau: s.tauMag, dt: interval)
        var kMagInit = 1.0
        var rejectTime = 0.0
        for step in 0..<n {
            let j = backward ? n - 1 - step : step
            var dis = delta[j] - d
            if dis > .pi { dis -= 2 * .pi } else if dis < -.pi { dis += 2 * .pi }
            var k = kMag
            if s.magneticDisturbanceRejection {
                if disturbed[j] {
                    if rejectTime <= s.magMaxRejectionTime {
                        rejectTime += interval
                        k = 0
                    } else {
                        k /= s.magRejectionFactor
                    }
                } else {
                    rejectTime = max(rejectTime - s.magRejectionFactor * interval, 0)
                }
            }
            if kMagInit != 0 {
                if k < kMagInit { k = kMagInit }
                kMagInit = kMagInit / (kMagInit + 1)
                if kMagInit * s.tauMag < interval { kMagInit = 0 }
            }
            d = wrapped(d + k * dis)
            delta[j] = d
        }
    }

    @inlinable static func wrapped(_ a: Double) -> Double {
        a > .pi ? a - 2 * .pi : a < -.pi ? a + 2 * .pi : a
    }
}

extension AttitudeFilter {
    /// The filter set to sample `i` of a smoothed recording (`gyro`, `accel`
    /// that sample's readings), so that ``deviceMotion(in:)`` and
    /// ``quaternion(in:)`` give the smoothed attitude in any frame. Only the
    /// outputs are meaningful: it is not a state to run on from.
    public mutating func show(_ s: AttitudeSmoother.Output, at i: Int, gyro: Vector3, accel: Vector3) {
        state.gyroQuat = s.gyroQuat[i]
        state.accQuat = s.accQuat[i]
        state.delta = s.delta[i]
        state.deltaCos = mathCos(s.delta[i] / 2)
        state.deltaSin = mathSin(s.delta[i] / 2)
        state.bias = s.bias[i]
        state.lastGyro = gyro
        state.lastAccel = accel
        state.lastMag = s.field[i]
        state.restDetected = s.rest[i]
        state.magDisturbed = s.magneticDisturbance[i]
        state.magSamples = s.hasMagnetometer ? 1 : 0
        state.hasHeadingReference = s.hasMagnetometer
        state.correctedFrameOffset = s.firstDelta
    }
}
