/// A coding key for any string, to list the keys an object really has.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
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
func closest(_ word: String, in candidates: [String]) -> String? {
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
