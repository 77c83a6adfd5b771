/// Hard- and soft-iron calibration of a magnetometer:
/// `calibrated = softIron * (raw - hardIron)`, all in µT, sensor frame.
///
/// `hardIron` is the constant offset added by magnetised parts near the
/// sensor; `softIron` undoes the ellipsoidal distortion of nearby soft iron
/// and unequal axis gains (symmetric; determinant 1 when it comes from
/// `fit(_:)`, so the calibrated field keeps the raw field's average size).
/// Codable (JSON: `{"hardIron":[x,y,z],"softIron":[[..],[..],[..]],...}`) so a
/// calibration can be saved once and loaded at start-up.
public struct MagnetometerCalibration: Equatable, Sendable, Codable {
    /// Offset, µT (sensor frame).
    public var hardIron: Vector3
    /// Correction matrix (dimensionless).
    public var softIron: Matrix3
    /// Norm of the calibrated field during the fit, µT (0 if unknown).
    public var fieldStrength: Double
    /// RMS of (|calibrated| / fieldStrength − 1) over the fit samples (0 if unknown).
    public var residual: Double

    public init(hardIron: Vector3 = .zero, softIron: Matrix3 = .identity, fieldStrength: Double = 0, residual: Double = 0) {
        self.hardIron = hardIron; self.softIron = softIron
        self.fieldStrength = fieldStrength; self.residual = residual
    }

    public static let identity = MagnetometerCalibration()

    /// Applies the calibration to a raw sample (µT).
    @inlinable public func apply(_ raw: Vector3) -> Vector3 { softIron * (raw - hardIron) }

    /// The raw sample that calibrates to `calibrated` (for simulators and tests).
    public func distort(_ calibrated: Vector3) -> Vector3 {
        (softIron.inverse ?? .identity) * calibrated + hardIron
    }

    enum CodingKeys: String, CodingKey { case hardIron, softIron, fieldStrength, residual }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let h = try c.decode([Double].self, forKey: .hardIron)
        guard h.count == 3, h.allSatisfy(\.isFinite) else {
            throw DecodingError.dataCorruptedError(forKey: .hardIron, in: c, debugDescription: "hardIron needs 3 finite numbers (µT)")
        }
        let s = try c.decodeIfPresent([[Double]].self, forKey: .softIron) ?? Matrix3.identity.rows
        guard s.count == 3, s.allSatisfy({ $0.count == 3 && $0.allSatisfy(\.isFinite) }) else {
            throw DecodingError.dataCorruptedError(forKey: .softIron, in: c, debugDescription: "softIron needs 3 rows of 3 finite numbers")
        }
        hardIron = Vector3(h[0], h[1], h[2])
        softIron = Matrix3(rows: s)
        guard softIron.inverse != nil else {
            throw DecodingError.dataCorruptedError(forKey: .softIron, in: c, debugDescription: "softIron is singular")
        }
        fieldStrength = try c.decodeIfPresent(Double.self, forKey: .fieldStrength) ?? 0
        residual = try c.decodeIfPresent(Double.self, forKey: .residual) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode([hardIron.x, hardIron.y, hardIron.z], forKey: .hardIron)
        try c.encode(softIron.rows, forKey: .softIron)
        try c.encode(fieldStrength, forKey: .fieldStrength)
        try c.encode(residual, forKey: .residual)
    }
}
