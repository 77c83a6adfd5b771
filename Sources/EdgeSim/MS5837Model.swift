// TE MS5837-30BA command-protocol model, transcribed from the datasheet
// (TE MS5837-30BA REV C2 12/2019: "Commands", "Reset sequence", "PROM read
// sequence", "Conversion sequence", "Pressure and temperature calculation",
// "Second order temperature compensation", "CRC check"; OSR 8192 and the
// conversion times from the 10/11/2015 edition) independently of the
// driver in EdgeChips.
//
// The chip has no register file. Each transaction's first written byte is a
// command; a read returns what the last command left to clock out:
//   0x1E reset            PROM reloaded, any conversion and result dropped
//   0x40..0x4A / 0x50..0x5A  start a D1 / D2 conversion at OSR 256..8192
//   0x00 ADC read         the 24-bit result (MSB first), then it is gone
//   0xA0..0xAE PROM read  16-bit word 0..7 (MSB first)
// Behaviour the datasheet states (Conversion sequence): an ADC read with no
// conversion, or a repeated ADC read, returns 0; an ADC read during a
// conversion returns 0, the conversion goes on and its result is wrong; a
// conversion command during a conversion yields an incorrect result too.
//
// Raw values come from inverting the datasheet's compensation (first and
// second order, evaluated in floating point) by bisection, so that the
// datasheet's formula returns the truth; D1/D2 are then rounded to integer
// counts. Round-trip tolerance through the integer formula: |ΔP| ≤ 20 Pa
// (one 0.1 mbar count plus the floor shifts), |ΔT| ≤ 0.02 °C.
import EdgeBus

/// What the model gets wrong on purpose (noise); "ideal" has none.
public struct MS5837Imperfections: Codable, Sendable, Equatable {
    /// RMS pressure noise at OSR 8192, Pa. Default 20 Pa: the datasheet's
    /// headline resolution (0.2 mbar, page 1). Other OSRs scale it by
    /// sqrt(8192 / OSR) (an assumption: white noise averaged by the ADC).
    public var pressureNoiseAtOSR8192Pa: Double
    /// RMS temperature noise at OSR 8192, °C, scaled the same way.
    public var temperatureNoiseAtOSR8192C: Double

    public init(pressureNoiseAtOSR8192Pa: Double = 20, temperatureNoiseAtOSR8192C: Double = 0.002) {
        self.pressureNoiseAtOSR8192Pa = pressureNoiseAtOSR8192Pa
        self.temperatureNoiseAtOSR8192C = temperatureNoiseAtOSR8192C
    }
    public static let realistic = MS5837Imperfections()
    public static let ideal = MS5837Imperfections(pressureNoiseAtOSR8192Pa: 0, temperatureNoiseAtOSR8192C: 0)

    enum CodingKeys: String, CodingKey {
        case pressureNoiseAtOSR8192Pa = "pressure_noise_pa", temperatureNoiseAtOSR8192C = "temperature_noise_c"
    }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pressureNoiseAtOSR8192Pa = try c.decodeIfPresent(Double.self, forKey: .pressureNoiseAtOSR8192Pa) ?? 20
        temperatureNoiseAtOSR8192C = try c.decodeIfPresent(Double.self, forKey: .temperatureNoiseAtOSR8192C) ?? 0.002
    }
}

/// The factory PROM as the model stores it: C1..C6, the product version,
/// and the CRC-4 the model computes itself.
public struct MS5837PROM: Codable, Sendable, Equatable {
    public var c: [UInt16]          // C1..C6
    public var versionCode: UInt8   // PROM word 0 bits [11:5]; 0x1A = MS5837-30BA26

    public init(c1: UInt16, c2: UInt16, c3: UInt16, c4: UInt16, c5: UInt16, c6: UInt16, versionCode: UInt8 = 0x1A) {
        c = [c1, c2, c3, c4, c5, c6]; self.versionCode = versionCode
    }
    /// The datasheet's example coefficients ("Pressure and temperature calculation").
    public static let datasheetExample = MS5837PROM(c1: 34982, c2: 36352, c3: 20328, c4: 22354, c5: 26646, c6: 26146)

    /// The 8 words the chip answers with (word 7 reads 0).
    public var words: [UInt16] {
        var w: [UInt16] = [UInt16(versionCode & 0x7F) << 5] + c + [0]
        w[0] |= UInt16(Self.crc4(w)) << 12
        return w
    }

    /// The datasheet's CRC-4 ("CRC check"): 16 bytes (8 words, word 0's CRC
    /// nibble and word 7 zero) shifted through polynomial 0x3 at the top of a
    /// 16-bit remainder, one bit at a time.
    static func crc4(_ words: [UInt16]) -> UInt8 {
        var data = words
        data[0] &= 0x0FFF
        data[7] = 0
        var r: UInt32 = 0
        for word in data {
            for byte in [UInt32(word >> 8), UInt32(word & 0xFF)] {
                r ^= byte
                for _ in 0..<8 { r = (r & 0x8000) != 0 ? ((r << 1) ^ 0x3000) & 0xFFFF : (r << 1) & 0xFFFF }
            }
        }
        return UInt8(r >> 12)
    }

    // MARK: the datasheet's compensation in floating point (for inversion)

    var C1: Double { Double(c[0]) }; var C2: Double { Double(c[1]) }; var C3: Double { Double(c[2]) }
    var C4: Double { Double(c[3]) }; var C5: Double { Double(c[4]) }; var C6: Double { Double(c[5]) }

    /// Second-order temperature (0.01 °C) for a continuous D2.
    func temperature2(d2: Double) -> Double {
        let dT = d2 - C5 * 256
        let temp = 2000 + dT * C6 / 8_388_608
        let ti = temp < 2000 ? 3 * dT * dT / 8_589_934_592 : 2 * dT * dT / 137_438_953_472
        return temp - ti
    }

    /// Second-order pressure (0.1 mbar) for continuous D1, D2.
    func pressure2(d1: Double, d2: Double) -> Double {
        let dT = d2 - C5 * 256
        let temp = 2000 + dT * C6 / 8_388_608
        var off = C2 * 65536 + C4 * dT / 128
        var sens = C1 * 32768 + C3 * dT / 256
        let x = temp - 2000
        if temp < 2000 {
            off -= 1.5 * x * x
            sens -= 5 * x * x / 8
            if temp < -1500 { let y = temp + 1500; off -= 7 * y * y; sens -= 4 * y * y }
        } else {
            off -= x * x / 16
        }
        return (d1 * sens / 2_097_152 - off) / 8192
    }

    static func invert(_ target: Double, increasing: Bool = true, _ f: (Double) -> Double) -> Double {
        var lo = 1.0, hi = 16_777_215.0
        if target <= f(lo) { return lo }
        if target >= f(hi) { return hi }
        for _ in 0..<80 {
            let mid = (lo + hi) / 2
            if f(mid) < target { lo = mid } else { hi = mid }
            if hi - lo < 1e-4 { break }
        }
        return (lo + hi) / 2
    }

    /// The (continuous) D2 that compensates to `celsius`.
    public func rawTemperature(for celsius: Double) -> Double {
        Self.invert(celsius * 100) { temperature2(d2: $0) }
    }
    /// The (continuous) D1 that compensates to `pascals` given D2.
    public func rawPressure(for pascals: Double, d2: Double) -> Double {
        Self.invert(pascals / 10) { pressure2(d1: $0, d2: d2) }
    }
}

/// The MS5837-30BA on the simulated bus.
public final class MS5837Model: SimulatedDevice, @unchecked Sendable {
    public let kind = "ms5837"
    public let truth: any TruthSource
    public let body: SimBody
    public let prom: MS5837PROM
    public let imperfections: MS5837Imperfections
    let seed: UInt64
    var random: SimRandom

    enum Output { case none, adc, prom(Int) }
    struct Conversion { var channel: UInt8; var osr: Int; var end: UInt64; var corrupted: Bool }

    var output: Output = .none
    var conversion: Conversion?
    /// The finished conversion's result, until read (nil: reads give 0).
    var result: UInt32?
    /// Counters, for tests.
    public private(set) var conversionsStarted = 0
    public private(set) var zeroReads = 0

    public init(truth: any TruthSource, body: SimBody = .board, prom: MS5837PROM = .datasheetExample,
                imperfections: MS5837Imperfections = .realistic, seed: UInt64 = 0, powerOnAtNanoseconds: UInt64 = 0) {
        self.truth = truth; self.body = body; self.prom = prom; self.imperfections = imperfections
        self.seed = seed; random = SimRandom(seed: seed)
    }

    /// Typical conversion time by OSR, ms (DS 2015 "Electrical
    /// characteristics", ADC conversion time typ): the chip finishes then.
    public static func conversionMilliseconds(osr: Int) -> Double {
        switch osr {
        case 256: 0.54
        case 512: 1.06
        case 1024: 2.08
        case 2048: 4.13
        case 4096: 8.22
        default: 16.44
        }
    }

    /// Finishes a conversion that is due by `t`.
    func advance(toNanoseconds t: UInt64) {
        guard let c = conversion, t >= c.end else { return }
        conversion = nil
        let now = truth.truth(atNanoseconds: c.end, body: body)
        let scale = (8192.0 / Double(c.osr)).squareRoot()
        let temperature = now.temperature + random.gaussian(sigma: imperfections.temperatureNoiseAtOSR8192C * scale)
        let d2 = prom.rawTemperature(for: temperature)
        var value: Double
        if c.channel == 0x40 {
            let p = now.pressure + random.gaussian(sigma: imperfections.pressureNoiseAtOSR8192Pa * scale)
            value = prom.rawPressure(for: p, d2: d2)
        } else {
            value = d2
        }
        var counts = UInt32(min(16_777_215, max(1, value.rounded())))
        if c.corrupted { counts ^= 0x0A5A5A }   // "the final result will be wrong"
        result = counts
    }

    public func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer,
                         atNanoseconds t: UInt64) throws(SimulatedDeviceFault) {
        advance(toNanoseconds: t)
        if write.count > 0 { command(write[0], at: t) }
        guard read.count > 0 else { return }
        switch output {
        case .none:
            for i in 0..<read.count { read[i] = 0 }
        case .prom(let word):
            let w = prom.words[word]
            for i in 0..<read.count { read[i] = i == 0 ? UInt8(w >> 8) : i == 1 ? UInt8(w & 0xFF) : 0 }
        case .adc:
            var v: UInt32 = 0
            if conversion != nil {
                conversion?.corrupted = true   // read during conversion: 0, and the result will be wrong
                zeroReads += 1
            } else if let r = result {
                v = r
                result = nil                   // a repeated ADC read gives 0
            } else {
                zeroReads += 1
            }
            for i in 0..<read.count { read[i] = i < 3 ? UInt8((v >> UInt32(16 - 8 * i)) & 0xFF) : 0 }
            output = .none
        }
    }

    func command(_ b: UInt8, at t: UInt64) {
        switch b {
        case 0x1E:
            conversion = nil; result = nil; output = .none
        case 0x00:
            output = .adc
        case 0xA0...0xAE where b & 1 == 0:
            output = .prom(Int((b >> 1) & 7))
        case 0x40...0x4A where b & 1 == 0, 0x50...0x5A where b & 1 == 0:
            let osr = 256 << Int((b >> 1) & 7)
            let corrupted = conversion != nil   // a conversion command during a conversion
            conversion = Conversion(channel: b & 0xF0, osr: osr,
                                    end: t &+ UInt64(Self.conversionMilliseconds(osr: osr) * 1e6), corrupted: corrupted)
            result = nil
            conversionsStarted += 1
            output = .none
        default:
            output = .none   // not a command: nothing to clock out (reads 0)
        }
    }

    public func powerOnReset(atNanoseconds t: UInt64) {
        advance(toNanoseconds: t)
        conversion = nil; result = nil; output = .none
        random = SimRandom(seed: seed)
    }
}
