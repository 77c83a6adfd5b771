import EdgeValues

/// The truth log written by `simulate --truth OUT`: one row per sample,
/// `t,qw,qx,qy,qz,altitude_m,depth_m,event`.
///
/// * `t`: simulation clock, s, exactly (9 decimals from the ns count);
/// * `qw…qz`: the board's sensor-to-earth attitude (earth X north, Y west,
///   Z up), 9 decimals, sign chosen so that qw ≥ 0;
/// * `altitude_m`, `depth_m`: 4 decimals (0.1 mm);
/// * `event`: active events joined by `;` (commas, quotes and line breaks
///   in names are replaced by spaces, so the field never needs quoting).
///
/// Formatting is fixed-point and locale-free, so the same scenario and
/// seed always give the same bytes.
public enum ScenarioTruthCSV {
    public static let header = "t,qw,qx,qy,qz,altitude_m,depth_m,event"

    /// One row, without a line terminator.
    public static func row(_ sample: TruthSample, events: [String]) -> String {
        var q = sample.attitude
        if q.w < 0 { q = Quaternion(w: -q.w, x: -q.x, y: -q.y, z: -q.z) }
        var out = seconds(sample.timeNanoseconds)
        for v in [q.w, q.x, q.y, q.z] { out += "," + fixed(v, decimals: 9) }
        out += "," + fixed(sample.altitudeMeters, decimals: 4)
        out += "," + fixed(sample.depthMeters, decimals: 4)
        out += "," + events.map(clean).joined(separator: ";")
        return out
    }

    /// The row for `world` at `t` ns (board attitude).
    public static func row(_ world: ScenarioWorld, atNanoseconds t: UInt64) -> String {
        row(world.sample(atNanoseconds: t, body: .board), events: world.activeEvents(atNanoseconds: t))
    }

    /// `ns` as seconds with 9 decimals.
    static func seconds(_ ns: UInt64) -> String {
        let frac = String(ns % 1_000_000_000)
        return String(ns / 1_000_000_000) + "." + String(repeating: "0", count: 9 - frac.count) + frac
    }

    /// `v` rounded half away from zero to `decimals` places, "-0" avoided.
    public static func fixed(_ v: Double, decimals: Int) -> String {
        guard v.isFinite else { return v.isNaN ? "nan" : (v > 0 ? "inf" : "-inf") }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(v) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9.0e18 else { return String(v) }
        let n = UInt64(scaled)
        let unit = UInt64(scale)
        var s = String(n / unit)
        if decimals > 0 {
            let frac = String(n % unit)
            s += "." + String(repeating: "0", count: decimals - frac.count) + frac
        }
        return (v < 0 && n != 0 ? "-" : "") + s
    }

    static func clean(_ name: String) -> String {
        String(name.map { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == ";" ? " " : $0 })
    }
}
