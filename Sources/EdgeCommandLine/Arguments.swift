// The one command-line reader of the package's tools (edge-agent,
// edge-mqtt, dive-logger): options with values (`--name value`,
// `--name=value`), flags, positionals, and bad use as one typed error.
// Pure Swift: no Foundation, no other module of the package.

/// Bad command-line use. Each tool prints it with the pointer to its
/// `--help` and exits 2.
public struct UsageError: Error, CustomStringConvertible, Equatable, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Reads a command's arguments by taking out what it knows; what is left
/// at ``finish(known:)`` is an unknown option or an unexpected argument.
public struct Arguments: Sendable {
    public private(set) var remaining: [String]
    /// The command, for messages.
    public let command: String

    public init(_ args: [String], command: String) { remaining = args; self.command = command }

    /// Removes a boolean flag; true if present.
    public mutating func flag(_ name: String) -> Bool {
        if let i = remaining.firstIndex(of: name) { remaining.remove(at: i); return true }
        return false
    }

    /// Removes `--name value` or `--name=value`. A value must follow
    /// (`--name --other` is "needs a value").
    public mutating func option(_ name: String) throws(UsageError) -> String? {
        if let i = remaining.firstIndex(of: name) {
            guard i + 1 < remaining.count, !remaining[i + 1].hasPrefix("--") else {
                throw UsageError("\(name) needs a value")
            }
            let v = remaining[i + 1]
            remaining.removeSubrange(i...(i + 1))
            return v
        }
        if let i = remaining.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            let v = String(remaining[i].dropFirst(name.count + 1))
            remaining.remove(at: i)
            return v
        }
        return nil
    }

    /// Removes a numeric option, checking its range.
    public mutating func double(_ name: String, in range: ClosedRange<Double>? = nil) throws(UsageError) -> Double? {
        guard let s = try option(name) else { return nil }
        guard let v = Double(s), v.isFinite else { throw UsageError("\(name) expects a number, got '\(s)'") }
        if let r = range, !r.contains(v) { throw UsageError("\(name) must be between \(r.lowerBound) and \(r.upperBound), got \(s)") }
        return v
    }

    /// Removes a whole-number option, checking its range.
    public mutating func int(_ name: String, in range: ClosedRange<Int>? = nil) throws(UsageError) -> Int? {
        guard let s = try option(name) else { return nil }
        guard let v = Int(s) else { throw UsageError("\(name) expects a whole number, got '\(s)'") }
        if let r = range, !r.contains(v) { throw UsageError("\(name) must be between \(r.lowerBound) and \(r.upperBound), got \(s)") }
        return v
    }

    /// Removes and returns the next positional argument (`-` is one:
    /// standard input or output).
    public mutating func positional(_ what: String) throws(UsageError) -> String {
        guard let i = remaining.firstIndex(where: { !$0.hasPrefix("--") || $0 == "-" }) else {
            throw UsageError("missing \(what)")
        }
        return remaining.remove(at: i)
    }

    /// Fails on anything not taken: "unknown option '--x'" (with "did you
    /// mean '--y'?" when one of `known` is within two edits) or
    /// "unexpected argument 'x'".
    public func finish(known: [String] = []) throws(UsageError) {
        guard let extra = remaining.first else { return }
        guard extra.hasPrefix("-") else { throw UsageError("unexpected argument '\(extra)'") }
        let name = extra.split(separator: "=", maxSplits: 1).first.map(String.init) ?? extra
        throw UsageError("unknown option '\(extra)'" + Self.suggestion(for: name, among: known))
    }

    /// " (did you mean 'x'?)" for the nearest of `candidates` within two
    /// edits of `word`, else "".
    public static func suggestion(for word: String, among candidates: [String]) -> String {
        candidates.sorted().first { editDistance($0, word) <= 2 }.map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Levenshtein distance (insertions, deletions, substitutions).
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var prev = Array(0...y.count)
        for i in 1...x.count {
            var cur = [i] + Array(repeating: 0, count: y.count)
            for j in 1...y.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[y.count]
    }
}
