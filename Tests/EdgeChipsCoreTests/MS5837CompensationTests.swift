import Testing
@testable import EdgeChipsCore

/// TE MS5837-30BA datasheet REV C2 (12/2019), "Pressure and temperature
/// calculation", Figure 9 example column: C1..C6, D1 = 4958179,
/// D2 = 6815414 → dT = -5962, TEMP = 1981 (19.81 °C), SENS = 1145816755,
/// P = 39998 (3999.8 mbar). The sheet prints OFF = 2381326464; the formula
/// gives 2381323464 (the printed value has a 6 for a 3 - the P it prints
/// follows from the computed OFF, so the test checks the computed one).
@Suite struct MS5837CompensationTests {
    let example = MS5837Calibration.datasheetExample

    @Test func datasheetWorkedExampleFirstOrder() throws {
        let s = try MS5837Compensation.steps(d1: 4_958_179, d2: 6_815_414, example)
        #expect(s.dT == -5962)
        #expect(s.temp == 1981)
        #expect(s.sens == 1_145_816_755)
        #expect(s.off == 2_381_323_464)
        #expect(s.p == 39998)
        let first = try MS5837Compensation.compensate(MS5837RawSample(d1: 4_958_179, d2: 6_815_414), example, secondOrder: false)
        #expect(first.pressurePascals == 399_980)
        #expect(first.temperatureCelsius == 19.81)
    }

    /// Second order below 20 °C (Figure 10): Ti = 3·dT²/2³³ = 0 here,
    /// OFFi = 3·(TEMP−2000)²/2 = 541, SENSi = 5·(19)²/8 = 225 → P unchanged at this
    /// resolution (0.1 mbar).
    @Test func datasheetExampleSecondOrder() throws {
        let s = try MS5837Compensation.steps(d1: 4_958_179, d2: 6_815_414, example)
        #expect(s.temp2 == 1981)
        let d1 = Int64(4_958_179)
        let expected = ((d1 * (s.sens - 225)) >> 21 - (s.off - 541)) >> 13
        #expect(s.p2 == expected)
    }

    /// Cold and very cold branches (TEMP < −15 °C) by hand from Figure 10.
    @Test func secondOrderColdBranches() throws {
        // D2 such that dT gives TEMP ≈ −20 °C: dT = (TEMP−2000)·2²³/C6.
        let dT = Int64((-2000 - 2000) * 8_388_608 / 26146)
        let d2 = UInt32(26646 * 256 + dT)
        let s = try MS5837Compensation.steps(d1: 3_000_000, d2: d2, example)
        #expect(s.temp < -1500)
        let low = s.temp - 2000, vlow = s.temp + 1500
        let offi = (3 * low * low) >> 1 + 7 * vlow * vlow
        let sensi = (5 * low * low) >> 3 + 4 * vlow * vlow
        let ti = (3 * s.dT * s.dT) >> 33
        #expect(s.temp2 == s.temp - ti)
        #expect(s.p2 == ((Int64(3_000_000) * (s.sens - sensi)) >> 21 - (s.off - offi)) >> 13)
    }

    @Test func warmBranch() throws {
        let dT = Int64((3000 - 2000) * 8_388_608 / 26146)
        let s = try MS5837Compensation.steps(d1: 5_000_000, d2: UInt32(26646 * 256 + dT), example)
        #expect(s.temp > 2000)
        let offi = ((s.temp - 2000) * (s.temp - 2000)) >> 4
        #expect(s.temp2 == s.temp - (2 * s.dT * s.dT) >> 37)
        #expect(s.p2 == ((Int64(5_000_000) * s.sens) >> 21 - (s.off - offi)) >> 13)
    }

    @Test func zeroResultIsNotMeasured() {
        #expect(throws: DecodeError.self) { try MS5837Compensation.steps(d1: 0, d2: 6_815_414, example) }
        #expect(throws: DecodeError.self) { try MS5837Compensation.steps(d1: 4_958_179, d2: 0, example) }
    }

    /// CRC-4: a PROM built with its CRC validates; any single flipped bit in
    /// C1..C6 is caught; the version bits name the 30BA.
    @Test func crcDetectsCorruption() throws {
        let good = example.words
        #expect(throws: Never.self) { try MS5837Calibration(words: good) }
        #expect(MS5837Variant.lookup(word0: good[0]) == .ms5837_30ba)
        for w in 1..<7 {
            for bit in [0, 7, 15] {
                var bad = good
                bad[w] ^= UInt16(1) << UInt16(bit)
                #expect(throws: DecodeError.self) { try MS5837Calibration(words: bad) }
            }
        }
        #expect(throws: DecodeError.self) { try MS5837Calibration(words: [UInt16](repeating: 0, count: 7)) }
        #expect(throws: DecodeError.self) { try MS5837Calibration(words: Array(good.prefix(6))) }
    }

    /// A second implementation: the byte-wise shift register of the
    /// datasheet's CRC routine reduces modulo x^12·(x^4 + x + 1) with each
    /// byte entering at the bottom, which makes its top nibble the remainder
    /// of the 128-bit message (CRC nibble cleared, word 7 zero) shifted right
    /// by 4 bits, divided by x^4 + x + 1. Computed here by long division on
    /// a bit array.
    @Test func crcMatchesBitwiseReimplementation() {
        var state: UInt64 = 0x1234_5678
        for _ in 0..<200 {
            var words: [UInt16] = []
            for _ in 0..<7 { state = state &* 6364136223846793005 &+ 1442695040888963407; words.append(UInt16(truncatingIfNeeded: state >> 33)) }
            // Polynomial division of the 128-bit message (CRC nibble zeroed) by x^4+x+1.
            var bits: [Bool] = []
            for (i, w) in (words + [0]).enumerated() {
                let v = i == 0 ? w & 0x0FFF : w
                for b in (0..<16).reversed() { bits.append((v >> UInt16(b)) & 1 == 1) }
            }
            bits.removeLast(4)   // word 7 is zero: dropping its last 4 bits is the shift right by 4
            let poly: [Bool] = [true, false, false, true, true]   // x^4 + x + 1
            for i in 0..<(bits.count - 4) where bits[i] {
                for j in 0..<5 { bits[i + j] = bits[i + j] != poly[j] }
            }
            var r: UInt8 = 0
            for b in bits.suffix(4) { r = r << 1 | (b ? 1 : 0) }
            #expect(MS5837Calibration.crc4(words) == r)
        }
    }

    @Test func commandBytes() {
        #expect(MS5837Command.reset.byte == 0x1E)
        #expect(MS5837Command.adcRead.byte == 0x00)
        #expect(MS5837Command.convert(.pressure, .osr256).byte == 0x40)
        #expect(MS5837Command.convert(.pressure, .osr4096).byte == 0x48)
        #expect(MS5837Command.convert(.pressure, .osr8192).byte == 0x4A)
        #expect(MS5837Command.convert(.temperature, .osr256).byte == 0x50)
        #expect(MS5837Command.convert(.temperature, .osr8192).byte == 0x5A)
        #expect(MS5837Command.promRead(word: 0).byte == 0xA0)
        #expect(MS5837Command.promRead(word: 6).byte == 0xAC)
        for b in 0...255 {
            if let c = MS5837Command(byte: UInt8(b)) { #expect(c.byte == UInt8(b)) }
        }
    }
}
