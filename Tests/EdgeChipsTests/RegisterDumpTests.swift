import Testing
@testable import EdgeChips

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
