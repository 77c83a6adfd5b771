import Testing
@testable import EdgeChipsCore

/// HMC5883L facts from Honeywell's data sheet, Form #900405 Rev E,
/// re-declared here independently of the driver's tables.
@Suite struct HMC5883LCoreTests {
    /// DS Table 9: GN code → (recommended range ± G, gain LSB/G, resolution mG/LSB).
    static let gainTable: [(UInt8, Double, Double, Double)] = [
        (0, 0.88, 1370, 0.73), (1, 1.3, 1090, 0.92), (2, 1.9, 820, 1.22), (3, 2.5, 660, 1.52),
        (4, 4.0, 440, 2.27), (5, 4.7, 390, 2.56), (6, 5.6, 330, 3.03), (7, 8.1, 230, 4.35),
    ]

    @Test func gainTableIsTheDataSheets() {
        for (code, range, lsb, mG) in Self.gainTable {
            let g = HMC5883LGain(rawValue: code)!
            #expect(g.rangeGauss == range && g.lsbPerGauss == lsb)
            // the printed digital resolution is 1000 / gain, rounded to 0.01 mG
            expectClose(g.microteslaPerLSB * 10, mG, 0.005, "code \(code): 1 µT = 10 mG")
        }
    }

    @Test func registerValuesAreTheDataSheets() {
        // DS example: CRA 0x70 = 8-average, 15 Hz, normal; CRB 0xA0 = gain 5; mode 0x00 continuous.
        let example = HMC5883LConfiguration(mode: .continuous, outputRate: .hz15, gain: .gauss4_7, averaging: .x8)
        #expect(example.configurationAValue == 0x70)
        #expect(example.configurationBValue == 0xA0)
        #expect(example.modeValue == 0x00)
        // The power-on values: CRA 0x10, CRB 0x20, mode 0x01.
        let p = HMC5883LConfiguration.powerOn
        #expect(p.configurationAValue == 0x10 && p.configurationBValue == 0x20 && p.modeValue == 0x01)
        #expect(HMC5883LOutputRate.allCases.map(\.hertz) == [0.75, 1.5, 3, 7.5, 15, 30, 75])
        // Each row owns its whole register: "00" fields are written as cleared bits.
        let rows = HMC5883LConfiguration(mode: .continuous, outputRate: .hz0_75, gain: .gauss0_88, averaging: .x1).registerTable.settings
        #expect(rows.map(\.register) == [0x00, 0x01, 0x02])
        #expect(rows.allSatisfy { $0.ownsWholeRegister && $0.applied(to: 0xFF) == $0.set })
    }

    @Test func dataIsXZYBigEndianAndMinus4096IsOverflow() {
        // X = 1090 (0x0442), Z = -545 (0xFDDF), Y = 0 at gain 1.3 G (1090 LSB/G).
        let bytes: [UInt8] = [0x04, 0x42, 0xFD, 0xDF, 0x00, 0x00]
        let raw = bytes.withUnsafeBytes { HMC5883LRawSample(status: 0x01, data: $0, captureNanoseconds: 0) }
        #expect(raw.field == SIMD3(1090, 0, -545))
        guard case .field(let f) = HMC5883LDecoder.decode(raw, gain: .gauss1_3) else { Issue.record("no field"); return }
        expectClose(f.x, 100, 1e-9, "1090 counts = 1 G = 100 µT")
        expectClose(f.y, 0, 1e-9)
        expectClose(f.z, -50, 1e-9)
        let over: [UInt8] = [0x00, 0x10, 0xF0, 0x00, 0x00, 0x00]   // Z = 0xF000 = -4096
        let o = over.withUnsafeBytes { HMC5883LRawSample(status: 0x01, data: $0, captureNanoseconds: 0) }
        #expect(HMC5883LDecoder.decode(o, gain: .gauss1_3) == .overflow)
    }

    @Test func dumpIdentityRecognisesH43() {
        var image = RegisterImage(start: 0x00, [0x70, 0x20, 0x00, 0x04, 0x42, 0xFD, 0xDF, 0x00, 0x00, 0x01, 0x48, 0x34, 0x33])
        #expect(RegisterDumpIdentity.check(image, as: .hmc5883l) == .matches(part: "HMC5883L", warning: nil))
        guard case .mismatch = RegisterDumpIdentity.check(image, as: .qmc5883l) else { Issue.record("a QMC5883L?"); return }
        image[0x0C] = 0x00
        guard case .mismatch = RegisterDumpIdentity.check(image, as: .hmc5883l) else { Issue.record("H4 + 0 is no HMC5883L"); return }
    }
}
