// A thin wrapper around Foundation's JSON decoder that keeps every error
// pinned to the value it is about.
//
// Foundation's `JSONDecoder` (Swift 6.3, `allowsJSON5 = true`) reports a
// number that does not fit the type asked for — `1.5`, `1e20` or `NaN` for an
// `Int`, `-1` or `300` for a `UInt8` — as `dataCorrupted` with an *empty*
// coding path and "The given data was not valid JSON.", so the loader could
// name neither the key nor the line. (The primitive decode throws an
// internal error, which the top-level `decode` wraps without a path.) Every
// primitive decode below goes through `pinned`, which turns such a failure
// into a `typeMismatch` at the path of the value being decoded. Everything else is
// forwarded unchanged, so decoders written against `Decoder` (here, in
// EdgeChips and EdgeSim) behave exactly as they do with Foundation's.

/// Decodes `Value` through ``PathTrackingDecoder``.
struct PathTracked<Value: Decodable>: Decodable {
    var value: Value
    init(from decoder: any Decoder) throws {
        value = try Value(from: PathTrackingDecoder(base: decoder))
    }
}

/// Coding key of an array element, spelled the way Foundation spells it.
struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String
    init(intValue: Int) { self.intValue = intValue; stringValue = "Index \(intValue)" }
    init?(stringValue: String) { return nil }
}

/// Runs a primitive decode; a failure without a coding path (Foundation's
/// "does not fit" number errors) becomes a type mismatch at `path`.
@inline(__always)
private func pinned<T>(_ type: T.Type, at path: [any CodingKey], _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as DecodingError {
        guard case .dataCorrupted(let context) = error, context.codingPath.isEmpty, !path.isEmpty else { throw error }
        throw DecodingError.typeMismatch(T.self, DecodingError.Context(
            codingPath: path, debugDescription: "the value does not fit the type", underlyingError: error))
    } catch {
        // Foundation's internal number error, which its top-level decode
        // would turn into a path-less dataCorrupted.
        throw DecodingError.typeMismatch(T.self, DecodingError.Context(
            codingPath: path, debugDescription: "the value does not fit the type", underlyingError: error))
    }
}

struct PathTrackingDecoder: Decoder {
    let base: any Decoder
    var codingPath: [any CodingKey] { base.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { base.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(TrackingKeyedContainer(base: try base.container(keyedBy: type)))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        TrackingUnkeyedContainer(base: try base.unkeyedContainer())
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        TrackingSingleValueContainer(decoder: base, base: try base.singleValueContainer())
    }
}

struct TrackingKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let base: KeyedDecodingContainer<Key>
    var codingPath: [any CodingKey] { base.codingPath }
    var allKeys: [Key] { base.allKeys }
    func contains(_ key: Key) -> Bool { base.contains(key) }
    func decodeNil(forKey key: Key) throws -> Bool { try base.decodeNil(forKey: key) }

    private func p<T>(_ t: T.Type, _ key: Key, _ body: () throws -> T) throws -> T {
        try pinned(t, at: codingPath + [key], body)
    }
    func decode(_ t: Bool.Type, forKey k: Key) throws -> Bool { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: String.Type, forKey k: Key) throws -> String { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: Double.Type, forKey k: Key) throws -> Double { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: Float.Type, forKey k: Key) throws -> Float { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: Int.Type, forKey k: Key) throws -> Int { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: Int8.Type, forKey k: Key) throws -> Int8 { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: Int16.Type, forKey k: Key) throws -> Int16 { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: Int32.Type, forKey k: Key) throws -> Int32 { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: Int64.Type, forKey k: Key) throws -> Int64 { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: UInt.Type, forKey k: Key) throws -> UInt { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: UInt8.Type, forKey k: Key) throws -> UInt8 { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: UInt16.Type, forKey k: Key) throws -> UInt16 { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: UInt32.Type, forKey k: Key) throws -> UInt32 { try p(t, k) { try base.decode(t, forKey: k) } }
    func decode(_ t: UInt64.Type, forKey k: Key) throws -> UInt64 { try p(t, k) { try base.decode(t, forKey: k) } }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        // A missing key: let Foundation raise its own keyNotFound.
        guard base.contains(key) else { return try base.decode(type, forKey: key) }
        return try T(from: PathTrackingDecoder(base: base.superDecoder(forKey: key)))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                               forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(TrackingKeyedContainer<NestedKey>(base: try base.nestedContainer(keyedBy: type, forKey: key)))
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        TrackingUnkeyedContainer(base: try base.nestedUnkeyedContainer(forKey: key))
    }
    func superDecoder() throws -> any Decoder { PathTrackingDecoder(base: try base.superDecoder()) }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        PathTrackingDecoder(base: try base.superDecoder(forKey: key))
    }
}

struct TrackingUnkeyedContainer: UnkeyedDecodingContainer {
    var base: any UnkeyedDecodingContainer
    var codingPath: [any CodingKey] { base.codingPath }
    var count: Int? { base.count }
    var isAtEnd: Bool { base.isAtEnd }
    var currentIndex: Int { base.currentIndex }
    mutating func decodeNil() throws -> Bool { try base.decodeNil() }

    private mutating func p<T>(_ t: T.Type, _ body: (inout any UnkeyedDecodingContainer) throws -> T) throws -> T {
        let path = codingPath + [IndexKey(intValue: currentIndex)]
        return try pinned(t, at: path) { try body(&base) }
    }
    mutating func decode(_ t: Bool.Type) throws -> Bool { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: String.Type) throws -> String { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: Double.Type) throws -> Double { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: Float.Type) throws -> Float { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: Int.Type) throws -> Int { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: Int8.Type) throws -> Int8 { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: Int16.Type) throws -> Int16 { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: Int32.Type) throws -> Int32 { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: Int64.Type) throws -> Int64 { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: UInt.Type) throws -> UInt { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: UInt8.Type) throws -> UInt8 { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: UInt16.Type) throws -> UInt16 { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: UInt32.Type) throws -> UInt32 { try p(t) { try $0.decode(t) } }
    mutating func decode(_ t: UInt64.Type) throws -> UInt64 { try p(t) { try $0.decode(t) } }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        // At the end: let Foundation raise its own valueNotFound.
        if base.isAtEnd { return try base.decode(type) }
        return try T(from: PathTrackingDecoder(base: base.superDecoder()))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(TrackingKeyedContainer<NestedKey>(base: try base.nestedContainer(keyedBy: type)))
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        TrackingUnkeyedContainer(base: try base.nestedUnkeyedContainer())
    }
    mutating func superDecoder() throws -> any Decoder { PathTrackingDecoder(base: try base.superDecoder()) }
}

struct TrackingSingleValueContainer: SingleValueDecodingContainer {
    /// The decoder this container reads (a generic `decode` hands it on).
    let decoder: any Decoder
    let base: any SingleValueDecodingContainer
    var codingPath: [any CodingKey] { base.codingPath }
    func decodeNil() -> Bool { base.decodeNil() }

    private func p<T>(_ t: T.Type, _ body: () throws -> T) throws -> T { try pinned(t, at: codingPath, body) }
    func decode(_ t: Bool.Type) throws -> Bool { try p(t) { try base.decode(t) } }
    func decode(_ t: String.Type) throws -> String { try p(t) { try base.decode(t) } }
    func decode(_ t: Double.Type) throws -> Double { try p(t) { try base.decode(t) } }
    func decode(_ t: Float.Type) throws -> Float { try p(t) { try base.decode(t) } }
    func decode(_ t: Int.Type) throws -> Int { try p(t) { try base.decode(t) } }
    func decode(_ t: Int8.Type) throws -> Int8 { try p(t) { try base.decode(t) } }
    func decode(_ t: Int16.Type) throws -> Int16 { try p(t) { try base.decode(t) } }
    func decode(_ t: Int32.Type) throws -> Int32 { try p(t) { try base.decode(t) } }
    func decode(_ t: Int64.Type) throws -> Int64 { try p(t) { try base.decode(t) } }
    func decode(_ t: UInt.Type) throws -> UInt { try p(t) { try base.decode(t) } }
    func decode(_ t: UInt8.Type) throws -> UInt8 { try p(t) { try base.decode(t) } }
    func decode(_ t: UInt16.Type) throws -> UInt16 { try p(t) { try base.decode(t) } }
    func decode(_ t: UInt32.Type) throws -> UInt32 { try p(t) { try base.decode(t) } }
    func decode(_ t: UInt64.Type) throws -> UInt64 { try p(t) { try base.decode(t) } }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: PathTrackingDecoder(base: decoder))
    }
}
