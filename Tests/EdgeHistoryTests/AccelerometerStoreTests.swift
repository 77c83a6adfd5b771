import Testing
import Foundation
import EdgeProtocol
import EdgeValues
@testable import EdgeHistory
import EdgeSQLite
import TestThreads

/// The sensor recorder's store (CMSensorRecorder in the agent): what it
/// writes read back by independent readers (Python's sqlite3 and struct
/// modules, the sqlite3 shell), retention and the size bound on a virtual
/// clock, windows per user, the recorder's 50 Hz decimation and demand.
@Suite(.ownThread) struct AccelerometerStoreTests {
    let s = 1_000_000_000 as Int64
    let g = 9.80665
    let base: Int64 = 1_800_000_000 * 1_000_000_000

    func tempPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("accel-\(UUID().uuidString).sqlite3").path
    }

    func run(_ tool: String, _ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe(); p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// 50 Hz of a known motion: x a slow sine, y a ramp, z −1 g.
    func motion(from t0: Int64, seconds: Double) -> [(unixNs: Int64, acceleration: Vector3)] {
        (0..<Int(seconds * 50)).map { i in
            let t = Double(i) / 50
            return (t0 + Int64(i) * 20_000_000, Vector3(2 * sin(t), -3 + 0.01 * Double(i), -g))
        }
    }

    /// Python's sqlite3 and struct modules decode the rows as the store's
    /// documentation describes them; the values are what went in, to the
    /// documented quantum (1/2048 g, 100 µs).
    @Test func aSecondReaderDecodesTheRowsAsDocumented() throws {
        let path = tempPath()
        let store = try AccelerometerStore(path: path, maxBytes: 64 << 20)
        let input = motion(from: base + 123_456, seconds: 3.3)
        try store.commit(input, nowUnixNs: base + 10 * s)
        store.close()
        let script = """
            import sqlite3, struct, sys
            db = sqlite3.connect(sys.argv[1])
            for start, n, blob in db.execute('SELECT start_ns, n, samples FROM accel ORDER BY id'):
                assert len(blob) == 8 * n, (len(blob), n)
                for k in range(n):
                    off, x, y, z = struct.unpack_from('<Hhhh', blob, 8 * k)
                    print(start + off * 100000, x, y, z)
            """
        let lines = try run("/usr/bin/python3", ["-c", script, path]).split(separator: "\n")
        #expect(lines.count == input.count)
        let q = 9.80665 / 2048
        for (line, want) in zip(lines, input) {
            let f = line.split(separator: " ")
            let t = Int64(f[0])!
            #expect(abs(t - want.unixNs) <= 50_000, "time \(t) vs \(want.unixNs)")
            let a = Vector3(Double(f[1])! * q, Double(f[2])! * q, Double(f[3])! * q)
            #expect(abs(a.x - want.acceleration.x) <= q / 2 + 1e-12 && abs(a.y - want.acceleration.y) <= q / 2 + 1e-12
                    && abs(a.z - want.acceleration.z) <= q / 2 + 1e-12, "\(a) vs \(want.acceleration)")
        }
        // rows of at most a second, at most 64 samples
        #expect(try run("/usr/bin/sqlite3", [path, "SELECT max(n) <= 64 AND count(*) >= 4 FROM accel"]) == "1")
        #expect(try run("/usr/bin/sqlite3", [path, "PRAGMA journal_mode"]) == "wal")
    }

    /// The store's own reader returns the samples of a window, in order,
    /// with unique increasing identifiers, in pages.
    @Test func readsAWindowInPagesWithIncreasingIdentifiers() throws {
        let store = try AccelerometerStore(path: tempPath(), maxBytes: 64 << 20)
        let input = motion(from: base, seconds: 10)
        try store.commit(input, nowUnixNs: base + 20 * s)
        let all = try store.samples(fromUnixNs: base, toUnixNs: base + 20 * s, within: nil, limit: 10_000)
        #expect(all.samples.count == 500 && all.next == nil)
        #expect(zip(all.samples, all.samples.dropFirst()).allSatisfy { $0.identifier < $1.identifier && $0.unixNs < $1.unixNs })
        var paged: [RecordedAccelerometerSample] = []
        var from = base
        while true {
            let page = try store.samples(fromUnixNs: from, toUnixNs: base + 20 * s, within: nil, limit: 77)
            paged += page.samples
            guard let next = page.next else { break }
            #expect(next > from)
            from = next
        }
        #expect(paged == all.samples)
        // a window cuts the answer to its span
        let w = RecordingWindow(uid: 1000, startUnixNs: base + 2 * s, endUnixNs: base + 4 * s)
        let inside = try store.samples(fromUnixNs: base, toUnixNs: base + 20 * s, within: [w], limit: 10_000).samples
        #expect(inside.count == 101 && inside.allSatisfy { w.contains($0.unixNs) })
    }

    /// Apple keeps recorded data three days: a commit on a clock three
    /// days on deletes older samples and windows, and keeps newer ones.
    @Test func retentionDeletesWhatIsOlderThanThreeDaysOnAVirtualClock() throws {
        let store = try AccelerometerStore(path: tempPath(), maxBytes: 64 << 20)
        let day = 86400 * s
        try store.openWindow(uid: 7, nowUnixNs: base, durationNs: 3600 * s)
        try store.openWindow(uid: 8, nowUnixNs: base + 2 * day, durationNs: 3600 * s)
        try store.commit(motion(from: base, seconds: 2), nowUnixNs: base + 10 * s)
        try store.commit(motion(from: base + 2 * day, seconds: 2), nowUnixNs: base + 2 * day + 10 * s)
        #expect(try store.samples(fromUnixNs: 0, toUnixNs: .max / 2, within: nil, limit: 1000).samples.count == 200)
        let r = try store.commit([], nowUnixNs: base + 3 * day + 3601 * s + 1)
        #expect(r.rowsExpired > 0)
        let left = try store.samples(fromUnixNs: 0, toUnixNs: .max / 2, within: nil, limit: 1000).samples
        #expect(left.count == 100 && left.allSatisfy { $0.unixNs >= base + 2 * day })
        #expect(try store.windows(uid: nil).map(\.uid) == [8])
    }

    /// With more samples than `maxBytes` holds, the oldest go and the
    /// file stays near the bound (freed pages are reused), the newest stay.
    @Test func theSizeBoundDropsTheOldestAndBoundsTheFile() throws {
        let path = tempPath()
        let bound = 512 * 1024
        let store = try AccelerometerStore(path: path, maxBytes: bound)
        var trimmed = 0
        for minute in 0..<30 {   // 30 minutes: about 720 kB of samples, above the bound
            let t0 = base + Int64(minute) * 60 * s
            trimmed += try store.commit(motion(from: t0, seconds: 60), nowUnixNs: t0 + 61 * s).rowsTrimmedForSize
        }
        #expect(trimmed > 0)
        #expect(try store.usedBytes() <= bound)
        let st = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        #expect(st <= bound + 64 * 1024, "file \(st) bytes for a bound of \(bound)")
        let left = try store.samples(fromUnixNs: 0, toUnixNs: .max / 2, within: nil, limit: 1_000_000).samples
        #expect(left.last?.unixNs == base + 29 * 60 * s + 2999 * 20_000_000)   // the newest sample is kept
        #expect(left.first!.unixNs > base)                                    // the oldest went
        #expect(try run("/usr/bin/sqlite3", [path, "PRAGMA integrity_check"]) == "ok")
    }

    /// A window of one user is its own: extended, never shortened, by a
    /// second request; another user's request opens another.
    @Test func windowsAreKeptPerUserAndExtended() throws {
        let store = try AccelerometerStore(path: tempPath(), maxBytes: 1 << 20)
        let a = try store.openWindow(uid: 1000, nowUnixNs: base, durationNs: 600 * s)
        let b = try store.openWindow(uid: 1000, nowUnixNs: base + 60 * s, durationNs: 60 * s)
        #expect(b == a)   // not shortened
        let c = try store.openWindow(uid: 1000, nowUnixNs: base + 60 * s, durationNs: 3600 * s)
        #expect(c.startUnixNs == base && c.endUnixNs == base + 3660 * s)
        _ = try store.openWindow(uid: 1001, nowUnixNs: base + 100 * s, durationNs: 10 * s)
        #expect(try store.windows(uid: 1000).count == 1)
        #expect(try store.windows(uid: 1001).map(\.startUnixNs) == [base + 100 * s])
        #expect(try store.latestWindowEnd() == base + 3660 * s)
    }

    /// The recorder takes nothing and demands nothing with no window; with
    /// one it asks for the accelerometer at 50 Hz, keeps 50 Hz of a 200 Hz
    /// stream, gives a user only its own window's samples, and a new
    /// recorder on the same file (an agent restart) goes on recording.
    @Test func theRecorderRecordsOnlyInsideWindowsAt50Hz() throws {
        let path = tempPath()
        let clock = Locked<Int64>(base)
        let offset = base - 5 * s   // CLOCK_REALTIME − CLOCK_MONOTONIC
        var rec: AccelerometerRecorder? = try AccelerometerRecorder(
            store: try AccelerometerStore(path: path, maxBytes: 1 << 20), nowUnixNs: { clock.withLock { $0 } },
            clockOffsetNs: { offset })
        func feed(_ r: AccelerometerRecorder, monotonicFrom m0: Int64, seconds: Int) {
            for i in 0..<(seconds * 200) {   // a 200 Hz IMU
                let t = UInt64(m0 + Int64(i) * 5_000_000)
                r.offer(.accelerometer(AccelerometerSample(timestampNs: t, acceleration: Vector3(0, 0, -g))))
                r.offer(.gyroscope(GyroscopeSample(timestampNs: t, rotationRate: Vector3(1, 1, 1))))
            }
        }
        #expect(rec!.demand.isEmpty && !rec!.isRecording)
        feed(rec!, monotonicFrom: 5 * s, seconds: 1)    // before any window: not kept
        let gen = rec!.demandGeneration
        let w = rec!.record(uid: 1000, durationSeconds: 1e6)   // capped at 12 h
        #expect(w.endUnixNs - w.startUnixNs == 43_200 * s)
        #expect(rec!.isRecording && rec!.demand == [.accelerometer: 0.02] && rec!.demandGeneration != gen)
        // the request touched no disk (the service thread asks it): the window is written with the next commit
        #expect(try run("/usr/bin/sqlite3", [path, "SELECT count(*) FROM record_window"]) == "0")
        clock.withLock { $0 = base + 1 * s }
        feed(rec!, monotonicFrom: 6 * s, seconds: 2)
        #expect(try rec!.recorded(uid: 1000, fromUnixNs: base, toUnixNs: base + 10 * s, limit: 10_000).samples.isEmpty,
                "readable once committed")
        #expect(rec!.flush())
        #expect(try run("/usr/bin/sqlite3", [path, "SELECT uid, end_ns - start_ns FROM record_window"]) == "1000|\(43_200 * s)")
        let mine = try rec!.recorded(uid: 1000, fromUnixNs: base, toUnixNs: base + 10 * s, limit: 10_000)
        #expect(mine.samples.count == 100)    // 2 s at 50 Hz
        #expect(mine.samples.allSatisfy { abs($0.acceleration.z + g) < 0.005 })
        #expect(try rec!.recorded(uid: 1001, fromUnixNs: base, toUnixNs: base + 10 * s, limit: 10_000).samples.isEmpty)
        rec!.stop(); rec!.close(); rec = nil
        // restart: the window is in the file
        let again = try AccelerometerRecorder(store: try AccelerometerStore(path: path, maxBytes: 1 << 20),
                                              nowUnixNs: { clock.withLock { $0 } }, clockOffsetNs: { offset })
        #expect(again.isRecording)
        feed(again, monotonicFrom: 10 * s, seconds: 1)
        again.flush()
        #expect(try again.recorded(uid: 1000, fromUnixNs: base, toUnixNs: base + 10 * s, limit: 10_000).samples.count == 150)
        // past the window's end: recording stops, the demand goes
        clock.withLock { $0 = base + 43_201 * s }
        again.flush()
        #expect(!again.isRecording && again.demand.isEmpty)
    }

    /// A full disk (the database may not grow) is reported once; the
    /// samples wait in memory and are written when there is room again.
    @Test func aFullDiskIsReportedOnceAndTheSamplesAreWrittenWhenThereIsRoom() throws {
        let path = tempPath()
        let store = try AccelerometerStore(path: path, maxBytes: 64 << 20)
        let clock = Locked<Int64>(base)
        let rec = try AccelerometerRecorder(store: store, nowUnixNs: { clock.withLock { $0 } }, clockOffsetNs: { 0 })
        let lines = Locked<[String]>([])
        rec.onHealthChange = { l in lines.withLock { $0.append(l) } }
        _ = rec.record(uid: 1, durationSeconds: 3600)
        func feed(_ from: Int, _ n: Int) {
            for i in from..<(from + n) {
                rec.offer(.accelerometer(AccelerometerSample(timestampNs: UInt64(base) + UInt64(i) * 20_000_000, acceleration: Vector3(0, 0, -g))))
            }
        }
        feed(0, 50)
        #expect(rec.flush())
        let pages = try run("/usr/bin/sqlite3", [path, "PRAGMA page_count"])
        try store.db.execute("PRAGMA max_page_count=\(pages)")
        feed(50, 3000)   // a minute: more pages than the file may have
        #expect(!rec.flush())
        feed(3050, 50)
        #expect(!rec.flush())
        let failing = lines.withLock { $0 }
        #expect(failing.count == 1 && failing[0].contains("a commit failed") && failing[0].lowercased().contains("full"), "\(failing)")
        #expect(rec.health.error != nil)
        try store.db.execute("PRAGMA max_page_count=1073741823")
        #expect(rec.flush())
        #expect(lines.withLock { $0 }.last?.contains("resumed after 2 failed attempt(s); nothing was lost") == true)
        #expect(try run("/usr/bin/sqlite3", [path, "SELECT sum(n) FROM accel"]) == "3100")
        #expect(try rec.recorded(uid: 1, fromUnixNs: base, toUnixNs: base + 3600 * s, limit: 10_000).samples.count == 3100)
    }
}
