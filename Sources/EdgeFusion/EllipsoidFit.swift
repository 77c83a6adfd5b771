/// Why a magnetometer ellipsoid fit failed.
public enum EllipsoidFitError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer samples than the fit needs (at least `needed`).
    case tooFewSamples(got: Int, needed: Int)
    /// The samples do not span an ellipsoid (not turned enough, or a line/plane).
    case degenerate
    /// The best quadric is not an ellipsoid (a hyperboloid: samples too noisy or too planar).
    case notAnEllipsoid

    public var description: String {
        switch self {
        case let .tooFewSamples(got, needed): "ellipsoid fit: \(got) samples, need at least \(needed) (turn the sensor through all orientations)"
        case .degenerate: "ellipsoid fit: the samples do not span an ellipsoid (turn the sensor through more orientations)"
        case .notAnEllipsoid: "ellipsoid fit: the samples fit no ellipsoid (too noisy or too few orientations)"
        }
    }
}

extension MagnetometerCalibration {
    /// Fewest samples `fit(_:)` accepts.
    public static let minimumFitSamples = 12

    /// Fits a hard/soft-iron calibration to raw magnetometer samples (µT)
    /// taken while the sensor turns through many orientations in a constant
    /// field (a few seconds of turning; more orientations, better fit).
    ///
    /// Method: linear least squares of the general ellipsoid
    /// `yᵀA y + 2 gᵀy = 1` (9 unknowns) in coordinates centred on the sample
    /// mean and scaled to unit size; centre `c = −A⁻¹g`; with
    /// `M = A / (1 + cᵀAc)` the calibration is `hardIron = c`,
    /// `softIron = M^½ / det(M)^⅙` (symmetric, determinant 1). Deterministic;
    /// allocates only here, never in the filter's per-sample path.
    public static func fit<C: Collection>(_ samples: C) throws(EllipsoidFitError) -> MagnetometerCalibration
    where C.Element == Vector3 {
        let n = samples.count
        guard n >= minimumFitSamples else { throw .tooFewSamples(got: n, needed: minimumFitSamples) }
        var mean = Vector3.zero
        for s in samples { mean += s }
        mean /= Double(n)
        var scale = 0.0
        for s in samples { scale = max(scale, (s - mean).norm) }
        guard scale > 0, scale.isFinite else { throw .degenerate }

        // normal equations N p = r for the 9 unknowns
        var nm = [Double](repeating: 0, count: 81)
        var r = [Double](repeating: 0, count: 9)
        var f = [Double](repeating: 0, count: 9)
        for s in samples {
            let y = (s - mean) / scale
            f[0] = y.x * y.x; f[1] = y.y * y.y; f[2] = y.z * y.z
            f[3] = 2 * y.x * y.y; f[4] = 2 * y.x * y.z; f[5] = 2 * y.y * y.z
            f[6] = 2 * y.x; f[7] = 2 * y.y; f[8] = 2 * y.z
            for i in 0..<9 {
                r[i] += f[i]
                for j in i..<9 { nm[i * 9 + j] += f[i] * f[j] }
            }
        }
        for i in 0..<9 { for j in 0..<i { nm[i * 9 + j] = nm[j * 9 + i] } }
        guard let p = solve9(nm, r) else { throw .degenerate }

        let a = Matrix3(Vector3(p[0], p[3], p[4]), Vector3(p[3], p[1], p[5]), Vector3(p[4], p[5], p[2]))
        let g = Vector3(p[6], p[7], p[8])
        guard let aInv = a.inverse else { throw .degenerate }
        let cy = -(aInv * g)
        let k = 1 + cy.dot(a * cy)
        guard k > 0 else { throw .notAnEllipsoid }
        let m = (1 / k) * a  // in scaled coordinates
        let (values, vectors) = symmetricEigen(m)
        guard values.min() > 0 else { throw .notAnEllipsoid }
        // M^½ with the unit-determinant normalisation (scale drops out)
        let roots = Vector3(values.x.squareRoot(), values.y.squareRoot(), values.z.squareRoot())
        let detRoot = (roots.x * roots.y * roots.z)
        let norm = 1 / mathCbrt(detRoot)
        let sq = vectors * Matrix3(diagonal: roots * norm) * vectors.transposed
        let center = mean + scale * cy

        var cal = MagnetometerCalibration(hardIron: center, softIron: sq)
        // field strength and residual on the calibrated samples
        var sum = 0.0
        for s in samples { sum += cal.apply(s).norm }
        let strength = sum / Double(n)
        var sq2 = 0.0
        for s in samples { let e = cal.apply(s).norm / strength - 1; sq2 += e * e }
        cal.fieldStrength = strength
        cal.residual = (sq2 / Double(n)).squareRoot()
        return cal
    }

    /// The 9×9 normal equations, by the module's Gaussian elimination.
    static func solve9(_ a0: [Double], _ b0: [Double]) -> [Double]? { solveLinear(a0, b0, n: 9) }
}

/// Eigenvalues and eigenvectors (columns) of a symmetric 3×3 matrix, by
/// cyclic Jacobi rotations. `m ≈ v * diag(values) * vᵀ`.
public func symmetricEigen(_ m: Matrix3) -> (values: Vector3, vectors: Matrix3) {
    var a = [[m.r0.x, m.r0.y, m.r0.z], [m.r1.x, m.r1.y, m.r1.z], [m.r2.x, m.r2.y, m.r2.z]]
    var v: [[Double]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    for _ in 0..<50 {
        let off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2]
        if off < 1e-30 { break }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            if abs(a[p][q]) < 1e-300 { continue }
            let theta = (a[q][q] - a[p][p]) / (2 * a[p][q])
            let t = (theta >= 0 ? 1.0 : -1.0) / (abs(theta) + (theta * theta + 1).squareRoot())
            let c = 1 / (t * t + 1).squareRoot(), s = t * c
            for k in 0..<3 {
                let akp = a[k][p], akq = a[k][q]
                a[k][p] = c * akp - s * akq
                a[k][q] = s * akp + c * akq
            }
            for k in 0..<3 {
                let apk = a[p][k], aqk = a[q][k]
                a[p][k] = c * apk - s * aqk
                a[q][k] = s * apk + c * aqk
            }
            for k in 0..<3 {
                let vkp = v[k][p], vkq = v[k][q]
                v[k][p] = c * vkp - s * vkq
                v[k][q] = s * vkp + c * vkq
            }
        }
    }
    return (Vector3(a[0][0], a[1][1], a[2][2]), Matrix3(rows: v))
}
