// A simulated board: chips from specs (data, e.g. from a board profile),
// wired onto one SimulatedBus.
import EdgeBus

/// Which imperfections a chip gets: a preset, or a chip-specific set.
/// JSON: `"realistic"`, `"ideal"`, or `{"mpu6050": {...}}` / `{"bmp280": {...}}`
/// / `{"qmc5883l": {...}}` / `{"hmc5883l": {...}}` (missing fields take the realistic defaults).
public enum ChipImperfections: Codable, Sendable, Equatable {
    case realistic
    case ideal
    case mpu6050(MPU6050Imperfections)
    case bmp280(BMP280Imperfections)
    case qmc5883l(QMC5883LImperfections)
    case ms5837(MS5837Imperfections)
    case hmc5883l(HMC5883LImperfections)

    enum Keys: String, CodingKey { case mpu6050, bmp280, qmc5883l, ms5837, hmc5883l }

    public init(from decoder: any Decoder) throws {
        if let s = try? decoder.singleValueContainer().decode(String.self) {
            switch s {
            case "realistic": self = .realistic
            case "ideal": self = .ideal
            default:
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "expected \"realistic\", \"ideal\" or an object keyed by chip kind, got \"\(s)\""))
            }
            return
        }
        let c = try decoder.container(keyedBy: Keys.self)
        if let v = try c.decodeIfPresent(MPU6050Imperfections.self, forKey: .mpu6050) { self = .mpu6050(v) }
        else if let v = try c.decodeIfPresent(BMP280Imperfections.self, forKey: .bmp280) { self = .bmp280(v) }
        else if let v = try c.decodeIfPresent(QMC5883LImperfections.self, forKey: .qmc5883l) { self = .qmc5883l(v) }
        else if let v = try c.decodeIfPresent(MS5837Imperfections.self, forKey: .ms5837) { self = .ms5837(v) }
        else if let v = try c.decodeIfPresent(HMC5883LImperfections.self, forKey: .hmc5883l) { self = .hmc5883l(v) }
        else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "imperfections object needs one key: mpu6050, bmp280, qmc5883l, hmc5883l or ms5837 (a bme280 takes bmp280's)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .realistic: var c = encoder.singleValueContainer(); try c.encode("realistic")
        case .ideal: var c = encoder.singleValueContainer(); try c.encode("ideal")
        case .mpu6050(let v): var c = encoder.container(keyedBy: Keys.self); try c.encode(v, forKey: .mpu6050)
        case .bmp280(let v): var c = encoder.container(keyedBy: Keys.self); try c.encode(v, forKey: .bmp280)
        case .qmc5883l(let v): var c = encoder.container(keyedBy: Keys.self); try c.encode(v, forKey: .qmc5883l)
        case .ms5837(let v): var c = encoder.container(keyedBy: Keys.self); try c.encode(v, forKey: .ms5837)
        case .hmc5883l(let v): var c = encoder.container(keyedBy: Keys.self); try c.encode(v, forKey: .hmc5883l)
        }
    }
}

/// One chip on a simulated board.
public struct SimulatedChipSpec: Codable, Sendable, Equatable {
    /// Chip kinds a simulated board can carry.
    public static let kinds = ["mpu6050", "bmp280", "qmc5883l", "hmc5883l", "qmc5883p", "ms5837", "bme280"]

    /// `mpu6050`, `bmp280`, `bme280`, `qmc5883l`, `hmc5883l`, `ms5837` or
    /// `qmc5883p` (the last identity-only).
    public var kind: String
    /// 7-bit I2C address.
    public var address: UInt8
    /// Mounting: rotation taking chip-frame vectors to the board frame
    /// (rows; a signed permutation or a rotation). The chip sees `boardFromChipᵀ · board`.
    public var boardFromChip: [[Double]]
    /// Which rigid body the chip sits on.
    public var body: SimBody
    /// Address of the MPU-6050 whose auxiliary bus this chip hangs on (GY-87);
    /// the chip answers only while that MPU's I2C bypass is on.
    public var behind: UInt8?
    /// Identity override: WHO_AM_I for an MPU-6050 (0x70, 0x72, 0x98 clones),
    /// chip ID for a BMP280 (0x60 plays a BME280).
    public var identity: UInt8?
    /// BMP280 calibration override (default: the data sheet example).
    public var calibration: BMP280Calibration?
    public var imperfections: ChipImperfections

    public init(kind: String, address: UInt8, boardFromChip: [[Double]] = SimMatrix3.identity.rows,
                body: SimBody = .board, behind: UInt8? = nil, identity: UInt8? = nil,
                calibration: BMP280Calibration? = nil, imperfections: ChipImperfections = .realistic) {
        self.kind = kind; self.address = address; self.boardFromChip = boardFromChip; self.body = body
        self.behind = behind; self.identity = identity; self.calibration = calibration
        self.imperfections = imperfections
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(String.self, forKey: .kind)
        address = try c.decode(UInt8.self, forKey: .address)
        boardFromChip = try c.decodeIfPresent([[Double]].self, forKey: .boardFromChip) ?? SimMatrix3.identity.rows
        body = try c.decodeIfPresent(SimBody.self, forKey: .body) ?? .board
        behind = try c.decodeIfPresent(UInt8.self, forKey: .behind)
        identity = try c.decodeIfPresent(UInt8.self, forKey: .identity)
        calibration = try c.decodeIfPresent(BMP280Calibration.self, forKey: .calibration)
        imperfections = try c.decodeIfPresent(ChipImperfections.self, forKey: .imperfections) ?? .realistic
    }

    /// The project's reference board: MPU-6050 0x68, BMP280 0x76, QMC5883L 0x0D, all axes aligned.
    public static func referenceBoard(_ imperfections: ChipImperfections = .realistic) -> [SimulatedChipSpec] {
        [SimulatedChipSpec(kind: "mpu6050", address: 0x68, imperfections: imperfections),
         SimulatedChipSpec(kind: "bmp280", address: 0x76, imperfections: imperfections),
         SimulatedChipSpec(kind: "qmc5883l", address: 0x0D, imperfections: imperfections)]
    }

    /// A GY-87: MPU-6050 0x68, BMP280 0x77 on the main bus, QMC5883L 0x0D behind the MPU.
    public static func gy87(_ imperfections: ChipImperfections = .realistic) -> [SimulatedChipSpec] {
        [SimulatedChipSpec(kind: "mpu6050", address: 0x68, imperfections: imperfections),
         SimulatedChipSpec(kind: "bmp280", address: 0x77, imperfections: imperfections),
         SimulatedChipSpec(kind: "qmc5883l", address: 0x0D, behind: 0x68, imperfections: imperfections)]
    }
}

/// A chip list that cannot be built, with which entry and why.
public struct SimulatedBoardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Index of the offending entry in the chip list.
    public var index: Int
    public var message: String
    public init(index: Int, message: String) { self.index = index; self.message = message }
    public var description: String { "simulated chip #\(index): \(message)" }
}

/// Simulated chips on one simulated bus, built from specs.
public final class SimulatedBoard: @unchecked Sendable {
    public let bus: SimulatedBus
    public let chips: [SimulatedChipSpec]

    /// - Parameters:
    ///   - chips: what sits where (see ``SimulatedChipSpec``).
    ///   - truth: the world every chip measures.
    ///   - clock: virtual in tests, monotonic live; every chip powers on now.
    ///   - seed: noise seed; each chip derives its own from it and its address and kind.
    ///   - faults: scheduled faults, times in seconds from now.
    public init(chips: [SimulatedChipSpec], truth: any TruthSource, clock: any TimeSource, seed: UInt64 = 0,
                faults: [ScheduledFault] = [], busName: String = "simulated") throws(SimulatedBoardError) {
        let now = clock.nowNanoseconds
        let bus = SimulatedBus(name: busName, clock: clock, startNanoseconds: now, faults: faults)
        var seen = Set<UInt8>()
        for (i, spec) in chips.enumerated() {
            func fail(_ m: String) -> SimulatedBoardError { SimulatedBoardError(index: i, message: m) }
            guard let kindIndex = SimulatedChipSpec.kinds.firstIndex(of: spec.kind) else {
                throw fail("unknown kind \"\(spec.kind)\"; expected one of \(SimulatedChipSpec.kinds.joined(separator: ", "))")
            }
            guard spec.address < 0x80 else { throw fail("address \(hex(spec.address)) is not a 7-bit address") }
            guard seen.insert(spec.address).inserted else { throw fail("address \(hex(spec.address)) is used twice") }
            guard let m = SimMatrix3(spec.boardFromChip) else { throw fail("boardFromChip must be 3 rows of 3 numbers") }
            guard m.isRotation(tolerance: 1e-6) else {
                throw fail("boardFromChip is not a rotation (orthonormal, determinant +1)")
            }
            if let g = spec.behind {
                guard chips.contains(where: { $0.address == g && $0.kind == "mpu6050" }) else {
                    throw fail("behind \(hex(g)): no mpu6050 at that address to provide the bypass")
                }
            }
            let mounting = Mounting(boardFromChip: m)
            let chipSeed = deriveSeed(seed, salt: UInt64(spec.address) | UInt64(kindIndex) << 8)
            let device: any SimulatedDevice
            switch spec.kind {
            case "mpu6050":
                let imp: MPU6050Imperfections
                switch spec.imperfections {
                case .realistic: imp = .realistic
                case .ideal: imp = .ideal
                case .mpu6050(let v): imp = v
                default: throw fail("imperfections are for another chip kind")
                }
                device = MPU6050Model(truth: truth, body: spec.body, mounting: mounting,
                                      variant: .forWhoAmI(spec.identity ?? 0x68), imperfections: imp,
                                      seed: chipSeed, powerOnAtNanoseconds: now)
            case "bmp280", "bme280":
                let imp: BMP280Imperfections
                switch spec.imperfections {
                case .realistic: imp = .realistic
                case .ideal: imp = .ideal
                case .bmp280(let v): imp = v
                default: throw fail("imperfections are for another chip kind")
                }
                device = BMP280Model(truth: truth, body: spec.body, variant: .forChipID(spec.identity ?? (spec.kind == "bme280" ? 0x60 : 0x58)),
                                     calibration: spec.calibration ?? .datasheetExample, imperfections: imp,
                                     seed: chipSeed, powerOnAtNanoseconds: now)
            case "qmc5883l":
                let imp: QMC5883LImperfections
                switch spec.imperfections {
                case .realistic: imp = .realistic
                case .ideal: imp = .ideal
                case .qmc5883l(let v): imp = v
                default: throw fail("imperfections are for another chip kind")
                }
                device = QMC5883LModel(truth: truth, body: spec.body, mounting: mounting, imperfections: imp,
                                       seed: chipSeed, powerOnAtNanoseconds: now)
            case "ms5837":
                let imp: MS5837Imperfections
                switch spec.imperfections {
                case .realistic: imp = .realistic
                case .ideal: imp = .ideal
                case .ms5837(let v): imp = v
                default: throw fail("imperfections are for another chip kind")
                }
                device = MS5837Model(truth: truth, body: spec.body, imperfections: imp, seed: chipSeed,
                                     powerOnAtNanoseconds: now)
            case "hmc5883l":
                let imp: HMC5883LImperfections
                switch spec.imperfections {
                case .realistic: imp = .realistic
                case .ideal: imp = .ideal
                case .hmc5883l(let v): imp = v
                default: throw fail("imperfections are for another chip kind")
                }
                device = HMC5883LModel(truth: truth, body: spec.body, mounting: mounting, imperfections: imp,
                                       seed: chipSeed, powerOnAtNanoseconds: now)
            default:
                device = IdentityOnlyDevice.qmc5883p()
            }
            bus.attach(device, at: spec.address, behind: spec.behind)
        }
        self.bus = bus
        self.chips = chips
    }

    /// The INT/DRDY pin of the chip at `address` (MPU-6050 INT, QMC5883L DRDY).
    public func dataReadyLine(forAddress address: UInt8) -> SimulatedDataReadyLine? {
        bus.dataReadyLine(forAddress: address)
    }

    /// The model at `address`, for tests and tolerances (`as? MPU6050Model` ...).
    public func device(at address: UInt8) -> (any SimulatedDevice)? { bus.device(at: address) }
    /// The MPU-6050 model at `address`, if that is what sits there.
    public func mpu6050(at address: UInt8) -> MPU6050Model? { bus.device(at: address) as? MPU6050Model }
    /// The BMP280 model at `address`, if that is what sits there.
    public func bmp280(at address: UInt8) -> BMP280Model? { bus.device(at: address) as? BMP280Model }
    /// The MS5837 model at `address`, if that is what sits there.
    public func ms5837(at address: UInt8) -> MS5837Model? { bus.device(at: address) as? MS5837Model }
    /// The QMC5883L model at `address`, if that is what sits there.
    public func qmc5883l(at address: UInt8) -> QMC5883LModel? { bus.device(at: address) as? QMC5883LModel }
    /// The HMC5883L model at `address`, if that is what sits there.
    public func hmc5883l(at address: UInt8) -> HMC5883LModel? { bus.device(at: address) as? HMC5883LModel }
}
