/// Helpers for configuration structs: missing keys take their default, and a
/// present key must hold one of the allowed values, or decoding fails with a
/// message that lists them.
extension KeyedDecodingContainer {
    func decodeAllowed<V: Decodable & Equatable>(_ key: Key, allowed: [V], default value: V,
                                                 unit: String) throws -> V {
        guard let v = try decodeIfPresent(V.self, forKey: key) else { return value }
        guard allowed.contains(v) else {
            // Numbers as written in a file: 3, not 3.0.
            func shown(_ x: V) -> String { (x as? Double).map(plainNumber) ?? "\(x)" }
            let list = allowed.map(shown).joined(separator: ", ")
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "\(key.stringValue) must be one of \(list)\(unit.isEmpty ? "" : " (\(unit))"); got \(shown(v))")
        }
        return v
    }

    func decodeDefault<V: Decodable>(_ key: Key, default value: V) throws -> V {
        try decodeIfPresent(V.self, forKey: key) ?? value
    }
}

/// Formats a number without a trailing `.0` for whole values (for messages).
public func plainNumber(_ v: Double) -> String {
    v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
}
