import EdgeFusion

/// Any JSON value, decoded as-is. A scenario's `imperfections` object is
/// kept in this form and handed to the chip models, which decide what the
/// keys mean (see docs/scenarios.md for the suggested layout).
public enum ScenarioJSONValue: Decodable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([ScenarioJSONValue])
    case object([String: ScenarioJSONValue])

    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: ScenarioAnyKey.self) {
            var object: [String: ScenarioJSONValue] = [:]
            for key in keyed.allKeys {
                object[key.stringValue] = try keyed.decode(ScenarioJSONValue.self, forKey: key)
            }
            self = .object(object); return
        }
        if var list = try? decoder.unkeyedContainer() {
            var array: [ScenarioJSONValue] = []
            while !list.isAtEnd { array.append(try list.decode(ScenarioJSONValue.self)) }
            self = .array(array); return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() { self = .null }
        else if let b = try? single.decode(Bool.self) { self = .bool(b) }
        else if let n = try? single.decode(Double.self) { self = .number(n) }
        else if let s = try? single.decode(String.self) { self = .string(s) }
        else {
            throw DecodingError.dataCorruptedError(in: single, debugDescription: "expected a JSON value")
        }
    }

    /// The member `key` of an object (nil otherwise or if absent).
    public subscript(key: String) -> ScenarioJSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }
    /// The element `index` of an array (nil otherwise or if out of range).
    public subscript(index: Int) -> ScenarioJSONValue? {
        if case .array(let a) = self, a.indices.contains(index) { return a[index] }
        return nil
    }
    public var double: Double? { if case .number(let n) = self { return n }; return nil }
    public var int: Int? {
        if case .number(let n) = self, n.rounded() == n, abs(n) < 9.0e15 { return Int(n) }
        return nil
    }
    public var bool: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var array: [ScenarioJSONValue]? { if case .array(let a) = self { return a }; return nil }
    public var object: [String: ScenarioJSONValue]? { if case .object(let o) = self { return o }; return nil }
    /// `[x, y, z]` as a vector, if this is an array of three numbers.
    public var vector3: SIMD3<Double>? {
        guard let a = array, a.count == 3, let x = a[0].double, let y = a[1].double, let z = a[2].double else { return nil }
        return SIMD3(x, y, z)
    }
}
