/// A coding key for any string, to list the keys an object really has.
package struct AnyKey: CodingKey {
    package var stringValue: String
    package var intValue: Int? { nil }
    package init(stringValue: String) { self.stringValue = stringValue }
    package init?(intValue: Int) { return nil }
}

extension Decoder {
    /// Throws a "dataCorrupted" error naming the first key of this object that
    /// is not in `allowed`, with the closest allowed spelling as a hint. JSON
    /// decoding ignores unknown keys by default, so a typo (`adress`) would
    /// silently fall back to a default; configuration files must not.
    public func rejectUnknownKeys(allowed: [String]) throws {
        let c = try container(keyedBy: AnyKey.self)
        for key in c.allKeys where !allowed.contains(key.stringValue) {
            let hint = closest(key.stringValue, in: allowed).map { " (did you mean '\($0)'?)" } ?? ""
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: codingPath + [key],
                debugDescription: "unknown key '\(key.stringValue)'\(hint); allowed keys: \(allowed.joined(separator: ", "))"))
        }
    }
}

/// The allowed word nearest to `word` by edit distance, if reasonably near.
public func closest(_ word: String, in candidates: [String]) -> String? {
    func distance(_ a: [Character], _ b: [Character]) -> Int {
        var prev = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var cur = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return a.isEmpty ? b.count : prev[b.count]
    }
    let w = Array(word.lowercased())
    let scored = candidates.map { ($0, distance(w, Array($0.lowercased()))) }
    guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, w.count / 3) else { return nil }
    return best.0
}

/// A number as a configuration file spells it (JSON5: `NaN`, `Infinity`),
/// without a trailing `.0` for whole values.
package func json5Number(_ v: Double) -> String {
    if v.isNaN { return "NaN" }
    if v.isInfinite { return v > 0 ? "Infinity" : "-Infinity" }
    if v == v.rounded(), abs(v) < 1e15 { return String(Int(v)) }
    return String(v)
}

/// Every numeric key of a configuration file or board profile is read
/// through these, so each has a range that is checked at load (NaN and
/// ±Infinity, which JSON5 allows, are never in range). The ranges are
/// documented in config/README.md and boards/README.md.
extension KeyedDecodingContainer {
    /// A number in `range`; `value` when the key is absent (or null).
    /// `unit` is said after the range in the message ("s", "Pa").
    public func decodeNumber(_ key: Key, default value: Double, in range: ClosedRange<Double>,
                      unit: String) throws -> Double {
        try decodeNumberIfPresent(key, in: range, unit: unit, default: json5Number(value)) ?? value
    }

    /// A number in `range`, or nil when the key is absent (or null).
    public func decodeNumberIfPresent(_ key: Key, in range: ClosedRange<Double>, unit: String,
                               default shown: String? = nil) throws -> Double? {
        guard let v = try decodeIfPresent(Double.self, forKey: key) else { return nil }
        guard v.isFinite, range.contains(v) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription:
                "\(key.stringValue) must be a number from \(json5Number(range.lowerBound)) to \(json5Number(range.upperBound))"
                + (unit.isEmpty ? "" : " (\(unit))") + ", got \(json5Number(v))"
                + (shown.map { "; leave it out for the default, \($0)" } ?? ""))
        }
        return v
    }

    /// A whole number in `range`; `value` when the key is absent (or null).
    public func decodeWholeNumber(_ key: Key, default value: Int, in range: ClosedRange<Int>,
                           unit: String) throws -> Int {
        try decodeWholeNumberIfPresent(key, in: range, unit: unit, default: String(value)) ?? value
    }

    /// A whole number in `range` that must be present.
    public func decodeRequiredWholeNumber(_ key: Key, in range: ClosedRange<Int>, unit: String) throws -> Int {
        guard let v = try decodeWholeNumberIfPresent(key, in: range, unit: unit) else {
            return try decode(Int.self, forKey: key)    // throws keyNotFound or valueNotFound
        }
        return v
    }

    /// A whole number in `range`, or nil when the key is absent (or null).
    public func decodeWholeNumberIfPresent(_ key: Key, in range: ClosedRange<Int>, unit: String,
                                    default shown: String? = nil) throws -> Int? {
        let decoded: Double?
        do {
            decoded = try decodeIfPresent(Double.self, forKey: key)
        } catch DecodingError.typeMismatch(_, let context) {
            throw DecodingError.typeMismatch(Int.self, context)    // "expected a whole number"
        }
        guard let v = decoded else { return nil }
        // Whole numbers this small are exact in a Double.
        guard v.isFinite, v == v.rounded(), v >= Double(range.lowerBound), v <= Double(range.upperBound) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription:
                "\(key.stringValue) must be a whole number from \(range.lowerBound) to \(range.upperBound)"
                + (unit.isEmpty ? "" : " (\(unit))") + ", got \(json5Number(v))"
                + (shown.map { "; leave it out for the default, \($0)" } ?? ""))
        }
        return Int(v)
    }
}

extension KeyedDecodingContainer {
    /// A file or directory path (or a name): not empty, no NUL byte (the
    /// system calls would see a different, shorter path). Nil when absent.
    public func decodePathIfPresent(_ key: Key, what: String) throws -> String? {
        guard let p = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard !p.isEmpty, !p.utf8.contains(0) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription:
                "\(key.stringValue) must be \(what), got \(p.isEmpty ? "an empty string" : "a string with a NUL character"); leave the key out for the default")
        }
        return p
    }
}
