/// Health of a device as the engine sees it.
public enum DeviceState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Probed and delivering data.
    case present
    /// Configured but not answering (unplugged, or never found); the engine
    /// keeps probing it.
    case missing
    /// Answers, but cannot be brought up: the wrong chip at the address, or a
    /// configuration that does not hold after repeated re-initialisation. The
    /// engine keeps trying at the re-probe interval.
    case failed
    /// Present but not sampled because no client and no `alwaysOn` needs it.
    case idle
    /// Its data stopped or its reads fail (a stall, a reset chip, a
    /// configuration that no longer holds): no sample of it is being
    /// published, and the engine is re-initialising it. `reason` says why.
    case degraded

    /// Whether the device delivers (or, idle, could at once deliver) data:
    /// what a `connection` event's `connected` says.
    @inlinable public var isHealthy: Bool { self == .present || self == .idle }
}

/// One device of the board, as listed by a `devices` request.
public struct DeviceInfo: Sendable, Hashable, Codable {
    /// Stable identifier from the board profile, e.g. `imu`, `accessoryImu`, `baro`.
    public var id: String
    /// Chip, e.g. `mpu6050`, `qmc5883l`, `bmp280`.
    public var kind: String
    /// Where it sits, e.g. `/dev/i2c-1@0x68`, or `simulated`.
    public var address: String
    public var state: DeviceState
    /// Streams this device feeds.
    public var streams: [StreamName]
    /// Current sample rate, Hz (0 when idle).
    public var rateHz: Double
    /// Bus errors since the agent started.
    public var errorCount: Int
    /// Resets after repeated failures since the agent started.
    public var resetCount: Int
    /// Last error, human-readable, if any.
    public var lastError: String?
    /// Why the device is not `present` (nil when it is): what the engine saw
    /// and what it is doing about it.
    public var reason: String?
    /// Transfers that failed transiently and succeeded when retried.
    public var retryCount: Int
    /// Times its data stopped (no new sample for several expected periods)
    /// since the agent started.
    public var stallCount: Int
    /// `calibrated` or `uncalibrated` for a device that can be calibrated
    /// (IMU, magnetometer); nil for one that cannot (barometer, depth sensor).
    public var calibration: Calibration?
    /// Why an `uncalibrated` device runs without a calibration (e.g. the
    /// calibration file was measured on other chips); nil otherwise.
    public var calibrationNote: String?

    /// Whether a device runs with a calibration measured on it.
    public enum Calibration: String, Sendable, Hashable, Codable {
        case calibrated, uncalibrated
    }

    public init(id: String, kind: String, address: String, state: DeviceState,
                streams: [StreamName] = [], rateHz: Double = 0, errorCount: Int = 0,
                resetCount: Int = 0, lastError: String? = nil, reason: String? = nil,
                retryCount: Int = 0, stallCount: Int = 0, calibration: Calibration? = nil,
                calibrationNote: String? = nil) {
        self.id = id; self.kind = kind; self.address = address; self.state = state
        self.streams = streams; self.rateHz = rateHz; self.errorCount = errorCount
        self.resetCount = resetCount; self.lastError = lastError; self.reason = reason
        self.retryCount = retryCount; self.stallCount = stallCount
        self.calibration = calibration; self.calibrationNote = calibrationNote
    }
}

/// A device's health changed (`"class":"connection"`), sent to every client:
/// it stopped delivering (degraded, missing, failed) or delivers again.
public struct ConnectionEvent: Sendable, Hashable {
    /// CLOCK_MONOTONIC time of the change, ns.
    public var timestampNs: UInt64
    /// ``DeviceInfo/id`` of the device.
    public var deviceID: String
    /// ``DeviceInfo/kind`` of the device.
    public var kind: String
    /// true: the device delivers data again; false: it stopped (see `state`
    /// and `reason`). Always `state.isHealthy`.
    public var connected: Bool
    /// The state it changed to.
    public var state: DeviceState
    /// What happened, for people (nil when it delivers again).
    public var reason: String?
    public init(timestampNs: UInt64, deviceID: String, kind: String, state: DeviceState, reason: String? = nil) {
        self.timestampNs = timestampNs; self.deviceID = deviceID; self.kind = kind
        self.connected = state.isHealthy; self.state = state; self.reason = reason
    }
    /// An event that only says whether the device delivers (present or missing).
    public init(timestampNs: UInt64, deviceID: String, kind: String, connected: Bool) {
        self.init(timestampNs: timestampNs, deviceID: deviceID, kind: kind, state: connected ? .present : .missing)
    }
}
