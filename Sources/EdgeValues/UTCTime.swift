// UTC date-time text without Foundation (days from civil: H. Hinnant's
// public-domain algorithm, "chrono-Compatible Low-Level Date Algorithms").

/// ISO 8601 UTC times (`2026-12-01T23:36:12Z`): the project's one formatter
/// and parser, for calibration files, transaction-log headers, the dive log
/// and the bridge's status.
public enum UTCTime {
    /// "2026-12-01T23:36:12Z" for Unix seconds (floored).
    public static func format(unixSeconds: Int64) -> String {
        let (y, m, d, hh, mm, ss) = civil(unixSeconds)
        func p(_ v: Int64, _ n: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, n - s.count)) + s }
        return "\(p(y, 4))-\(p(m, 2))-\(p(d, 2))T\(p(hh, 2)):\(p(mm, 2)):\(p(ss, 2))Z"
    }

    /// The same with tenths of a second (`2026-12-02T02:51:03.4Z`), for Unix ns.
    public static func format(unixNanoseconds ns: Int64) -> String {
        let s = ns >= 0 ? ns / 1_000_000_000 : (ns - 999_999_999) / 1_000_000_000
        let tenths = (ns - s * 1_000_000_000) / 100_000_000
        var text = format(unixSeconds: s)
        text.removeLast()
        return text + ".\(tenths)Z"
    }

    public static func civil(_ t: Int64) -> (Int64, Int64, Int64, Int64, Int64, Int64) {
        var days = t / 86400
        var rem = t % 86400
        if rem < 0 { rem += 86400; days -= 1 }
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
    }

    /// Unix seconds for "YYYY-MM-DDTHH:MM:SSZ" (or with +00:00); nil otherwise.
    public static func parse(_ s: String) -> Int64? {
        let c = Array(s.utf8)
        guard c.count >= 20, c[4] == 45, c[7] == 45, c[10] == 84 || c[10] == 32, c[13] == 58, c[16] == 58 else { return nil }
        func n(_ a: Int, _ b: Int) -> Int64? {
            var v: Int64 = 0
            for i in a..<b { guard c[i] >= 48, c[i] <= 57 else { return nil }; v = v * 10 + Int64(c[i] - 48) }
            return v
        }
        guard let y = n(0, 4), let m = n(5, 7), let d = n(8, 10), let hh = n(11, 13), let mm = n(14, 16), let ss = n(17, 19),
              (1...12).contains(m), (1...31).contains(d), hh < 24, mm < 60, ss < 61 else { return nil }
        let tail = String(decoding: c[19...], as: UTF8.self)
        guard tail == "Z" || tail == "+00:00" else { return nil }
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let mp = m > 2 ? m - 3 : m + 9
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        return days * 86400 + hh * 3600 + mm * 60 + ss
    }
}
