/// A parsed JSON value: a small, strict RFC 8259 parser for request lines.
///
/// Requests are tiny flat objects, so EdgeProtocol carries its own parser
/// instead of depending on Foundation's `JSONDecoder`: it stays pure, and the
/// agent links no JSON machinery it does not need. Nesting depth is limited
/// (``maxDepth``) so a hostile line cannot exhaust the stack.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number and its literal text (kept so an `id` echoes verbatim).
    case number(Double, literal: String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Deepest nesting accepted.
    public static let maxDepth = 16

    /// Why a line is not JSON, with the byte offset.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses exactly one JSON value (surrounding whitespace allowed).
    public static func parse<C: Collection>(_ bytes: C) throws(ParseError) -> JSONValue
    where C.Element == UInt8 {
        let array = Array(bytes)
        var p = Parser(bytes: array)
        p.skipWhitespace()
        let v = try p.value(depth: 0)
        p.skipWhitespace()
        if p.i != array.count { throw p.fail("trailing characters") }
        return v
    }

    struct Parser {
        let bytes: [UInt8]
        var i = 0

        func fail(_ reason: String) -> ParseError { ParseError(offset: i, reason: reason) }

        mutating func skipWhitespace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D {
                i += 1
            }
        }

        mutating func literal(_ word: StaticString, _ v: JSONValue) throws(ParseError) -> JSONValue {
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count else { throw fail("unexpected end") }
            let ok = word.withUTF8Buffer { w in (0..<n).allSatisfy { bytes[i + $0] == w[$0] } }
            guard ok else { throw fail("invalid literal") }
            i += n
            return v
        }

        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard depth < JSONValue.maxDepth else { throw fail("nesting too deep") }
            guard i < bytes.count else { throw fail("unexpected end") }
            switch bytes[i] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("unexpected character")
            }
        }

        mutating func object(depth: Int) throws(ParseError) -> JSONValue {
            i += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let k = try string()
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipWhitespace()
                members[k] = try value(depth: depth + 1)
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> JSONValue {
            i += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw fail("bad hex digit")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }

        mutating func string() throws(ParseError) -> String {
            i += 1 // opening quote
            var out: [UInt8] = []
            while true {
                guard i < bytes.count else { throw fail("unterminated string") }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; break }
                if c < 0x20 { throw fail("control character in string") }
                if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
                i += 1
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]; i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard i + 2 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate") }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw fail("unpaired surrogate")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("invalid scalar") }
                    out.append(contentsOf: String(Character(u)).utf8)
                default: throw fail("bad escape")
                }
            }
            guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
            return s
        }

        mutating func digits() -> Int {
            let start = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            return i - start
        }

        mutating func number() throws(ParseError) -> JSONValue {
            let start = i
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count else { throw fail("bad number") }
            if bytes[i] == UInt8(ascii: "0") {
                i += 1
            } else if digits() == 0 {
                throw fail("bad number")
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digits() > 0 else { throw fail("bad fraction") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { throw fail("bad exponent") }
            }
            let literal = String(decoding: bytes[start..<i], as: UTF8.self)
            guard let d = Double(literal) else { throw fail("bad number") }
            return .number(d, literal: literal)
        }
    }

    /// Member of an object, nil otherwise.
    public subscript(key: String) -> JSONValue? {
        if case .object(let m) = self { return m[key] }
        return nil
    }
}
