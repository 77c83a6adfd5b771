#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// `edge-agent watch`, the pure half: what the watcher knows (``WatchState``)
// and how it is drawn (``WatchView``). No I/O, no clock: the same state always
// gives the same text, so the tests compare exact strings.

/// One device-motion reading as the watcher shows it (board or accessory IMU).
struct WatchMotion: Equatable, Sendable {
    /// CLOCK_MONOTONIC capture time, ns (`timestamp_ns`).
    var timestampNs: UInt64
    /// Attitude quaternion, scalar first (`attitude`).
    var w: Double, x: Double, y: Double, z: Double
    /// rad/s, board frame (`rotationRate_radps`).
    var rotationRate: (x: Double, y: Double, z: Double)
    /// m/s², gravity removed (`userAcceleration_mps2`).
    var userAcceleration: (x: Double, y: Double, z: Double)
    /// Degrees in [0, 360), nil when the reference frame has no north (`heading_deg`).
    var headingDeg: Double?
    /// `frame`, e.g. `xMagneticNorthZVertical`.
    var frame: String
    /// `magneticFieldAccuracy`: uncalibrated, low, medium, high.
    var magneticAccuracy: String

    init(timestampNs: UInt64, w: Double, x: Double, y: Double, z: Double,
         rotationRate: (x: Double, y: Double, z: Double) = (0, 0, 0),
         userAcceleration: (x: Double, y: Double, z: Double) = (0, 0, 0),
         headingDeg: Double? = nil, frame: String = "xArbitraryZVertical",
         magneticAccuracy: String = "uncalibrated") {
        self.timestampNs = timestampNs; self.w = w; self.x = x; self.y = y; self.z = z
        self.rotationRate = rotationRate; self.userAcceleration = userAcceleration
        self.headingDeg = headingDeg; self.frame = frame; self.magneticAccuracy = magneticAccuracy
    }

    static func == (a: WatchMotion, b: WatchMotion) -> Bool {
        a.timestampNs == b.timestampNs && a.w == b.w && a.x == b.x && a.y == b.y && a.z == b.z
            && a.rotationRate == b.rotationRate && a.userAcceleration == b.userAcceleration
            && a.headingDeg == b.headingDeg && a.frame == b.frame && a.magneticAccuracy == b.magneticAccuracy
    }

    // Core Motion's Euler angles, the same formulas as EdgeFusion's
    // `Attitude` (attitude = Rz(yaw)·Rx(pitch)·Ry(roll)): pitch about the
    // board's X axis in [−90°, 90°], roll about Y and yaw about Z in (−180°, 180°].
    // Positive roll lowers the right edge; positive pitch raises the forward edge.

    /// Degrees.
    var rollDeg: Double { atan2(2 * (w * y - x * z), 1 - 2 * (x * x + y * y)) * 180 / .pi }
    /// Degrees.
    var pitchDeg: Double { asin(max(-1, min(1, 2 * (y * z + w * x)))) * 180 / .pi }
    /// Degrees.
    var yawDeg: Double { atan2(2 * (w * z - x * y), 1 - 2 * (x * x + z * z)) * 180 / .pi }
}

/// Relative altitude (`altitude` stream).
struct WatchAltitude: Equatable, Sendable {
    var timestampNs: UInt64
    /// m since the agent's altimeter started (`relativeAltitude_m`).
    var relative: Double
    /// Pa (`pressure_pa`).
    var pressure: Double
    /// °C (`temperature_c`).
    var temperature: Double
}

/// Absolute altitude (`absoluteAltitude` stream).
struct WatchAbsoluteAltitude: Equatable, Sendable {
    var timestampNs: UInt64
    /// m above mean sea level (`altitude_m`).
    var altitude: Double
    /// m, 1σ (`accuracy_m`).
    var accuracy: Double
    /// m (`precision_m`).
    var precision: Double
}

/// One row of a `devices` reply.
struct WatchDevice: Equatable, Sendable {
    var id: String
    var kind: String
    /// present, idle, degraded, missing, failed (or whatever a newer agent sends).
    var state: String
    var errorCount: Int
    var resetCount: Int
    var lastError: String?
    /// Streams the device feeds (to spot an accessory IMU).
    var streams: [String] = []
    /// Why it is not `present` (degraded, missing, failed), as the agent says.
    var reason: String? = nil
    /// Transfers that failed once and succeeded when retried.
    var retryCount: Int = 0
    /// Times its data stopped (stall watchdog).
    var stallCount: Int = 0
    /// `calibrated`, `uncalibrated` (nil: nothing to calibrate, or an older agent).
    var calibration: String? = nil
    /// Why it runs uncalibrated, as the agent says.
    var calibrationNote: String? = nil
}

/// What became of a subscription the watcher asked for.
enum WatchStreamStatus: Equatable, Sendable {
    /// Requested, no reply yet.
    case requested
    /// `subscribed` arrived.
    case subscribed
    /// `notEntitled`: the client lacks this entitlement.
    case notEntitled(String)
    /// Any other error (e.g. an older agent without the stream).
    case failed(String)
}

/// Everything the watcher shows, built from the agent's messages.
struct WatchState: Equatable, Sendable {
    var socketPath: String
    /// How the socket was chosen, when not given with --socket (e.g.
    /// "service.socket_path of config/edge-agent.json5").
    var socketSource: String?
    /// `agent agentVersion`, from the version line.
    var agent: String = ""
    var protocolVersion: Int = 0
    var motion: WatchMotion?
    var accessory: WatchMotion?
    /// The agent lists a device feeding `accessoryMotion`.
    var accessoryConfigured = false
    /// From the last `connection` event for the accessory IMU (nil: none seen).
    var accessoryConnected: Bool?
    var altitude: WatchAltitude?
    var absoluteAltitude: WatchAbsoluteAltitude?
    var devices: [WatchDevice] = []
    /// Per requested stream.
    var streams: [String: WatchStreamStatus] = [:]
    /// This connection's lines dropped by the agent because we read too slowly (`stats`).
    var dropped: Int?
    /// deviceMotion samples per second, from capture timestamps (nil until two arrive).
    var motionRateHz: Double?
    /// Updates drawn so far (including the one being drawn).
    var updates = 0

    init(socketPath: String) { self.socketPath = socketPath }
}

/// Renders a ``WatchState``: a full-screen view for terminals and one plain
/// `key=value` line per update for pipes and logs.
enum WatchView {
    // MARK: level indicator

    /// Inner size of the bubble level, characters. 13 × 7 with 3° per column
    /// and 6° per row: terminal cells are about twice as tall as wide, so a
    /// tilt moves the bubble the same distance on screen either way.
    static let levelColumns = 13, levelRows = 7
    static let degreesPerColumn = 3.0, degreesPerRow = 6.0
    /// Tilt at which the bubble reaches the rim (and stays there), degrees.
    static var levelFullScaleDeg: Double { degreesPerColumn * Double(levelColumns / 2) }

    /// Where the bubble sits, (column, row) from the top-left of the inner
    /// grid. Like a real bubble level the bubble floats to the high side:
    /// positive roll (right edge down) moves it left, positive pitch
    /// (forward edge up) moves it up (forward is the top of the screen).
    /// Beyond ±18° it stays on the rim.
    static func bubblePosition(rollDeg: Double, pitchDeg: Double) -> (column: Int, row: Int) {
        let cx = levelColumns / 2, cy = levelRows / 2
        func steps(_ v: Double, _ per: Double, _ limit: Int) -> Int {
            guard v.isFinite else { return 0 }
            let s = (v / per).rounded(.toNearestOrAwayFromZero)
            return Int(max(Double(-limit), min(Double(limit), s)))
        }
        return (cx - steps(rollDeg, degreesPerColumn, cx), cy - steps(pitchDeg, degreesPerRow, cy))
    }

    /// The bubble level, boxed: `levelRows + 2` lines of `levelColumns + 2`
    /// characters. Cross hairs mark level; `O` is the bubble (`?` when there
    /// is no attitude yet, drawn nowhere).
    static func levelIndicator(rollDeg: Double?, pitchDeg: Double?) -> [String] {
        let cx = levelColumns / 2, cy = levelRows / 2
        let bubble = rollDeg.flatMap { r in pitchDeg.map { p in bubblePosition(rollDeg: r, pitchDeg: p) } }
        let rim = "+" + String(repeating: "-", count: levelColumns) + "+"
        var lines = [rim]
        for row in 0..<levelRows {
            var s = "|"
            for col in 0..<levelColumns {
                if let b = bubble, b.column == col, b.row == row { s += "O" }
                else if row == cy && col == cx { s += "+" }
                else if row == cy { s += "-" }
                else if col == cx { s += "|" }
                else { s += " " }
            }
            lines.append(s + "|")
        }
        lines.append(rim)
        return lines
    }

    // MARK: full view

    /// Width of the attitude column left of the level indicator.
    static let attitudeWidth = 40

    /// The full-screen view, lines joined by `\n` (no escapes, no trailing newline).
    static func render(_ s: WatchState) -> String {
        var out: [String] = []
        let agent = s.agent.isEmpty ? "" : "  \(s.agent), protocol \(s.protocolVersion)"
        out.append("edge-agent watch  \(s.socketPath)\(agent)")
        if let source = s.socketSource { out.append("  socket from " + source) }
        let rate = s.motionRateHz.map { fixed($0, 1) + " Hz" } ?? "-"
        let dropped = s.dropped.map(String.init) ?? "-"
        out.append("deviceMotion \(rate)  updates \(s.updates)  dropped \(dropped)")
        out.append("")

        // Attitude beside the level.
        var left = ["Attitude"]
        if let m = s.motion {
            left.append("  roll    " + lpad(fixed(m.rollDeg, 1, sign: true), 7) + "°")
            left.append("  pitch   " + lpad(fixed(m.pitchDeg, 1, sign: true), 7) + "°")
            left.append("  yaw     " + lpad(fixed(m.yawDeg, 1, sign: true), 7) + "°")
            left.append("  heading " + (m.headingDeg.map { lpad(fixed($0, 1), 7) + "°" } ?? "      - (no north)"))
            left.append("  frame   " + m.frame)
            left.append("  field   " + m.magneticAccuracy)
        } else {
            left.append("  " + streamNote(s, "deviceMotion", waiting: "waiting for deviceMotion"))
        }
        let level = levelIndicator(rollDeg: s.motion?.rollDeg, pitchDeg: s.motion?.pitchDeg)
        for i in 0..<max(left.count, level.count) {
            let l = i < left.count ? left[i] : ""
            let r = i < level.count ? level[i] : ""
            out.append(trimRight(rpad(l, attitudeWidth) + r))
        }

        if let m = s.motion {
            out.append("Rotation rate  " + vector(m.rotationRate, 3, width: 7) + "  rad/s")
            out.append("User accel.    " + vector(m.userAcceleration, 3, width: 7) + "  m/s²")
        }
        if let a = s.altitude {
            // hPa, as `edge-agent run`'s status line (plain lines keep the wire's Pa).
            out.append("Altitude       relative " + fixed(a.relative, 2, sign: true) + " m  pressure "
                       + fixed(a.pressure / 100, 2) + " hPa  " + fixed(a.temperature, 1) + " °C")
        } else {
            out.append("Altitude       " + streamNote(s, "altitude", waiting: "waiting for samples"))
        }
        if let a = s.absoluteAltitude {
            out.append("Absolute       " + fixed(a.altitude, 1) + " m ±" + fixed(a.accuracy, 1)
                       + " m  precision " + fixed(a.precision, 2) + " m")
        } else {
            out.append("Absolute       " + streamNote(s, "absoluteAltitude", waiting: "waiting for samples"))
        }
        if s.accessoryConfigured {
            if s.accessoryConnected == false {
                out.append("Accessory      not connected")
            } else if let a = s.accessory {
                out.append("Accessory      roll " + fixed(a.rollDeg, 1, sign: true) + "°  pitch "
                           + fixed(a.pitchDeg, 1, sign: true) + "°  yaw " + fixed(a.yawDeg, 1, sign: true) + "°")
            } else {
                out.append("Accessory      " + streamNote(s, "accessoryMotion", waiting: "waiting for samples"))
            }
        }

        out.append("")
        out.append("Devices")
        if s.devices.isEmpty { out.append("  (none reported)") }
        let idWidth = s.devices.map(\.id.count).max() ?? 0
        let kindWidth = s.devices.map(\.kind.count).max() ?? 0
        let stateWidth = max(7, s.devices.map(\.state.count).max() ?? 0)
        for d in s.devices {
            var row = "  " + rpad(d.id, idWidth) + "  " + rpad(d.kind, kindWidth) + "  " + rpad(d.state, stateWidth)
                + "  errors " + rpad(String(d.errorCount), 4) + " resets " + String(d.resetCount)
            if d.retryCount > 0 || d.stallCount > 0 { row += "  retries \(d.retryCount)  stalls \(d.stallCount)" }
            if d.calibration == "uncalibrated" { row += "  UNCALIBRATED" }
            out.append(row)
            if d.calibration == "uncalibrated", let n = d.calibrationNote { out.append("    uncalibrated: " + truncate(n, 100)) }
            if let r = d.reason, d.state != "present" { out.append("    why: " + truncate(r, 70)) }
            if let e = d.lastError { out.append("    last error: " + truncate(e, 60)) }
        }
        return out.joined(separator: "\n")
    }

    /// What to show for a stream that has no sample: why, or that we wait.
    static func streamNote(_ s: WatchState, _ stream: String, waiting: String) -> String {
        switch s.streams[stream] {
        case .notEntitled(let e)?: return "not entitled (needs \"\(e)\")"
        case .failed(let m)?: return "unavailable: \(m)"
        case nil: return "not subscribed"
        default: return waiting
        }
    }

    // MARK: plain lines

    /// One `key=value` line (keys carry units, as on the wire), for pipes and
    /// logs. Groups without data are left out.
    static func plainLine(_ s: WatchState) -> String {
        var f: [String] = []
        if let m = s.motion {
            f.append("t_s=" + fixed(Double(m.timestampNs) / 1e9, 3))
            f.append("roll_deg=" + fixed(m.rollDeg, 1, sign: true))
            f.append("pitch_deg=" + fixed(m.pitchDeg, 1, sign: true))
            f.append("yaw_deg=" + fixed(m.yawDeg, 1, sign: true))
            f.append("heading_deg=" + (m.headingDeg.map { fixed($0, 1) } ?? "-"))
            f.append("magneticFieldAccuracy=" + m.magneticAccuracy)
            f.append("rotationRate_radps=" + csv(m.rotationRate, 3))
            f.append("userAcceleration_mps2=" + csv(m.userAcceleration, 3))
        }
        if let a = s.altitude {
            f.append("relativeAltitude_m=" + fixed(a.relative, 2, sign: true))
            f.append("pressure_pa=" + fixed(a.pressure, 1))
        }
        if let a = s.absoluteAltitude {
            f.append("altitude_m=" + fixed(a.altitude, 1))
            f.append("accuracy_m=" + fixed(a.accuracy, 1))
        }
        if s.accessoryConfigured {
            if s.accessoryConnected == false {
                f.append("accessory=disconnected")
            } else if let a = s.accessory {
                f.append("accessory_roll_deg=" + fixed(a.rollDeg, 1, sign: true))
                f.append("accessory_pitch_deg=" + fixed(a.pitchDeg, 1, sign: true))
                f.append("accessory_yaw_deg=" + fixed(a.yawDeg, 1, sign: true))
            }
        }
        if !s.devices.isEmpty {
            f.append("devices=" + s.devices.map { "\($0.id):\($0.state):\($0.errorCount)" }.joined(separator: ","))
            let uncalibrated = s.devices.filter { $0.calibration == "uncalibrated" }.map(\.id)
            if !uncalibrated.isEmpty { f.append("uncalibrated=" + uncalibrated.joined(separator: ",")) }
        }
        f.append("dropped=" + (s.dropped.map(String.init) ?? "-"))
        f.append("rate_hz=" + (s.motionRateHz.map { fixed($0, 1) } ?? "-"))
        return f.joined(separator: " ")
    }

    // MARK: terminal escapes

    static let hideCursor = "\u{1B}[?25l"
    static let showCursor = "\u{1B}[?25h"
    static let home = "\u{1B}[H"
    static let clearScreen = "\u{1B}[2J"
    static let clearToEndOfLine = "\u{1B}[K"
    static let clearToEnd = "\u{1B}[J"

    /// A frame redrawn in place: cursor home, each line cleared to its end,
    /// the rest of the screen cleared. The first frame also hides the cursor
    /// and clears the screen.
    static func terminalFrame(_ view: String, first: Bool) -> String {
        var s = first ? hideCursor + home + clearScreen : home
        for line in view.split(separator: "\n", omittingEmptySubsequences: false) {
            s += line + clearToEndOfLine + "\n"
        }
        return s + clearToEnd
    }

    /// What restores the terminal when the watcher exits: the cursor again.
    static let terminalRestore = showCursor

    // MARK: number formatting (no Foundation: `String(format:)` needs ICU)


    static func vector(_ v: (x: Double, y: Double, z: Double), _ decimals: Int, width: Int) -> String {
        "x " + lpad(fixed(v.x, decimals, sign: true), width) + "  y " + lpad(fixed(v.y, decimals, sign: true), width)
            + "  z " + lpad(fixed(v.z, decimals, sign: true), width)
    }

    static func csv(_ v: (x: Double, y: Double, z: Double), _ decimals: Int) -> String {
        fixed(v.x, decimals, sign: true) + "," + fixed(v.y, decimals, sign: true) + "," + fixed(v.z, decimals, sign: true)
    }

    static func lpad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }

    static func rpad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }

    static func trimRight(_ s: String) -> String {
        var t = Substring(s)
        while t.last == " " { t = t.dropLast() }
        return String(t)
    }

    static func truncate(_ s: String, _ max: Int) -> String {
        s.count <= max ? s : String(s.prefix(max - 1)) + "…"
    }
}
