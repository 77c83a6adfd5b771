import EdgeValues

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

// MARK: decoding a value into a chip model's own Decodable type

extension ScenarioJSONValue {
    /// Decodes this value as `type` (a chip model's imperfections struct, say)
    /// without Foundation: `try scenario.imperfections(forAddress: 0x68)?.decode(ChipImperfections.self)`.
    /// Errors are `DecodingError`s whose coding path starts at `codingPath`.
    public func decode<T: Decodable>(_ type: T.Type, codingPath: [any CodingKey] = []) throws -> T {
        try T(from: ScenarioValueDecoder(value: self, codingPath: codingPath))
    }
}

struct ScenarioValueDecoder: Decoder {
    var value: ScenarioJSONValue
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func typeMismatch<T>(_ type: T.Type, _ what: String) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(what), found \(value.kindName)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let o) = value else { throw typeMismatch([String: ScenarioJSONValue].self, "an object") }
        return KeyedDecodingContainer(Keyed<Key>(object: o, codingPath: codingPath))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let a) = value else { throw typeMismatch([ScenarioJSONValue].self, "an array") }
        return Unkeyed(array: a, codingPath: codingPath)
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        var object: [String: ScenarioJSONValue]
        var codingPath: [any CodingKey]
        var allKeys: [Key] { object.keys.sorted().compactMap { Key(stringValue: $0) } }
        func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }
        func child(_ key: Key) throws -> ScenarioValueDecoder {
            guard let v = object[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing key '\(key.stringValue)'"))
            }
            return ScenarioValueDecoder(value: v, codingPath: codingPath + [key])
        }
        func decodeNil(forKey key: Key) throws -> Bool { object[key.stringValue] == nil || object[key.stringValue] == .null }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try T(from: child(key)) }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try child(key).container(keyedBy: type)
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
        func superDecoder() throws -> any Decoder { ScenarioValueDecoder(value: .object(object), codingPath: codingPath) }
        func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        var array: [ScenarioJSONValue]
        var codingPath: [any CodingKey]
        var currentIndex = 0
        init(array: [ScenarioJSONValue], codingPath: [any CodingKey]) { self.array = array; self.codingPath = codingPath }
        var count: Int? { array.count }
        var isAtEnd: Bool { currentIndex >= array.count }
        mutating func next() throws -> ScenarioValueDecoder {
            let key = ScenarioAnyKey(stringValue: "Index \(currentIndex)")
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(ScenarioJSONValue.self, .init(codingPath: codingPath + [key], debugDescription: "array has only \(array.count) elements"))
            }
            defer { currentIndex += 1 }
            return ScenarioValueDecoder(value: array[currentIndex], codingPath: codingPath + [key])
        }
        mutating func decodeNil() throws -> Bool {
            if !isAtEnd && array[currentIndex] == .null { currentIndex += 1; return true }
            return false
        }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: next()) }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { try next() }
    }

    struct Single: SingleValueDecodingContainer {
        var decoder: ScenarioValueDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { decoder.value == .null }
        func decode(_ type: Bool.Type) throws -> Bool {
            guard case .bool(let b) = decoder.value else { throw decoder.typeMismatch(type, "a boolean") }
            return b
        }
        func decode(_ type: String.Type) throws -> String {
            guard case .string(let s) = decoder.value else { throw decoder.typeMismatch(type, "a string") }
            return s
        }
        func number() throws -> Double {
            guard case .number(let n) = decoder.value else { throw decoder.typeMismatch(Double.self, "a number") }
            return n
        }
        func decode(_ type: Double.Type) throws -> Double { try number() }
        func decode(_ type: Float.Type) throws -> Float { Float(try number()) }
        func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            let n = try number()
            guard let i = I(exactly: n) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "expected a whole number that fits \(I.self), got \(n)"))
            }
            return i
        }
        func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: decoder) }
    }
}

extension ScenarioJSONValue {
    var kindName: String {
        switch self {
        case .null: "null"; case .bool: "a boolean"; case .number: "a number"
        case .string: "a string"; case .array: "an array"; case .object: "an object"
        }
    }
}
