import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeProtocol

/// What the hub needs of a device, whatever its chip: its place on the
/// board, its health, its start, its upkeep (``SupervisedDevice`` does the
/// recovery), idling while no client wants it, and its rate for the
/// `devices` snapshot. One protocol per role refines it with the role's
/// reads (``MagnetometerUnit``, ``BarometerUnit``); ``ChipTable`` says which
/// device runs which chip.
///
/// Devices are value types held by the hub and mutated in place (through
/// the optional, never copied): nothing here allocates per tick.
protocol EngineUnit {
    var device: EngineDevice { get }
    var health: DeviceHealth { get }
    /// Configured and reading.
    var isUp: Bool { get }
    /// Output rate now, Hz (0 while it does not read).
    var rateHz: Double { get }
    /// Brings the chip up (blocking: before the loop starts); a chip that
    /// does not answer is marked missing and probed from the loop. One
    /// line for the start report.
    mutating func start(now: UInt64) -> String
    /// Probes a device that is down; re-checks a running one's
    /// configuration. True when its state changed.
    mutating func service(now: UInt64, events: inout [ConnectionEvent]) -> Bool
    /// Idles (standby) or wakes the chip. True when it changed.
    mutating func setIdle(_ idle: Bool, now: UInt64) -> Bool
}

/// A magnetometer: a calibrated field in the board frame, in µT, with its
/// capture time, when a new one is ready.
protocol MagnetometerUnit: EngineUnit {
    /// Its output period, ns.
    var periodNanoseconds: UInt64 { get }
    mutating func read(now: UInt64, calibration: MagnetometerCalibration?, loopPeriod: UInt64,
                       events: inout [ConnectionEvent]) -> (field: Vector3, at: UInt64)?
}

/// A barometer: a compensated conversion (pressure, temperature, and
/// relative humidity on chips that measure it) when a new one is due.
protocol BarometerUnit: EngineUnit {
    mutating func read(now: UInt64, events: inout [ConnectionEvent]) -> BarometerReading?
    /// Whether its conversions carry relative humidity (the `humidity` stream).
    var measuresHumidity: Bool { get }
}

extension MagnetometerDevice: MagnetometerUnit {
    var rateHz: Double { health.isReading ? configuration.outputRateHz : 0 }
}

extension BarometerDevice: BarometerUnit {
    var rateHz: Double { health.isReading && period > 0 ? 1e9 / Double(period) : 0 }
    var measuresHumidity: Bool { configuration.humidityEnabled }
}
