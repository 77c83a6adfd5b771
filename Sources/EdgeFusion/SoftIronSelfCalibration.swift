/// Soft and hard iron of a magnetometer learned from the gyroscope, for
/// where the rotation excites them. `MagnetometerSelfCalibration` feeds it
/// its pairs when `Settings.softIron` is on (the default: docs/fusion.md).
///
/// A reading is `y = D·m + b`, with `m` the Earth's field in the sensor
/// frame, `D` the soft iron (symmetric, near I) and `b` the hard iron. Over a
/// rotation `C` the gyroscope integrates between two readings (`m₂ = C·m₁`,
/// as in `MagnetometerSelfCalibration`), with `G = D⁻¹` and `c = G·b`:
///
///     G·y₂ − c = C·(G·y₁ − c)   ⇔   G·y₂ − C·G·y₁ − (I − C)·c = 0,
///
/// linear and homogeneous in (G, c), attitude-independent, with no
/// linearisation (the equation of L. Troni and L. L. Whitcomb, IEEE/ASME
/// Trans. Mechatronics 24(4), 2019, with the soft iron moved to the left;
/// recursive least squares in information form as in J. L. Crassidis,
/// K.-L. Lai and R. R. Harman, J. Guidance, Control, and Dynamics 28(1),
/// 2005). The overall scale of `G` is not observable from rotation (a field
/// twice as strong turns the same way), so `trace G = 3`: `G = I + F`, `F`
/// symmetric and trace-free (5 numbers), and with `c` 8 unknowns θ:
///
///     F·y₂ − C·F·y₁ − (I − C)·c = C·y₁ − y₂.
///
/// The calibrated field is `G·(y − b) = G·y − c`. Rotation about one axis
/// leaves parts of `F` unknown; the covariance of θ (the inverse of the
/// information matrix, scaled by the residual mean square) says what the
/// motion has excited, and ``isShapeKnown`` gates on the worst-known
/// element of `F`.
///
/// Pure, no allocation: the 8×8 information matrix is a `SIMD64<Double>`;
/// a pair adds to it, and it is solved once a second of pairs.
public struct SoftIronSelfCalibration: Sendable {
    public struct Settings: Equatable, Sendable {
        /// Time in which what was learned fades to 1/e, s.
        public var forgettingTime = 600.0
        /// Prior 1 σ of `c` (µT) and of the elements of `F`, in units of the
        /// residual noise assumed before any equation (`initialNoise`, µT).
        public var priorOffset = 100.0, priorShape = 0.5, initialNoise = 0.5
        /// The shape is known when the worst-known element of `F` has 1 σ
        /// below this, after `minimumEquations` equations.
        public var shapeTolerance = 0.005
        public var minimumEquations = 20
        /// Pairs' time between two solves of the 8×8 system, s: the shape
        /// changes over minutes (`forgettingTime`), the pairs come up to
        /// the magnetometer's rate.
        public var solveInterval = 1.0
        public init() {}
    }

    public struct State: Equatable, Sendable {
        /// Σ AᵀA (8×8, row-major, the upper triangle kept; columns: the
        /// five elements of F, then c), Σ Aᵀz, Σ zᵀz (µT²) and the number
        /// of scalar equations (3 a pair), all forgotten alike.
        public var information = SIMD64<Double>()
        public var weighted = SIMD8<Double>()
        public var squares = 0.0, count = 0.0
        /// Pairs' time since the last solve, s.
        public var sinceSolve = 0.0
        /// θ: F's five coordinates, then c (µT).
        public var estimate = SIMD8<Double>()
        /// Mean square of the least-squares residuals per equation, µT²
        /// (`initialNoise`² until there are more equations than unknowns).
        public var residualMeanSquare: Double
        public var equations = 0
        /// 1 σ of the worst-known element of F (dimensionless).
        public var shapeUncertainty = Double.infinity
    }

    public let settings: Settings
    public var state: State

    public init(settings: Settings = Settings()) {
        self.settings = settings
        state = State(residualMeanSquare: settings.initialNoise * settings.initialNoise)
        for k in 0..<8 { state.information[k * 8 + k] = priorInformation(k) }
    }

    /// The prior's information on θ's element `k`, in units of the initial noise.
    func priorInformation(_ k: Int) -> Double {
        let sigma = (k < 5 ? settings.priorShape : settings.priorOffset) / settings.initialNoise
        return 1 / (sigma * sigma)
    }

    /// F's basis: diag(1, −1, 0), diag(0, 1, −1), then xy, xz, yz off-diagonal pairs.
    @inlinable static func basis(_ k: Int, _ v: Vector3) -> Vector3 {
        switch k {
        case 0: return Vector3(v.x, -v.y, 0)
        case 1: return Vector3(0, v.y, -v.z)
        case 2: return Vector3(v.y, v.x, 0)
        case 3: return Vector3(v.z, 0, v.x)
        default: return Vector3(0, v.z, v.y)
        }
    }

    /// One pair: readings `first` and `second` (µT) and the rotation `c`
    /// that takes an earth-fixed vector from the first reading's frame to
    /// the second's (the gyroscope's, bias removed), `elapsed` s after the
    /// previous pair (for the forgetting). The pair only adds to the sums
    /// (a hundred multiplications); the 8×8 system is solved again once
    /// `Settings.solveInterval` of pairs' time has passed (``solve()``).
    public mutating func add(first y1: Vector3, second y2: Vector3, rotation c: Matrix3, elapsed: Double) {
        // the columns of A (3×8) and z
        let m = c - Matrix3.identity      // −(I − C)
        var columns = (Self.basis(0, y2) - c * Self.basis(0, y1), Self.basis(1, y2) - c * Self.basis(1, y1),
                       Self.basis(2, y2) - c * Self.basis(2, y1), Self.basis(3, y2) - c * Self.basis(3, y1),
                       Self.basis(4, y2) - c * Self.basis(4, y1), m.c0, m.c1, m.c2)
        let z = c * y1 - y2
        // forget (back towards the prior), then add the equation: e^(−x) to
        // second order (x = elapsed / forgettingTime, a few thousandths; the
        // forgetting is a time constant, not a quantity)
        let x = max(elapsed, 0) / settings.forgettingTime
        let keep = x < 0.05 ? 1 - x * (1 - 0.5 * x) : mathExp(-x)
        state.weighted *= keep
        state.squares = keep * state.squares + z.dot(z)
        state.count = keep * state.count + 3
        let priorShape = (1 - keep) * priorInformation(0), priorOffset = (1 - keep) * priorInformation(5)
        withUnsafePointer(to: &columns) { tuple in
            tuple.withMemoryRebound(to: Vector3.self, capacity: 8) { a in
                withUnsafeMutableBytes(of: &state.information) { ib in
                    withUnsafeMutableBytes(of: &state.weighted) { wb in
                        let info = ib.baseAddress!.assumingMemoryBound(to: Double.self)
                        let w = wb.baseAddress!.assumingMemoryBound(to: Double.self)
                        // the upper triangle only; ``solve()`` reads no other
                        for i in 0..<8 {
                            w[i] += a[i].dot(z)
                            info[i * 8 + i] = keep * info[i * 8 + i] + (i < 5 ? priorShape : priorOffset) + a[i].dot(a[i])
                            for j in (i + 1)..<8 { info[i * 8 + j] = keep * info[i * 8 + j] + a[i].dot(a[j]) }
                        }
                    }
                }
            }
        }
        state.equations &+= 1
        state.sinceSolve += max(elapsed, 0)
        if state.sinceSolve >= settings.solveInterval || state.equations == settings.minimumEquations { solve() }
    }

    /// Solves the system the pairs have built (``add(first:second:rotation:elapsed:)``
    /// does so every `solveInterval`): the estimate, the residual mean
    /// square and the shape's uncertainty.
    public mutating func solve() {
        state.sinceSolve = 0
        var solution = SIMD8<Double>()
        let worst = withUnsafeBytes(of: state.information) { ib in
            withUnsafeBytes(of: state.weighted) { wb in
                Self.solve(ib.baseAddress!.assumingMemoryBound(to: Double.self), wb.baseAddress!.assumingMemoryBound(to: Double.self),
                           into: &solution)
            }
        }
        guard let worst else { return }
        state.estimate = solution
        // the least-squares residual, Σ|z − Aθ|² + θᵀΛ₀θ = Σ zᵀz − θᵀη,
        // over the equations' degrees of freedom (forgotten alike)
        let freedom = state.count - 8
        if freedom >= 3 {
            let rss = max(state.squares - (solution * state.weighted).sum(), 0)
            state.residualMeanSquare = max(rss / freedom, 1e-12)
        }
        state.shapeUncertainty = (state.residualMeanSquare * worst).squareRoot()
    }

    /// Solves Λθ = η (8×8, row-major, its upper triangle read; Λ symmetric
    /// positive definite) by Cholesky into `x`, and returns the largest of
    /// the first five diagonal elements of Λ⁻¹ (the worst-known element of
    /// F); nil when Λ is not positive definite.
    static func solve(_ a: UnsafePointer<Double>, _ b: UnsafePointer<Double>, into x: inout SIMD8<Double>) -> Double? {
        var lower = SIMD64<Double>()
        return withUnsafeMutableBytes(of: &lower) { lb -> Double? in
            let l = lb.baseAddress!.assumingMemoryBound(to: Double.self)
            for i in 0..<8 {
                for j in 0...i {
                    var s = a[j * 8 + i]      // the upper triangle: Λ is symmetric
                    for k in 0..<j { s -= l[i * 8 + k] * l[j * 8 + k] }
                    if i == j {
                        guard s > 0 else { return nil }
                        l[i * 8 + i] = s.squareRoot()
                    } else {
                        l[i * 8 + j] = s / l[j * 8 + j]
                    }
                }
            }
            // L·Lᵀ·x = rhs, in place
            func solveInPlace(_ v: UnsafeMutablePointer<Double>) {
                for i in 0..<8 {
                    var s = v[i]
                    for k in 0..<i { s -= l[i * 8 + k] * v[k] }
                    v[i] = s / l[i * 8 + i]
                }
                for i in stride(from: 7, through: 0, by: -1) {
                    var s = v[i]
                    for k in (i + 1)..<8 { s -= l[k * 8 + i] * v[k] }
                    v[i] = s / l[i * 8 + i]
                }
            }
            var worst = 0.0
            var e = SIMD8<Double>()
            withUnsafeMutableBytes(of: &e) { eb in
                let v = eb.baseAddress!.assumingMemoryBound(to: Double.self)
                for k in 0..<5 {
                    for i in 0..<8 { v[i] = i == k ? 1 : 0 }
                    solveInPlace(v)
                    worst = max(worst, v[k])
                }
            }
            withUnsafeMutableBytes(of: &x) { xb in
                let v = xb.baseAddress!.assumingMemoryBound(to: Double.self)
                for i in 0..<8 { v[i] = b[i] }
                solveInPlace(v)
            }
            return worst
        }
    }

    /// `G = D⁻¹` (trace 3).
    public var shape: Matrix3 {
        let f = state.estimate
        return Matrix3(Vector3(1 + f[0], f[2], f[3]), Vector3(f[2], 1 - f[0] + f[1], f[4]), Vector3(f[3], f[4], 1 - f[1]))
    }
    /// `c = G·b`, µT.
    public var scaledOffset: Vector3 { Vector3(state.estimate[5], state.estimate[6], state.estimate[7]) }
    /// The hard iron `b = G⁻¹·c`, µT.
    public var offset: Vector3 { shape.inverse.map { $0 * scaledOffset } ?? scaledOffset }
    /// The soft iron `D = G⁻¹` (determinant free: `trace D⁻¹ = 3`).
    public var softIron: Matrix3 { shape.inverse ?? .identity }

    /// Whether the motion has excited every element of the soft iron enough.
    public var isShapeKnown: Bool {
        state.equations >= settings.minimumEquations && state.shapeUncertainty < settings.shapeTolerance
    }

    /// The field with soft and hard iron removed, `G·y − c` (µT), once the
    /// shape is known; nil before.
    public func calibrated(_ y: Vector3) -> Vector3? {
        isShapeKnown ? shape * y - scaledOffset : nil
    }
}
