// Small dense linear systems for the calibration fits (ellipsoid, six-pose
// accelerometer). Pure, allocation only for the working copies.

/// Solves `a x = b` (n×n, row-major) by Gaussian elimination with partial
/// pivoting; nil when singular.
func solveLinear(_ a0: [Double], _ b0: [Double], n: Int) -> [Double]? {
    var a = a0, b = b0
    var maxAbs = 0.0
    for v in a { maxAbs = max(maxAbs, abs(v)) }
    guard maxAbs > 0 else { return nil }
    for col in 0..<n {
        var piv = col
        for row in (col + 1)..<n where abs(a[row * n + col]) > abs(a[piv * n + col]) { piv = row }
        guard abs(a[piv * n + col]) > 1e-12 * maxAbs else { return nil }
        if piv != col {
            for j in 0..<n { a.swapAt(col * n + j, piv * n + j) }
            b.swapAt(col, piv)
        }
        for row in (col + 1)..<n {
            let f = a[row * n + col] / a[col * n + col]
            if f == 0 { continue }
            for j in col..<n { a[row * n + j] -= f * a[col * n + j] }
            b[row] -= f * b[col]
        }
    }
    var x = [Double](repeating: 0, count: n)
    for row in stride(from: n - 1, through: 0, by: -1) {
        var s = b[row]
        for j in (row + 1)..<n { s -= a[row * n + j] * x[j] }
        x[row] = s / a[row * n + row]
    }
    return x
}
