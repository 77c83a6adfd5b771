/// Health of a device as the engine sees it.
public enum DeviceState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Probed and delivering data.
    case present
    /// Configured but not answering (unplugged, or never found); the engine
    /// keeps probing it.
    case missing
    /// Answering, but failing reads or configuration beyond the retry budget.
    case failed
    /// Present but not sampled because no client and no `alwaysOn` needs it.
    case idle
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

    public init(id: String, kind: String, address: String, state: DeviceState,
                streams: [StreamName] = [], rateHz: Double = 0, errorCount: Int = 0,
                resetCount: Int = 0, lastError: String? = nil) {
        self.id = id; self.kind = kind; self.address = address; self.state = state
        self.streams = streams; self.rateHz = rateHz; self.errorCount = errorCount
        self.resetCount = resetCount; self.lastError = lastError
    }
}

/// A device appeared or disappeared (`"class":"connection"`), sent to every client.
public struct ConnectionEvent: Sendable, Hashable {
    /// CLOCK_MONOTONIC time of the change, ns.
    public var timestampNs: UInt64
    /// ``DeviceInfo/id`` of the device.
    public var deviceID: String
    /// ``DeviceInfo/kind`` of the device.
    public var kind: String
    /// true: the device answers again; false: it stopped answering.
    public var connected: Bool
    public init(timestampNs: UInt64, deviceID: String, kind: String, connected: Bool) {
        self.timestampNs = timestampNs; self.deviceID = deviceID; self.kind = kind; self.connected = connected
    }
}
