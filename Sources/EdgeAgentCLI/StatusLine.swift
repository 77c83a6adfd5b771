#if canImport(Glibc)
import Glibc
#endif
import CEdgeShims

/// `run`'s status line, the pure half: what it shows (``Values``) and how it
/// fits a width. Fields are dropped, least important first, until the line
/// fits; a field that alone is too wide is cut with `…`. No I/O, no clock.
enum StatusLine {
    /// The width when standard output is not a terminal (a log, a pipe):
    /// short enough for a 100-column viewer.
    static let defaultColumns = 100

    /// What the line shows. Angles in degrees, altitude in m, pressure in Pa.
    struct Values: Sendable, Equatable {
        var seconds = 0.0
        var rollDeg = 0.0, pitchDeg = 0.0, yawDeg = 0.0
        /// Relative altitude, m.
        var relativeAltitude = 0.0
        /// Pa (shown in hPa).
        var pressure = 0.0
        var clients = 0
        /// Loop lateness, 99th percentile, µs.
        var p99Microseconds: UInt64 = 0
        var overruns = 0
        /// Chips running uncalibrated that the line should name (empty: none).
        var uncalibrated: [String] = []
    }

    /// The fields, most important first. `compactNote`: the uncalibrated
    /// chips counted (`uncalibrated: 3 chips`) instead of named.
    static func fields(_ v: Values, compactNote: Bool = false) -> [String] {
        var f = ["t=\(fixed(v.seconds, 1)) s",
                 "roll \(fixed(v.rollDeg, 1))° pitch \(fixed(v.pitchDeg, 1))° yaw \(fixed(v.yawDeg, 1))°"]
        if !v.uncalibrated.isEmpty {
            f.append("uncalibrated: " + (compactNote ? "\(v.uncalibrated.count) chip\(v.uncalibrated.count == 1 ? "" : "s")"
                                                     : v.uncalibrated.joined(separator: ", ")))
        }
        f.append("altitude \(fixed(v.relativeAltitude, 2, sign: true)) m")
        f.append("\(fixed(v.pressure / 100, 2)) hPa")
        f.append("clients \(v.clients)")
        f.append("loop p99 \(v.p99Microseconds) µs")
        f.append("overruns \(v.overruns)")
        return f
    }

    /// The line, at most `columns` characters (Unicode scalars, as a
    /// terminal counts the `°` and `µ` here): the most important fields that
    /// fit. The time, the attitude and the uncalibrated note are kept (the
    /// note counts the chips when naming them does not fit); the rest go
    /// from the end. Only a line that is too wide even so is cut, with `…`.
    static func render(_ v: Values, columns: Int) -> String {
        let width = max(columns, 8)
        let kept = v.uncalibrated.isEmpty ? 2 : 3
        var line = ""
        for compact in [false, true] {
            var f = fields(v, compactNote: compact)
            while f.count > kept && f.joined(separator: "  ").unicodeScalars.count > width { f.removeLast() }
            line = f.joined(separator: "  ")
            if line.unicodeScalars.count <= width { return line }
        }
        return String(String.UnicodeScalarView(line.unicodeScalars.prefix(width - 1))) + "…"
    }

    /// The width to draw in: the terminal's columns less one (a line that
    /// fills the last column makes some terminals wrap) when `fd` is a
    /// terminal that reports its size, else ``defaultColumns``.
    static func columns(fd: Int32 = 1) -> Int {
        let n = edge_terminal_columns(fd)
        return n > 1 ? Int(n) - 1 : defaultColumns
    }
}
