// Small maths shared by the chip models: a 3x3 matrix for mountings and
// misalignment, and the vector-sensor imperfection model.
import EdgeValues

/// A 3x3 matrix stored by rows (row-major, like the `[[Double]]` in board
/// specs: `rows[i][j]` is row i, column j).
public struct SimMatrix3: Sendable, Equatable {
    public var r0: Vector3, r1: Vector3, r2: Vector3

    public init(rows r0: Vector3, _ r1: Vector3, _ r2: Vector3) { self.r0 = r0; self.r1 = r1; self.r2 = r2 }
    public static let identity = SimMatrix3(rows: Vector3(1, 0, 0), Vector3(0, 1, 0), Vector3(0, 0, 1))

    /// From `[[Double]]` rows; nil unless exactly 3x3.
    public init?(_ rows: [[Double]]) {
        guard rows.count == 3, rows.allSatisfy({ $0.count == 3 }) else { return nil }
        r0 = Vector3(rows[0][0], rows[0][1], rows[0][2])
        r1 = Vector3(rows[1][0], rows[1][1], rows[1][2])
        r2 = Vector3(rows[2][0], rows[2][1], rows[2][2])
    }

    public var rows: [[Double]] { [[r0.x, r0.y, r0.z], [r1.x, r1.y, r1.z], [r2.x, r2.y, r2.z]] }

    public var transposed: SimMatrix3 {
        SimMatrix3(rows: Vector3(r0.x, r1.x, r2.x), Vector3(r0.y, r1.y, r2.y), Vector3(r0.z, r1.z, r2.z))
    }

    public static func * (m: SimMatrix3, v: Vector3) -> Vector3 {
        Vector3((m.r0 * v).sum(), (m.r1 * v).sum(), (m.r2 * v).sum())
    }

    public static func * (a: SimMatrix3, b: SimMatrix3) -> SimMatrix3 {
        let bt = b.transposed
        return SimMatrix3(rows: bt * a.r0, bt * a.r1, bt * a.r2)
    }

    /// Element-wise absolute value (to carry per-axis tolerances through a mounting).
    public var magnitudes: SimMatrix3 { SimMatrix3(rows: abs(r0), abs(r1), abs(r2)) }

    /// True when the matrix is a rotation (orthonormal, determinant +1) within `tolerance`.
    public func isRotation(tolerance: Double = 1e-6) -> Bool {
        let p = self * transposed
        let i = SimMatrix3.identity
        for (a, b) in [(p.r0, i.r0), (p.r1, i.r1), (p.r2, i.r2)] where ((a - b) * (a - b)).sum() > tolerance * tolerance {
            return false
        }
        let det = r0.x * (r1.y * r2.z - r1.z * r2.y) - r0.y * (r1.x * r2.z - r1.z * r2.x) + r0.z * (r1.x * r2.y - r1.y * r2.x)
        return abs(det - 1) <= tolerance
    }
}

@inline(__always) func abs(_ v: Vector3) -> Vector3 { Vector3(Swift.abs(v.x), Swift.abs(v.y), Swift.abs(v.z)) }

/// How a chip's mounting maps vectors: `boardFromChip` takes chip-frame
/// vectors to the board (body) frame; the chip sees `boardFromChipᵀ · board`.
public struct Mounting: Sendable, Equatable {
    public let boardFromChip: SimMatrix3
    public let chipFromBoard: SimMatrix3
    public init(boardFromChip: SimMatrix3 = .identity) {
        self.boardFromChip = boardFromChip
        self.chipFromBoard = boardFromChip.transposed
    }
    @inline(__always) public func chip(fromBoard v: Vector3) -> Vector3 { chipFromBoard * v }
    public static let identity = Mounting()
}

/// The imperfections of one three-axis sensing element (accelerometer, gyro,
/// magnetometer), in the chip frame and the quantity's SI unit (m/s², rad/s
/// or µT). The output before quantisation is
/// `(I + crossAxis) · diag(1 + scaleError + scaleTempco·ΔT) · truth + bias + biasTempco·ΔT + noise`
/// with ΔT = temperature - 25 °C. Noise σ is the datasheet figure (set by the
/// chip's filter/oversampling settings) times `noiseScale`.
public struct AxisImperfections: Codable, Sendable, Equatable {
    /// Multiplies the datasheet noise σ; 0 switches noise off.
    public var noiseScale: Double
    /// Constant offset per axis, SI unit of the quantity.
    public var bias: [Double]
    /// Offset drift per axis, SI unit per °C away from 25 °C.
    public var biasTempco: [Double]
    /// Sensitivity error per axis, fraction (0.01 = reads 1 % high).
    public var scaleError: [Double]
    /// Sensitivity drift, fraction per °C away from 25 °C (all axes).
    public var scaleTempco: Double
    /// Cross-axis sensitivity / misalignment: off-diagonal fractions, row i is
    /// how much of each true axis leaks into output axis i. Diagonal ignored.
    public var crossAxis: [[Double]]

    public init(noiseScale: Double = 1, bias: [Double] = [0, 0, 0], biasTempco: [Double] = [0, 0, 0],
                scaleError: [Double] = [0, 0, 0], scaleTempco: Double = 0,
                crossAxis: [[Double]] = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]) {
        self.noiseScale = noiseScale; self.bias = bias; self.biasTempco = biasTempco
        self.scaleError = scaleError; self.scaleTempco = scaleTempco; self.crossAxis = crossAxis
    }

    /// No noise, no offsets, exact sensitivity.
    public static let ideal = AxisImperfections(noiseScale: 0)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = AxisImperfections()
        noiseScale = try c.decodeIfPresent(Double.self, forKey: .noiseScale) ?? d.noiseScale
        bias = try c.decodeIfPresent([Double].self, forKey: .bias) ?? d.bias
        biasTempco = try c.decodeIfPresent([Double].self, forKey: .biasTempco) ?? d.biasTempco
        scaleError = try c.decodeIfPresent([Double].self, forKey: .scaleError) ?? d.scaleError
        scaleTempco = try c.decodeIfPresent(Double.self, forKey: .scaleTempco) ?? d.scaleTempco
        crossAxis = try c.decodeIfPresent([[Double]].self, forKey: .crossAxis) ?? d.crossAxis
    }

    /// Precomputed form used on every sample.
    struct Compiled {
        var noiseScale: Double
        var bias: Vector3, biasTempco: Vector3, scale: Vector3, scaleTempco: Double
        var mix: SimMatrix3
        init(_ i: AxisImperfections) {
            func v(_ a: [Double]) -> Vector3 { a.count == 3 ? Vector3(a[0], a[1], a[2]) : .zero }
            noiseScale = i.noiseScale
            bias = v(i.bias); biasTempco = v(i.biasTempco); scale = Vector3(1, 1, 1) + v(i.scaleError)
            scaleTempco = i.scaleTempco
            var m = SimMatrix3(i.crossAxis) ?? SimMatrix3(rows: .zero, .zero, .zero)
            m.r0.x = 1; m.r1.y = 1; m.r2.z = 1
            mix = m
        }
        /// Applies everything but noise.
        func apply(_ truth: Vector3, temperature: Double) -> Vector3 {
            let dT = temperature - 25
            let scaled = truth * (scale + Vector3(repeating: scaleTempco * dT))
            return mix * scaled + bias + biasTempco * dT
        }
    }
}

/// Rounds to the nearest integer and clamps to Int16 (the register format:
/// quantisation and saturation).
@inline(__always) func saturatingInt16(_ x: Double) -> Int16 {
    let r = x.rounded()
    if !(r == r) { return 0 }
    if r >= 32767 { return 32767 }
    if r <= -32768 { return -32768 }
    return Int16(r)
}
