/// Continuous hard-iron calibration of a magnetometer from the gyroscope,
/// while the device is used: learns the offset `b` (µT) that magnetised
/// parts carried with the sensor add to every reading, says how well it
/// knows it as Core Motion's four accuracy levels, and notices when the
/// offset jumps (a magnet moved on the board) and learns it again.
///
/// The model is the one of L. Troni and L. L. Whitcomb, "Field sensor bias
/// calibration with angular-rate sensors: theory and experimental
/// evaluation with application to magnetometer calibration", IEEE/ASME
/// Transactions on Mechatronics 24(4), 2019, §III: the Earth's field `m` is
/// constant in the earth frame, so in the sensor frame it turns against the
/// rotation the gyroscope measures, and a reading is `y = m + b`. Written
/// discretely over the rotation `C` (earth-fixed vector in the earth frame of
/// the first reading to that of the second) the gyroscope integrates between
/// two readings,
///
///     y₂ − C·y₁ = (I − C)·b,
///
/// which is linear in `b` and needs neither the attitude nor the field's
/// size or direction (attitude-independent, as in J. L. Crassidis, K.-L. Lai
/// and R. R. Harman, "Real-time attitude-independent three-axis magnetometer
/// calibration", J. Guidance, Control, and Dynamics 28(1), 2005, whose
/// recursive, quality-reporting form is followed: a recursive least-squares
/// estimate with its information matrix as the measure of what the motion
/// has excited). Rotation about one axis leaves the offset along that axis
/// unknown, so the information matrix has a small eigenvalue until the
/// device has turned about two axes; that eigenvalue, not a timer, gates the
/// accuracy.
///
/// One equation is formed when the gyroscope has turned the sensor by at
/// least `Settings.minimumRotation` since the first reading of the pair (or
/// `Settings.maximumInterval` has passed: then the pair only checks for a
/// jump). Its residual against the current estimate, measured in units of
/// the running residual RMS, tells a jump: `jumpCount` pairs in a row beyond
/// `jumpThreshold`, or residuals whose running mean square stays beyond
/// `mismatchLimit` times the residual mean square, while the offset is
/// known, forget what was learned (the accuracy drops to `uncalibrated`) and
/// learning starts again from the last estimate as a weak prior.
///
/// Soft iron: the guided `edge-agent calibrate mag` fit supplies it, applied
/// before this one; with `Settings.softIron` the same pairs also feed
/// `SoftIronSelfCalibration`, whose shape and offset replace the offset once
/// the rotation has excited it. It cannot tell a field
/// that changes because the device moved through a gradient from an offset
/// that changed: both look like a jump, and both are relearned.
///
/// Pure: no I/O, no clock, no allocation. Rates in rad/s, time in s, fields
/// in µT, all in one frame (the one the gyroscope and the field share).
public struct MagnetometerSelfCalibration: Sendable {
    public struct Settings: Equatable, Sendable, Codable {
        /// Rotation between the two readings of one equation, degrees.
        public var minimumRotation = 30.0
        /// Longest gyroscope integration for one equation, s (its drift).
        public var maximumInterval = 2.0
        /// Time in which what was learned fades to 1/e, s.
        public var forgettingTime = 600.0
        /// Smallest residual RMS assumed, µT (the readings' noise floor).
        public var noiseFloor = 0.3
        /// Residual RMS assumed before any equation, µT.
        public var initialNoise = 0.5
        /// The offset's uncertainty (1 σ), as the angle it can turn the
        /// field by, for `high`, `medium` and `low`, degrees.
        public var highAngle = 1.0, mediumAngle = 3.0, lowAngle = 10.0
        /// A pair whose residual exceeds this many residual RMS, and
        /// `jumpMinimum` µT, is an outlier; `jumpCount` in a row, a jump.
        public var jumpThreshold = 6.0
        public var jumpMinimum = 3.0
        public var jumpCount = 3
        /// A smaller offset change shows as residuals steadily above the
        /// noise: their running mean square, in units of the residual mean
        /// square (each pair counting `mismatchGain`, and at most twice the
        /// limit), beyond `mismatchLimit` is a jump too.
        public var mismatchGain = 0.2
        public var mismatchLimit = 9.0
        /// Pairs whose predicted spread from the offset's uncertainty
        /// (`A·Λ⁻¹·Aᵀ`, in units of the noise) is below this count towards
        /// the residual RMS; and the residual RMS must rest on
        /// `minimumEquations` of them before the accuracy is above `low`.
        public var informativeSpread = 10.0
        public var minimumEquations = 10.0
        /// Uncertainty of the offset before anything is learned, µT.
        public var priorUncertainty = 100.0
        /// The offset is removed once it exceeds this many times its
        /// uncertainty (``calibrated(_:)``).
        public var significance = 3.0
        /// ... and this size, µT: smaller offsets are left to the guided
        /// calibration. The learning's systematic errors (a field gradient
        /// the board is carried through, gyroscope scale and timing) are of
        /// a few µT and do not shrink with its uncertainty; a magnet near
        /// the sensor adds tens.
        public var minimumOffset = 5.0
        /// Learn the soft iron too (`SoftIronSelfCalibration`, from the same
        /// pairs), and remove it with the hard iron it learns once the
        /// motion has excited it and it stands out of its uncertainty
        /// (`significance` σ) and of `minimumShape` (largest element of
        /// `D⁻¹ − I` at trace 3).
        public var softIron = true
        public var minimumShape = 0.02

        public init() {}
    }

    public struct State: Equatable, Sendable, Codable {
        /// The gyroscope's strapdown attitude (sensor to a drifting earth
        /// frame), integrated by ``rotate(by:dt:)``, and its value at the
        /// first reading of the pending pair: `v_first = keyTurn⁻¹·turn·v_now`
        /// for an earth-fixed vector.
        public var turn = Quaternion.identity, keyTurn = Quaternion.identity
        /// Time since the first reading of the pending pair, s.
        public var elapsed = 0.0
        /// The first reading of the pending pair (none yet: `hasKey` false).
        public var key = Vector3.zero
        public var hasKey = false
        /// Information matrix (Σ Aᵀ A, dimensionless) and vector (Σ Aᵀ z, µT).
        public var information: Matrix3
        public var weighted: Vector3
        /// The offset, µT.
        public var offset = Vector3.zero
        /// Running mean square of the equations' residuals per axis, µT².
        public var residualMeanSquare: Double
        /// Running field strength after the offset is removed, µT (0: none yet).
        public var fieldStrength = 0.0
        /// 1 σ of the offset along its least-known direction, µT.
        public var uncertainty: Double
        public var accuracy = MagneticFieldCalibrationAccuracy.uncalibrated
        /// Running mean of the pairs' squared residuals over the residual mean square.
        public var mismatch = 0.0
        /// Forgotten sums of the informative innovations (σ²·χ²₃ each, µT²) and of their degrees of freedom.
        public var innovationSum = 0.0, innovationCount = 0.0
        /// Outlier pairs in a row; jumps seen; equations used.
        public var outliers = 0, jumps = 0, equations = 0
        /// Time since the last equation, s (for the forgetting).
        public var sinceEquation = 0.0

        public init(settings s: Settings) {
            let prior = Self.priorInformation(s)
            information = Matrix3(scaledIdentity: prior)
            weighted = .zero
            residualMeanSquare = s.initialNoise * s.initialNoise
            uncertainty = s.priorUncertainty
        }

        static func priorInformation(_ s: Settings) -> Double {
            (s.initialNoise / s.priorUncertainty) * (s.initialNoise / s.priorUncertainty)
        }
    }

    public let settings: Settings
    public var state: State
    /// The soft-iron estimator (`Settings.softIron`), fed the same pairs.
    public var softIron = SoftIronSelfCalibration()
    /// cos(minimumRotation / 2): a pair's rotation quaternion has |w| at most this.
    @usableFromInline let pairCosine: Double

    public init(settings: Settings = Settings(), state: State? = nil) {
        self.settings = settings
        self.state = state ?? State(settings: settings)
        pairCosine = mathCos(settings.minimumRotation * (Double.pi / 360))
        refreshApplied()
    }

    /// Starts from a known offset (µT) known to within `uncertainty` µT
    /// (1 σ): the guided calibration, or one saved from an earlier run.
    public mutating func seed(offset: Vector3, uncertainty: Double, fieldStrength: Double) {
        let u = max(uncertainty, 1e-6)
        let info = (state.residualMeanSquare.squareRoot() / u) * (state.residualMeanSquare.squareRoot() / u)
        state.information = Matrix3(scaledIdentity: info)
        state.offset = offset
        state.weighted = info * offset
        state.fieldStrength = fieldStrength
        state.outliers = 0
        // the residual RMS it was judged with stands as if from `minimumEquations` pairs
        state.innovationCount = 3 * settings.minimumEquations
        state.innovationSum = state.residualMeanSquare * state.innovationCount
        refreshAccuracy()
    }

    /// The field with the learned offset removed, µT, once the offset is
    /// known (`medium` or better) and stands out of its own uncertainty
    /// (`significance` σ) and of `minimumOffset`; the field as it is before that. A guess from a
    /// few turns, or from before a jump, is not applied, and neither is an
    /// offset indistinguishable from none: on a magnetometer that is
    /// already calibrated, what the motion cannot tell from zero would only
    /// add its error to the heading.
    @inlinable public func calibrated(_ field: Vector3) -> Vector3 {
        isApplied ? field - state.offset : field
    }

    /// Whether the learned soft iron is removed (with its own hard iron):
    /// `Settings.softIron`, the shape known, and its largest element beyond
    /// `significance` σ and `minimumShape`. Decided when a pair is added
    /// (``refreshSoftIron()``), so the per-sample path reads a flag.
    public private(set) var isSoftIronApplied = false
    /// `G` and `c` of the soft iron while applied.
    public private(set) var appliedShape = Matrix3.identity, appliedScaledOffset = Vector3.zero

    mutating func refreshSoftIron() {
        isSoftIronApplied = false
        guard settings.softIron, softIron.isShapeKnown else { return }
        let g = softIron.shape, f = g - .identity
        let largest = max(abs(f.r0.x), abs(f.r0.y), abs(f.r0.z), abs(f.r1.y), abs(f.r1.z), abs(f.r2.z))
        guard largest > max(settings.significance * softIron.state.shapeUncertainty, settings.minimumShape) else { return }
        isSoftIronApplied = true
        appliedShape = g
        appliedScaledOffset = softIron.scaledOffset
    }

    /// Whether ``calibrated(_:)`` removes the offset: decided whenever the
    /// offset, its uncertainty or the accuracy change (``refreshAccuracy()``),
    /// so the per-sample path reads a flag.
    public private(set) var isApplied = false

    mutating func refreshApplied() {
        let limit = max(settings.significance * state.uncertainty, settings.minimumOffset)
        isApplied = state.accuracy.rawValue >= MagneticFieldCalibrationAccuracy.medium.rawValue && state.offset.dot(state.offset) > limit * limit
    }

    /// One gyroscope sample, bias removed, rad/s, over `dt` s, integrated
    /// here. In the loop the attitude filter integrates the same rates
    /// already (`AttitudeFilter.State.gyroQuat`): ``advance(by:)`` and
    /// ``update(field:turn:)`` take its integral instead.
    @inlinable public mutating func rotate(by rate: Vector3, dt: Double) {
        guard dt > 0, dt.isFinite, (rate.x + rate.y + rate.z).isFinite else { return }
        // exp(½ ω dt): series to h⁴ for half angles under 0.05 rad (error < 10⁻¹⁰, renormalised)
        let h = rate * (dt / 2), h2 = h.dot(h)
        let step: Quaternion
        if h2 < 0.0025 {
            let s = 1 - h2 * (1.0 / 6 - h2 * (1.0 / 120))
            step = Quaternion(w: 1 - h2 * (0.5 - h2 * (1.0 / 24)), x: h.x * s, y: h.y * s, z: h.z * s)
        } else {
            step = Quaternion(rotationVector: rate * dt)
        }
        state.turn = (state.turn * step).renormalized
        advance(by: dt)
    }

    /// Time passing, s: one IMU sample whose rotation ``update(field:turn:)`` is given.
    @inlinable @inline(__always) public mutating func advance(by dt: Double) {
        guard dt > 0, dt.isFinite else { return }
        state.elapsed += dt
        state.sinceEquation += dt
    }

    /// One field reading, µT (before this calibration, same frame as the
    /// gyroscope), with the rotation ``rotate(by:dt:)`` integrated.
    public mutating func update(field y: Vector3) { update(field: y, turn: state.turn) }

    /// One field reading with the gyroscope's strapdown attitude `turn` at
    /// it (any integral of the bias-free rates with the one in earlier
    /// calls: the filter's `gyroQuat`); the attitude is only read when a
    /// field comes, not integrated a second time per sample.
    @inlinable @inline(__always)
    public mutating func update(field y: Vector3, turn: Quaternion) {
        // (component by component: `y != .zero` compiled to a loop over the lanes, per sample)
        guard (y.x + y.y + y.z).isFinite, y.x != 0 || y.y != 0 || y.z != 0 else { return }
        // w of keyTurn⁻¹·turn: cos of half the angle turned since the key
        let k = state.keyTurn
        let w = k.w * turn.w + k.x * turn.x + k.y * turn.y + k.z * turn.z
        guard state.hasKey, abs(w) <= pairCosine || state.elapsed >= settings.maximumInterval else {
            if !state.hasKey { startPair(at: y, turn: turn) }
            return
        }
        closePair(at: y, turn: turn, turned: abs(w) <= pairCosine)
    }

    /// A pair's second reading `y` at `turn`: the equation, or (not
    /// `turned`, only `maximumInterval` passed) the jump check alone.
    @usableFromInline mutating func closePair(at y: Vector3, turn: Quaternion, turned: Bool) {
        // C takes an earth-fixed vector from the first reading's frame to this one's: Rᵀ
        let c = (state.keyTurn.conjugate * turn).rotationMatrix.transposed
        let a = Matrix3.identity - c
        let z = y - c * state.key
        let r = z - a * state.offset
        // The innovation r is N(0, σ²·S) with S = I + A·Λ⁻¹·Aᵀ (the pair's
        // noise plus what the offset's uncertainty adds): q = rᵀS⁻¹r is σ²·χ²₃.
        let spread = a * (state.information.inverse ?? .identity) * a.transposed
        let q = r.dot((Matrix3.identity + spread).inverse.map { $0 * r } ?? r)
        let informative = max(spread.r0.x, spread.r1.y, spread.r2.z) < settings.informativeSpread
        let first = state.key
        startPair(at: y, turn: turn)
        let sigma2 = state.residualMeanSquare
        let ratio = q / (3 * sigma2)
        // jump test: only while the offset is known well enough to predict
        if state.accuracy != .uncalibrated {
            state.mismatch += settings.mismatchGain * (min(ratio, 2 * settings.mismatchLimit) - state.mismatch)
            if state.mismatch > settings.mismatchLimit { forget(); return }
            if ratio > settings.jumpThreshold * settings.jumpThreshold && r.dot(r) > settings.jumpMinimum * settings.jumpMinimum {
                state.outliers += 1
                if state.outliers >= settings.jumpCount { forget() }
                return
            }
        }
        state.outliers = 0
        guard turned else { return }
        if settings.softIron {
            softIron.add(first: first, second: y, rotation: c, elapsed: state.sinceEquation)
            refreshSoftIron()
        }
        // forget, then add the equation
        let keep = mathExp(-state.sinceEquation / settings.forgettingTime)
        state.sinceEquation = 0
        let prior = State.priorInformation(settings)
        var info = keep * state.information + a.transposed * a
        info.r0.x += (1 - keep) * prior; info.r1.y += (1 - keep) * prior; info.r2.z += (1 - keep) * prior
        state.information = info
        state.weighted = keep * state.weighted + a.transposed * z
        if let inv = info.inverse { state.offset = inv * state.weighted }
        state.equations &+= 1
        // The residual mean square is the mean of the informative
        // innovations (unbiased: each is σ²·χ²₃). While the offset is known a
        // pair counts at most twice its expectation, so residuals that stay
        // large (an offset that changed a little) raise the mismatch, not
        // the noise it is judged by.
        if informative {
            let counted = state.accuracy != .uncalibrated ? min(q, 6 * sigma2) : q
            state.innovationSum = keep * state.innovationSum + counted
            state.innovationCount = keep * state.innovationCount + 3
            state.residualMeanSquare = max(state.innovationSum / state.innovationCount, settings.noiseFloor * settings.noiseFloor)
        }
        let strength = (y - state.offset).norm
        state.fieldStrength = state.fieldStrength == 0 ? strength : state.fieldStrength + 0.05 * (strength - state.fieldStrength)
        refreshAccuracy()
    }

    @usableFromInline mutating func startPair(at y: Vector3, turn: Quaternion) {
        state.key = y
        state.hasKey = true
        state.keyTurn = turn
        state.elapsed = 0
    }

    /// A jump: what was learned no longer holds. The last offset stays as a
    /// weak prior (it is still the best guess, and what `calibrated` removes).
    mutating func forget() {
        let prior = State.priorInformation(settings)
        state.information = Matrix3(scaledIdentity: prior)
        state.weighted = prior * state.offset
        state.outliers = 0
        state.mismatch = 0
        state.jumps &+= 1
        state.equations = 0
        if settings.softIron {
            softIron = SoftIronSelfCalibration(settings: softIron.settings)
            refreshSoftIron()
        }
        refreshAccuracy()
    }

    mutating func refreshAccuracy() {
        defer { refreshApplied() }
        let smallest = max(smallestEigenvalue(state.information), 1e-300)
        state.uncertainty = (state.residualMeanSquare / smallest).squareRoot()
        guard state.fieldStrength > 0 else { state.accuracy = .uncalibrated; return }
        let angle = state.uncertainty / state.fieldStrength * (180 / Double.pi)
        if state.innovationCount < 3 * settings.minimumEquations {
            state.accuracy = angle <= settings.lowAngle ? .low : .uncalibrated
            return
        }
        state.accuracy = angle <= settings.highAngle ? .high
            : angle <= settings.mediumAngle ? .medium
            : angle <= settings.lowAngle ? .low : .uncalibrated
    }

    @inlinable public var accuracy: MagneticFieldCalibrationAccuracy { state.accuracy }
    @inlinable public var offset: Vector3 { state.offset }
}

/// The smallest eigenvalue of a symmetric 3×3 matrix, in closed form
/// (O. K. Smith, "Eigenvalues of a symmetric 3×3 matrix", Comm. ACM 4(4),
/// 1961, 168): no iteration, no allocation.
@inlinable
public func smallestEigenvalue(_ m: Matrix3) -> Double {
    let p1 = m.r0.y * m.r0.y + m.r0.z * m.r0.z + m.r1.z * m.r1.z
    let q = m.trace / 3
    if p1 == 0 { return min(m.r0.x, m.r1.y, m.r2.z) }
    let d = m.diagonal - Vector3(repeating: q)
    let p2 = d.dot(d) + 2 * p1
    let p = (p2 / 6).squareRoot()
    let b = (1 / p) * (m - Matrix3(scaledIdentity: q))
    let r = min(1, max(-1, b.determinant / 2))
    let phi = mathAcos(r) / 3
    // eigenvalues q + 2p cos(phi + 2πk/3); the smallest is k = 1
    return q + 2 * p * mathCos(phi + 2 * Double.pi / 3)
}

extension MagnetometerSelfCalibration {
    /// Starts from the guided calibration (`edge-agent calibrate mag`),
    /// which is applied before this one: nothing left to remove, known to
    /// within three times the fit's RMS residual (5 % of the field when the
    /// fit does not say; the field 48 µT when it does not say either).
    public mutating func seed(guided c: MagnetometerCalibration) {
        let strength = c.fieldStrength > 0 ? c.fieldStrength : 48
        let residual = c.residual > 0 ? 3 * c.residual : 0.05
        seed(offset: .zero, uncertainty: residual * strength, fieldStrength: strength)
    }

    /// The field's accuracy from this calibration and `guided`, the one the
    /// guided calibration alone earns: the guided one's until this one has
    /// learned from the motion (a seed alone adds nothing), then the better
    /// of the two, until a jump has shown that what was calibrated before
    /// no longer holds; from then on this one's alone.
    @inlinable @inline(__always)
    public func accuracy(guided: MagneticFieldCalibrationAccuracy) -> MagneticFieldCalibrationAccuracy {
        if state.jumps > 0 { return state.accuracy }
        if state.equations == 0 { return guided }
        return state.accuracy.rawValue >= guided.rawValue ? state.accuracy : guided
    }
}

/// The attitude filter's side of the continuous calibration, one
/// definition for the agent's fusion stage, `fuse` and the smoother:
/// passes each field through the estimator, which takes the rotation
/// between readings from the filter's own gyroscope integral (seeded again
/// whenever the guided calibration changes), and says the field's
/// accuracy. Off (`enabled` false), it passes everything through
/// untouched: the filter is VQF, sample for sample.
///
/// Per sample, in this order (``update(_:gyro:accel:mag:dt:)`` does it):
/// `advance(dt:)`, the filter's `updateGyro`, `field(_:turn:)` with the
/// filter's `gyroQuat`, then the filter's `updateAccelAndMag`; and
/// `prepare(guided:)` whenever the guided calibration changes.
public struct MagneticFieldLearning: Sendable {
    /// The estimator, kept in place (not in an Optional: each call on an
    /// Optional's payload copied its half kilobyte out and back, a fifth of
    /// the fusion's cost per sample). Only meaningful when ``isEnabled``.
    @usableFromInline var calibration: MagnetometerSelfCalibration
    public let isEnabled: Bool
    /// The guided calibration the estimator was seeded from.
    public var seededFrom: MagnetometerCalibration?

    public init(enabled: Bool, settings: MagnetometerSelfCalibration.Settings = .init()) {
        isEnabled = enabled
        calibration = MagnetometerSelfCalibration(settings: settings)
    }

    /// The estimator when enabled, nil when off.
    @inlinable public var estimator: MagnetometerSelfCalibration? { isEnabled ? calibration : nil }

    /// One IMU sample's time, s.
    @inlinable @inline(__always)
    public mutating func advance(dt: Double) {
        if isEnabled { calibration.advance(by: dt) }
    }

    /// One sample through the filter and the continuous calibration, in
    /// the order the calibration needs (the rotation to the field is the
    /// filter's, with this sample's gyroscope): `mag` µT (the guided
    /// calibration given to ``prepare(guided:)`` applied) or nil. The fusion
    /// stage, `fuse` and the smoother all run this.
    @inlinable @inline(__always)
    public mutating func update(_ filter: inout AttitudeFilter, gyro: Vector3, accel: Vector3, mag: Vector3?, dt: Double) {
        guard isEnabled else { filter.update(gyro: gyro, accel: accel, mag: mag, dt: dt); return }
        calibration.advance(by: dt)
        filter.updateGyro(gyro, dt: dt)
        var field = mag
        if let m = mag {
            field = self.field(m, turn: filter.state.gyroQuat)
            if appliedChanged { filter.restartHeadingConvergence() }
        }
        filter.updateAccelAndMag(accel, mag: field, dt: dt)
    }

    /// Seeds the estimator from the guided calibration `guided` unless it
    /// was seeded from it already: before the first sample, and whenever
    /// the guided calibration changes.
    public mutating func prepare(guided: MagnetometerCalibration?) {
        guard isEnabled, guided != seededFrom else { return }
        seededFrom = guided
        if let c = guided { calibration.seed(guided: c) }
    }

    /// One field (µT, the guided calibration given to ``prepare(guided:)``
    /// applied, same frame as the gyroscope) at the filter's strapdown
    /// attitude `turn` (`AttitudeFilter.State.gyroQuat`, this sample's
    /// gyroscope integrated): what the filter should get.
    @inlinable @inline(__always)
    public mutating func field(_ m: Vector3, turn: Quaternion) -> Vector3 {
        guard isEnabled else { return m }
        let was = calibration.isApplied, wasSoft = calibration.isSoftIronApplied
        calibration.update(field: m, turn: turn)
        let now = calibration.isApplied, soft = calibration.isSoftIronApplied
        appliedChanged = now != was || soft != wasSoft
        return soft ? calibration.appliedShape * m - calibration.appliedScaledOffset : now ? m - calibration.state.offset : m
    }

    /// The last ``field(_:turn:)`` started or stopped removing the
    /// learned offset: the field the filter gets changed under it (see
    /// `AttitudeFilter.restartHeadingConvergence`).
    public var appliedChanged = false

    /// The field's accuracy for `filter`'s current sample.
    @inlinable
    public func accuracy(_ filter: borrowing AttitudeFilter) -> MagneticFieldCalibrationAccuracy {
        accuracy(guided: filter.magneticFieldAccuracy, fieldSeen: filter.state.magSamples > 0)
    }

    /// The same from what the caller already has: the filter's own
    /// ``AttitudeFilter/magneticFieldAccuracy`` (e.g. from the device motion
    /// it just made) and whether the filter has had a field yet.
    @inlinable
    public func accuracy(guided: MagneticFieldCalibrationAccuracy, fieldSeen: Bool) -> MagneticFieldCalibrationAccuracy {
        guard isEnabled, fieldSeen else { return guided }
        return calibration.accuracy(guided: guided)
    }
}

extension MagnetometerSelfCalibration {
    /// What was learned, folded into the chip-frame calibration `guided`
    /// (identity when none), to be saved and loaded as any calibration: the
    /// offset `b` was learned in the board frame, after `guided` and the
    /// chip's mounting `boardFromChip` (M), where the field is
    /// `M·S·(raw − h) − b = M·S·(raw − h − S⁻¹·Mᵀ·b)`; so the hard iron
    /// becomes `h + S⁻¹·Mᵀ·b` and the soft iron stays. `fieldStrength` is
    /// the learned one and `residual` a third of the offset's uncertainty
    /// relative to it, so that seeding from it (``seed(guided:)``) restores
    /// the uncertainty. Nil while the offset is not applied
    /// (``isApplied``), or nothing was learned from motion (nothing worth keeping).
    ///
    /// With the learned soft iron applied (``isSoftIronApplied``: `G`, and
    /// `c = G·b`) the board field is `G·M·S·(raw − h) − c`, which is
    /// `M·S′·(raw − h′)` with `S′ = Mᵀ·G·M·S` and `h′ = h + S⁻¹·Mᵀ·G⁻¹·c`:
    /// both are saved, and `residual` is at least a third of the shape's
    /// uncertainty (the field it turns, relative to its strength).
    public func learnedCalibration(guided: MagnetometerCalibration?, boardFromChip m: Matrix3) -> MagnetometerCalibration? {
        guard isApplied || isSoftIronApplied, state.equations > 0, state.fieldStrength > 0 else { return nil }
        let g = guided ?? .identity
        guard let sInverse = g.softIron.inverse else { return nil }
        let residual = state.uncertainty / (3 * state.fieldStrength)
        if isSoftIronApplied {
            guard let gInverse = appliedShape.inverse else { return nil }
            return MagnetometerCalibration(hardIron: g.hardIron + sInverse * (m.transposed * (gInverse * appliedScaledOffset)),
                                           softIron: m.transposed * appliedShape * m * g.softIron,
                                           fieldStrength: state.fieldStrength,
                                           residual: max(residual, softIron.state.shapeUncertainty / 3))
        }
        let hard = g.hardIron + sInverse * (m.transposed * state.offset)
        return MagnetometerCalibration(hardIron: hard, softIron: g.softIron, fieldStrength: state.fieldStrength,
                                       residual: residual)
    }
}

extension AttitudeFilter {
    /// The field it gets is now another (the continuous calibration started
    /// or stopped removing a learned offset): converge to it as from the
    /// first field - VQF's fast initial heading gains again, and the field's
    /// norm and dip taken as the new reference once it has stayed
    /// consistent through `magNewFirstTime` of turning - rather than reject
    /// the corrected field as a disturbance for `magNewTime` of turning
    /// while the gyroscope's heading drifts.
    public mutating func restartHeadingConvergence() {
        state.kMagInit = 1
        state.magRefNorm = 0
        state.magRefDip = 0
        state.magCandidateTime = 0
    }
}
