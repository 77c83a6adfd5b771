import EdgeValues

/// One row of a configuration table (PX4's `{register, set bits, clear bits}`):
/// after applying, the bits in `set` read 1 and the bits in `clear` read 0.
/// Bits in neither are left as they are (read-modify-write); when `set` and
/// `clear` cover all eight bits the register is written without reading.
///
/// Writing a field whose value is `00` means *clearing* its bits: a row lists
/// those bits in `clear`, never in `set` (the PX4 PR #14384 bug was writing
/// "00" values as set bits).
public struct RegisterSetting: Sendable, Equatable, CustomStringConvertible {
    public var register: UInt8
    public var set: UInt8
    public var clear: UInt8

    public init(register: UInt8, set: UInt8, clear: UInt8) {
        precondition(set & clear == 0, "a bit cannot be both set and cleared")
        self.register = register; self.set = set; self.clear = clear
    }

    /// A row that owns the whole register: it will read exactly `value`.
    public static func value(_ register: UInt8, _ value: UInt8) -> RegisterSetting {
        RegisterSetting(register: register, set: value, clear: ~value)
    }

    /// The bits this row decides.
    public var mask: UInt8 { self.set | self.clear }
    /// Whether the row decides all eight bits (so it can be written blind).
    public var ownsWholeRegister: Bool { mask == 0xFF }

    /// `current` with this row applied.
    public func applied(to current: UInt8) -> UInt8 { (current & ~clear) | set }
    /// Whether `value` satisfies this row.
    public func isSatisfied(by value: UInt8) -> Bool { value & mask == set }

    public var description: String { "\(hex(register)): set \(hex(set)) clear \(hex(clear))" }
}

/// An ordered configuration table: applied in order, and re-checked later.
public struct RegisterTable: Sendable, Equatable {
    public var settings: [RegisterSetting]
    public init(_ settings: [RegisterSetting]) { self.settings = settings }
}
