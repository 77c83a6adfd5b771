/// An append-only JSON writer into a reusable byte buffer.
///
/// Allocation-light: keys are `StaticString`s, integers are formatted
/// digit by digit, and the buffer keeps its capacity across `reset()`.
/// Doubles use Swift's shortest round-trip formatting (the digits of
/// `description`), written straight into the buffer: formatting allocates
/// nothing (``description`` would, for any representation over 15 bytes -
/// most sensor values).
/// Commas are inserted automatically between members and elements.
///
/// A non-finite double is a programmer error upstream (fusion must never
/// produce one); it is written as `null` and counted in ``nonFiniteCount``
/// rather than producing invalid JSON.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]
    /// Non-finite doubles written as `null` since creation.
    public private(set) var nonFiniteCount = 0
    var needsComma = false

    public init(capacity: Int = 1024) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the buffer, keeping its capacity.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// `{`
    public mutating func beginObject() {
        separator(); bytes.append(UInt8(ascii: "{")); needsComma = false
    }
    /// `}`
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}")); needsComma = true
    }
    /// `[`
    public mutating func beginArray() {
        separator(); bytes.append(UInt8(ascii: "[")); needsComma = false
    }
    /// `]`
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]")); needsComma = true
    }
    /// Ends a message: a newline (the protocol is line-delimited).
    public mutating func endLine() {
        bytes.append(UInt8(ascii: "\n")); needsComma = false
    }

    /// `"key":` — keys are compile-time ASCII names that need no escaping.
    public mutating func key(_ k: StaticString) {
        separator()
        bytes.append(UInt8(ascii: "\""))
        raw(k)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func null() {
        separator(); raw("null"); needsComma = true
    }

    public mutating func bool(_ v: Bool) {
        separator(); if v { raw("true") } else { raw("false") }; needsComma = true
    }

    /// A compile-time string value that needs no escaping (enum wire names).
    public mutating func name(_ s: StaticString) {
        separator()
        bytes.append(UInt8(ascii: "\"")); raw(s); bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    public mutating func int<T: BinaryInteger>(_ v: T) {
        separator()
        if v == 0 { bytes.append(UInt8(ascii: "0")); needsComma = true; return }
        var magnitude = v.magnitude
        if v < 0 { bytes.append(UInt8(ascii: "-")) }
        // At most 20 digits (UInt64); write reversed, then flip in place.
        let start = bytes.count
        while magnitude > 0 {
            let (q, r) = magnitude.quotientAndRemainder(dividingBy: 10)
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: r))
            magnitude = q
        }
        // Flip in place by index (reversing the slice would copy it).
        var i = start, j = bytes.count - 1
        while i < j { bytes.swapAt(i, j); i += 1; j -= 1 }
        needsComma = true
    }

    /// A finite double with the shortest digits that round-trip; `null` (and
    /// a count) for NaN or infinity.
    public mutating func double(_ v: Double) {
        guard v.isFinite else {
            nonFiniteCount += 1
            null()
            return
        }
        separator()
        // Double.write(to:) formats into a stack buffer and hands the ASCII
        // to the stream's _writeASCII: no String is made.
        var sink = ByteSink()
        swap(&sink.bytes, &bytes)
        v.write(to: &sink)
        swap(&sink.bytes, &bytes)
        needsComma = true
    }

    /// An optional double: `null` when nil.
    public mutating func double(_ v: Double?) {
        if let v { double(v) } else { null() }
    }

    /// A JSON string with `"`, `\` and control characters escaped.
    public mutating func string(_ s: String) {
        separator()
        bytes.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(b)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(b)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0..<0x20:
                raw("\\u00")
                let hex: StaticString = "0123456789abcdef"
                hex.withUTF8Buffer { h in
                    bytes.append(h[Int(b >> 4)]); bytes.append(h[Int(b & 0xF)])
                }
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Pre-encoded JSON (a value the caller guarantees is valid).
    public mutating func rawValue(_ json: String) {
        separator()
        var j = json
        j.withUTF8 { bytes.append(contentsOf: $0) }
        needsComma = true
    }

    /// `{"x":…,"y":…,"z":…}`
    public mutating func vector(_ v: Vector3) {
        beginObject()
        key("x"); double(v.x); key("y"); double(v.y); key("z"); double(v.z)
        endObject()
    }
}

/// Appends what a `TextOutputStreamable` writes to a byte buffer; ASCII
/// from the standard library's number formatting arrives without a String.
struct ByteSink: TextOutputStream {
    var bytes: [UInt8] = []
    mutating func write(_ string: String) { bytes.append(contentsOf: string.utf8) }
    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: buffer) }
}
