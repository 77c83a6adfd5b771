import EdgeBus

/// A board profile (`boards/*.json5`): which bus, which chips at which
/// addresses, how each chip is mounted, and the data-ready GPIO line.
/// The schema is documented in `boards/README.md`.
public struct BoardProfile: Decodable, Sendable, Equatable {
    /// Display name, e.g. "Raspberry Pi 4 Model B + GY-521 + GY-BMP280 + GY-271".
    public var name: String
    public var description: String?
    public var bus: BusSelection
    public var chips: [ChipSpec]
    /// Simulated boards only: what the simulated chips play.
    public var simulation: SimulationSpec?
    /// `calibration_file`: the board's own calibration (relative to the
    /// profile's directory), used for each chip that the configuration's
    /// `calibration_file` has no calibration measured on (docs/calibration.md).
    public var calibrationFile: String?

    public enum BusSelection: Sendable, Equatable, Decodable, CustomStringConvertible {
        /// `/dev/i2c-N`.
        case linux(Int)
        /// The simulated bus (register-accurate chip models).
        case simulated

        public init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let n = try? c.decode(Double.self) {
                guard n.isFinite, n == n.rounded(), (0...255).contains(n) else {
                    throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected an I2C bus number, a whole number from 0 to 255 (1 on a Raspberry Pi's pins 3/5), got \(json5Number(n))")
                }
                self = .linux(Int(n))
            } else if let s = try? c.decode(String.self) {
                guard s == "simulated" else {
                    throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected a bus number (e.g. 1 for /dev/i2c-1) or \"simulated\", got \"\(s)\"")
                }
                self = .simulated
            } else {
                let found = (try? c.decode(Bool.self)).map { "\($0)" } ?? "a list or an object"
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected a bus number (e.g. 1 for /dev/i2c-1) or \"simulated\", got \(found)")
            }
        }

        public var description: String {
            switch self {
            case .linux(let n): return "/dev/i2c-\(n)"
            case .simulated: return "simulated"
            }
        }
    }

    public struct SimulationSpec: Decodable, Sendable, Equatable {
        /// Scenario file, relative to the profile's directory.
        public var scenario: String
        /// Overrides the scenario's seed.
        public var seed: UInt64?
        enum CodingKeys: String, CodingKey, CaseIterable { case scenario, seed }
        public init(scenario: String, seed: UInt64? = nil) { self.scenario = scenario; self.seed = seed }
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            guard let path = try c.decodePathIfPresent(.scenario, what: "a scenario file path") else {
                scenario = try c.decode(String.self, forKey: .scenario)    // throws keyNotFound
                return
            }
            scenario = path
            seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, description, bus, chips, simulation
        case calibrationFile = "calibration_file"
    }

    public init(name: String, description: String? = nil, bus: BusSelection, chips: [ChipSpec],
                simulation: SimulationSpec? = nil, calibrationFile: String? = nil) {
        self.name = name; self.description = description; self.bus = bus; self.chips = chips
        self.simulation = simulation; self.calibrationFile = calibrationFile
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        bus = try c.decode(BusSelection.self, forKey: .bus)
        chips = try c.decode([ChipSpec].self, forKey: .chips)
        simulation = try c.decodeIfPresent(SimulationSpec.self, forKey: .simulation)
        calibrationFile = try c.decodePathIfPresent(.calibrationFile, what: "a calibration file path")
        // Cross-field checks.
        var seen: [UInt8: Int] = [:]
        for (i, chip) in chips.enumerated() {
            if let j = seen[chip.address] {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: c.codingPath + [CodingKeys.chips, AnyKey(stringValue: "Index \(i)")],
                    debugDescription: "chips[\(j)] and chips[\(i)] both use address \(hex(chip.address)); each chip needs its own address"))
            }
            seen[chip.address] = i
        }
        for (i, chip) in chips.enumerated() {
            if let behind = chip.behind, !chips.contains(where: { $0.kind == .mpu6050 && $0.address == behind }) {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: c.codingPath + [CodingKeys.chips, AnyKey(stringValue: "Index \(i)"), ChipSpec.CodingKeys.behind],
                    debugDescription: "'behind' names \(hex(behind)), but no mpu6050 at that address is listed in chips"))
            }
        }
        if bus == .simulated && simulation == nil {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: c.codingPath + [CodingKeys.simulation],
                debugDescription: "a simulated board needs a 'simulation' object naming its scenario, e.g. simulation: { scenario: \"../scenarios/desk-idle.json5\" }"))
        }
        if bus != .simulated && simulation != nil {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: c.codingPath + [CodingKeys.simulation],
                debugDescription: "'simulation' applies only to bus: \"simulated\" (this board is on \(bus)); remove it"))
        }
        // The agent uses one chip of each kind and role (the first); a second
        // would be silently ignored, so it is an error here.
        if chips.isEmpty {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: c.codingPath + [CodingKeys.chips],
                debugDescription: "a board needs at least one chip, e.g. chips: [{ kind: \"mpu6050\", address: 0x68 }]"))
        }
        var first: [String: Int] = [:]
        for (i, chip) in chips.enumerated() {
            let here = c.codingPath + [CodingKeys.chips, AnyKey(stringValue: "Index \(i)")]
            if chip.role == .accessory && chip.kind != .mpu6050 {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: here + [ChipSpec.CodingKeys.role],
                    debugDescription: "only an mpu6050 can be an accessory (a second IMU on the head or a limb); remove role from this \(chip.kind.rawValue)"))
            }
            if chip.dataReady != nil && chip.role == .accessory {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: here + [ChipSpec.CodingKeys.dataReady],
                    debugDescription: "the loop wakes on the primary mpu6050's data-ready line only; move data_ready to the primary mpu6050"))
            }
            if chip.kind == .mpu6050, chip.behind == chip.address {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: here + [ChipSpec.CodingKeys.behind],
                    debugDescription: "a chip cannot be behind itself; 'behind' names the MPU-6050 whose auxiliary bus carries this chip"))
            }
            let slot = chip.kind == .mpu6050 ? "\(chip.role.rawValue) mpu6050" : chip.kind.rawValue
            if let j = first[slot] {
                let fix = chip.kind == .mpu6050 && chip.role == .primary
                    ? "mark it role: \"accessory\" if it is the second IMU, or remove it"
                    : "remove one of them"
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: here,
                    debugDescription: "chips[\(j)] is already the board's \(slot); the agent uses one of each, so chips[\(i)] would be ignored: \(fix)"))
            }
            first[slot] = i
        }
    }

    /// The first chip of a kind with the given role.
    public func chip(_ kind: ChipSpec.Kind, role: ChipSpec.Role = .primary) -> ChipSpec? {
        chips.first { $0.kind == kind && $0.role == role }
    }
}

/// One chip on a board.
public struct ChipSpec: Decodable, Sendable, Equatable {
    public enum Kind: String, Sendable, Decodable, CaseIterable {
        case mpu6050, bmp280, qmc5883l, ms5837, hmc5883l, bme280
        /// The addresses the chip can answer at.
        public var possibleAddresses: [UInt8] {
            switch self {
            case .mpu6050: return [0x68, 0x69]
            case .bmp280, .bme280: return [0x76, 0x77]
            case .qmc5883l: return [0x0D]
            case .hmc5883l: return [0x1E]
            case .ms5837: return [0x76]
            }
        }
    }
    /// `primary`: the board's own sensor. `accessory`: a second IMU worn on
    /// the head or a limb (Core Motion's headphone-motion API).
    public enum Role: String, Sendable, Decodable, CaseIterable { case primary, accessory }

    public var kind: Kind
    /// 7-bit address (JSON5 allows hex: `0x68`).
    public var address: UInt8
    public var role: Role
    /// Chip axes → board axes.
    public var mounting: Mounting
    /// MPU-6050 only: its INT pin's GPIO line.
    public var dataReady: DataReadySpec?
    /// Address of the MPU-6050 whose auxiliary bus this chip hangs off (GY-87
    /// boards): the MPU's I2C bypass must be enabled before this chip is seen.
    public var behind: UInt8?
    /// Optional label shown in tools.
    public var label: String?

    public struct DataReadySpec: Decodable, Sendable, Equatable {
        /// GPIO chip label as `gpiodetect` prints it (Pi 4: pinctrl-bcm2711,
        /// Pi 5: pinctrl-rp1, Pi Zero 2 W: pinctrl-bcm2835), or a /dev/gpiochipN path.
        public var chip: String
        /// Line offset on that chip (on a Pi's pinctrl chip: the BCM GPIO number).
        public var line: Int
        enum CodingKeys: String, CodingKey, CaseIterable { case chip, line }
        public init(chip: String, line: Int) { self.chip = chip; self.line = line }
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            chip = try c.decode(String.self, forKey: .chip)
            line = try c.decodeRequiredWholeNumber(.line, in: 0...1023, unit: "the line offset on the GPIO chip")
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, address, role, mounting, behind, label
        case dataReady = "data_ready"
    }

    public init(kind: Kind, address: UInt8, role: Role = .primary, mounting: Mounting = .identity,
                dataReady: DataReadySpec? = nil, behind: UInt8? = nil, label: String? = nil) {
        self.kind = kind; self.address = address; self.role = role; self.mounting = mounting
        self.dataReady = dataReady; self.behind = behind; self.label = label
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let kindName = try c.decode(String.self, forKey: .kind)
        guard let k = Kind(rawValue: kindName.lowercased()) else {
            throw DecodingError.dataCorruptedError(forKey: .kind, in: c,
                debugDescription: "unknown chip kind '\(kindName)'; supported: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        kind = k
        let a = try c.decode(Int.self, forKey: .address)
        guard let match = k.possibleAddresses.first(where: { Int($0) == a }) else {
            let shown = (0...255).contains(a) ? hex(UInt8(a)) : String(a)
            throw DecodingError.dataCorruptedError(forKey: .address, in: c,
                debugDescription: "a \(k.rawValue) answers only at \(k.possibleAddresses.map { hex($0) }.joined(separator: " or ")), got \(shown)")
        }
        address = match
        role = try c.decodeIfPresent(Role.self, forKey: .role) ?? .primary
        mounting = try c.decodeIfPresent(Mounting.self, forKey: .mounting) ?? .identity
        dataReady = try c.decodeIfPresent(DataReadySpec.self, forKey: .dataReady)
        if dataReady != nil && k != .mpu6050 {
            throw DecodingError.dataCorruptedError(forKey: .dataReady, in: c,
                debugDescription: "only an mpu6050 has a data-ready line in this project")
        }
        if let b = try c.decodeIfPresent(Int.self, forKey: .behind) {
            guard b == 0x68 || b == 0x69 else {
                throw DecodingError.dataCorruptedError(forKey: .behind, in: c,
                    debugDescription: "'behind' names the MPU-6050 whose auxiliary bus carries this chip: 0x68 or 0x69, got \((0...255).contains(b) ? hex(UInt8(b)) : String(b))")
            }
            behind = UInt8(b)
        } else {
            behind = nil
        }
        label = try c.decodeIfPresent(String.self, forKey: .label)
    }

    /// e.g. `mpu6050@0x68`.
    public var id: String { "\(kind.rawValue)@\(hex(address))" }
}
