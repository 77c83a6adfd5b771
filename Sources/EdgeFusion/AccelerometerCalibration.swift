/// Accelerometer calibration: per-axis bias and scale,
/// `calibrated = (raw − bias) ⊙ scale`, m/s², in the chip's own frame (before
/// the mounting). `scale` is the correction factor (1 / the axis's gain), so
/// a chip that reads 2 % high has scale ≈ 0.98.
public struct AccelerometerCalibration: Equatable, Sendable {
    /// Zero-g output, m/s² (chip frame).
    public var bias: Vector3
    /// Per-axis correction factor (dimensionless, ≈1).
    public var scale: Vector3
    /// Mean die temperature during the six poses, °C (NaN if unknown).
    public var temperatureCelsius: Double
    /// RMS over the six poses of |calibrated| − g, m/s². Six poses
    /// determine the six unknowns exactly, so this is ≈0 unless the
    /// refinement failed and the plain up/down estimate was kept.
    public var residual: Double
    /// RMS deviation of the still blocks from their pose's mean, m/s²: how
    /// steadily the poses were held (≈0.005 for a board lying still; 0 if unknown).
    public var poseSpread: Double

    public init(bias: Vector3 = .zero, scale: Vector3 = Vector3(1, 1, 1), temperatureCelsius: Double = .nan,
                residual: Double = 0, poseSpread: Double = 0) {
        self.bias = bias; self.scale = scale; self.temperatureCelsius = temperatureCelsius; self.residual = residual
        self.poseSpread = poseSpread
    }

    public static let identity = AccelerometerCalibration()

    /// Applies the calibration to a raw sample (m/s², chip frame).
    @inlinable public func apply(_ raw: Vector3) -> Vector3 { (raw - bias) * scale }

    /// Good: the poses agree with 1 g within 0.5 % and the corrections are
    /// inside the MPU-6050 data sheet's tolerances (±80 mg zero-g offset,
    /// ±3 % sensitivity), with margin.
    public var verdict: CalibrationVerdict {
        var v = CalibrationVerdict()
        let g = standardGravity
        if residual > 0.02 * g {
            v.note(.poor, "the poses disagree with 1 g by \(decimals(residual, 3)) m/s² RMS: were they still?")
        } else if residual > 0.005 * g {
            v.note(.acceptable, "the poses agree with 1 g only to \(decimals(residual, 3)) m/s² RMS")
        }
        if poseSpread > 0.1 {
            v.note(.poor, "the poses were not held steadily (spread \(decimals(poseSpread, 3)) m/s² RMS)")
        } else if poseSpread > 0.03 {
            v.note(.acceptable, "the poses were not quite steady (spread \(decimals(poseSpread, 3)) m/s² RMS)")
        }
        let maxBias = max(abs(bias.x), abs(bias.y), abs(bias.z))
        if maxBias > 1.5 {
            v.note(.poor, "bias \(decimals(maxBias, 2)) m/s² is far beyond the data sheet's ±0.8 m/s²")
        } else if maxBias > 0.8 {
            v.note(.acceptable, "bias \(decimals(maxBias, 2)) m/s² is at the data sheet's limit")
        }
        let maxScale = max(abs(scale.x - 1), abs(scale.y - 1), abs(scale.z - 1))
        if maxScale > 0.06 {
            v.note(.poor, "scale correction \(decimals(maxScale * 100, 1)) % is beyond the data sheet's ±3 %")
        }
        return v
    }
}

/// One of the six still poses: which chip axis points up (reads +1 g).
public enum AccelerometerPose: Int, CaseIterable, Sendable, CustomStringConvertible {
    case xUp, xDown, yUp, yDown, zUp, zDown

    /// 0, 1, 2 for X, Y, Z.
    public var axis: Int { rawValue / 2 }
    /// +1 when the axis points up, −1 when it points down.
    public var sign: Double { rawValue % 2 == 0 ? 1 : -1 }
    /// The unit vector that points up, chip frame.
    public var up: Vector3 {
        var v = Vector3.zero
        v[axis] = sign
        return v
    }
    /// "+X up", "−Z up" (chip axes).
    public var description: String { (sign > 0 ? "+" : "-") + ["X", "Y", "Z"][axis] + " up" }
}

/// Why an accelerometer calibration was refused.
public enum AccelerometerCalibrationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Poses not yet held still long enough.
    case missingPoses([AccelerometerPose])
    /// The six poses do not determine a calibration (the same orientation
    /// recorded twice, or the refinement diverged).
    case degenerate

    public var description: String {
        switch self {
        case .missingPoses(let p):
            "accelerometer calibration: poses still missing: \(p.map(\.description).joined(separator: ", ")) "
                + "(hold the board still with each of these chip axes pointing straight up)"
        case .degenerate:
            "accelerometer calibration: the six poses do not determine a calibration (hold each axis straight up and straight down)"
        }
    }
}

/// Six-position accelerometer calibration. Each sample goes into a short
/// block; a block whose accelerometer and gyroscope deviations are small is
/// *still*, and a still block whose mean has one axis within
/// `maximumTiltDegrees` of vertical and a norm near 1 g counts towards that
/// pose. When every pose has `samplesPerPose` still samples, `result()`
/// solves bias and scale per axis from the up/down pairs
/// (`bias = (up + down) / 2`, `gain = (up − down) / 2g`) and refines them by
/// Gauss-Newton so all six calibrated pose means have norm g (which makes
/// the result insensitive to poses a few degrees off vertical).
///
/// Pure: no I/O, no clock; allocates only in `init` and `result()`.
public struct AccelerometerCalibrator: Sendable {
    public struct Settings: Equatable, Sendable {
        /// Samples per stillness block (0.2 s at 200 Hz).
        public var blockSamples: Int
        /// Still samples each pose needs (2 s at 200 Hz).
        public var samplesPerPose: Int
        /// Largest per-axis gyroscope standard deviation of a still block, rad/s.
        public var maximumGyroDeviation: Double
        /// Largest per-axis accelerometer standard deviation of a still block, m/s².
        public var maximumAccelDeviation: Double
        /// How far the pose's axis may be from vertical, degrees.
        public var maximumTiltDegrees: Double
        /// How far the still reading's norm may be from g, fraction (covers
        /// the data sheet's ±3 % gain and ±80 mg offsets with margin).
        public var normTolerance: Double

        public init(blockSamples: Int = 40, samplesPerPose: Int = 400, maximumGyroDeviation: Double = 0.02,
                    maximumAccelDeviation: Double = 0.12, maximumTiltDegrees: Double = 20, normTolerance: Double = 0.15) {
            self.blockSamples = blockSamples; self.samplesPerPose = samplesPerPose
            self.maximumGyroDeviation = maximumGyroDeviation; self.maximumAccelDeviation = maximumAccelDeviation
            self.maximumTiltDegrees = maximumTiltDegrees; self.normTolerance = normTolerance
        }
    }

    /// Sums of the still samples of one pose.
    public struct PoseSum: Equatable, Sendable {
        public var accelSum = Vector3.zero
        /// Σ over blocks of (block mean)² ⊙ block samples, per axis, for the spread.
        public var accelSquareSum = Vector3.zero
        public var count = 0
        public var temperatureSum = 0.0
        public var temperatureCount = 0
        public var mean: Vector3 { count > 0 ? accelSum / Double(count) : .zero }
    }

    /// What the last complete block was, for guidance.
    public enum BlockVerdict: Equatable, Sendable {
        /// No block complete yet.
        case none
        /// The board moved during the block.
        case moving
        /// Still, but no axis near vertical (or the norm is not near 1 g);
        /// the mean acceleration, m/s².
        case stillOffAxis(Vector3)
        /// Still in this pose.
        case pose(AccelerometerPose)
    }

    public struct State: Equatable, Sendable {
        public var poses: [PoseSum] = Array(repeating: PoseSum(), count: 6)
        // the running block (Welford)
        public var blockCount = 0
        public var blockAccelMean = Vector3.zero, blockAccelM2 = Vector3.zero
        public var blockGyroMean = Vector3.zero, blockGyroM2 = Vector3.zero
        public var blockTemperatureSum = 0.0, blockTemperatureCount = 0
        public var lastBlock = BlockVerdict.none
        public init() {}
    }

    public let settings: Settings
    public var state: State
    let cosMaxTilt: Double

    public init(settings: Settings = Settings(), state: State = State()) {
        precondition(settings.blockSamples >= 2 && settings.samplesPerPose >= 1, "AccelerometerCalibrator: bad settings")
        self.settings = settings; self.state = state
        cosMaxTilt = mathCos(settings.maximumTiltDegrees * Double.pi / 180)
    }

    /// One sample: `accel` m/s², `gyro` rad/s (chip frame), die `temperature` °C or nil.
    /// Returns the pose that just became complete, if any.
    @discardableResult
    public mutating func update(accel: Vector3, gyro: Vector3, temperature: Double?) -> AccelerometerPose? {
        state.blockCount += 1
        let n = Double(state.blockCount)
        let da = accel - state.blockAccelMean
        state.blockAccelMean += da / n
        state.blockAccelM2 += da * (accel - state.blockAccelMean)
        let dg = gyro - state.blockGyroMean
        state.blockGyroMean += dg / n
        state.blockGyroM2 += dg * (gyro - state.blockGyroMean)
        if let t = temperature, t.isFinite { state.blockTemperatureSum += t; state.blockTemperatureCount += 1 }
        guard state.blockCount >= settings.blockSamples else { return nil }

        defer {
            state.blockCount = 0
            state.blockAccelMean = .zero; state.blockAccelM2 = .zero
            state.blockGyroMean = .zero; state.blockGyroM2 = .zero
            state.blockTemperatureSum = 0; state.blockTemperatureCount = 0
        }
        let accelDev = (state.blockAccelM2 / (n - 1)).squareRootEach.maxComponent
        let gyroDev = (state.blockGyroM2 / (n - 1)).squareRootEach.maxComponent
        guard accelDev <= settings.maximumAccelDeviation, gyroDev <= settings.maximumGyroDeviation else {
            state.lastBlock = .moving
            return nil
        }
        let mean = state.blockAccelMean
        guard let pose = classify(mean) else {
            state.lastBlock = .stillOffAxis(mean)
            return nil
        }
        state.lastBlock = .pose(pose)
        let i = pose.rawValue
        guard state.poses[i].count < settings.samplesPerPose else { return nil }
        state.poses[i].accelSum += mean * n
        state.poses[i].accelSquareSum += mean * mean * n
        state.poses[i].count += state.blockCount
        state.poses[i].temperatureSum += state.blockTemperatureSum
        state.poses[i].temperatureCount += state.blockTemperatureCount
        return state.poses[i].count >= settings.samplesPerPose ? pose : nil
    }

    /// The pose a still mean acceleration (m/s²) shows, or nil when no axis
    /// is near vertical or the norm is not near 1 g.
    public func classify(_ mean: Vector3) -> AccelerometerPose? {
        let g = standardGravity
        let norm = mean.norm
        guard abs(norm - g) <= settings.normTolerance * g else { return nil }
        let m = mean.magnitudes
        let axis = m.x >= m.y && m.x >= m.z ? 0 : (m.y >= m.z ? 1 : 2)
        guard m[axis] >= cosMaxTilt * norm else { return nil }
        return AccelerometerPose(rawValue: axis * 2 + (mean[axis] > 0 ? 0 : 1))
    }

    /// 0…1 for one pose.
    public func progress(_ pose: AccelerometerPose) -> Double {
        min(1, Double(state.poses[pose.rawValue].count) / Double(settings.samplesPerPose))
    }
    /// 0…1 over all six poses.
    public var progress: Double { AccelerometerPose.allCases.reduce(0) { $0 + progress($1) } / 6 }
    /// Poses not yet complete, in `AccelerometerPose` order.
    public var missingPoses: [AccelerometerPose] { AccelerometerPose.allCases.filter { progress($0) < 1 } }
    public var isComplete: Bool { missingPoses.isEmpty }

    /// Bias and scale from the six poses.
    public func result() throws(AccelerometerCalibrationError) -> AccelerometerCalibration {
        let missing = missingPoses
        guard missing.isEmpty else { throw .missingPoses(missing) }
        let g = standardGravity
        let means = AccelerometerPose.allCases.map { state.poses[$0.rawValue].mean }
        var bias = Vector3.zero, scale = Vector3(1, 1, 1)
        for axis in 0..<3 {
            let up = means[axis * 2][axis], down = means[axis * 2 + 1][axis]
            let gain = (up - down) / (2 * g)
            guard gain > 0.5 else { throw .degenerate }
            bias[axis] = (up + down) / 2
            scale[axis] = 1 / gain
        }
        if let refined = Self.refine(means: means, bias: bias, scale: scale, gravity: g),
           max((refined.bias - bias).magnitudes.maxComponent / g, (refined.scale - scale).magnitudes.maxComponent) < 0.2 {
            bias = refined.bias; scale = refined.scale
        }
        var sq = 0.0
        for m in means { let e = ((m - bias) * scale).norm - g; sq += e * e }
        var tSum = 0.0, tCount = 0, spread = 0.0, spreadCount = 0
        for p in state.poses {
            tSum += p.temperatureSum; tCount += p.temperatureCount
            let m = p.mean
            spread += max(0, (p.accelSquareSum / Double(p.count) - m * m).sum()) * Double(p.count)
            spreadCount += p.count
        }
        return AccelerometerCalibration(bias: bias, scale: scale,
                                        temperatureCelsius: tCount > 0 ? tSum / Double(tCount) : .nan,
                                        residual: (sq / 6).squareRoot(),
                                        poseSpread: (spread / Double(max(1, spreadCount))).squareRoot())
    }

    /// Gauss-Newton on r_p = |s ⊙ (m_p − b)|² − g² for the six pose means
    /// (six equations, six unknowns). Nil if a step is singular.
    static func refine(means: [Vector3], bias b0: Vector3, scale s0: Vector3, gravity g: Double)
        -> (bias: Vector3, scale: Vector3)? {
        var b = b0, s = s0
        for _ in 0..<20 {
            var jac = [Double](repeating: 0, count: 36)
            var rhs = [Double](repeating: 0, count: 6)
            for (row, m) in means.enumerated() {
                let d = m - b
                let c = d * s
                rhs[row] = -((c * c).sum() - g * g)
                for i in 0..<3 {
                    jac[row * 6 + i] = -2 * s[i] * s[i] * d[i]       // ∂r/∂b_i
                    jac[row * 6 + 3 + i] = 2 * s[i] * d[i] * d[i]    // ∂r/∂s_i
                }
            }
            guard let step = solveLinear(jac, rhs, n: 6) else { return nil }
            b += Vector3(step[0], step[1], step[2])
            s += Vector3(step[3], step[4], step[5])
            guard b.x.isFinite, s.x.isFinite, s.min() > 0 else { return nil }
            if step.reduce(0, { max($0, abs($1)) }) < 1e-12 { break }
        }
        return (b, s)
    }
}

