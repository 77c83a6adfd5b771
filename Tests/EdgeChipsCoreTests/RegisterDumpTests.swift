import Testing
@testable import EdgeChipsCore

@Suite struct RegisterDumpTests {
    static let header = "     0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f    0123456789abcdef"

    func row(_ base: Int, _ cells: [String]) -> String {
        let d = Array("0123456789abcdef")
        return String(d[base >> 4]) + "0: " + cells.joined(separator: " ") + "    ................"
    }

    @Test func parsesRowsAndUnreadableCells() throws {
        var cells = (0..<16).map { _ in "00" }
        cells[0] = "58"; cells[15] = "XX"; cells[3] = "aB"
        let text = "No size specified (using byte-data access)\n" + Self.header + "\n" + row(0xD0, cells) + "\n"
        let v = try RegisterDump.parse(text)
        #expect(v.count == 256)
        #expect(v[0xD0] == 0x58)
        #expect(v[0xD3] == 0xAB)
        #expect(v[0xDF] == nil)
        #expect(v[0x00] == nil)   // row not in the dump
    }

    @Test func rangeDumpBlanksAreUnknown() throws {
        let line = "30:          " + (0..<13).map { _ in "11" }.joined(separator: " ") + "       ;;;"
        let v = try RegisterDump.parse(Self.header + "\n" + line)
        #expect(v[0x30] == nil)
        #expect(v[0x32] == nil)
        #expect(v[0x33] == 0x11)
        #expect(v[0x3F] == 0x11)
    }

    @Test func errorsCarryTheLineNumber() {
        let bad = Self.header + "\n" + row(0, (0..<16).map { _ in "00" }) + "\n" + "10: 00 zz 00"
        #expect(throws: RegisterDumpError.self) { try RegisterDump.parse(bad) }
        do { _ = try RegisterDump.parse(bad) } catch {
            #expect(error.line == 3)
            #expect(error.description.contains("line 3"))
            #expect(error.description.contains("0x11"))
        }
        do { _ = try RegisterDump.parse("hello\n") } catch { #expect(error.message.contains("header")) }
        let dup = Self.header + "\n" + row(0, (0..<16).map { _ in "00" }) + "\n" + row(0, (0..<16).map { _ in "00" })
        do { _ = try RegisterDump.parse(dup) } catch { #expect(error.line == 3) }
        let garbage = Self.header + "\nthis is not a row"
        do { _ = try RegisterDump.parse(garbage) } catch { #expect(error.line == 2) }
    }
}

/// Damaged pastes: i2cdump's layout (`i2cdump.c`: `RR: ` + 16 × `HH ` + 3
/// spaces + 16 ASCII characters) is what the parser checks, so a row that a
/// paste slip made short, long, misaddressed or out of order is an error
/// naming its line rather than bytes shifted into the wrong registers.
@Suite struct RegisterDumpDamageTests {
    static let header = "     0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f    0123456789abcdef"

    /// A full dump as i2cdump prints it: register r holds `value(r)`.
    static func dump(_ value: (Int) -> UInt8 = { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }) -> [String] {
        var lines = [header]
        for base in stride(from: 0, to: 256, by: 16) {
            var cells = "", ascii = ""
            for i in 0..<16 {
                let v = value(base + i)
                cells += hex2(v) + " "
                ascii += v == 0 || v == 0xFF ? "." : (v < 32 || v >= 127 ? "?" : String(UnicodeScalar(v)))
            }
            lines.append(hex2(UInt8(base)) + ": " + cells + "   " + ascii)
        }
        return lines
    }

    static func hex2(_ v: UInt8) -> String {
        let d = Array("0123456789abcdef")
        return String(d[Int(v >> 4)]) + String(d[Int(v & 0xF)])
    }

    func error(_ lines: [String]) -> RegisterDumpError? {
        do { _ = try RegisterDump.parse(lines.joined(separator: "\n") + "\n"); return nil } catch { return error }
    }

    @Test func anIntactDumpReadsEveryRegister() throws {
        let v = try RegisterDump.parse(Self.dump().joined(separator: "\n") + "\n")
        for r in 0..<256 { #expect(v[r] == UInt8(truncatingIfNeeded: r &* 7 &+ 1)) }
    }

    /// Row `base` as i2cdump prints it, from explicit cells (and ASCII column).
    static func row(_ base: Int, _ cells: [String], ascii: Bool = true) -> String {
        hex2(UInt8(base)) + ": " + cells.map { $0 + " " }.joined() + (ascii ? "   " + String(repeating: ".", count: 16) : "")
    }

    static func cells(_ base: Int) -> [String] { (base..<(base + 16)).map { hex2(UInt8(truncatingIfNeeded: $0 &* 7 &+ 1)) } }

    @Test func aRowWithFifteenCellsIsAnErrorNamingTheLine() throws {
        // register 0x43's cell lost from row 40 (line 6), as a paste slip does
        var short = Self.cells(0x40)
        short.remove(at: 3)
        var lines = Self.dump()
        lines[5] = Self.row(0x40, short)
        let e = try #require(error(lines))
        #expect(e.line == 6)
        #expect(e.message.contains("15 cells") && e.message.contains("expected 16"), "\(e)")
        // the same with the ASCII column trimmed off every row: still line 6
        lines = Self.dump().enumerated().map { $0.offset == 0 ? $0.element : String($0.element.prefix(3 + 16 * 3)) }
        lines[5] = Self.row(0x40, short, ascii: false)
        let e2 = try #require(error(lines))
        #expect(e2.line == 6 && e2.message.contains("15 cells"), "\(e2)")
    }

    @Test func aRowWithSeventeenCellsIsAnError() throws {
        var lines = Self.dump()
        lines[3] = Self.row(0x20, ["5a"] + Self.cells(0x20))
        let e = try #require(error(lines))
        #expect(e.line == 4 && e.message.contains("17 cells"), "\(e)")
    }

    @Test func misaddressedRepeatedMissingAndOutOfOrderRowsAreErrors() throws {
        var lines = Self.dump()
        lines[4] = "38" + lines[4].dropFirst(2)            // row 30 labelled 38
        let misaddressed = try #require(error(lines))
        #expect(misaddressed.line == 5 && misaddressed.message.contains("not a multiple of 0x10"))

        lines = Self.dump()
        lines.remove(at: 6)                                   // row 50 lost
        let missing = try #require(error(lines))
        #expect(missing.line == 7 && missing.message.contains("expected row 0x50"), "\(missing)")

        lines = Self.dump()
        lines.swapAt(3, 4)                                    // rows 20 and 30 swapped
        let swapped = try #require(error(lines))
        #expect(swapped.line == 4 && swapped.message.contains("expected row 0x20"), "\(swapped)")

        lines = Self.dump()
        lines.insert(lines[2], at: 3)                         // row 10 twice
        let twice = try #require(error(lines))
        #expect(twice.line == 4 && twice.message.contains("appears twice"), "\(twice)")
    }

    @Test func crlfLineEndsAndTrailingWhitespaceAreAccepted() throws {
        let lf = try RegisterDump.parse(Self.dump().joined(separator: "\n") + "\n")
        let crlf = try RegisterDump.parse(Self.dump().joined(separator: "\r\n") + "\r\n")
        #expect(crlf == lf)
        let padded = try RegisterDump.parse(Self.dump().map { $0 + "  \t" }.joined(separator: "\r\n"))
        #expect(padded == lf)
        // a paste indented as a Markdown code block
        let indented = try RegisterDump.parse(Self.dump().map { "    " + $0 }.joined(separator: "\n"))
        #expect(indented == lf)
    }

    @Test func rangeDumpsMayStartAndEndPartWay() throws {
        // i2cdump -r 0x3b-0x48: blanks before 0x3b and after 0x48, in the ASCII column too
        var row3 = "30: " + String(repeating: "   ", count: 11), ascii3 = String(repeating: " ", count: 11)
        for r in 0x3B...0x3F { row3 += Self.hex2(UInt8(r)) + " "; ascii3 += "." }
        var row4 = "40: ", ascii4 = ""
        for r in 0x40...0x48 { row4 += Self.hex2(UInt8(r)) + " "; ascii4 += "." }
        row4 += String(repeating: "   ", count: 7); ascii4 += String(repeating: " ", count: 7)
        let v = try RegisterDump.parse([Self.header, row3 + "   " + ascii3, row4 + "   " + ascii4].joined(separator: "\n"))
        #expect(v[0x3A] == nil && v[0x3B] == 0x3B && v[0x48] == 0x48 && v[0x49] == nil)
        // but blanks inside the range are damage
        let holed = [Self.header, row3 + "   " + ascii3, "40: 40 41    43 44 45 46 47 48"]
        let e = try #require(error(holed))
        #expect(e.line == 3 && e.message.contains("0x42"), "\(e)")
        // and a row that starts late after the first is damage too
        let late = [Self.header, "30: 30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f", "40:    41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f"]
        #expect(error(late)?.line == 3)
    }
}
