/// A 3×3 matrix of `Double`, stored as three rows. Used for rotation
/// matrices, soft-iron calibration and the 3×3 algebra of the gyroscope-bias
/// Kalman filter. Pure value type; no allocation.
public struct Matrix3: Equatable, Sendable, Codable, CustomStringConvertible {
    public var r0: Vector3, r1: Vector3, r2: Vector3

    @inlinable public init(_ r0: Vector3, _ r1: Vector3, _ r2: Vector3) {
        self.r0 = r0; self.r1 = r1; self.r2 = r2
    }
    /// Row-major elements m11, m12, ... m33.
    @inlinable public init(rows m: [[Double]]) {
        precondition(m.count == 3 && m.allSatisfy { $0.count == 3 }, "Matrix3 needs 3 rows of 3")
        self.init(Vector3(m[0][0], m[0][1], m[0][2]), Vector3(m[1][0], m[1][1], m[1][2]),
                  Vector3(m[2][0], m[2][1], m[2][2]))
    }
    @inlinable public init(diagonal d: Vector3) {
        self.init(Vector3(d.x, 0, 0), Vector3(0, d.y, 0), Vector3(0, 0, d.z))
    }
    @inlinable public init(scaledIdentity s: Double) { self.init(diagonal: Vector3(repeating: s)) }

    public static let identity = Matrix3(scaledIdentity: 1)
    public static let zero = Matrix3(.zero, .zero, .zero)

    /// Row-major nested arrays (for JSON and printing).
    public var rows: [[Double]] { [[r0.x, r0.y, r0.z], [r1.x, r1.y, r1.z], [r2.x, r2.y, r2.z]] }

    @inlinable @inline(__always) public var c0: Vector3 { Vector3(r0.x, r1.x, r2.x) }
    @inlinable @inline(__always) public var c1: Vector3 { Vector3(r0.y, r1.y, r2.y) }
    @inlinable @inline(__always) public var c2: Vector3 { Vector3(r0.z, r1.z, r2.z) }
    @inlinable @inline(__always) public var transposed: Matrix3 { Matrix3(c0, c1, c2) }
    @inlinable public var diagonal: Vector3 { Vector3(r0.x, r1.y, r2.z) }
    @inlinable public var trace: Double { r0.x + r1.y + r2.z }
    @inlinable public var determinant: Double { r0.dot(r1.cross(r2)) }

    @inlinable @inline(__always) public static func * (a: Matrix3, v: Vector3) -> Vector3 {
        Vector3(a.r0.dot(v), a.r1.dot(v), a.r2.dot(v))
    }
    @inlinable @inline(__always) public static func * (a: Matrix3, b: Matrix3) -> Matrix3 {
        Matrix3(a.r0.x * b.r0 + a.r0.y * b.r1 + a.r0.z * b.r2,
                a.r1.x * b.r0 + a.r1.y * b.r1 + a.r1.z * b.r2,
                a.r2.x * b.r0 + a.r2.y * b.r1 + a.r2.z * b.r2)
    }
    @inlinable @inline(__always) public static func + (a: Matrix3, b: Matrix3) -> Matrix3 { Matrix3(a.r0 + b.r0, a.r1 + b.r1, a.r2 + b.r2) }
    @inlinable @inline(__always) public static func - (a: Matrix3, b: Matrix3) -> Matrix3 { Matrix3(a.r0 - b.r0, a.r1 - b.r1, a.r2 - b.r2) }
    @inlinable @inline(__always) public static func * (s: Double, a: Matrix3) -> Matrix3 { Matrix3(s * a.r0, s * a.r1, s * a.r2) }

    /// The inverse by cofactors; `nil` when `|det| ≤ epsilon` (VQF's `matrix3Inv`).
    @inlinable @inline(__always) public var inverse: Matrix3? {
        let c0 = r1.cross(r2), c1 = r2.cross(r0), c2 = r0.cross(r1)
        let det = r0.dot(c0)
        guard abs(det) > Double.ulpOfOne else { return nil }
        let k = 1 / det
        // adj = [c0 c1 c2] as columns
        return Matrix3(k * Vector3(c0.x, c1.x, c2.x), k * Vector3(c0.y, c1.y, c2.y), k * Vector3(c0.z, c1.z, c2.z))
    }

    public var description: String { "[\(r0.x) \(r0.y) \(r0.z); \(r1.x) \(r1.y) \(r1.z); \(r2.x) \(r2.y) \(r2.z)]" }
}
