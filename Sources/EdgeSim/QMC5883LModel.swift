// QST QMC5883L register-file model, transcribed from the QST QMC5883L data
// sheet rev 1.0 itself (not from any driver).
import EdgeBus
import EdgeValues

/// Imperfections of one QMC5883L (QST QMC5883L data sheet rev 1.0 Table 2), µT, chip frame.
public struct QMC5883LImperfections: Codable, Sendable, Equatable {
    /// The sensing element: noise (2 mG = 0.2 µT σ at OSR 512, the data sheet's
    /// field resolution; × √(512/OSR) at lower OSR, our assumption: the DS gives none),
    /// offset (DS ±10 mG, plus board hard iron), sensitivity, cross-axis.
    public var field: AxisImperfections
    /// Soft-iron distortion of the field around the chip (3x3, applied before
    /// the sensing element; identity = none).
    public var softIron: [[Double]]
    /// TOUT reads 100 LSB/°C · T + this (the offset is uncalibrated, DS: relative only).
    public var temperatureOffsetCounts: Double
    /// Output-data-rate clock error, fraction.
    public var clockError: Double

    public init(field: AxisImperfections, softIron: [[Double]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                temperatureOffsetCounts: Double, clockError: Double) {
        self.field = field; self.softIron = softIron
        self.temperatureOffsetCounts = temperatureOffsetCounts; self.clockError = clockError
    }

    public static let realistic = QMC5883LImperfections(
        field: AxisImperfections(noiseScale: 1, bias: [3.2, -5.1, 1.8], biasTempco: [0.005, -0.004, 0.006],
                                 scaleError: [0.01, -0.015, 0.008], scaleTempco: 0.0003,
                                 crossAxis: [[0, 0.002, -0.001], [0.001, 0, 0.002], [-0.002, 0.001, 0]]),
        softIron: [[1.02, 0.01, 0], [0.01, 0.985, 0.004], [0, 0.004, 1.0]],
        temperatureOffsetCounts: -1050, clockError: 0.005)

    public static let ideal = QMC5883LImperfections(field: .ideal, temperatureOffsetCounts: 0, clockError: 0)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = QMC5883LImperfections.realistic
        field = try c.decodeIfPresent(AxisImperfections.self, forKey: .field) ?? d.field
        softIron = try c.decodeIfPresent([[Double]].self, forKey: .softIron) ?? d.softIron
        temperatureOffsetCounts = try c.decodeIfPresent(Double.self, forKey: .temperatureOffsetCounts) ?? d.temperatureOffsetCounts
        clockError = try c.decodeIfPresent(Double.self, forKey: .clockError) ?? d.clockError
    }
}

/// Round-trip tolerance for the QMC5883L's current range and OSR: 1 LSB +
/// 3σ per axis, µT, board frame. Excludes offsets, soft iron, scale errors.
public struct QMC5883LTolerance: Sendable, Equatable {
    public var magneticField: Vector3
}

/// The QMC5883L as a register file with behaviour. See docs/simulators.md.
public final class QMC5883LModel: RegisterFileDevice, DataReadySource, @unchecked Sendable {
    public let kind = "qmc5883l"
    public let body: SimBody
    public let mounting: Mounting
    public let imperfections: QMC5883LImperfections
    let truth: any TruthSource
    let fieldErr: AxisImperfections.Compiled
    let softIron: SimMatrix3
    var rng: SimRandom

    enum Reg {
        static let xLSB: UInt8 = 0x00, zMSB: UInt8 = 0x05, status: UInt8 = 0x06, tLSB: UInt8 = 0x07, tMSB: UInt8 = 0x08
        static let ctrl1: UInt8 = 0x09, ctrl2: UInt8 = 0x0A, setReset: UInt8 = 0x0B, chipID: UInt8 = 0x0D
    }
    static let odrHz: [UInt64] = [10, 50, 100, 200]

    var regs = [UInt8](repeating: 0, count: 256)
    var pointer: UInt8 = 0
    var lastTime: UInt64
    var output: [Int16] = [0, 0, 0]
    var temperatureOut: Int16 = 0
    var drdy = false, ovl = false, dor = false
    var statusReadSinceDOR = false
    /// Data lock: set by reading 0x00..0x04, released by reading 0x05.
    var locked = false
    var anchor: UInt64 = 0, lastK: UInt64 = 0, period: UInt64 = 100_000_000

    public init(truth: any TruthSource, body: SimBody = .board, mounting: Mounting = .identity,
                imperfections: QMC5883LImperfections = .realistic, seed: UInt64 = 0,
                powerOnAtNanoseconds t: UInt64 = 0) {
        self.truth = truth; self.body = body; self.mounting = mounting; self.imperfections = imperfections
        fieldErr = .init(imperfections.field)
        softIron = SimMatrix3(imperfections.softIron) ?? .identity
        rng = SimRandom(seed: seed)
        lastTime = t
        loadPowerOnValues()
    }

    func loadPowerOnValues() {
        regs = [UInt8](repeating: 0, count: 256)
        regs[Int(Reg.chipID)] = 0xFF
        output = [0, 0, 0]; temperatureOut = 0
        drdy = false; ovl = false; dor = false; statusReadSinceDOR = false; locked = false
        lastK = 0
        period = computePeriod()
    }

    var continuous: Bool { regs[Int(Reg.ctrl1)] & 3 == 1 }
    /// OSR 512 / 256 / 128 / 64 (CTRL1 [7:6]).
    public var oversampling: Int { 512 >> Int(regs[Int(Reg.ctrl1)] >> 6) }
    /// LSB per µT: 120 at ±2 G (12000 LSB/G), 30 at ±8 G (3000 LSB/G); 1 G = 100 µT.
    public var countsPerMicrotesla: Double { (regs[Int(Reg.ctrl1)] >> 4) & 3 == 0 ? 120 : 30 }
    /// Output data rate, Hz (CTRL1 [3:2]: 10, 50, 100, 200).
    public var outputDataRateHz: Double { Double(Self.odrHz[Int((regs[Int(Reg.ctrl1)] >> 2) & 3)]) }

    func computePeriod() -> UInt64 {
        let nominal = 1_000_000_000 / Self.odrHz[Int((regs[Int(Reg.ctrl1)] >> 2) & 3)]
        let e = imperfections.clockError
        return e == 0 ? nominal : UInt64((Double(nominal) / (1 + e)).rounded())
    }

    var noiseSigma: Double { 0.2 * (512 / Double(oversampling)).squareRoot() * imperfections.field.noiseScale }

    public func advance(toNanoseconds t: UInt64) {
        guard t > lastTime else { return }
        lastTime = t
        guard continuous, t > anchor else { return }
        let kNow = (t - anchor) / period
        guard kNow > lastK else { return }
        if kNow - lastK > 64 { lastK = kNow - 64 }
        var k = lastK + 1
        while k <= kNow { produceSample(at: anchor &+ k &* period); k += 1 }
        lastK = kNow
    }

    func produceSample(at ts: UInt64) {
        let world = truth.fieldTruth(atNanoseconds: ts, body: body)
        var b = fieldErr.apply(softIron * mounting.chip(fromBoard: world.magneticField), temperature: world.temperature)
        let sigma = noiseSigma
        for i in 0..<3 { b[i] += rng.gaussian(sigma: sigma) }
        temperatureOut = saturatingInt16(100 * world.temperature + imperfections.temperatureOffsetCounts)
        if locked || drdy {
            // The previous sample was not read (or the output is locked by a
            // partial read): this one overruns it.
            dor = true; statusReadSinceDOR = false
            if locked { return }   // locked registers never update; DRDY stays 0
        }
        let k = countsPerMicrotesla
        var over = false
        for i in 0..<3 {
            let raw = (b[i] * k).rounded()
            if raw > 32767 || raw < -32768 { over = true }
            output[i] = saturatingInt16(raw)
        }
        // Until the SET/RESET period register is written the element is never
        // set/reset: this model then outputs zeros (docs/simulators.md).
        if regs[Int(Reg.setReset)] == 0 { output = [0, 0, 0] }
        ovl = over
        drdy = true
    }

    func pointer(after register: UInt8) -> UInt8 {
        register == Reg.status && regs[Int(Reg.ctrl2)] & 0x40 != 0 ? Reg.xLSB : register &+ 1
    }

    func readRegister(_ r: UInt8, atNanoseconds t: UInt64) -> UInt8 {
        switch r {
        case Reg.xLSB...Reg.zMSB:
            let v = UInt16(bitPattern: output[Int(r) / 2])
            let byte = r % 2 == 0 ? UInt8(v & 0xFF) : UInt8(v >> 8)
            drdy = false
            if statusReadSinceDOR { dor = false }
            locked = r != Reg.zMSB
            return byte
        case Reg.status:
            if dor { statusReadSinceDOR = true }
            return (drdy ? 1 : 0) | (ovl ? 2 : 0) | (dor ? 4 : 0)
        case Reg.tLSB: return UInt8(UInt16(bitPattern: temperatureOut) & 0xFF)
        case Reg.tMSB: return UInt8(UInt16(bitPattern: temperatureOut) >> 8)
        default: return regs[Int(r)]
        }
    }

    func writeRegister(_ r: UInt8, _ v: UInt8, atNanoseconds t: UInt64) {
        switch r {
        case Reg.ctrl1:
            let wasContinuous = continuous
            if wasContinuous { anchor &+= lastK &* period; lastK = 0 }
            regs[Int(r)] = v
            period = computePeriod()
            if !wasContinuous && continuous { anchor = t; lastK = 0 }
        case Reg.ctrl2:
            if v & 0x80 != 0 { loadPowerOnValues(); return }   // SOFT_RST: all registers default, standby
            regs[Int(r)] = v & 0x41
        case Reg.setReset, 0x0C:
            regs[Int(r)] = v
        default:
            return   // data, status, temperature and ID are read-only
        }
    }

    public func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer,
                         atNanoseconds t: UInt64) throws(SimulatedDeviceFault) {
        registerTransfer(write: write, read: read, atNanoseconds: t)
    }

    public func powerOnReset(atNanoseconds t: UInt64) {
        advance(toNanoseconds: t)
        loadPowerOnValues()
        pointer = 0
    }

    /// The DRDY pin (enabled while CTRL2.INT_ENB = 0): rises when a sample
    /// lands with DRDY clear, falls when the data are read.
    public func nextDataReadyEdge(after t: UInt64) -> UInt64? {
        advance(toNanoseconds: t)
        guard continuous, regs[Int(Reg.ctrl2)] & 0x01 == 0, !drdy, !locked else { return nil }
        let k = t >= anchor ? (t - anchor) / period + 1 : 1
        return anchor &+ k &* period
    }

    public var roundTripTolerance: QMC5883LTolerance {
        let perAxis = 1 / countsPerMicrotesla + 3 * noiseSigma
        return QMC5883LTolerance(magneticField: mounting.boardFromChip.magnitudes * Vector3(repeating: perAxis))
    }
}
