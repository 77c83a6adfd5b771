// Fuzz target (e): `dive-logger import` of a file of protocol lines, run
// exactly as the command line runs it (`DiveLoggerCommand.run`), into a
// fresh log in /dev/shm (tmpfs: the per-second syncs cost nothing), then
// every dive it logged listed, shown, exported (Subsurface, UDDF, CSV) and
// plotted.
//
// A refused line or a non-zero exit is the right answer to bad input.
// Findings are traps, sanitizer reports, hangs, huge allocations, and these
// invariants:
//   * every logged sample is in its dive's time order from 0 s, within the
//     dive's end, and every number is within DiveSampleLimits or withheld
//     (NaN): what import refuses never reaches the log;
//   * the exports and the plot hold no `inf`/`nan` and the plot is at most
//     200 kB, whatever was logged;
//   * importing the same bytes again adds no dive (a dive already logged is
//     recognised).
#if canImport(Glibc)
import Glibc
#endif
import DiveLog
import FuzzSupport

private let scratch: String = {
    let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    let dir = "\(base)/fuzz-diveimport-\(getpid())"
    mkdir(dir, 0o700)
    return dir
}()

private func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { invariantBroken("cannot write the fuzz input to \(path)") }
    var off = 0
    while off < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, $0.count - off) }
        guard n > 0 else { invariantBroken("short write of the fuzz input") }
        off += n
    }
    close(fd)
}

private func run(_ args: [String]) -> (Int32, String) {
    var out = ""
    let rc = DiveLoggerCommand.run(args, environment: [:], out: { out += $0 + "\n" }, err: { _ in })
    return (rc, out)
}

private func hasNonFinite(_ s: String) -> Bool {
    // "inf" or "nan" as a token (not inside "informationbeforedive").
    let b = Array(s.utf8)
    func letter(_ i: Int) -> Bool { i >= 0 && i < b.count && ((b[i] | 0x20) >= 0x61 && (b[i] | 0x20) <= 0x7A) }
    for i in 0..<max(0, b.count - 2) {
        let w = (b[i] | 0x20, b[i + 1] | 0x20, b[i + 2] | 0x20)
        if (w == (0x69, 0x6E, 0x66) || w == (0x6E, 0x61, 0x6E)) && !letter(i - 1) && !letter(i + 3) { return true }
    }
    return false
}

/// One input (libFuzzer's LLVMFuzzerTestOneInput); returns 0, findings trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDiveImport(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = scratch + "/input.jsonl", db = scratch + "/dives.sqlite"
    for suffix in ["", "-wal", "-shm", ".lock"] { unlink(db + suffix) }
    writeFile(input, fuzzBytes(data, size))
    _ = run(["--db", db, "import", input, "--epoch", "2026-06-01T09:30:00Z"])
    guard access(db, F_OK) == 0 else { return 0 }
    let store: DiveStore
    do { store = try DiveStore(path: db, writer: false) } catch { invariantBroken("import left a log that does not open: \(error)") }
    let limits = DiveSampleLimits()
    let records: [DiveStore.DiveRecord]
    do { records = try store.records() } catch { invariantBroken("the log's dives do not read: \(error)") }
    for r in records {
        let samples: [DiveSample]
        do { samples = try store.samples(dive: r.number) } catch { invariantBroken("dive \(r.number)'s samples do not read: \(error)") }
        var last = -1.0
        for s in samples {
            guard s.time >= 0, s.time > last else { invariantBroken("dive \(r.number): sample at \(s.time) s after \(last) s") }
            last = s.time
            if let end = r.endSeconds, s.time > end + 1e-6 { invariantBroken("dive \(r.number): sample at \(s.time) s after its end \(end) s") }
            func within(_ v: Double, _ range: ClosedRange<Double>, _ what: String) {
                if !v.isNaN && !range.contains(v) { invariantBroken("dive \(r.number): \(what) \(v) logged, outside \(range)") }
            }
            within(s.depth, limits.depthMetres, "depth")
            within(s.temperature, limits.temperatureCelsius, "temperature")
            within(s.pressure, limits.pressurePascals, "pressure")
        }
        if let end = r.endSeconds, !(end >= 0) { invariantBroken("dive \(r.number) ends at \(end) s") }
        for args in [["export", "\(r.number)", "--format", "subsurface", "--utc-offset", "+01:00"],
                     ["export", "\(r.number)", "--format", "uddf"], ["export", "\(r.number)", "--format", "csv"],
                     ["plot", "\(r.number)"], ["show", "\(r.number)"]] {
            let (rc, out) = run(["--db", db] + args)
            guard rc == 0 else { invariantBroken("\(args.joined(separator: " ")) of a logged dive failed") }
            if hasNonFinite(out) { invariantBroken("\(args.joined(separator: " ")) wrote inf or nan") }
            if args[0] == "plot" && out.utf8.count > 200_000 { invariantBroken("plot of dive \(r.number) is \(out.utf8.count) bytes") }
        }
    }
    // The same bytes again: nothing new.
    _ = run(["--db", db, "import", input, "--epoch", "2026-06-01T09:30:00Z"])
    do {
        let again = try DiveStore(path: db, writer: false).records().count
        if again != records.count { invariantBroken("importing the same input twice made \(again - records.count) more dives") }
    } catch { invariantBroken("the log does not open after a second import: \(error)") }
    _ = run(["--db", db, "list", "--json"])
    return 0
}
