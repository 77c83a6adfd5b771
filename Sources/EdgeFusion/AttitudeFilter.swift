// SPDX-License-Identifier: Apache-2.0 AND MIT
// SPDX-FileCopyrightText: 2021 Daniel Laidig <laidig@control.tu-berlin.de>
//
// This file follows VQF's reference implementation (github.com/dlaidig/vqf,
// vqf/cpp/vqf.cpp, MIT licence) closely. VQF's copyright and permission
// notice is reproduced in THIRD_PARTY_NOTICES at the repository root.

/// The attitude filter: gyroscope strapdown integration, accelerometer
/// inclination correction in an almost-inertial frame, rest detection,
/// gyroscope-bias estimation (at rest and in motion) and magnetometer heading
/// correction with magnetic-disturbance rejection.
///
/// This is VQF — D. Laidig and T. Seel, "VQF: Highly accurate IMU orientation
/// estimation with bias estimation and magnetic disturbance rejection",
/// Information Fusion 91 (2023) 187–204, doi:10.1016/j.inffus.2022.10.014 —
/// written from the reference implementation (`vqf/cpp/vqf.cpp`, MIT licence,
/// © 2021 Daniel Laidig): same equations, same default parameters. What is
/// ours: the Swift value types, per-sample `dt` (irregular intervals and
/// dropped samples; coefficients are re-derived only when `dt` changes by
/// more than `Settings.coefficientTolerance`), magnetometer calibration on
/// input, and the Core Motion outputs (`DeviceMotion.swift`, `ReferenceFrame.swift`).
///
/// Frames: `v_earth = q.rotate(v_sensor)`. The filter's own earth frames are
/// VQF's: the 6D frame (Z up, arbitrary heading) and the 9D frame, which is
/// ENU (X east, Y magnetic north, Z up) — `quaternion(in:)` converts to Core
/// Motion's reference frames.
///
/// Units: gyroscope rad/s, accelerometer m/s² (specific force: +9.81 on Z
/// when flat and at rest), magnetometer µT (any consistent unit works: only
/// directions and relative norms are used), `dt` seconds.
///
/// Sensors may run at different rates: call `updateGyro` for every gyroscope
/// sample, `updateAccel` and `updateMag` whenever those arrive, each with the
/// time since that sensor's previous sample. `update(gyro:accel:mag:dt:)` does
/// all three for a combined sample and tracks the magnetometer's interval.
/// Nothing allocates; everything is deterministic.
public struct AttitudeFilter: Sendable {
    public let settings: Settings
    public private(set) var coefficients: Coefficients
    /// Everything that changes. Copy it out and back in (`init(settings:state:)`
    /// or `state = …`) to hand a running filter over without a jump.
    public var state: State
    /// The calibration the caller has already applied to the magnetometer
    /// samples it feeds (the agent calibrates in the chip frame, before the
    /// mounting): not applied again, but it says how good the field is, for
    /// ``magneticFieldAccuracy``. `Settings.magnetometerCalibration`, when
    /// set, is applied by the filter and wins.
    public var inputCalibration: MagnetometerCalibration? {
        didSet { calibrationQuality = CalibrationQuality(settings.magnetometerCalibration ?? inputCalibration) }
    }
    /// What ``magneticFieldAccuracy`` judges the field by, unpacked once
    /// from the calibration in use (not copied out of an Optional per sample).
    @usableFromInline var calibrationQuality: CalibrationQuality

    @usableFromInline struct CalibrationQuality: Sendable {
        /// A calibration is in use; its field strength, µT (0: unknown); its fit's RMS residual, relative.
        @usableFromInline var present: Bool, fieldStrength: Double, residual: Double
        init(_ c: MagnetometerCalibration?) {
            present = c != nil; fieldStrength = c?.fieldStrength ?? 0; residual = c?.residual ?? 0
        }
    }

    /// Creates a filter for a nominal sample interval `sampleInterval` (s) of
    /// the gyroscope; `accelInterval` and `magInterval` default to it.
    public init(settings: Settings = Settings(), sampleInterval: Double,
                accelInterval: Double? = nil, magInterval: Double? = nil) {
        precondition(sampleInterval > 0, "AttitudeFilter: sampleInterval must be positive")
        self.settings = settings
        coefficients = Coefficients(settings: settings, gyroDt: sampleInterval,
                                    accelDt: accelInterval ?? sampleInterval,
                                    magDt: magInterval ?? sampleInterval)
        state = State(coefficients: coefficients, settings: settings)
        calibrationQuality = CalibrationQuality(settings.magnetometerCalibration)
    }

    /// Resumes from a saved state (the coefficients are re-derived from the
    /// intervals the state was running at).
    public init(settings: Settings, state: State) {
        self.settings = settings
        coefficients = Coefficients(settings: settings, gyroDt: state.gyroCoefficientDt,
                                    accelDt: state.accelCoefficientDt, magDt: state.magCoefficientDt)
        self.state = state
        calibrationQuality = CalibrationQuality(settings.magnetometerCalibration)
    }

    /// Back to the initial state (identity attitude, zero bias, unknown field).
    public mutating func reset() { state = State(coefficients: coefficients, settings: settings) }

    // MARK: - combined update

    /// One combined sample. `gyro` rad/s, `accel` m/s² (specific force),
    /// `mag` µT raw (the magnetometer calibration in `settings` is applied) or
    /// `nil` when there is no magnetometer sample with this one, `dt` seconds
    /// since the previous call.
    @inlinable
    public mutating func update(gyro: Vector3, accel: Vector3, mag: Vector3?, dt: Double) {
        updateGyro(gyro, dt: dt)
        updateAccelAndMag(accel, mag: mag, dt: dt)
    }

    /// The rest of ``update(gyro:accel:mag:dt:)`` after ``updateGyro(_:dt:)``
    /// (the continuous calibration reads the gyroscope's integral between the two).
    @inlinable @inline(__always)
    public mutating func updateAccelAndMag(_ accel: Vector3, mag: Vector3?, dt: Double) {
        // the 6D attitude after the inclination correction, for the heading's (made once)
        let q6 = updateAccelGivingQ6(accel, dt: dt)
        state.timeSinceMag += dt
        if let mag {
            let magDt = state.magSamples == 0 ? coefficients.magDt : state.timeSinceMag
            updateMag(mag, dt: magDt, q6: q6 ?? state.accQuat * state.gyroQuat)
        }
    }

    // MARK: - gyroscope

    /// Integrates one gyroscope sample (rad/s) over `dt` seconds. Samples
    /// with a non-finite component, and `dt ≤ 0`, are skipped.
    @inlinable
    public mutating func updateGyro(_ gyro: Vector3, dt: Double) {
        // a non-finite sample (sensor fault) is skipped, never integrated
        guard (gyro.x + gyro.y + gyro.z).isFinite else { return }
        state.lastGyro = gyro
        guard dt > 0, dt.isFinite else { return }
        if abs(dt - coefficients.gyroDt) > settings.coefficientTolerance * coefficients.gyroDt {
            retuneGyro(dt)
        }
        let c = coefficients
        // rest detection (VQF updateGyr)
        if settings.restBiasEstimation || settings.magneticDisturbanceRejection {
            let lp = state.restGyroLp.step(gyro, c.restGyroLp, tau: settings.restFilterTau, dt: dt)
            let d = gyro - lp
            let dev = d.dot(d)
            state.restLastSquaredDeviations.x = dev
            let a = lp.magnitudes
            if dev >= c.restThresholdGyroSquared || a.x > c.biasClip || a.y > c.biasClip || a.z > c.biasClip {
                state.restTime = 0
                state.restDetected = false
            }
        }
        state.gyroQuat = (state.gyroQuat * Self.strapdownStep(gyro - state.bias, dt: dt)).renormalized
    }

    /// The rotation a bias-free rate `w` (rad/s) turns the sensor through in
    /// `dt` s: the strapdown step `(cos h, sin h · w/|w|)`, `h = |w| dt / 2`.
    /// One definition for the filter and the offline smoother.
    @inlinable @inline(__always)
    public static func strapdownStep(_ w: Vector3, dt: Double) -> Quaternion {
        let hdt = dt / 2
        let h2 = w.dot(w) * (hdt * hdt)
        let cosH: Double, sinHOverW: Double  // cos h and sin(h)/|w|
        if h2 < 0.0025 {
            // |h| < 0.05 rad (|w| < 0.1/dt): Taylor series to h⁸, truncation < 3e-20
            cosH = 1 + h2 * (-1.0 / 2 + h2 * (1.0 / 24 + h2 * (-1.0 / 720 + h2 * (1.0 / 40320))))
            sinHOverW = hdt * (1 + h2 * (-1.0 / 6 + h2 * (1.0 / 120 + h2 * (-1.0 / 5040 + h2 * (1.0 / 362880)))))
        } else {
            let n = h2.squareRoot() / hdt
            cosH = mathCos(n * hdt)
            sinHOverW = mathSin(n * hdt) / n
        }
        return Quaternion(w: cosH, x: sinHOverW * w.x, y: sinHOverW * w.y, z: sinHOverW * w.z)
    }

    // MARK: - accelerometer

    /// Corrects the inclination with one accelerometer sample (m/s², specific
    /// force) taken `dt` seconds after the previous one. All-zero and
    /// non-finite samples are ignored.
    @inlinable
    public mutating func updateAccel(_ accel: Vector3, dt: Double) {
        _ = updateAccelGivingQ6(accel, dt: dt)
    }

    /// ``updateAccel(_:dt:)``, returning the 6D attitude `accQuat * gyroQuat`
    /// it made for the bias estimation (nil when the sample was ignored or
    /// the bias is not estimated), so that the heading correction need not
    /// make it again.
    @inlinable
    mutating func updateAccelGivingQ6(_ accel: Vector3, dt: Double) -> Quaternion? {
        if accel.x == 0 && accel.y == 0 && accel.z == 0 { return nil }
        guard (accel.x + accel.y + accel.z).isFinite else { return nil }
        state.lastAccel = accel
        state.accelSamples &+= 1
        let dt = dt > 0 && dt.isFinite ? dt : coefficients.accelDt
        if abs(dt - coefficients.accelDt) > settings.coefficientTolerance * coefficients.accelDt {
            retuneAccel(dt)
        }
        let c = coefficients

        // rest detection
        if settings.restBiasEstimation {
            let lp = state.restAccLp.step(accel, c.restAccLp, tau: settings.restFilterTau, dt: dt)
            let d = accel - lp
            let dev = d.dot(d)
            state.restLastSquaredDeviations.y = dev
            if dev >= c.restThresholdAccelSquared {
                state.restTime = 0
                state.restDetected = false
            } else {
                state.restTime += dt
                if state.restTime >= settings.restMinTime { state.restDetected = true }
            }
        }

        // low-pass filter the acceleration in the almost-inertial frame
        let accInertial = state.gyroQuat.rotate(accel)
        let lp = state.accLp.step(accInertial, c.accLp, tau: settings.tauAcc, dt: dt)

        // to the 6D earth frame, normalised
        let accEarth = state.accQuat.rotate(lp).normalized

        // both factors are unit: a first-order renormalisation keeps it so
        state.accQuat = Self.inclinationCorrection(accEarth, times: state.accQuat).renormalized

        guard settings.motionBiasEstimation || settings.restBiasEstimation else { return nil }
        let q6 = state.accQuat * state.gyroQuat
        estimateBias(accEarth: accEarth, dt: dt, q6: q6)
        return q6
    }

    /// The inclination correction for a unit `accEarth` (the low-passed
    /// specific force in the 6D earth frame): the shortest rotation taking
    /// it to +Z. One definition for the filter and the offline smoother.
    @inlinable @inline(__always)
    public static func inclinationCorrection(_ accEarth: Vector3) -> Quaternion {
        let qw = ((accEarth.z + 1) / 2).squareRoot()
        if qw > 1e-6 {
            let k = 0.5 / qw
            return Quaternion(w: qw, x: k * accEarth.y, y: -k * accEarth.x, z: 0)
        }
        return Quaternion(w: 0, x: 1, y: 0, z: 0)  // accEarth ≈ (0,0,-1): 180° about X
    }

    /// `inclinationCorrection(accEarth) * q` without the products with the
    /// correction's zero z component (the same result: those terms are 0).
    @inlinable @inline(__always)
    static func inclinationCorrection(_ accEarth: Vector3, times q: Quaternion) -> Quaternion {
        let a = inclinationCorrection(accEarth)
        return Quaternion(w: a.w * q.w - a.x * q.x - a.y * q.y,
                          x: a.w * q.x + a.x * q.w + a.y * q.z,
                          y: a.w * q.y - a.x * q.z + a.y * q.w,
                          z: a.w * q.z + a.x * q.y - a.y * q.x)
    }

    /// Gyroscope-bias estimation: a 3-state Kalman filter whose measurement is
    /// either the low-passed gyroscope at rest or, in motion, the inclination
    /// correction rate seen through the low-passed rotation matrix
    /// (VQF `updateAcc`, bias-estimation block).
    @inlinable
    mutating func estimateBias(accEarth: Vector3, dt: Double) {
        estimateBias(accEarth: accEarth, dt: dt, q6: state.accQuat * state.gyroQuat)
    }

    /// The same, given the 6D attitude `q6` (`accQuat * gyroQuat`, which
    /// the caller has already made).
    ///
    /// Cost (issue 22): `P` and `S` are symmetric, so the Kalman step works
    /// on their six distinct elements (`S`, its inverse and the update of
    /// `P` are computed once per pair and mirrored); at rest `R` is the
    /// identity and `R P` is `P` itself. The same equations as VQF's, in
    /// another order: the results differ from a full 3×3 evaluation by
    /// rounding only (`bench/vqf-compare.py` bounds that).
    @inlinable
    mutating func estimateBias(accEarth: Vector3, dt: Double, q6: Quaternion) {
        let c = coefficients
        var r = q6.rotationMatrix
        let b = state.bias
        // R * bias, x and y only
        var biasLp = SIMD2(r.r0.dot(b), r.r1.dot(b))
        r = state.motionBiasR.step(r, c.accLp, tau: settings.tauAcc, dt: dt)
        biasLp = state.motionBiasLp.step(biasLp, c.accLp, tau: settings.tauAcc, dt: dt)

        // P = P + V (also without a measurement)
        if state.biasP.r0.x < c.biasP0 { state.biasP.r0.x += c.biasV }
        if state.biasP.r1.y < c.biasP0 { state.biasP.r1.y += c.biasV }
        if state.biasP.r2.z < c.biasP0 { state.biasP.r2.z += c.biasV }
        let p = state.biasP

        // measurement e, its noise w, and A = R P (rows a0, a1, a2)
        var e0: Double, e1: Double, e2: Double
        let w0: Double, w1: Double, w2: Double
        let a0: Vector3, a1: Vector3, a2: Vector3
        let s00: Double, s01: Double, s02: Double, s11: Double, s12: Double, s22: Double
        if state.restDetected && settings.restBiasEstimation {
            let d = state.restGyroLp.output - b
            e0 = d.x; e1 = d.y; e2 = d.z
            w0 = c.biasRestW; w1 = c.biasRestW; w2 = c.biasRestW
            // R is the identity: A = P, S = P + W
            a0 = p.r0; a1 = p.r1; a2 = p.r2
            s00 = p.r0.x + w0; s01 = p.r0.y; s02 = p.r0.z
            s11 = p.r1.y + w1; s12 = p.r1.z; s22 = p.r2.z + w2
        } else if settings.motionBiasEstimation {
            let invDt = 1 / dt
            e0 = -accEarth.y * invDt + biasLp.x - r.r0.dot(b)
            e1 = accEarth.x * invDt + biasLp.y - r.r1.dot(b)
            e2 = -r.r2.dot(b)
            w0 = c.biasMotionW; w1 = c.biasMotionW; w2 = c.biasVerticalW
            a0 = r.r0.x * p.r0 + r.r0.y * p.r1 + r.r0.z * p.r2
            a1 = r.r1.x * p.r0 + r.r1.y * p.r1 + r.r1.z * p.r2
            a2 = r.r2.x * p.r0 + r.r2.y * p.r1 + r.r2.z * p.r2
            // S symmetric: its upper triangle
            s00 = a0.dot(r.r0) + w0; s01 = a0.dot(r.r1); s02 = a0.dot(r.r2)
            s11 = a1.dot(r.r1) + w1; s12 = a1.dot(r.r2); s22 = a2.dot(r.r2) + w2
        } else {
            return
        }

        // clip the disagreement (also limits the harm of the first correction step)
        let clip = c.biasClip
        e0 = min(max(e0, -clip), clip); e1 = min(max(e1, -clip), clip); e2 = min(max(e2, -clip), clip)

        // With A = R P (P symmetric, so P Rᵀ = Aᵀ):
        //   S = W + R P Rᵀ = W + A Rᵀ,  K = P Rᵀ S⁻¹ = Aᵀ S⁻¹,
        //   bias += K e = Aᵀ (S⁻¹ e),   P −= K R P = Aᵀ (S⁻¹ A)
        // S⁻¹ by cofactors (symmetric), nil when |det| ≤ epsilon (VQF's `matrix3Inv`)
        let c00 = s11 * s22 - s12 * s12, c01 = s02 * s12 - s01 * s22, c02 = s01 * s12 - s02 * s11
        let det = s00 * c00 + s01 * c01 + s02 * c02
        guard abs(det) > Double.ulpOfOne else { return }
        let k = 1 / det
        let i00 = k * c00, i01 = k * c01, i02 = k * c02
        let i11 = k * (s00 * s22 - s02 * s02), i12 = k * (s01 * s02 - s00 * s12), i22 = k * (s00 * s11 - s01 * s01)
        // u = S⁻¹ e; bias += Aᵀ u
        let u0 = i00 * e0 + i01 * e1 + i02 * e2
        let u1 = i01 * e0 + i11 * e1 + i12 * e2
        let u2 = i02 * e0 + i12 * e1 + i22 * e2
        var nb = b + (u0 * a0 + u1 * a1 + u2 * a2)
        // G = S⁻¹ A (rows g0, g1, g2); P −= Aᵀ G, symmetric: its upper triangle, mirrored
        let g0 = i00 * a0 + i01 * a1 + i02 * a2
        let g1 = i01 * a0 + i11 * a1 + i12 * a2
        let g2 = i02 * a0 + i12 * a1 + i22 * a2
        // column j of Aᵀ G is Σ_k a_k[j] g_k: row 0 of Aᵀ G = a0.x g0 + a1.x g1 + a2.x g2, …
        let d0 = a0.x * g0 + a1.x * g1 + a2.x * g2
        let d1 = a0.y * g0 + a1.y * g1 + a2.y * g2
        let d22 = a0.z * g0.z + a1.z * g1.z + a2.z * g2.z
        let p00 = p.r0.x - d0.x, p01 = p.r0.y - d0.y, p02 = p.r0.z - d0.z
        let p11 = p.r1.y - d1.y, p12 = p.r1.z - d1.z, p22 = p.r2.z - d22
        state.biasP = Matrix3(Vector3(p00, p01, p02), Vector3(p01, p11, p12), Vector3(p02, p12, p22))
        nb.x = min(max(nb.x, -clip), clip); nb.y = min(max(nb.y, -clip), clip); nb.z = min(max(nb.z, -clip), clip)
        state.bias = nb
    }

    // MARK: - magnetometer

    /// Corrects the heading with one magnetometer sample (µT, raw: the
    /// calibration in `settings` is applied here) taken `dt` seconds after the
    /// previous magnetometer sample. All-zero and non-finite samples are ignored.
    @inlinable
    public mutating func updateMag(_ rawMag: Vector3, dt: Double) {
        updateMag(rawMag, dt: dt, q6: state.accQuat * state.gyroQuat)
    }

    /// ``updateMag(_:dt:)`` given the current 6D attitude `q6`
    /// (`accQuat * gyroQuat`).
    @inlinable
    mutating func updateMag(_ rawMag: Vector3, dt: Double, q6: Quaternion) {
        if rawMag.x == 0 && rawMag.y == 0 && rawMag.z == 0 { return }
        guard (rawMag.x + rawMag.y + rawMag.z).isFinite else { return }
        let mag = coefficients.calibrated ? coefficients.softIron * (rawMag - coefficients.hardIron) : rawMag
        state.lastMag = mag
        state.magSamples &+= 1
        state.timeSinceMag = 0
        let dt = dt > 0 && dt.isFinite ? dt : coefficients.magDt
        if abs(dt - coefficients.magDt) > settings.coefficientTolerance * coefficients.magDt {
            retuneMag(dt)
        }
        let c = coefficients

        // into the 6D earth frame
        let magEarth = q6.rotate(mag)

        if settings.magneticDisturbanceRejection {
            let norm = magEarth.norm
            var nd = SIMD2(norm, -mathAsin(magEarth.z / norm))
            if settings.magCurrentTau > 0 {
                nd = state.magNormDipLp.step(nd, c.magNormDipLp, tau: settings.magCurrentTau, dt: dt)
            }
            state.magNormDip = nd

            // disturbance detection against the reference field
            if abs(nd.x - state.magRefNorm) < settings.magNormThreshold * state.magRefNorm
                && abs(nd.y - state.magRefDip) < c.magDipThreshold {
                state.magUndisturbedTime += dt
                if state.magUndisturbedTime >= settings.magMinUndisturbedTime {
                    state.magDisturbed = false
                    state.magRefNorm += c.kMagRef * (nd.x - state.magRefNorm)
                    state.magRefDip += c.kMagRef * (nd.y - state.magRefDip)
                }
            } else {
                state.magUndisturbedTime = 0
                state.magDisturbed = true
            }

            // new-field acceptance: a field that stays consistent while the
            // sensor turns becomes the new reference
            if abs(nd.x - state.magCandidateNorm) < settings.magNormThreshold * state.magCandidateNorm
                && abs(nd.y - state.magCandidateDip) < c.magDipThreshold {
                if state.restGyroLp.output.norm >= c.magNewMinGyro {
                    state.magCandidateTime += dt
                }
                state.magCandidateNorm += c.kMagRef * (nd.x - state.magCandidateNorm)
                state.magCandidateDip += c.kMagRef * (nd.y - state.magCandidateDip)
                if state.magDisturbed && (state.magCandidateTime >= settings.magNewTime
                    || (state.magRefNorm == 0 && state.magCandidateTime >= settings.magNewFirstTime)) {
                    state.magRefNorm = state.magCandidateNorm
                    state.magRefDip = state.magCandidateDip
                    state.magDisturbed = false
                    state.magUndisturbedTime = settings.magMinUndisturbedTime
                }
            } else {
                state.magCandidateTime = 0
                state.magCandidateNorm = nd.x
                state.magCandidateDip = nd.y
            }
        }

        // heading disagreement in [-π, π]: the field's heading atan2(x, y)
        // less delta, as the heading of the field turned back by delta
        // (cos and sin of delta from those of delta/2, kept with it)
        let cd = state.deltaCos * state.deltaCos - state.deltaSin * state.deltaSin
        let sd = 2 * state.deltaCos * state.deltaSin
        let dis = Self.heading(x: magEarth.x * cd - magEarth.y * sd, y: magEarth.y * cd + magEarth.x * sd)
        state.lastMagDisagreement = dis

        var k = c.kMag
        if settings.magneticDisturbanceRejection {
            if state.magDisturbed {
                if state.magRejectTime <= settings.magMaxRejectionTime {
                    state.magRejectTime += dt
                    k = 0
                } else {
                    k /= settings.magRejectionFactor
                }
            } else {
                state.magRejectTime = max(state.magRejectTime - settings.magRejectionFactor * dt, 0)
            }
        }

        // fast initial convergence: gain at least 1/N for the first samples
        if state.kMagInit != 0 {
            if k < state.kMagInit { k = state.kMagInit }
            state.kMagInit = state.kMagInit / (state.kMagInit + 1)
            if state.kMagInit * settings.tauMag < dt { state.kMagInit = 0 }
        }

        let increment = k * dis
        state.delta += increment
        var wrapped = false
        if state.delta > .pi { state.delta -= 2 * .pi; wrapped = true }
        else if state.delta < -.pi { state.delta += 2 * .pi; wrapped = true }
        // cos/sin of delta/2 for the frame conversions: turned by increment/2
        // (series to x⁸ for |x| < 0.05, truncation < 3e-20) or recomputed
        let x = increment / 2
        if x == 0 && !wrapped {
            // unchanged (e.g. heading correction paused during a disturbance)
        } else if x < 0.05 && x > -0.05 {
            let x2 = x * x
            let cx = 1 + x2 * (-1.0 / 2 + x2 * (1.0 / 24 + x2 * (-1.0 / 720 + x2 * (1.0 / 40320))))
            let sx = x * (1 + x2 * (-1.0 / 6 + x2 * (1.0 / 120 + x2 * (-1.0 / 5040 + x2 * (1.0 / 362880)))))
            var c = state.deltaCos * cx - state.deltaSin * sx
            var sn = state.deltaSin * cx + state.deltaCos * sx
            let n = 1.5 - 0.5 * (c * c + sn * sn)  // first-order renormalisation
            c *= n; sn *= n
            // wrapping by ∓2π moves the half angle by ∓π: both change sign
            state.deltaCos = wrapped ? -c : c
            state.deltaSin = wrapped ? -sn : sn
        } else {
            state.deltaCos = mathCos(state.delta / 2)
            state.deltaSin = mathSin(state.delta / 2)
        }
        if !state.hasHeadingReference {
            // the corrected-arbitrary frame starts where the 6D frame is now
            state.hasHeadingReference = true
            state.correctedFrameOffset = state.delta
        }
    }

    /// `atan2(x, y)`, rad: the heading of (x, y) from +y towards +x. Near
    /// +y (|x| ≤ y/8, the disagreement of a converged heading) the series
    /// of atan(x/y) to the 19th power (truncation below 2⁻⁵⁹ relative,
    /// within 1 ulp of libm), a tenth of `atan2`'s cost; `atan2` elsewhere.
    @inlinable @inline(__always)
    static func heading(x: Double, y: Double) -> Double {
        guard y > 0, abs(x) <= 0.125 * y else { return mathAtan2(x, y) }
        let z = x / y, z2 = z * z
        var p = -1.0 / 19
        p = 1.0 / 17 + z2 * p; p = -1.0 / 15 + z2 * p; p = 1.0 / 13 + z2 * p
        p = -1.0 / 11 + z2 * p; p = 1.0 / 9 + z2 * p; p = -1.0 / 7 + z2 * p
        p = 1.0 / 5 + z2 * p; p = -1.0 / 3 + z2 * p
        return z + z * (z2 * p)
    }

    // MARK: - outputs of the filter core

    /// Attitude from gyroscope and accelerometer only: Z up, heading arbitrary
    /// (drifts with the integrated gyroscope error).
    @inlinable @inline(__always) public var quaternion6D: Quaternion { state.accQuat * state.gyroQuat }

    /// Attitude with magnetometer heading: earth frame ENU (X east, Y
    /// magnetic north, Z up). Equals `quaternion6D` until a magnetometer
    /// sample arrives.
    @inlinable public var quaternion9D: Quaternion {
        quaternion6D.turnedAboutVertical(cosHalf: state.deltaCos, sinHalf: state.deltaSin)
    }

    /// Estimated gyroscope bias (rad/s, sensor frame).
    @inlinable public var gyroBias: Vector3 { state.bias }

    /// Standard deviation of the bias estimate (rad/s): the largest absolute
    /// row sum of P (an upper bound of its largest eigenvalue), clipped.
    public var gyroBiasUncertainty: Double {
        let p = state.biasP
        let m = max(p.r0.magnitudes.sum(), p.r1.magnitudes.sum(), p.r2.magnitudes.sum())
        return min(m, coefficients.biasP0).squareRoot() * (Double.pi / 100 / 180)
    }

    /// True while the sensor is detected at rest.
    @inlinable public var isAtRest: Bool { state.restDetected }
    /// True while the magnetic field is judged disturbed (heading not corrected).
    @inlinable public var isMagneticallyDisturbed: Bool { state.magDisturbed }

    // MARK: - coefficient changes

    @usableFromInline mutating func retuneGyro(_ dt: Double) {
        let old = coefficients.restGyroLp
        coefficients.setGyroDt(dt, settings: settings)
        state.restGyroLp.adapt(from: old, to: coefficients.restGyroLp)
        state.gyroCoefficientDt = dt
    }

    @usableFromInline mutating func retuneAccel(_ dt: Double) {
        let oldAcc = coefficients.accLp, oldRest = coefficients.restAccLp
        coefficients.setAccelDt(dt, settings: settings)
        state.accLp.adapt(from: oldAcc, to: coefficients.accLp)
        state.motionBiasR.adapt(from: oldAcc, to: coefficients.accLp)
        state.motionBiasLp.adapt(from: oldAcc, to: coefficients.accLp)
        state.restAccLp.adapt(from: oldRest, to: coefficients.restAccLp)
        state.accelCoefficientDt = dt
    }

    @usableFromInline mutating func retuneMag(_ dt: Double) {
        let old = coefficients.magNormDipLp
        coefficients.setMagDt(dt, settings: settings)
        state.magNormDipLp.adapt(from: old, to: coefficients.magNormDipLp)
        state.magCoefficientDt = dt
    }
}

// MARK: - Settings

extension AttitudeFilter {
    /// Parameters, all independent of the sample rate (VQF's `VQFParams`,
    /// same defaults). Angles in degrees and rates in °/s where VQF uses them.
    public struct Settings: Equatable, Sendable, Codable {
        /// Time constant of the accelerometer low-pass (inclination correction), s.
        public var tauAcc = 3.0
        /// Time constant of the magnetometer heading correction, s.
        public var tauMag = 9.0
        /// Estimate the gyroscope bias while moving (from the inclination correction).
        public var motionBiasEstimation = true
        /// Estimate the gyroscope bias at rest.
        public var restBiasEstimation = true
        /// Detect magnetic disturbances and stop heading correction during them.
        public var magneticDisturbanceRejection = true
        /// Standard deviation of the initial bias estimate, °/s.
        public var biasSigmaInit = 0.5
        /// Time in which the bias uncertainty grows from 0 to 0.1 °/s, s.
        public var biasForgettingTime = 100.0
        /// Largest bias (and bias-update disagreement) allowed, °/s.
        public var biasClip = 2.0
        /// Standard deviation of the motion bias measurement (in the horizontal plane), °/s.
        public var biasSigmaMotion = 0.1
        /// Relative weight of the vertical bias component in motion (0 … 1).
        public var biasVerticalForgettingFactor = 0.0001
        /// Standard deviation of the rest bias measurement, °/s.
        public var biasSigmaRest = 0.03
        /// Time the sensor must be still before rest is detected, s.
        public var restMinTime = 1.5
        /// Time constant of the rest-detection low-pass, s.
        public var restFilterTau = 0.5
        /// Rest threshold: deviation of the gyroscope from its low-pass, °/s.
        public var restThresholdGyro = 2.0
        /// Rest threshold: deviation of the accelerometer from its low-pass, m/s².
        public var restThresholdAccel = 0.5
        /// Time constant of the current magnetic norm/dip low-pass, s (≤ 0: none).
        public var magCurrentTau = 0.05
        /// Time constant with which the reference norm/dip follow the field, s.
        public var magRefTau = 20.0
        /// Relative norm difference above which the field is disturbed.
        public var magNormThreshold = 0.1
        /// Dip-angle difference above which the field is disturbed, degrees.
        public var magDipThreshold = 10.0
        /// Time a new consistent field must be seen while turning before it is accepted, s.
        public var magNewTime = 20.0
        /// Same, for the very first field, s.
        public var magNewFirstTime = 5.0
        /// Rotation rate that counts as turning for the new-field timer, °/s.
        public var magNewMinGyro = 20.0
        /// Time the field must be undisturbed before heading correction resumes, s.
        public var magMinUndisturbedTime = 0.5
        /// Longest time the heading correction is fully switched off, s.
        public var magMaxRejectionTime = 60.0
        /// After that, the gain is divided by this factor (and the reject
        /// timer runs down this much faster when undisturbed).
        public var magRejectionFactor = 2.0
        /// Relative change of a sensor's sample interval that re-derives its
        /// coefficients (smaller changes keep them; integration always uses the true `dt`).
        public var coefficientTolerance = 0.1
        /// Hard/soft-iron calibration applied to raw magnetometer samples.
        public var magnetometerCalibration: MagnetometerCalibration? = nil
        /// Magnetic declination (degrees, east positive) for
        /// `xTrueNorthZVertical`; `nil` when unknown (that frame is then not
        /// available, and falls back to magnetic north if asked for). See
        /// `MagneticDeclination.dipoleEstimate` for one from a location.
        public var declination: Double? = nil
        /// Learn the magnetometer's hard iron continuously from the
        /// gyroscope (`MagnetometerSelfCalibration`) where the filter runs in
        /// the agent and in `fuse`; false: the field goes to the filter as
        /// it comes, VQF's behaviour. The filter itself does not read it.
        public var magnetometerSelfCalibration: Bool = true
        /// Time constant of the magnetometer heading correction on the
        /// edge path (`magnetometerSelfCalibration` on), s; `tauMag` (VQF's
        /// 9 s) with it off. Chosen leave-one-trial-out on BROAD
        /// (docs/fusion.md): the heading leans on the gyroscope longer, so a
        /// field that is off by a few degrees here and there (iron near the
        /// path, a calibration's leftover) moves it less.
        public var tauMagSelfCalibrated = 30.0

        public init() {}

        /// The settings the filter runs with: these as they are with
        /// `magnetometerSelfCalibration` off (VQF's path); with it on,
        /// `tauMag` is `tauMagSelfCalibrated`.
        public var running: Settings {
            guard magnetometerSelfCalibration else { return self }
            var s = self
            s.tauMag = tauMagSelfCalibrated
            return s
        }

        enum CodingKeys: String, CodingKey {
            case tauAcc, tauMag, motionBiasEstimation, restBiasEstimation, magneticDisturbanceRejection, biasSigmaInit, biasForgettingTime, biasClip, biasSigmaMotion, biasVerticalForgettingFactor, biasSigmaRest, restMinTime, restFilterTau, restThresholdGyro, restThresholdAccel, magCurrentTau, magRefTau, magNormThreshold, magDipThreshold, magNewTime, magNewFirstTime, magNewMinGyro, magMinUndisturbedTime, magMaxRejectionTime, magRejectionFactor, coefficientTolerance, magnetometerCalibration, declination, magnetometerSelfCalibration, tauMagSelfCalibrated
        }

        /// Decodes from a configuration: every key is optional and defaults
        /// to VQF's value; numbers must be finite and time constants ≥ 0.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func number(_ key: CodingKeys, _ fallback: Double) throws -> Double {
                guard let v = try c.decodeIfPresent(Double.self, forKey: key) else { return fallback }
                guard v.isFinite else {
                    throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "\(key.stringValue) must be a finite number")
                }
                return v
            }
            let d = Settings()
            tauAcc = try number(.tauAcc, d.tauAcc)
            tauMag = try number(.tauMag, d.tauMag)
            tauMagSelfCalibrated = try number(.tauMagSelfCalibrated, d.tauMagSelfCalibrated)
            biasSigmaInit = try number(.biasSigmaInit, d.biasSigmaInit)
            biasForgettingTime = try number(.biasForgettingTime, d.biasForgettingTime)
            biasClip = try number(.biasClip, d.biasClip)
            biasSigmaMotion = try number(.biasSigmaMotion, d.biasSigmaMotion)
            biasVerticalForgettingFactor = try number(.biasVerticalForgettingFactor, d.biasVerticalForgettingFactor)
            biasSigmaRest = try number(.biasSigmaRest, d.biasSigmaRest)
            restMinTime = try number(.restMinTime, d.restMinTime)
            restFilterTau = try number(.restFilterTau, d.restFilterTau)
            restThresholdGyro = try number(.restThresholdGyro, d.restThresholdGyro)
            restThresholdAccel = try number(.restThresholdAccel, d.restThresholdAccel)
            magCurrentTau = try number(.magCurrentTau, d.magCurrentTau)
            magRefTau = try number(.magRefTau, d.magRefTau)
            magNormThreshold = try number(.magNormThreshold, d.magNormThreshold)
            magDipThreshold = try number(.magDipThreshold, d.magDipThreshold)
            magNewTime = try number(.magNewTime, d.magNewTime)
            magNewFirstTime = try number(.magNewFirstTime, d.magNewFirstTime)
            magNewMinGyro = try number(.magNewMinGyro, d.magNewMinGyro)
            magMinUndisturbedTime = try number(.magMinUndisturbedTime, d.magMinUndisturbedTime)
            magMaxRejectionTime = try number(.magMaxRejectionTime, d.magMaxRejectionTime)
            magRejectionFactor = try number(.magRejectionFactor, d.magRejectionFactor)
            coefficientTolerance = try number(.coefficientTolerance, d.coefficientTolerance)
            motionBiasEstimation = try c.decodeIfPresent(Bool.self, forKey: .motionBiasEstimation) ?? d.motionBiasEstimation
            restBiasEstimation = try c.decodeIfPresent(Bool.self, forKey: .restBiasEstimation) ?? d.restBiasEstimation
            magneticDisturbanceRejection = try c.decodeIfPresent(Bool.self, forKey: .magneticDisturbanceRejection) ?? d.magneticDisturbanceRejection
            magnetometerCalibration = try c.decodeIfPresent(MagnetometerCalibration.self, forKey: .magnetometerCalibration)
            magnetometerSelfCalibration = try c.decodeIfPresent(Bool.self, forKey: .magnetometerSelfCalibration) ?? d.magnetometerSelfCalibration
            declination = try number(.declination, .nan)
            if declination!.isNaN { declination = nil }
            for (key, v) in [(CodingKeys.tauAcc, tauAcc), (.restMinTime, restMinTime), (.biasForgettingTime, biasForgettingTime)] where !(v > 0) {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "\(key.stringValue) must be positive")
            }
        }
    }
}

// MARK: - Coefficients

extension AttitudeFilter {
    /// Values derived once from `Settings` and the sample intervals (VQF's
    /// `VQFCoefficients` plus thresholds in radians).
    public struct Coefficients: Equatable, Sendable {
        public var gyroDt: Double, accelDt: Double, magDt: Double
        public var accLp: LowPassCoefficients
        public var restGyroLp: LowPassCoefficients
        public var restAccLp: LowPassCoefficients
        public var magNormDipLp: LowPassCoefficients
        public var kMag: Double, kMagRef: Double
        /// Bias Kalman filter, in (0.01 °/s)²: initial and maximal variance,
        /// process noise per accelerometer sample, measurement noise.
        public var biasP0: Double, biasV: Double
        public var biasMotionW: Double, biasVerticalW: Double, biasRestW: Double
        /// rad/s, (rad/s)², (m/s²)², rad, rad/s.
        public var biasClip: Double, restThresholdGyroSquared: Double
        public var restThresholdAccelSquared: Double, magDipThreshold: Double, magNewMinGyro: Double
        /// Magnetic declination, rad (0 when unknown).
        public var declination: Double
        /// The magnetometer calibration, unpacked (identity when none).
        public var calibrated: Bool, hardIron: Vector3, softIron: Matrix3

        public init(settings s: Settings, gyroDt: Double, accelDt: Double, magDt: Double) {
            precondition(gyroDt > 0 && accelDt > 0 && magDt > 0, "AttitudeFilter: sample intervals must be positive")
            self.gyroDt = gyroDt; self.accelDt = accelDt; self.magDt = magDt
            let deg = Double.pi / 180
            biasClip = s.biasClip * deg
            restThresholdGyroSquared = (s.restThresholdGyro * deg) * (s.restThresholdGyro * deg)
            restThresholdAccelSquared = s.restThresholdAccel * s.restThresholdAccel
            magDipThreshold = s.magDipThreshold * deg
            magNewMinGyro = s.magNewMinGyro * deg
            declination = (s.declination ?? 0) * deg
            calibrated = s.magnetometerCalibration != nil
            hardIron = s.magnetometerCalibration?.hardIron ?? .zero
            softIron = s.magnetometerCalibration?.softIron ?? .identity
            biasP0 = (s.biasSigmaInit * 100) * (s.biasSigmaInit * 100)
            // placeholders, set below
            accLp = LowPassCoefficients(tau: s.tauAcc, dt: accelDt)
            restGyroLp = LowPassCoefficients(tau: s.restFilterTau, dt: gyroDt)
            restAccLp = LowPassCoefficients(tau: s.restFilterTau, dt: accelDt)
            magNormDipLp = LowPassCoefficients(tau: max(s.magCurrentTau, 0), dt: magDt)
            kMag = 0; kMagRef = 0; biasV = 0; biasMotionW = 0; biasVerticalW = 0; biasRestW = 0
            setAccelDt(accelDt, settings: s)
            setMagDt(magDt, settings: s)
        }

        /// `1 - exp(-dt/tau)`: first-order gain (0 for tau < 0, 1 for tau = 0).
        @inlinable public static func gain(tau: Double, dt: Double) -> Double {
            if tau < 0 { return 0 }
            if tau == 0 { return 1 }
            return 1 - mathExp(-dt / tau)
        }

        public mutating func setGyroDt(_ dt: Double, settings s: Settings) {
            gyroDt = dt
            restGyroLp = LowPassCoefficients(tau: s.restFilterTau, dt: dt)
        }

        public mutating func setAccelDt(_ dt: Double, settings s: Settings) {
            accelDt = dt
            accLp = LowPassCoefficients(tau: s.tauAcc, dt: dt)
            restAccLp = LowPassCoefficients(tau: s.restFilterTau, dt: dt)
            // process noise: variance grows from 0 to (0.1 °/s)² in biasForgettingTime
            biasV = (0.1 * 100) * (0.1 * 100) * dt / s.biasForgettingTime
            let pMotion = (s.biasSigmaMotion * 100) * (s.biasSigmaMotion * 100)
            biasMotionW = pMotion * pMotion / biasV + pMotion
            biasVerticalW = biasMotionW / max(s.biasVerticalForgettingFactor, 1e-10)
            let pRest = (s.biasSigmaRest * 100) * (s.biasSigmaRest * 100)
            biasRestW = pRest * pRest / biasV + pRest
        }

        public mutating func setMagDt(_ dt: Double, settings s: Settings) {
            magDt = dt
            kMag = Self.gain(tau: s.tauMag, dt: dt)
            kMagRef = Self.gain(tau: s.magRefTau, dt: dt)
            magNormDipLp = LowPassCoefficients(tau: max(s.magCurrentTau, 0), dt: dt)
        }
    }
}

// MARK: - State

extension AttitudeFilter {
    /// Everything the filter changes per sample (VQF's `VQFState` plus the
    /// last samples and the frame bookkeeping for `DeviceMotion`). Bias in
    /// rad/s; bias covariance in (0.01 °/s)².
    ///
    /// Codable, so a daemon can save it (e.g. the learned gyroscope bias and
    /// magnetic reference) and resume after a restart.
    public struct State: Equatable, Sendable, Codable {
        /// Strapdown-integrated gyroscope orientation (almost-inertial frame).
        public var gyroQuat = Quaternion.identity
        /// Inclination correction: almost-inertial frame to 6D earth frame.
        public var accQuat = Quaternion.identity
        /// Heading correction (rad): 6D earth frame to ENU; and cos/sin of
        /// delta/2, kept in step with it (set all three together).
        public var delta = 0.0
        public var deltaCos = 1.0, deltaSin = 0.0

        public var restDetected = false
        public var magDisturbed = true

        public var accLp = LowPassState<Vector3>()

        public var kMagInit = 1.0
        public var lastMagDisagreement = 0.0

        public var bias = Vector3.zero
        public var biasP: Matrix3
        public var motionBiasR = LowPassState<Matrix3>()
        public var motionBiasLp = LowPassState<SIMD2<Double>>()

        /// Squared deviations from the rest low-passes: gyro (rad/s)², accel (m/s²)².
        public var restLastSquaredDeviations = SIMD2<Double>.zero
        public var restTime = 0.0
        public var restGyroLp = LowPassState<Vector3>()
        public var restAccLp = LowPassState<Vector3>()

        /// Reference and candidate field: norm (µT) and dip (rad).
        public var magRefNorm = 0.0, magRefDip = 0.0
        public var magUndisturbedTime = 0.0
        public var magRejectTime: Double
        public var magCandidateNorm = -1.0, magCandidateDip = 0.0, magCandidateTime = 0.0
        public var magNormDip = SIMD2<Double>.zero
        public var magNormDipLp = LowPassState<SIMD2<Double>>()

        /// The last samples (gyro rad/s raw, accel m/s², mag µT calibrated).
        public var lastGyro = Vector3.zero, lastAccel = Vector3.zero, lastMag = Vector3.zero
        public var accelSamples = 0, magSamples = 0
        /// Time since the last magnetometer sample, s (combined `update` only).
        public var timeSinceMag = 0.0
        /// Heading of the corrected-arbitrary frame relative to ENU: delta
        /// when the first magnetometer sample arrived.
        public var hasHeadingReference = false
        public var correctedFrameOffset = 0.0
        /// The sample intervals the coefficients were derived for, s.
        public var gyroCoefficientDt: Double, accelCoefficientDt: Double, magCoefficientDt: Double

        public init(coefficients c: Coefficients, settings s: Settings) {
            biasP = Matrix3(scaledIdentity: c.biasP0)
            magRejectTime = s.magMaxRejectionTime
            gyroCoefficientDt = c.gyroDt; accelCoefficientDt = c.accelDt; magCoefficientDt = c.magDt
        }
    }
}
