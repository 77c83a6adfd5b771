/// A snapshot of a chip's 256 register addresses: nil where the value is
/// unknown (unreadable `XX`, or not part of the dump).
public struct RegisterImage: Sendable, Equatable {
    public var values: [UInt8?]

    /// `values` must have 256 entries.
    public init(_ values: [UInt8?]) {
        precondition(values.count == 256, "a register image covers 0x00...0xff")
        self.values = values
    }

    /// An image with `bytes` at consecutive registers from `start`, the rest unknown.
    public init(start: UInt8, _ bytes: [UInt8]) {
        var v = [UInt8?](repeating: nil, count: 256)
        for (i, b) in bytes.enumerated() { v[Int(start) + i] = b }
        self.init(v)
    }

    public subscript(register: UInt8) -> UInt8? {
        get { values[Int(register)] }
        set { values[Int(register)] = newValue }
    }
}

/// A malformed `i2cdump` text.
public struct RegisterDumpError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based line number.
    public var line: Int
    public var message: String
    public init(line: Int, message: String) { self.line = line; self.message = message }
    public var description: String { "line \(line): \(message)" }
}

/// Parser for the default output of i2c-tools' `i2cdump -y BUS ADDR` (byte
/// mode):
///
/// ```
///      0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f    0123456789abcdef
/// 00: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00    ................
/// ```
///
/// Each row is `RR:` then 16 cells, three columns apiece: two hex digits, `XX`
/// for a register that could not be read, or blanks for one outside an `-r`
/// range. The ASCII column after the cells is ignored. Lines before the header
/// (e.g. "No size specified (using byte-data access)") are skipped; after it,
/// only rows and blank lines are allowed. Pure function: no I/O.
public enum RegisterDump {
    public static func parse(_ text: String) throws(RegisterDumpError) -> [UInt8?] {
        var values = [UInt8?](repeating: nil, count: 256)
        var seenRows = Set<Int>()
        var sawHeader = false
        var lineNumber = 0
        for lineSub in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = Array(lineSub.utf8)
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            if line.allSatisfy({ $0 == 32 || $0 == 9 }) { continue }
            if !sawHeader {
                if isHeader(line) { sawHeader = true }
                continue
            }
            guard line.count >= 3, let hi = hexDigit(line[0]), let lo = hexDigit(line[1]), line[2] == UInt8(ascii: ":") else {
                throw RegisterDumpError(line: lineNumber, message: "expected a row such as '00: 58 00 ...', got '\(String(decoding: line.prefix(40), as: UTF8.self))'")
            }
            let base = hi << 4 | lo
            guard lo == 0 else {
                throw RegisterDumpError(line: lineNumber, message: "row address \(String(decoding: line[0..<2], as: UTF8.self)) is not a multiple of 0x10")
            }
            guard seenRows.insert(base).inserted else {
                throw RegisterDumpError(line: lineNumber, message: "row \(String(decoding: line[0..<2], as: UTF8.self)) appears twice")
            }
            for cell in 0..<16 {
                let col = 4 + 3 * cell
                let a: UInt8 = col < line.count ? line[col] : 32
                let b: UInt8 = col + 1 < line.count ? line[col + 1] : 32
                let sepOK = col - 1 < line.count ? line[col - 1] == 32 : true
                guard sepOK else {
                    throw RegisterDumpError(line: lineNumber, message: "column \(col): cells must be separated by one space")
                }
                if a == 32 && b == 32 { continue }                      // outside an -r range
                if a == UInt8(ascii: "X") && b == UInt8(ascii: "X") { continue } // unreadable
                guard let h = hexDigit(a), let l = hexDigit(b) else {
                    throw RegisterDumpError(line: lineNumber, message: "column \(col + 1): '\(String(decoding: [a, b], as: UTF8.self))' is neither two hex digits nor XX (register \(hex2(base + cell)))")
                }
                values[base + cell] = UInt8(h << 4 | l)
            }
        }
        guard sawHeader else {
            throw RegisterDumpError(line: 1, message: "no i2cdump header line ('     0  1  2  3 ...  f    0123456789abcdef') found in \(lineNumber) line(s): is this the output of `i2cdump -y BUS ADDR`?")
        }
        guard !seenRows.isEmpty else {
            throw RegisterDumpError(line: lineNumber, message: "the dump has a header but no rows")
        }
        return values
    }

    /// Parses into a ``RegisterImage``.
    public static func image(_ text: String) throws(RegisterDumpError) -> RegisterImage {
        RegisterImage(try parse(text))
    }

    static func isHeader(_ line: [UInt8]) -> Bool {
        let words = line.split(separator: 32).map { String(decoding: $0, as: UTF8.self) }
        return words.count >= 16 && Array(words.prefix(16)) == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
    }

    static func hexDigit(_ c: UInt8) -> Int? {
        switch c {
        case 48...57: return Int(c - 48)
        case 97...102: return Int(c - 87)
        case 65...70: return Int(c - 55)
        default: return nil
        }
    }

    static func hex2(_ v: Int) -> String {
        let d = Array("0123456789abcdef")
        return "0x" + String(d[(v >> 4) & 0xF]) + String(d[v & 0xF])
    }
}
