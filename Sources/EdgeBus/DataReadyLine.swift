/// The one seam for GPIO: a line that signals "a new sample is ready"
/// (the MPU-6050 INT pin). libgpiod 1.6 is behind ``LibgpiodLine``; a 2.x
/// implementation, or a simulated line, conforms to the same protocol.
public protocol DataReadyLine: AnyObject {
    /// Waits for the next rising edge, at most `timeoutNanoseconds`.
    /// - Returns: the edge's timestamp (monotonic ns), or nil on timeout.
    func waitForEdge(timeoutNanoseconds: UInt64) throws(GPIOError) -> UInt64?
}

/// A failed GPIO operation, with what to do about it.
public struct GPIOError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// No gpiochip has that label.
        case chipNotFound
        /// The line offset is beyond the chip's lines.
        case lineNotFound
        /// The line is requested by another consumer.
        case lineBusy
        /// No permission on /dev/gpiochipN.
        case permissionDenied
        case io
    }
    public var kind: Kind
    public var errno: Int32
    /// Chip label or path.
    public var chip: String
    public var line: Int?
    public var operation: String

    public init(kind: Kind, errno: Int32, chip: String, line: Int? = nil, operation: String) {
        self.kind = kind; self.errno = errno; self.chip = chip; self.line = line; self.operation = operation
    }

    public var description: String {
        var s = "GPIO \(operation) failed on chip \"\(chip)\""
        if let l = line { s += " line \(l)" }
        if errno != 0 { s += " (errno \(errno))" }
        switch kind {
        case .chipNotFound:
            s += ": no GPIO chip has this label; `gpiodetect` lists the chips and their labels (Pi 4: pinctrl-bcm2711, Pi 5: pinctrl-rp1, Pi Zero 2 W / Pi 3: pinctrl-bcm2835)"
        case .lineNotFound:
            s += ": the chip has no such line; `gpioinfo` lists its lines"
        case .lineBusy:
            s += ": another program or a kernel driver holds the line; `gpioinfo` shows its consumer"
        case .permissionDenied:
            s += ": add the user to the `gpio` group or install deploy/99-edge-agent.rules"
        case .io:
            s += "."
        }
        return s
    }
}
