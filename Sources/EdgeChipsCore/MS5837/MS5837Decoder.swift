// `edge-agent decode ms5837`: the chip has no register file to dump, so its
// "dump" is the numbers a logic analyser or a driver log shows: the 7 PROM
// words (commands 0xA0..0xAC, in order) followed by D1 and D2.

/// Reads PROM words and a D1/D2 pair from text and compensates them.
public enum MS5837Decoder {
    public struct Reading: Sendable, Equatable {
        public var variant: MS5837Variant?
        public var calibration: MS5837Calibration
        public var raw: MS5837RawSample
        public var steps: MS5837Compensation.Steps
        /// Second-order results.
        public var pressurePascals: Double { Double(steps.p2) * 10 }
        public var temperatureCelsius: Double { Double(steps.temp2) / 100 }
    }

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// Nine whole numbers, decimal or 0x-hex, separated by spaces, commas or
    /// newlines; `#` starts a comment: PROM words 0..6, then D1, then D2.
    public static func parse(_ text: String) throws(ParseError) -> (words: [UInt16], d1: UInt32, d2: UInt32) {
        var numbers: [(value: UInt64, line: Int)] = []
        for (i, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            for token in line.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" || $0 == "\r" }) {
                let t = token.lowercased()
                let v = t.hasPrefix("0x") ? UInt64(t.dropFirst(2), radix: 16) : UInt64(t)
                guard let v else { throw ParseError(line: i + 1, message: "'\(token)' is not a whole number (decimal or 0x-hex)") }
                numbers.append((v, i + 1))
            }
        }
        guard numbers.count == 9 else {
            throw ParseError(line: numbers.last?.line ?? 1,
                             message: "expected 9 numbers (PROM words 0..6 from commands 0xA0..0xAC, then D1, then D2), found \(numbers.count)")
        }
        for (k, n) in numbers.enumerated() {
            let limit: UInt64 = k < 7 ? 0xFFFF : 0xFF_FFFF
            if n.value > limit {
                throw ParseError(line: n.line, message: k < 7 ? "PROM word \(k) = \(n.value) does not fit 16 bits"
                                 : "\(k == 7 ? "D1" : "D2") = \(n.value) does not fit 24 bits")
            }
        }
        return (numbers[0..<7].map { UInt16($0.value) }, UInt32(numbers[7].value), UInt32(numbers[8].value))
    }

    public static func decode(words: [UInt16], d1: UInt32, d2: UInt32) throws(DecodeError) -> Reading {
        let cal = try MS5837Calibration(words: words)
        let steps = try MS5837Compensation.steps(d1: d1, d2: d2, cal)
        return Reading(variant: cal.variant, calibration: cal, raw: MS5837RawSample(d1: d1, d2: d2), steps: steps)
    }
}
