// Decoding helpers shared by the scenario types: strict keys, vectors,
// axes, addresses and errno names, each failing with a DecodingError whose
// message says what was expected (the loader adds file and line).
import EdgeValues

/// A coding key for any string: lists and rejects unknown keys, and lets a
/// caller root a `ScenarioJSONValue.decode` error path ("imperfections").
public struct ScenarioAnyKey: CodingKey, Sendable {
    public var stringValue: String
    public var intValue: Int? { nil }
    public init(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) { nil }
}

extension Decoder {
    /// Throws if the object holds a key that is not in `allowed`: a typo in a
    /// scenario must not silently fall back to a default.
    func scenarioRejectUnknownKeys(allowed: [String], in what: String) throws {
        let c = try container(keyedBy: ScenarioAnyKey.self)
        for key in c.allKeys where !allowed.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(.init(
                codingPath: codingPath + [key],
                debugDescription: "unknown key '\(key.stringValue)' in \(what); expected one of: \(allowed.joined(separator: ", "))"))
        }
    }
}

func scenarioError(_ path: [any CodingKey], _ message: String) -> DecodingError {
    DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: message))
}

/// The largest magnitude a scenario number may have. Finite is not enough:
/// a start velocity of 1e307 m/s is finite, the position it reaches is not,
/// and a chip model handed a non-finite truth traps converting it to a
/// register. 1e9 is beyond every quantity a board meets (seconds: 31 years;
/// metres, µT, Pa, degrees) and keeps every product the world forms with
/// another bounded number finite. scenarios/README.md, "Numbers".
public let scenarioLargestMagnitude = 1e9
/// The smallest value of a number that must be positive (a duration, a
/// frequency, a pressure, a density) and of a non-zero ramp: the motions
/// divide by durations and ramps, squared, so 1e-300 s gives infinity.
public let scenarioSmallestPositive = 1e-6

extension KeyedDecodingContainer {
    /// A 3-vector written `[x, y, z]`, each within ±`scenarioLargestMagnitude`.
    func scenarioVector(_ key: Key) throws -> Vector3 {
        let a = try decode([Double].self, forKey: key)
        guard a.count == 3, a.allSatisfy(\.isFinite) else {
            throw scenarioError(codingPath + [key], "expected a vector of 3 finite numbers [x, y, z], got \(a.count) values")
        }
        guard a.allSatisfy({ abs($0) <= scenarioLargestMagnitude }) else {
            throw scenarioError(codingPath + [key], "each element must be within ±1e9, got \(a)")
        }
        return Vector3(a[0], a[1], a[2])
    }
    func scenarioVectorIfPresent(_ key: Key) throws -> Vector3? {
        try contains(key) ? scenarioVector(key) : nil
    }

    /// A number within ±`scenarioLargestMagnitude`; `positive`: at least
    /// `scenarioSmallestPositive`, `nonNegative`: ≥ 0.
    func scenarioNumber(_ key: Key, positive: Bool = false, nonNegative: Bool = false) throws -> Double {
        let v = try decode(Double.self, forKey: key)
        guard v.isFinite else { throw scenarioError(codingPath + [key], "expected a finite number") }
        guard abs(v) <= scenarioLargestMagnitude else {
            throw scenarioError(codingPath + [key], "\(key.stringValue) must be within ±1e9, got \(v)")
        }
        if positive && !(v >= scenarioSmallestPositive) {
            throw scenarioError(codingPath + [key], v > 0 ? "\(key.stringValue) must be at least 1e-6, got \(v)"
                                                        : "\(key.stringValue) must be > 0, got \(v)")
        }
        if nonNegative && v < 0 {
            throw scenarioError(codingPath + [key], "\(key.stringValue) must be ≥ 0, got \(v)")
        }
        return v
    }
    func scenarioNumberIfPresent(_ key: Key, positive: Bool = false, nonNegative: Bool = false) throws -> Double? {
        try contains(key) ? scenarioNumber(key, positive: positive, nonNegative: nonNegative) : nil
    }

    /// A rotation axis: "x", "y", "z", "-x", "-y", "-z" or a vector [x, y, z].
    func scenarioAxis(_ key: Key) throws -> Vector3 {
        if let name = try? decode(String.self, forKey: key) {
            switch name.lowercased() {
            case "x", "+x": return Vector3(1, 0, 0)
            case "y", "+y": return Vector3(0, 1, 0)
            case "z", "+z": return Vector3(0, 0, 1)
            case "-x": return Vector3(-1, 0, 0)
            case "-y": return Vector3(0, -1, 0)
            case "-z": return Vector3(0, 0, -1)
            default:
                throw scenarioError(codingPath + [key], "expected an axis \"x\", \"y\", \"z\" (optionally signed, \"-z\") or a vector [x, y, z], got \"\(name)\"")
            }
        }
        let v = try scenarioVector(key)
        guard v.norm > 1e-9 else { throw scenarioError(codingPath + [key], "axis vector must not be zero") }
        return v.normalized
    }

    /// A 7-bit I2C address: a number (JSON5 allows 0x68) or a string "0x68".
    func scenarioByte(_ key: Key, max: Int = 0xFF, what: String) throws -> UInt8 {
        let value: Int
        if let n = try? decode(Int.self, forKey: key) {
            value = n
        } else if let s = try? decode(String.self, forKey: key) {
            let t = s.lowercased()
            let parsed = t.hasPrefix("0x") ? Int(t.dropFirst(2), radix: 16) : Int(t)
            guard let p = parsed else {
                throw scenarioError(codingPath + [key], "expected \(what) as a number (0x68) or a string \"0x68\", got \"\(s)\"")
            }
            value = p
        } else {
            throw scenarioError(codingPath + [key], "expected \(what) as a number (0x68) or a string \"0x68\"")
        }
        guard value >= 0 && value <= max else {
            throw scenarioError(codingPath + [key], "\(what) must be within 0...\(max) (0x\(String(max, radix: 16))), got \(value)")
        }
        return UInt8(value)
    }

    /// Enumerated string.
    func scenarioChoice(_ key: Key, _ choices: [String], default def: String? = nil) throws -> String {
        guard contains(key) else {
            if let def { return def }
            throw scenarioError(codingPath + [key], "missing '\(key.stringValue)'; expected one of: \(choices.joined(separator: ", "))")
        }
        let s = try decode(String.self, forKey: key)
        guard choices.contains(s) else {
            throw scenarioError(codingPath + [key], "\(key.stringValue) must be one of: \(choices.joined(separator: ", ")); got \"\(s)\"")
        }
        return s
    }
}

/// Linux errno values by name, for `errno: "EIO"` in a fault.
let scenarioErrnoNames: [(name: String, value: Int32)] = [
    ("EPERM", 1), ("EINTR", 4), ("EIO", 5), ("ENXIO", 6), ("EAGAIN", 11), ("EBUSY", 16),
    ("ENODEV", 19), ("EINVAL", 22), ("EOPNOTSUPP", 95), ("ETIMEDOUT", 110), ("EREMOTEIO", 121),
]
