#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `<node>` level of the bridge's topics: also the Home Assistant
/// device's identifier and part of every entity's `unique_id`, so it is
/// restricted to Home Assistant's id characters, `[a-zA-Z0-9_-]`
/// (home-assistant.io, MQTT, "Discovery topic").
public enum NodeName {
    public static let maxLength = 64

    /// Why `name` cannot be a node name, nil when it can.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "it is empty" }
        if name.utf8.count > maxLength { return "it is longer than \(maxLength) characters" }
        if let bad = name.unicodeScalars.first(where: { !isAllowed($0) }) {
            return "'\(bad)' is not allowed"
        }
        return nil
    }

    static func isAllowed(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "_" || c == "-"
    }

    /// A node name made from a host name: characters outside
    /// `[a-zA-Z0-9_-]` (the dots of `pi.local`) become `-`, runs of `-` are
    /// kept to one, and the result is cut to ``maxLength``. "edge-node" for
    /// a host name with nothing usable.
    public static func fromHostName(_ host: String) -> String {
        var out = ""
        for c in host.unicodeScalars {
            let ch: Character = isAllowed(c) ? Character(c) : "-"
            if ch == "-" && out.hasSuffix("-") { continue }
            out.append(ch)
        }
        while out.hasPrefix("-") { out.removeFirst() }
        while out.hasSuffix("-") { out.removeLast() }
        if out.utf8.count > maxLength { out = String(out.prefix(maxLength)) }
        return out.isEmpty ? "edge-node" : out
    }

    /// This machine's host name (gethostname).
    public static func systemHostName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        guard gethostname(&buf, buf.count - 1) == 0 else { return "" }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Rules for the topic names the bridge builds (MQTT 3.1.1 §4.7 and 5.0 §4.7:
/// UTF-8, no NUL, the wildcards `+` and `#` only in filters).
public enum TopicName {
    /// Why `prefix` cannot begin the bridge's topics, nil when it can.
    public static func problem(withPrefix prefix: String) -> String? {
        if prefix.isEmpty { return "it is empty" }
        if prefix.utf8.contains(0) { return "it contains a NUL character" }
        if prefix.contains("+") || prefix.contains("#") { return "'+' and '#' are wildcards, not allowed in a topic name" }
        if prefix.hasPrefix("/") || prefix.hasSuffix("/") { return "it must not begin or end with '/'" }
        if prefix.contains("//") { return "it has an empty level ('//')" }
        if prefix.hasPrefix("$") { return "topics beginning with '$' are the broker's own" }
        if prefix.utf8.count > 1024 { return "it is longer than 1024 bytes" }
        return nil
    }
}
