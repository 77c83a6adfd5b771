// Honeywell HMC5883L register-file model, transcribed from the data sheet
// "3-Axis Digital Compass IC HMC5883L", Form #900405 Rev E (February 2013)
// itself (not from any driver).
import EdgeBus
import EdgeValues

/// Imperfections of one HMC5883L, µT, chip frame.
public struct HMC5883LImperfections: Codable, Sendable, Equatable {
    /// The sensing element: noise (DS noise floor 2 mG = 0.2 µT σ with no
    /// averaging; ÷ √(samples averaged) with CRA.MA, our assumption: the DS
    /// gives no figure per setting), offset (the set/reset cancels the
    /// sensor's own; this is board hard iron), sensitivity, cross-axis.
    public var field: AxisImperfections
    /// Soft-iron distortion around the chip (3x3; identity = none).
    public var softIron: [[Double]]
    /// Output-rate clock error, fraction.
    public var clockError: Double

    public init(field: AxisImperfections, softIron: [[Double]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]], clockError: Double) {
        self.field = field; self.softIron = softIron; self.clockError = clockError
    }

    public static let realistic = HMC5883LImperfections(
        field: AxisImperfections(noiseScale: 1, bias: [-4.1, 2.6, 3.3], biasTempco: [0.004, 0.003, -0.005],
                                 scaleError: [0.012, -0.008, 0.015], scaleTempco: 0.0003,
                                 crossAxis: [[0, 0.002, 0.001], [-0.001, 0, 0.002], [0.002, -0.001, 0]]),
        softIron: [[1.015, 0.008, 0], [0.008, 0.99, 0.003], [0, 0.003, 1.005]], clockError: 0.004)

    public static let ideal = HMC5883LImperfections(field: .ideal, clockError: 0)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = HMC5883LImperfections.realistic
        field = try c.decodeIfPresent(AxisImperfections.self, forKey: .field) ?? d.field
        softIron = try c.decodeIfPresent([[Double]].self, forKey: .softIron) ?? d.softIron
        clockError = try c.decodeIfPresent(Double.self, forKey: .clockError) ?? d.clockError
    }
}

/// Round-trip tolerance for the HMC5883L's current gain and averaging:
/// 1 LSB + 3σ per axis, µT, board frame. Excludes offsets, soft iron, scale errors.
public struct HMC5883LTolerance: Sendable, Equatable {
    public var magneticField: Vector3
}

/// The HMC5883L as a register file with behaviour. See docs/simulators.md.
///
/// * Power-on: CRA 0x10, CRB 0x20, mode 0x01, identification "H43" at
///   0x0A..0x0C; no measurement until the mode register is written.
/// * Continuous mode (MD 00): a measurement every 1/rate (CRA.DO, Table 5:
///   0.75..75 Hz), the first one period after the mode write.
/// * Single mode (MD 01): one measurement 6 ms after the write (the DS's
///   "wait 6 ms"), then the mode register reads idle (MD 11).
/// * Idle (MD 1x): nothing is measured.
/// * Each output: counts = round(field in gauss × gain, CRB.GN Table 9);
///   an axis beyond -2048...2047 reads -4096; the first measurement after a
///   CRB write still uses the previous gain.
/// * STATUS (0x09): RDY set when a measurement lands, cleared when the data
///   registers are read; LOCK set when some but not all six data registers
///   were read, or the mode register was read; while LOCK is set no
///   measurement lands; it clears when all six are read, the mode register
///   or CRA is written, or power is reset (Table 17).
/// * Invalid registers read 0; writes to them and to read-only ones are ignored.
public final class HMC5883LModel: RegisterFileDevice, @unchecked Sendable {
    public let kind = "hmc5883l"
    public let body: SimBody
    public let mounting: Mounting
    public let imperfections: HMC5883LImperfections
    let truth: any TruthSource
    let fieldErr: AxisImperfections.Compiled
    let softIron: SimMatrix3
    var rng: SimRandom

    enum Reg {
        static let cra: UInt8 = 0x00, crb: UInt8 = 0x01, mode: UInt8 = 0x02
        static let dataFirst: UInt8 = 0x03, dataLast: UInt8 = 0x08, status: UInt8 = 0x09
        static let idA: UInt8 = 0x0A, idC: UInt8 = 0x0C
    }
    /// DS Table 5, CRA.DO codes 0..6 (7 is reserved; this model runs it at 75 Hz).
    static let rateHz: [Double] = [0.75, 1.5, 3, 7.5, 15, 30, 75, 75]
    /// DS Table 9, CRB.GN codes 0..7: LSB per gauss.
    static let gainLSBPerGauss: [Double] = [1370, 1090, 820, 660, 440, 390, 330, 230]
    /// Single-measurement time (the DS's "wait 6 ms"), ns.
    static let singleMeasurementNanoseconds: UInt64 = 6_000_000

    var regs = [UInt8](repeating: 0, count: 13)
    var pointer: UInt8 = 0
    var lastTime: UInt64
    /// Data registers X, Z, Y as stored (register order).
    var output: [Int16] = [0, 0, 0]
    var ready = false
    /// Data registers 0x03..0x08 read since the last measurement landed (bit per register).
    var readMask: UInt8 = 0
    var lockedByModeRead = false
    /// The gain code the next measurement uses (the previous one for the first after a CRB write).
    var measuringGainCode: UInt8 = 1
    var anchor: UInt64 = 0, lastK: UInt64 = 0, period: UInt64 = 66_666_667
    var singleDue: UInt64?

    public init(truth: any TruthSource, body: SimBody = .board, mounting: Mounting = .identity,
                imperfections: HMC5883LImperfections = .realistic, seed: UInt64 = 0,
                powerOnAtNanoseconds t: UInt64 = 0) {
        self.truth = truth; self.body = body; self.mounting = mounting; self.imperfections = imperfections
        fieldErr = .init(imperfections.field)
        softIron = SimMatrix3(imperfections.softIron) ?? .identity
        rng = SimRandom(seed: seed)
        lastTime = t
        loadPowerOnValues()
    }

    func loadPowerOnValues() {
        regs = [0x10, 0x20, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x48, 0x34, 0x33]
        output = [0, 0, 0]
        ready = false; readMask = 0; lockedByModeRead = false
        measuringGainCode = regs[Int(Reg.crb)] >> 5
        lastK = 0; singleDue = nil
        period = computePeriod()
    }

    var modeBits: UInt8 { regs[Int(Reg.mode)] & 3 }
    var continuous: Bool { modeBits == 0 }
    /// Samples averaged per output (CRA.MA: 1, 2, 4, 8).
    public var samplesAveraged: Int { 1 << Int((regs[Int(Reg.cra)] >> 5) & 3) }
    /// Continuous output rate, Hz (CRA.DO).
    public var outputDataRateHz: Double { Self.rateHz[Int((regs[Int(Reg.cra)] >> 2) & 7)] }
    /// Counts per µT at the configured gain (CRB.GN; 1 G = 100 µT).
    public var countsPerMicrotesla: Double { Self.gainLSBPerGauss[Int(regs[Int(Reg.crb)] >> 5)] / 100 }
    /// LOCK (status bit 1).
    var locked: Bool { lockedByModeRead || (readMask != 0 && readMask != 0x3F) }

    func computePeriod() -> UInt64 {
        let nominal = 1e9 / outputDataRateHz
        return UInt64((nominal / (1 + imperfections.clockError)).rounded())
    }

    var noiseSigma: Double { 0.2 / Double(samplesAveraged).squareRoot() * imperfections.field.noiseScale }

    public func advance(toNanoseconds t: UInt64) {
        guard t > lastTime else { return }
        lastTime = t
        if let due = singleDue, due <= t {
            singleDue = nil
            measure(at: due)
            regs[Int(Reg.mode)] = (regs[Int(Reg.mode)] & 0x80) | 0x03   // back to idle
        }
        guard continuous, t > anchor else { return }
        let kNow = (t - anchor) / period
        guard kNow > lastK else { return }
        if kNow - lastK > 64 { lastK = kNow - 64 }
        var k = lastK + 1
        while k <= kNow { measure(at: anchor &+ k &* period); k += 1 }
        lastK = kNow
    }

    /// One measurement landing at `ts` (dropped while LOCK is set).
    func measure(at ts: UInt64) {
        let gainCode = measuringGainCode
        measuringGainCode = regs[Int(Reg.crb)] >> 5
        guard !locked else { return }
        let world = truth.fieldTruth(atNanoseconds: ts, body: body)
        var b = fieldErr.apply(softIron * mounting.chip(fromBoard: world.magneticField), temperature: world.temperature)
        let sigma = noiseSigma
        for i in 0..<3 { b[i] += rng.gaussian(sigma: sigma) }
        let k = Self.gainLSBPerGauss[Int(gainCode)] / 100
        // Chip X, Y, Z into the register order X, Z, Y.
        for (slot, axis) in [0, 2, 1].enumerated() {
            let raw = (b[axis] * k).rounded()
            output[slot] = raw < -2048 || raw > 2047 ? -4096 : Int16(raw)
        }
        ready = true
        readMask = 0
    }

    func readRegister(_ r: UInt8, atNanoseconds t: UInt64) -> UInt8 {
        switch r {
        case Reg.dataFirst...Reg.dataLast:
            let i = Int(r - Reg.dataFirst)
            let v = UInt16(bitPattern: output[i / 2])
            readMask |= 1 << UInt8(i)
            ready = false
            if readMask == 0x3F { lockedByModeRead = false }
            return i % 2 == 0 ? UInt8(v >> 8) : UInt8(v & 0xFF)
        case Reg.status:
            return (ready ? 1 : 0) | (locked ? 2 : 0)
        case Reg.mode:
            lockedByModeRead = true
            readMask = 0
            return regs[Int(r)]
        case 0..<13:
            return regs[Int(r)]
        default:
            return 0
        }
    }

    func writeRegister(_ r: UInt8, _ v: UInt8, atNanoseconds t: UInt64) {
        switch r {
        case Reg.cra:
            let wasContinuous = continuous
            if wasContinuous { anchor &+= lastK &* period; lastK = 0 }
            regs[Int(r)] = v & 0x7F
            period = computePeriod()
            lockedByModeRead = false; readMask = 0
        case Reg.crb:
            regs[Int(r)] = v & 0xE0
        case Reg.mode:
            regs[Int(r)] = v & 0x83
            lockedByModeRead = false; readMask = 0
            singleDue = nil
            switch v & 3 {
            case 0: anchor = t; lastK = 0
            case 1: singleDue = t &+ Self.singleMeasurementNanoseconds
            default: break
            }
        default:
            return   // data, status and identification are read-only; others invalid
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

    public var roundTripTolerance: HMC5883LTolerance {
        let perAxis = 1 / countsPerMicrotesla + 3 * noiseSigma
        return HMC5883LTolerance(magneticField: mounting.boardFromChip.magnitudes * Vector3(repeating: perAxis))
    }
}
