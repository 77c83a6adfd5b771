/// How a chip's axes sit on the board: the rotation `boardFromChip` with
/// `v_board = boardFromChip · v_chip`.
///
/// In a board profile it is written either as a signed permutation — three
/// strings naming, for board X, Y and Z in turn, the chip axis that points
/// that way (`["+x", "+y", "+z"]` is identity; `["-y", "+x", "+z"]` means the
/// chip is turned 90° counter-clockwise on the board: board X is chip −Y) —
/// or as a 3×3 rotation matrix of numbers, rows = board axes
/// (`[[0,-1,0],[1,0,0],[0,0,1]]` is the same rotation). The string
/// `"identity"` is also accepted. The matrix must be orthonormal with
/// determinant +1 (a proper rotation): a mirror image cannot be a mounting.
public struct Mounting: Equatable, Sendable, Codable, CustomStringConvertible {
    /// Row-major 3×3 `boardFromChip`.
    public var matrix: [[Double]]

    public static let identity = Mounting(uncheckedMatrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]])

    init(uncheckedMatrix: [[Double]]) { matrix = uncheckedMatrix }

    /// Validates a row-major rotation matrix.
    public init(matrix m: [[Double]]) throws(MountingError) {
        guard m.count == 3, m.allSatisfy({ $0.count == 3 }), m.joined().allSatisfy(\.isFinite) else {
            throw MountingError("a mounting matrix must be 3 rows of 3 finite numbers")
        }
        for i in 0..<3 {
            for j in 0..<3 {
                let dot = (0..<3).reduce(0.0) { $0 + m[i][$1] * m[j][$1] }
                if abs(dot - (i == j ? 1 : 0)) > 1e-6 {
                    throw MountingError("the mounting matrix is not a rotation: rows \(i + 1) and \(j + 1) are not orthonormal")
                }
            }
        }
        let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        if det < 0 {
            throw MountingError("the mounting matrix has determinant -1 (a mirror image); flip the sign of one axis")
        }
        matrix = m
    }

    /// Parses the signed-permutation form, e.g. `["-y", "+x", "+z"]`.
    public init(axes: [String]) throws(MountingError) {
        guard axes.count == 3 else {
            throw MountingError("a mounting needs three chip axes (for board X, Y, Z), e.g. [\"+x\", \"+y\", \"+z\"]; got \(axes.count)")
        }
        var m = [[Double]](repeating: [0, 0, 0], count: 3)
        for (row, token) in axes.enumerated() {
            var t = Substring(token.lowercased())
            var sign = 1.0
            if t.hasPrefix("-") { sign = -1; t = t.dropFirst() } else if t.hasPrefix("+") { t = t.dropFirst() }
            guard let col = ["x", "y", "z"].firstIndex(of: String(t)) else {
                throw MountingError("'\(token)' is not a chip axis; use +x, -x, +y, -y, +z or -z")
            }
            m[row][col] = sign
        }
        try self.init(matrix: m)
    }

    /// `v_board = boardFromChip · v_chip`.
    @inlinable
    public func toBoard(_ v: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3(matrix[0][0] * v.x + matrix[0][1] * v.y + matrix[0][2] * v.z,
              matrix[1][0] * v.x + matrix[1][1] * v.y + matrix[1][2] * v.z,
              matrix[2][0] * v.x + matrix[2][1] * v.y + matrix[2][2] * v.z)
    }

    /// The signed-permutation spelling when the matrix is one, else nil.
    public var axes: [String]? {
        var out: [String] = []
        for row in matrix {
            guard let col = row.firstIndex(where: { abs(abs($0) - 1) < 1e-9 }),
                  row.enumerated().allSatisfy({ $0.offset == col || abs($0.element) < 1e-9 }) else { return nil }
            out.append((row[col] > 0 ? "+" : "-") + ["x", "y", "z"][col])
        }
        return out
    }

    public var description: String {
        if let a = axes { return "[" + a.joined(separator: ", ") + "]" }
        return matrix.description
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        do {
            if let s = try? c.decode(String.self) {
                guard s.lowercased() == "identity" else {
                    throw MountingError("expected \"identity\", three chip axes such as [\"-y\", \"+x\", \"+z\"], or a 3x3 rotation matrix; got \"\(s)\"")
                }
                self = .identity
            } else if let a = try? c.decode([String].self) {
                try self.init(axes: a)
            } else if let m = try? c.decode([[Double]].self) {
                try self.init(matrix: m)
            } else {
                throw MountingError("expected \"identity\", three chip axes such as [\"-y\", \"+x\", \"+z\"], or a 3x3 rotation matrix")
            }
        } catch let e as MountingError {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: e.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let a = axes { try c.encode(a) } else { try c.encode(matrix) }
    }
}

public struct MountingError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
