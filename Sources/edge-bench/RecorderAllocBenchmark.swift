// `edge-bench alloc`, the sensor recorder's part: what the loop thread
// allocates handing accelerometer samples to the recorder while it records
// (AccelerometerRecorder.offer), counted on this thread between flushes
// (the flushing thread's work - the commit, the next buffer - is not the
// loop's and is done outside the count).
#if canImport(Glibc)
import Glibc
#endif
import CAllocCount
import EdgeHistory
import EdgeProtocol
import EdgeValues

/// Allocations of `flushes` × 2 s of a 200 Hz accelerometer offered to a
/// recording recorder (a flush between each 2 s, as its thread does), and
/// the samples it kept (50 Hz).
func recorderOfferAllocations(flushes: Int) throws -> (allocations: UInt, offered: Int, kept: Int) {
    let dir = try TempDirectory(prefix: "edge-bench-recorder")
    let recorder = try AccelerometerRecorder(store: try AccelerometerStore(path: dir.file("recorder.sqlite3"), maxBytes: 64 << 20))
    _ = recorder.record(uid: 0, durationSeconds: 3600)
    recorder.flush()
    var t = UInt64(HistoryRecorder.monotonicNs()), allocations: UInt = 0, offered = 0   // captured from now: inside the window
    for _ in 0..<flushes {
        edge_alloc_count_begin()
        for _ in 0..<400 {   // 2 s at 200 Hz
            recorder.offer(.accelerometer(AccelerometerSample(timestampNs: t, acceleration: Vector3(0, 0, 9.80665))))
            t += 5_000_000; offered += 1
        }
        allocations += edge_alloc_count_end()
        recorder.flush()
    }
    let kept = try recorder.recorded(uid: 0, fromUnixNs: 0, toUnixNs: Request.maxHistoryNs, limit: 1_000_000).samples.count
    recorder.close()
    return (allocations, offered, kept)
}
