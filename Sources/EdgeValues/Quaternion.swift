/// A rotation quaternion (w, x, y, z), Hamilton convention.
///
/// A sensor-to-earth orientation `q` maps a vector in sensor (board)
/// coordinates to earth coordinates: `v_earth = q.rotate(v_sensor)`.
@frozen public struct Quaternion: Hashable, Sendable, Codable, BitwiseCopyable, CustomStringConvertible {
    public var w: Double, x: Double, y: Double, z: Double

    @inlinable public init(w: Double, x: Double, y: Double, z: Double) {
        self.w = w; self.x = x; self.y = y; self.z = z
    }
    public static let identity = Quaternion(w: 1, x: 0, y: 0, z: 0)

    /// Rotation by `angle` radians about the unit `axis`.
    @inlinable public init(axis: Vector3, angle: Double) {
        let a = axis.normalized, h = angle / 2, s = mathSin(h)
        self.init(w: mathCos(h), x: a.x * s, y: a.y * s, z: a.z * s)
    }

    /// Rotation vector (axis × angle, radians) to quaternion.
    @inlinable public init(rotationVector v: Vector3) {
        let angle = v.norm
        if angle < 1e-12 { self.init(w: 1, x: v.x / 2, y: v.y / 2, z: v.z / 2); self = self.normalized }
        else { self.init(axis: v / angle, angle: angle) }
    }

    @inlinable @inline(__always) public var vector: Vector3 { Vector3(x, y, z) }

    /// The rotation vector (axis × angle, radians, angle in [0, π]) of this
    /// unit quaternion; inverse of `init(rotationVector:)`.
    @inlinable public var rotationVector: Vector3 {
        let q = w < 0 ? Quaternion(w: -w, x: -x, y: -y, z: -z) : self
        let v = q.vector, s = v.norm
        if s < 1e-12 { return 2 * v }
        return v * (2 * mathAtan2(s, q.w) / s)
    }
    @inlinable @inline(__always) public var conjugate: Quaternion { Quaternion(w: w, x: -x, y: -y, z: -z) }
    @inlinable @inline(__always) public var norm: Double { (w * w + x * x + y * y + z * z).squareRoot() }
    @inlinable @inline(__always) public var normalized: Quaternion {
        let n = norm
        guard n > 0 else { return .identity }
        let k = 1 / n
        return Quaternion(w: w * k, x: x * k, y: y * k, z: z * k)
    }

    /// Brings a quaternion that is unit up to rounding back to unit norm
    /// without a square root or division (first-order Newton step
    /// k = (3 − |q|²)/2); falls back to `normalized` when |q|² is off by more
    /// than 1e-6. Deterministic.
    @inlinable @inline(__always) public var renormalized: Quaternion {
        let n2 = w * w + x * x + y * y + z * z
        let e = n2 - 1
        guard e < 1e-6 && e > -1e-6 else { return normalized }
        let k = 1.5 - 0.5 * n2
        return Quaternion(w: w * k, x: x * k, y: y * k, z: z * k)
    }

    /// Hamilton product `a * b` (apply b, then a).
    @inlinable @inline(__always) public static func * (a: Quaternion, b: Quaternion) -> Quaternion {
        Quaternion(w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
                   x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                   y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                   z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w)
    }

    /// Rotates `v` by this (unit) quaternion: q v q*.
    @inlinable @inline(__always) public func rotate(_ v: Vector3) -> Vector3 {
        let u = vector
        let t = 2 * u.cross(v)
        return v + w * t + u.cross(t)
    }

    /// Angle in radians of the rotation between two orientations (q and -q equal).
    /// Computed as 2·atan2(|vector part|, |w|) of `conjugate * other`: accurate
    /// for small angles too (acos of the dot product loses half the digits).
    @inlinable public func angle(to other: Quaternion) -> Double {
        let d = conjugate * other
        return 2 * mathAtan2(d.vector.norm, abs(d.w))
    }

    /// Rotates `v` by the inverse of this (unit) quaternion: q* v q
    /// (earth to sensor for a sensor-to-earth orientation).
    @inlinable @inline(__always) public func inverseRotate(_ v: Vector3) -> Vector3 {
        let u = -vector
        let t = 2 * u.cross(v)
        return v + w * t + u.cross(t)
    }

    /// Rotation by `angle` radians about the earth's vertical (+Z).
    @inlinable public init(yaw angle: Double) {
        let h = angle / 2
        self.init(w: mathCos(h), x: 0, y: 0, z: mathSin(h))
    }

    /// `Quaternion(yaw: angle) * self` without building the yaw quaternion:
    /// turns an orientation about the earth's vertical axis by `angle`, given
    /// as the cosine and sine of half the angle.
    @inlinable @inline(__always) public func turnedAboutVertical(cosHalf c: Double, sinHalf s: Double) -> Quaternion {
        Quaternion(w: c * w - s * z, x: c * x - s * y, y: c * y + s * x, z: c * z + s * w)
    }

    /// The sensor-to-earth rotation matrix: `matrix * v == rotate(v)`.
    /// Its columns are the sensor axes in earth coordinates.
    @inlinable @inline(__always) public var rotationMatrix: Matrix3 {
        let xx = x * x, yy = y * y, zz = z * z
        let xy = x * y, xz = x * z, yz = y * z, wx = w * x, wy = w * y, wz = w * z
        return Matrix3(Vector3(1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)),
                       Vector3(2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)),
                       Vector3(2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)))
    }

    /// The quaternion of a proper rotation matrix (Shepperd's method), w ≥ 0.
    public init(rotationMatrix m: Matrix3) {
        let t = m.r0.x + m.r1.y + m.r2.z
        var q: Quaternion
        if t > 0 {
            let s = 2 * (t + 1).squareRoot()
            q = Quaternion(w: s / 4, x: (m.r2.y - m.r1.z) / s, y: (m.r0.z - m.r2.x) / s, z: (m.r1.x - m.r0.y) / s)
        } else if m.r0.x > m.r1.y && m.r0.x > m.r2.z {
            let s = 2 * (1 + m.r0.x - m.r1.y - m.r2.z).squareRoot()
            q = Quaternion(w: (m.r2.y - m.r1.z) / s, x: s / 4, y: (m.r0.y + m.r1.x) / s, z: (m.r0.z + m.r2.x) / s)
        } else if m.r1.y > m.r2.z {
            let s = 2 * (1 + m.r1.y - m.r0.x - m.r2.z).squareRoot()
            q = Quaternion(w: (m.r0.z - m.r2.x) / s, x: (m.r0.y + m.r1.x) / s, y: s / 4, z: (m.r1.z + m.r2.y) / s)
        } else {
            let s = 2 * (1 + m.r2.z - m.r0.x - m.r1.y).squareRoot()
            q = Quaternion(w: (m.r1.x - m.r0.y) / s, x: (m.r0.z + m.r2.x) / s, y: (m.r1.z + m.r2.y) / s, z: s / 4)
        }
        if q.w < 0 { q = Quaternion(w: -q.w, x: -q.x, y: -q.y, z: -q.z) }
        self = q.normalized
    }

    public var description: String { "(w: \(w), x: \(x), y: \(y), z: \(z))" }
}

