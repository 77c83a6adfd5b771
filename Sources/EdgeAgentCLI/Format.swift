/// `v` with exactly `decimals` digits after the point, rounded half away
/// from zero; `+` for positive values when `sign`; `-` never shows for a
/// value that rounds to zero; non-finite values are `nan`. No Foundation:
/// `String(format:)` needs ICU. Every tool of the CLI formats numbers with it.
func fixed(_ v: Double, _ decimals: Int, sign: Bool = false) -> String {
    guard v.isFinite else { return "nan" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(v) * scale).rounded(.toNearestOrAwayFromZero)
    guard scaled < 9.0e15 else { return String(v) }
    let n = UInt64(scaled), unit = UInt64(scale)
    var text = String(n / unit)
    if decimals > 0 {
        let frac = String(n % unit)
        text += "." + String(repeating: "0", count: decimals - frac.count) + frac
    }
    if v < 0 && n != 0 { return "-" + text }
    return (sign ? "+" : "") + text
}

