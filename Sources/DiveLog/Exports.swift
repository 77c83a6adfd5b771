import EdgeValues
// Dive exports: Subsurface XML, UDDF 3.2, CSV; and an SVG profile.

func num(_ v: Double, _ digits: Int) -> String {
    guard v.isFinite else { return "" }
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (v * p).rounded() / p
    var s = String(r)
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

public enum DiveExport {
    /// `m:ss` as Subsurface writes durations and sample times.
    static func minutes(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        let ss = s % 60
        return "\(s / 60):\(ss < 10 ? "0" : "")\(ss) min"
    }

    /// Subsurface's native XML (divelog program='subsurface' version='3'):
    /// dive date/time, duration, max/mean depth, water temperature, surface
    /// pressure, salinity, and one sample per logged point (time, depth,
    /// temperature).
    public static func subsurface(_ r: DiveStore.DiveRecord, _ sum: DiveSummary, _ samples: [DiveSample]) -> String {
        let (y, mo, d, hh, mi, ss) = UTCTime.civil(r.startUnixNanoseconds / 1_000_000_000)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var o = "<divelog program='subsurface' version='3'>\n<settings><divecomputerid model='edge-motion dive-logger' deviceid='00000001'/></settings>\n<dives>\n"
        o += "<dive number='\(r.number)' date='\(y)-\(two(mo))-\(two(d))' time='\(two(hh)):\(two(mi)):\(two(ss))' duration='\(minutes(sum.durationSeconds))'>\n"
        o += "  <divecomputer model='edge-motion dive-logger'>\n"
        o += "  <depth max='\(num(sum.maxDepth, 2)) m' mean='\(num(sum.meanDepth, 2)) m' />\n"
        if sum.minTemperature.isFinite { o += "  <temperature water='\(num(sum.minTemperature, 1)) C' />\n" }
        o += "  <surface pressure='\(num(r.surfacePressure / 1e5, 4)) bar' />\n"
        o += "  <water salinity='\(num(density(r.water), 1)) g/l' />\n"
        for s in samples where s.depth.isFinite {
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
        let tMax = max(60, sum.durationSeconds)
        let dMax = max(5, ((sum.maxDepth.isFinite ? sum.maxDepth : 5) / 5).rounded(.up) * 5)
        let temps = samples.map(\.temperature).filter(\.isFinite)
        let tLo = ((temps.min() ?? 0) - 1).rounded(.down), tHi = ((temps.max() ?? 1) + 1).rounded(.up)
        func x(_ t: Double) -> Double { left + t / tMax * pw }
        func y(_ d: Double) -> Double { top + d / dMax * ph }
        func yT(_ c: Double) -> Double { top + (tHi - c) / max(1, tHi - tLo) * ph }
        var o = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" viewBox=\"0 0 \(Int(w)) \(Int(h))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        let start = UTCTime.format(unixSeconds: r.startUnixNanoseconds / 1_000_000_000)
        o += "<text x=\"\(left)\" y=\"22\" font-size=\"16\" font-weight=\"bold\">Dive \(r.number) — \(start) — max \(num(sum.maxDepth, 1)) m, \(minutes(sum.durationSeconds)), min \(num(sum.minTemperature, 1)) °C</text>\n"
        // Safety-stop band and grid.
        o += "<rect x=\"\(left)\" y=\"\(y(3))\" width=\"\(pw)\" height=\"\(y(6) - y(3))\" fill=\"#e6f4ea\"/>\n"
        o += "<text x=\"\(left + 4)\" y=\"\(y(6) - 4)\" fill=\"#3a7d44\" font-size=\"10\">safety stop 3–6 m</text>\n"
        var d = 0.0
        while d <= dMax + 1e-9 {
            o += "<line x1=\"\(left)\" y1=\"\(y(d))\" x2=\"\(left + pw)\" y2=\"\(y(d))\" stroke=\"#ddd\"/>"
            o += "<text x=\"\(left - 8)\" y=\"\(y(d) + 4)\" text-anchor=\"end\">\(num(d, 0)) m</text>\n"
            d += dMax <= 10 ? 1 : 5
        }
        var t = 0.0
        let step = tMax > 1800 ? 600.0 : tMax > 600 ? 300 : 60
        while t <= tMax + 1e-9 {
            o += "<line x1=\"\(x(t))\" y1=\"\(top)\" x2=\"\(x(t))\" y2=\"\(top + ph)\" stroke=\"#eee\"/>"
            o += "<text x=\"\(x(t))\" y=\"\(top + ph + 18)\" text-anchor=\"middle\">\(Int(t / 60)) min</text>\n"
            t += step
        }
        o += "<text x=\"14\" y=\"\(top + ph / 2)\" transform=\"rotate(-90 14 \(top + ph / 2))\" text-anchor=\"middle\">depth (m, down)</text>\n"
        o += "<text x=\"\(w - 14)\" y=\"\(top + ph / 2)\" transform=\"rotate(90 \(w - 14) \(top + ph / 2))\" text-anchor=\"middle\" fill=\"#c05800\">water temperature (°C)</text>\n"
        var tc = tLo
        while tc <= tHi + 1e-9 {
            o += "<text x=\"\(left + pw + 8)\" y=\"\(yT(tc) + 4)\" fill=\"#c05800\">\(num(tc, 0))</text>\n"
            tc += max(1, ((tHi - tLo) / 6).rounded())
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
        o += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(pw)\" height=\"\(ph)\" fill=\"none\" stroke=\"#333\"/>\n</svg>\n"
        return o
    }
}
