#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CEdgeShims
import EdgeProtocol

/// One stream's shared-memory ring (``SampleRingFormat``), written by the
/// service once per sample for every reader that mapped it, whatever their
/// number. Made when the first client subscribes to the stream with a ring,
/// given up (closed for its readers, unmapped) when the last one leaves.
///
/// The submersion-dependent streams have two rings, one for clients holding
/// `submersion.full` and one for the rest, each written with the sample as
/// those clients may see it (``ServiceLoop/visible(_:full:)``).
final class StreamRing {
    /// The sealed memfd (handed to readers by SCM_RIGHTS).
    let fd: Int32
    let stream: StreamName
    /// Whether this ring carries the `submersion.full` view.
    let full: Bool
    private let base: UnsafeMutableRawPointer
    private let length: Int
    /// One record, 8-byte aligned, reused for every sample (no allocation per sample).
    private let record: UnsafeMutableRawPointer
    /// Records written since the last ``signal()``.
    private(set) var unsignalled = 0
    /// Readers currently subscribed through this ring.
    var readers = 0
    /// Records written in all.
    private(set) var written: UInt64 = 0

    /// Makes the ring; nil (with the reason) when the kernel refuses
    /// (out of descriptors or memory): the stream is then served as lines.
    static func make(stream: StreamName, full: Bool) -> Result<StreamRing, PosixError> {
        var base: UnsafeMutableRawPointer?
        var length = 0
        let name = "edge-agent ring \(stream.rawValue)\(full ? "" : " capped")"
        let fd = edge_ring_create(name, UInt32(SampleRingFormat.slotCount), UInt32(SampleRingFormat.recordBytes),
                                  SampleRingFormat.layoutID, UInt32(stream.index), &base, &length)
        guard fd >= 0, let base else { return .failure(PosixError(errno: -fd, call: "memfd_create")) }
        return .success(StreamRing(fd: fd, stream: stream, full: full, base: base, length: length))
    }

    private init(fd: Int32, stream: StreamName, full: Bool, base: UnsafeMutableRawPointer, length: Int) {
        self.fd = fd; self.stream = stream; self.full = full; self.base = base; self.length = length
        record = UnsafeMutableRawPointer.allocate(byteCount: SampleRingFormat.recordBytes, alignment: 8)
        record.initializeMemory(as: UInt8.self, repeating: 0, count: SampleRingFormat.recordBytes)
    }

    deinit {
        edge_ring_close(base)
        munmap(base, length)
        Glibc.close(fd)
        record.deallocate()
    }

    /// Stores `sample` as the next record (readers see it at the next ``signal()``
    /// at the latest; one already reading sees it at once).
    func publish(_ sample: Sample) {
        record.storeBytes(of: sample, as: Sample.self)
        edge_ring_publish(base, record)
        unsignalled += 1
        written &+= 1
    }

    /// Wakes the readers if anything was written since the last call: one
    /// futex call per delivery, for all readers.
    func signal() {
        guard unsignalled > 0 else { return }
        unsignalled = 0
        _ = edge_ring_signal(base)
    }
}
