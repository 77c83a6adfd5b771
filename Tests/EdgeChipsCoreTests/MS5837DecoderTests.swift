import Testing
@testable import EdgeChipsCore

@Suite struct MS5837DecoderTests {
    @Test func parsesAndDecodesTheDatasheetExample() throws {
        let w = MS5837Calibration.datasheetExample.words
        let text = "# PROM\n" + w.map { "0x" + String($0, radix: 16) }.joined(separator: " ") + "\n4958179, 6815414 # D1 D2\n"
        let p = try MS5837Decoder.parse(text)
        let r = try MS5837Decoder.decode(words: p.words, d1: p.d1, d2: p.d2)
        #expect(r.steps.p == 39998 && r.steps.temp == 1981)
        #expect(r.variant == .ms5837_30ba)
    }

    @Test func badInputNamesTheLine() {
        #expect(throws: MS5837Decoder.ParseError(line: 2, message: "'zz' is not a whole number (decimal or 0x-hex)")) {
            try MS5837Decoder.parse("1 2 3\nzz")
        }
        #expect(throws: MS5837Decoder.ParseError.self) { try MS5837Decoder.parse("1 2 3") }
        #expect(throws: MS5837Decoder.ParseError.self) { try MS5837Decoder.parse("1 2 3 4 5 6 70000 1 1") }
    }
}
