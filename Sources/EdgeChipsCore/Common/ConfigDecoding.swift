/// Helpers for configuration structs: missing keys take their default, and a
/// present key must hold one of the allowed values, or decoding fails with a
/// message that lists them.
extension KeyedDecodingContainer {
    func decodeAllowed<V: Decodable & Equatable>(_ key: Key, allowed: [V], default value: V,
                                                 unit: String) throws -> V {
        guard let v = try decodeIfPresent(V.self, forKey: key) else { return value }
        guard allowed.contains(v) else {
            let list = allowed.map { "\($0)" }.joined(separator: ", ")
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "\(key.stringValue) must be one of \(list)\(unit.isEmpty ? "" : " (\(unit))"); got \(v)")
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
