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
/// mode, as `i2cdump.c` prints it):
///
/// ```
///      0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f    0123456789abcdef
/// 00: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00    ................
/// ```
///
/// Each row is `RR: ` then 16 cells of three columns each (two hex digits,
/// `XX` for a register that could not be read, or blanks for one outside an
/// `-r` range; each followed by a space), three more spaces and the ASCII
/// column, which is ignored. Lines before the header (e.g. "No size
/// specified (using byte-data access)") are skipped; after it, only rows and
/// blank lines are allowed. Line ends may be `\n` or `\r\n`; trailing
/// whitespace, and indentation of the whole paste, are fine.
///
/// A slip when copying a dump shifts every later byte of its row, so the
/// layout is checked strictly and damage is an error naming the line: a row
/// with 15 or 17 cells, a cell out of its column, a row address that is not a
/// multiple of 0x10, repeated, out of order or skipping rows, blank cells
/// anywhere but at the start of the first row or the end of the last (the
/// only places `i2cdump -r FIRST-LAST` leaves them). Pure function: no I/O.
public enum RegisterDump {
    static let cellsPerRow = 16
    /// Column (0-based, from the row's first character) where the ASCII
    /// column starts: `RR: ` + 16 × `HH ` + 3 spaces.
    static let asciiColumn = 4 + 3 * 16 + 3

    public static func parse(_ text: String) throws(RegisterDumpError) -> [UInt8?] {
        var values = [UInt8?](repeating: nil, count: 256)
        var sawHeader = false
        var lineNumber = 0
        var rowCount = 0
        var previous: (row: Row, line: Int)?
        // Split on bytes: "\r\n" is one Character in Swift, so a String split
        // on "\n" would not split a CRLF file at all.
        for lineBytes in Array(text.utf8).split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = Array(lineBytes)
            while let last = line.last, last == 32 || last == 9 || last == 13 { line.removeLast() }
            if line.isEmpty { continue }
            if !sawHeader {
                if isHeader(line) { sawHeader = true }
                continue
            }
            line.removeFirst(line.prefix { $0 == 32 || $0 == 9 }.count)   // an indented paste
            let row = try parseRow(line, lineNumber: lineNumber)
            if let (p, pLine) = previous {
                try check(row, at: lineNumber, after: p, at: pLine)
            }
            for (i, v) in row.values.enumerated() { values[row.base + i] = v }
            previous = (row, lineNumber)
            rowCount += 1
        }
        guard sawHeader else {
            throw RegisterDumpError(line: 1, message: "no i2cdump header line ('     0  1  2  3 ...  f    0123456789abcdef') found in \(lineNumber) line(s): is this the output of `i2cdump -y BUS ADDR`?")
        }
        guard rowCount > 0 else {
            throw RegisterDumpError(line: lineNumber, message: "the dump has a header but no rows")
        }
        return values
    }

    /// Parses into a ``RegisterImage``.
    public static func image(_ text: String) throws(RegisterDumpError) -> RegisterImage {
        RegisterImage(try parse(text))
    }

    /// One row: its base address, 16 values (nil: unreadable or blank), the
    /// blank cells it starts with and the cells after them.
    struct Row {
        var base: Int
        var values: [UInt8?]
        var leadingBlanks: Int
        var cells: Int
        var endsEarly: Bool { leadingBlanks + cells < cellsPerRow }
    }

    /// Rows follow each other 0x10 apart; only the first row may start late
    /// and only the last may end early.
    static func check(_ row: Row, at line: Int, after p: Row, at pLine: Int) throws(RegisterDumpError) {
        let (b, pb) = (row.base, p.base)
        if row.base == p.base {
            throw RegisterDumpError(line: line, message: "row \(hex2(b)) appears twice (also on line \(pLine)): expected row \(hex2(pb + 16)); rows run 00, 10, … f0 in order, one each")
        }
        if row.base < p.base {
            throw RegisterDumpError(line: line, message: "row \(hex2(b)) is out of order: it follows row \(hex2(pb)) (line \(pLine)), expected row \(hex2(pb + 16)); rows run 00, 10, … f0 in order")
        }
        if row.base != p.base + 16 {
            let missing = (b - pb) / 16 - 1
            throw RegisterDumpError(line: line, message: "expected row \(hex2(pb + 16)) after row \(hex2(pb)) (line \(pLine)), found row \(hex2(b)): \(missing == 1 ? "a row is" : "\(missing) rows are") missing, so the dump was cut when it was copied; dump again")
        }
        if p.endsEarly {
            let n = p.leadingBlanks + p.cells
            throw RegisterDumpError(line: pLine, message: "row \(hex2(pb)) has \(n) cell\(n == 1 ? "" : "s"), expected 16 (one per register \(hex2(pb))..\(hex2(pb + 15))), and row \(hex2(b)) follows: only the last row of an `i2cdump -r` range ends early, so a cell was lost when the dump was copied (every later byte of the row would be shifted); dump again, or repair the row")
        }
        if row.leadingBlanks > 0 {
            throw RegisterDumpError(line: line, message: "row \(hex2(b)) starts with \(row.leadingBlanks) blank cell\(row.leadingBlanks == 1 ? "" : "s"), expected 16 cells: only the first row of an `i2cdump -r` range starts late, so the row was damaged when the dump was copied")
        }
    }

    /// `RR: ` + cells (+ the ASCII column), in i2cdump's columns. A cell is the
    /// triple [space, digit, digit] at column 3 + 3·i.
    static func parseRow(_ line: [UInt8], lineNumber: Int) throws(RegisterDumpError) -> Row {
        func fail(_ m: String) -> RegisterDumpError { RegisterDumpError(line: lineNumber, message: m) }
        func at(_ i: Int) -> UInt8 { i < line.count ? line[i] : 32 }
        func text(_ from: Int, _ to: Int) -> String {
            let a = max(0, min(from, line.count)), b = max(a, min(to, line.count))
            return String(decoding: line[a..<b], as: UTF8.self)
        }
        guard line.count >= 3, let hi = hexDigit(line[0]), let lo = hexDigit(line[1]), line[2] == UInt8(ascii: ":") else {
            throw fail("expected a row such as '00: 58 00 ...', got '\(text(0, 40))'")
        }
        let base = hi << 4 | lo
        guard lo == 0 else {
            throw fail("row address \(text(0, 2)) is not a multiple of 0x10 (rows are 00, 10, … f0)")
        }
        func isCellChar(_ c: UInt8) -> Bool { hexDigit(c) != nil || c == UInt8(ascii: "X") }
        /// The value of the cell triple at index i: .some(value or nil for XX), or nil when it is no cell.
        func cell(_ i: Int) -> UInt8?? {
            let c = 3 + 3 * i
            guard at(c) == 32, c + 2 < line.count, at(c + 3) == 32 else { return nil }
            let a = at(c + 1), b = at(c + 2)
            if a == UInt8(ascii: "X") && b == UInt8(ascii: "X") { return .some(nil) }
            guard let h = hexDigit(a), let l = hexDigit(b) else { return nil }
            return .some(UInt8(h << 4 | l))
        }
        func blank(_ i: Int) -> Bool { let c = 3 + 3 * i; return at(c) == 32 && at(c + 1) == 32 && at(c + 2) == 32 }

        var leading = 0
        while leading < cellsPerRow, blank(leading), 3 + 3 * leading + 3 < line.count { leading += 1 }
        if cell(leading) == nil { leading = 0 }     // blanks that run to the ASCII column are trailing
        var values = [UInt8?](repeating: nil, count: cellsPerRow)
        var cells = 0
        while let v = cell(leading + cells) {
            if leading + cells < cellsPerRow { values[leading + cells] = v }
            cells += 1
        }
        let count = leading + cells
        let range = "\(hex2(base))..\(hex2(base + 15))"
        if count > cellsPerRow {
            throw fail("row \(hex2(base)) has \(count) cells, expected 16 (one per register \(range)): a cell was doubled or two rows were joined when the dump was copied; dump again, or repair the row")
        }
        // What follows the cells: nothing, or spaces and the ASCII column at its column.
        let p = 3 + 3 * count
        var k = p
        while k < line.count && line[k] == 32 { k += 1 }
        let row = Row(base: base, values: values, leadingBlanks: leading, cells: cells)
        if k >= line.count { return row }
        if k >= asciiColumn {
            guard line.count - k <= cellsPerRow else {
                throw fail("row \(hex2(base)): \(line.count - k) characters after the cells where the ASCII column has at most 16: '\(text(k, line.count))'")
            }
            return row
        }
        // Something sits where a cell or the gap before the ASCII column belongs.
        let cellIndex = (k - 4) / 3
        if count < cellsPerRow, (k - 4) % 3 == 0 {
            // more cells after it: a bad or blank cell inside the row, not the ASCII column pulled left
            var j = cellIndex + 1, after = 0
            while j < cellIndex + 4, let _ = cell(j) { after += 1; j += 1 }
            if k == p + 1 || after > 0 {
                if k > p + 1 {
                    let first = (p - 3) / 3
                    throw fail("row \(hex2(base)): blank where register \(hex2(base + first))\(cellIndex - 1 > first ? "..\(hex2(base + cellIndex - 1))" : "") belongs, with cells after it: only the first and last rows of an `i2cdump -r` range have blanks, at their ends")
                }
                if isCellChar(at(k)) && isCellChar(at(k + 1)) && at(k + 2) != 32 {
                    throw fail("column \(k + 1): '\(text(k, k + 4))…' where register \(hex2(base + cellIndex)) belongs: cells are two characters separated by one space (i2cdump's columns)")
                }
                throw fail("column \(k + 1): '\(text(k, k + 2))' is neither two hex digits nor XX (register \(hex2(base + cellIndex)))")
            }
        }
        if count == cellsPerRow {
            throw fail("row \(hex2(base)): after its 16 cells expected spaces and the ASCII column at column \(asciiColumn + 1), found '\(text(k, k + 16))' at column \(k + 1)")
        }
        if (k - 4) % 3 != 0 && k < 4 + 3 * cellsPerRow {
            throw fail("column \(k + 1): '\(text(k, k + 4))' is out of i2cdump's columns (cells are two characters separated by one space, from column 5)")
        }
        throw fail("row \(hex2(base)) has \(count) cell\(count == 1 ? "" : "s"), expected 16 (one per register \(range)): a cell was lost when the dump was copied, which shifts every later byte of the row; dump again, or repair the row")
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
