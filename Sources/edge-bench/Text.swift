// Number formatting and tables without full Foundation (no String(format:)).

/// Fixed-point text for a Double: `fixed(3.14159, 2)` → "3.14"; NaN → "n/a".
func fixed(_ x: Double, _ decimals: Int) -> String {
    guard x.isFinite else { return x.isNaN ? "n/a" : (x > 0 ? "inf" : "-inf") }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let n = (abs(x) * scale).rounded()
    let whole = Int(n / scale), frac = Int(n - Double(whole) * scale)
    var s = (x < 0 && n != 0 ? "-" : "") + String(whole)
    if decimals > 0 {
        var f = String(frac)
        while f.count < decimals { f = "0" + f }
        s += "." + f
    }
    return s
}

/// A table printed with columns padded to their widest cell; the first
/// column is left-aligned, the others right-aligned.
struct Table {
    var header: [String]
    var rows: [[String]] = []
    init(_ header: [String]) { self.header = header }
    mutating func add(_ row: [String]) { rows.append(row) }

    var text: String {
        let all = [header] + rows
        let columns = all.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for r in all { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
        func line(_ r: [String]) -> String {
            var out = "  "
            for i in 0..<columns {
                let c = i < r.count ? r[i] : ""
                let fill = String(repeating: " ", count: widths[i] - c.count)
                out += i == 0 ? c + fill : fill + c
                if i < columns - 1 { out += "  " }
            }
            return out
        }
        var lines = [line(header)]
        lines.append("  " + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }
}

/// "PASS" / "MISS" for a target.
func verdict(_ ok: Bool) -> String { ok ? "PASS" : "MISS" }

/// Median of values (mean of the two middle ones for an even count); NaN if empty.
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Writes a line to standard output at once (no buffering surprises when
/// mixed with child processes writing to the same terminal).
func say(_ line: String = "") {
    var bytes = Array((line + "\n").utf8)
    bytes.withUnsafeMutableBytes { b in
        var off = 0
        while off < b.count {
            let n = write(1, b.baseAddress! + off, b.count - off)
            if n < 0 { if errno == EINTR { continue }; return }
            off += n
        }
    }
}

func warn(_ line: String) {
    var bytes = Array(("edge-bench: " + line + "\n").utf8)
    bytes.withUnsafeMutableBytes { b in _ = write(2, b.baseAddress!, b.count) }
}

#if canImport(Glibc)
import Glibc
#endif
