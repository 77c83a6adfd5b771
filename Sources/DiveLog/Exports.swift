#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
// Dive exports: Subsurface XML, UDDF 3.2, CSV; and an SVG profile.

func num(_ v: Double, _ digits: Int) -> String {
    guard v.isFinite else { return "" }
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (v * p).rounded() / p
    var s = String(r.isFinite ? r : v)   // 1e308 × 100 overflows: the value as it is
    if s.hasSuffix(".0") && digits == 0 { s.removeLast(2) }
    return s
}

func xmlEscape(_ s: String) -> String {
    var o = ""
    for c in s {
        switch c {
        case "&": o += "&amp;"
        case "<": o += "&lt;"
        case ">": o += "&gt;"
        case "\"": o += "&quot;"
        case "'": o += "&apos;"
        default: o.append(c)
        }
    }
    return o
}

/// Water density for the exports, kg/m³, from the log's water name.
func density(_ water: String) -> Double {
    switch water {
    case "fresh": 997
    case "en13319": 1019.716
    case "salt", "teos10": 1025
    default: Double(water) ?? 1025
    }
}

/// The time zone an export writes local times in.
public enum ExportZone: Sendable, Equatable {
    /// UTC (offset 0).
    case utc
    /// A fixed offset east of UTC, s (`--utc-offset +02:00`).
    case fixed(seconds: Int64)
    /// This machine's zone (TZ, else /etc/localtime), with its daylight
    /// saving, at the instant in question (glibc `localtime_r`, `tm_gmtoff`).
    case local

    /// Seconds east of UTC at Unix time `t`.
    public func offsetSeconds(at t: Int64) -> Int64 {
        switch self {
        case .utc: return 0
        case .fixed(let s): return s
        case .local:
            tzset()
            var tt = time_t(t), tm = tm()
            guard localtime_r(&tt, &tm) != nil else { return 0 }
            return Int64(tm.tm_gmtoff)
        }
    }

    /// `+HH:MM`, `-HH:MM`, `+HHMM`, `+HH` or `Z` (−14:00 … +14:00); nil otherwise.
    public static func parseOffset(_ s: String) -> ExportZone? {
        if s == "Z" || s == "z" { return .fixed(seconds: 0) }
        let c = Array(s.utf8)
        guard c.count >= 3, c[0] == UInt8(ascii: "+") || c[0] == UInt8(ascii: "-") else { return nil }
        var digits = Array(c.dropFirst())
        if digits.count == 5 {
            guard digits[2] == UInt8(ascii: ":") else { return nil }
            digits.remove(at: 2)
        }
        guard digits.count == 2 || digits.count == 4,
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        let v = digits.map { Int64($0 - UInt8(ascii: "0")) }
        let h = v[0] * 10 + v[1], m = v.count == 4 ? v[2] * 10 + v[3] : 0
        guard m < 60, h * 60 + m <= 14 * 60 else { return nil }
        return .fixed(seconds: (c[0] == UInt8(ascii: "-") ? -1 : 1) * (h * 3600 + m * 60))
    }
}

public enum DiveExport {
    /// `m:ss` as Subsurface writes durations and sample times.
    static func minutes(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e12 else { return "? min" }
        let s = Int(seconds.rounded())
        let ss = s % 60
        return "\(s / 60):\(ss < 10 ? "0" : "")\(ss) min"
    }

    /// Subsurface's native XML (divelog program='subsurface' version='3'):
    /// dive date/time, duration, max/mean depth, water temperature, surface
    /// pressure, salinity, and one sample per logged second (time, depth,
    /// temperature).
    ///
    /// Time of day: Subsurface keeps a dive's `when` as the local wall-clock
    /// time of the dive, counted as if it were UTC (subsurface/subsurface
    /// core/save-xml.cpp `save_dive`: `utc_mkdate(dive->when)` gives the
    /// `date` and `time` attributes; core/divesite.c makes `when` from
    /// `utc_mktime(localtime(&now))`), and the XML has no zone. So the
    /// start is written in `zone`: the offset east of UTC, s, that applies
    /// at the dive's start (``ExportZone``).
    ///
    /// Sample times are whole seconds (`m:ss min`, Subsurface's
    /// `duration_t` is in seconds) and strictly increasing: a logged point
    /// whose rounded second is already written is left out (points are
    /// logged at ≈ 1 s, so at most one a second is dropped this way; the
    /// gap is then under 2 s).
    public static func subsurface(_ r: DiveStore.DiveRecord, _ sum: DiveSummary, _ samples: [DiveSample],
                                  zone: ExportZone = .utc) -> String {
        let startSeconds = r.startUnixNanoseconds / 1_000_000_000
        let (y, mo, d, hh, mi, ss) = UTCTime.civil(startSeconds + zone.offsetSeconds(at: startSeconds))
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var o = "<divelog program='subsurface' version='3'>\n<settings><divecomputerid model='edge-motion dive-logger' deviceid='00000001'/></settings>\n<dives>\n"
        o += "<dive number='\(r.number)' date='\(y)-\(two(mo))-\(two(d))' time='\(two(hh)):\(two(mi)):\(two(ss))' duration='\(minutes(sum.durationSeconds))'>\n"
        o += "  <divecomputer model='edge-motion dive-logger'>\n"
        o += "  <depth max='\(num(sum.maxDepth, 2)) m' mean='\(num(sum.meanDepth, 2)) m' />\n"
        if sum.minTemperature.isFinite { o += "  <temperature water='\(num(sum.minTemperature, 1)) C' />\n" }
        o += "  <surface pressure='\(num(r.surfacePressure / 1e5, 4)) bar' />\n"
        o += "  <water salinity='\(num(density(r.water), 1)) g/l' />\n"
        var lastSecond = Int.min
        for s in samples where s.depth.isFinite {
            guard s.time.isFinite, abs(s.time) < 1e12 else { continue }
            let second = Int(s.time.rounded())
            guard second > lastSecond else { continue }
            lastSecond = second
            var line = "  <sample time='\(minutes(s.time))' depth='\(num(s.depth, 2)) m'"
            if s.temperature.isFinite { line += " temp='\(num(s.temperature, 1)) C'" }
            o += line + " />\n"
        }
        o += "  </divecomputer>\n</dive>\n</dives>\n</divelog>\n"
        return o
    }

    /// UDDF 3.2 (Universal Dive Data Format, http://www.streit.cc/uddf/3.2/):
    /// SI units throughout - depth m, time s, temperature K, pressure Pa,
    /// density kg/m³.
    public static func uddf(_ r: DiveStore.DiveRecord, _ sum: DiveSummary, _ samples: [DiveSample]) -> String {
        let start = UTCTime.format(unixSeconds: r.startUnixNanoseconds / 1_000_000_000)
        var o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        o += "<uddf xmlns=\"http://www.streit.cc/uddf/3.2/\" version=\"3.2.0\">\n"
        o += "  <generator><name>dive-logger</name><manufacturer id=\"edgemotion\"><name>EdgeMotion</name></manufacturer><version>1</version><datetime>\(start)</datetime></generator>\n"
        o += "  <profiledata>\n    <repetitiongroup id=\"rg\(r.number)\">\n      <dive id=\"dive\(r.number)\">\n"
        o += "        <informationbeforedive><divenumber>\(r.number)</divenumber><datetime>\(start)</datetime><surfacepressure>\(num(r.surfacePressure, 1))</surfacepressure></informationbeforedive>\n"
        o += "        <samples>\n"
        for s in samples where s.depth.isFinite {
            var w = "          <waypoint><depth>\(num(s.depth, 3))</depth><divetime>\(num(s.time, 1))</divetime>"
            if s.temperature.isFinite { w += "<temperature>\(num(s.temperature + 273.15, 2))</temperature>" }
            if s.ascentWarning { w += "<alarm>ascent</alarm>" }
            o += w + "</waypoint>\n"
        }
        o += "        </samples>\n"
        o += "        <informationafterdive><greatestdepth>\(num(sum.maxDepth, 3))</greatestdepth><averagedepth>\(num(sum.meanDepth, 3))</averagedepth><diveduration>\(num(sum.durationSeconds, 0))</diveduration>"
        if sum.minTemperature.isFinite { o += "<lowesttemperature>\(num(sum.minTemperature + 273.15, 2))</lowesttemperature>" }
        o += "</informationafterdive>\n      </dive>\n    </repetitiongroup>\n  </profiledata>\n</uddf>\n"
        return o
    }

    /// One row per logged point.
    public static func csv(_ samples: [DiveSample]) -> String {
        var o = "time_s,depth_m,temperature_c,pressure_pa,ascent_rate_m_per_min,ascent_warning\n"
        for s in samples {
            o += "\(num(s.time, 3)),\(num(s.depth, 3)),\(num(s.temperature, 2)),\(num(s.pressure, 1)),\(num(s.ascentRate, 2)),\(s.ascentWarning ? 1 : 0)\n"
        }
        return o
    }

    /// An SVG depth and temperature profile: depth axis downward, time
    /// across, temperature on the right axis, ascent-rate warnings in red,
    /// the safety-stop band shaded.
    public static func svg(_ r: DiveStore.DiveRecord, _ sum: DiveSummary, _ samples: [DiveSample]) -> String {
        let w = 900.0, h = 480.0, left = 70.0, right = 70.0, top = 50.0, bottom = 50.0
        let pw = w - left - right, ph = h - top - bottom
        // Axes from the data, on "nice" steps, at most ~10 grid lines each:
        // the plot's size does not grow with the values (a stored depth of
        // 1e9 m draws 11 lines, not 2e8).
        let duration = sum.durationSeconds.isFinite ? sum.durationSeconds : 60
        let tMax = min(max(60, duration), 1e9)
        let maxDepth = sum.maxDepth.isFinite ? min(max(sum.maxDepth, 0), 1e9) : 5
        let dStep = max(1, niceStep(maxDepth, lines: 10))
        let dMax = max(5, (maxDepth / dStep).rounded(.up) * dStep)
        let temps = samples.map(\.temperature).filter { $0.isFinite && abs($0) < 1e6 }
        let tLo = ((temps.min() ?? 0) - 1).rounded(.down), tHi = ((temps.max() ?? 1) + 1).rounded(.up)
        /// Coordinates stay on the drawing (a value far off the axes is drawn at its edge).
        func clampX(_ v: Double) -> Double { v.isFinite ? min(max(v, left), left + pw) : left }
        func clampY(_ v: Double) -> Double { v.isFinite ? min(max(v, top), top + ph) : top }
        func x(_ t: Double) -> Double { clampX(left + t / tMax * pw) }
        func y(_ d: Double) -> Double { clampY(top + d / dMax * ph) }
        func yT(_ c: Double) -> Double { clampY(top + (tHi - c) / max(1, tHi - tLo) * ph) }
        var o = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" viewBox=\"0 0 \(Int(w)) \(Int(h))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        let start = UTCTime.format(unixSeconds: r.startUnixNanoseconds / 1_000_000_000)
        o += "<text x=\"\(left)\" y=\"22\" font-size=\"16\" font-weight=\"bold\">Dive \(r.number) — \(start) — max \(num(sum.maxDepth, 1)) m, \(minutes(sum.durationSeconds)), min \(num(sum.minTemperature, 1)) °C</text>\n"
        // Safety-stop band (its label is drawn last, over the profile) and grid.
        o += "<rect x=\"\(left)\" y=\"\(y(3))\" width=\"\(pw)\" height=\"\(y(6) - y(3))\" fill=\"#e6f4ea\"/>\n"
        for i in 0...Int((dMax / dStep).rounded()) {
            let d = Double(i) * dStep
            o += "<line x1=\"\(left)\" y1=\"\(y(d))\" x2=\"\(left + pw)\" y2=\"\(y(d))\" stroke=\"#ddd\"/>"
            o += "<text x=\"\(left - 8)\" y=\"\(y(d) + 4)\" text-anchor=\"end\">\(num(d, 0)) m</text>\n"
        }
        let step = max(60, niceStep(tMax / 60, lines: 8) * 60)
        for i in 0...Int((tMax / step).rounded(.down)) {
            let t = Double(i) * step
            o += "<line x1=\"\(x(t))\" y1=\"\(top)\" x2=\"\(x(t))\" y2=\"\(top + ph)\" stroke=\"#eee\"/>"
            o += "<text x=\"\(x(t))\" y=\"\(top + ph + 18)\" text-anchor=\"middle\">\(Int(t / 60)) min</text>\n"
        }
        o += "<text x=\"14\" y=\"\(top + ph / 2)\" transform=\"rotate(-90 14 \(top + ph / 2))\" text-anchor=\"middle\">depth (m, down)</text>\n"
        o += "<text x=\"\(w - 14)\" y=\"\(top + ph / 2)\" transform=\"rotate(90 \(w - 14) \(top + ph / 2))\" text-anchor=\"middle\" fill=\"#c05800\">water temperature (°C)</text>\n"
        let cStep = max(1, niceStep(tHi - tLo, lines: 6))
        for i in 0...Int(((tHi - tLo) / cStep).rounded(.down)) {
            let tc = tLo + Double(i) * cStep
            o += "<text x=\"\(left + pw + 8)\" y=\"\(yT(tc) + 4)\" fill=\"#c05800\">\(num(tc, 0))</text>\n"
        }
        let pts = samples.filter { $0.depth.isFinite }
        if !pts.isEmpty {
            var area = "M \(x(pts[0].time)) \(y(0))"
            for p in pts { area += " L \(num(x(p.time), 1)) \(num(y(p.depth), 1))" }
            area += " L \(num(x(pts.last!.time), 1)) \(y(0)) Z"
            o += "<path d=\"\(area)\" fill=\"#cfe3f7\" stroke=\"#1f5fa8\" stroke-width=\"2\"/>\n"
        }
        let tp = samples.filter { $0.temperature.isFinite }
        if !tp.isEmpty {
            o += "<polyline fill=\"none\" stroke=\"#c05800\" stroke-width=\"1.5\" points=\""
            o += tp.map { "\(num(x($0.time), 1)),\(num(yT($0.temperature), 1))" }.joined(separator: " ") + "\"/>\n"
        }
        for p in pts where p.ascentWarning {
            o += "<circle cx=\"\(num(x(p.time), 1))\" cy=\"\(num(y(p.depth), 1))\" r=\"4\" fill=\"#d00\"><title>ascent \(num(p.ascentRate, 1)) m/min at \(minutes(p.time))</title></circle>\n"
        }
        if sum.ascentWarnings > 0 {
            o += "<text x=\"\(left + pw)\" y=\"\(top - 10)\" text-anchor=\"end\" fill=\"#d00\">● ascent faster than the limit (\(sum.ascentWarnings) samples, max \(num(sum.maxAscentRate, 1)) m/min)</text>\n"
        }
        o += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(pw)\" height=\"\(ph)\" fill=\"none\" stroke=\"#333\"/>\n"
        // The band's label over everything (the profile's fill covers the
        // band), at its right end, with a white halo to stay readable.
        o += "<text x=\"\(left + pw - 6)\" y=\"\(num((y(3) + y(6)) / 2 + 4, 1))\" text-anchor=\"end\" fill=\"#3a7d44\" font-size=\"11\" font-weight=\"bold\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">safety stop 3–6 m</text>\n"
        o += "</svg>\n"
        return o
    }

    /// A grid step of 1, 2 or 5 × 10ⁿ giving at most about `lines` lines over `range`.
    static func niceStep(_ range: Double, lines: Double) -> Double {
        guard range.isFinite, range > 0 else { return 1 }
        let raw = range / lines
        var p = 1.0
        while p * 10 <= raw { p *= 10 }
        while p > raw { p /= 10 }
        for m in [1.0, 2, 5, 10] where p * m >= raw { return p * m }
        return p * 10
    }
}
