#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CEdgeShims
import EdgeProtocol

/// One of the agent's shared-memory rings (docs/protocol.md, "Shared-memory
/// rings") mapped read-only, and where this reader is in it. No thread and
/// no lock of its own: ``RingReader`` keeps its rings in these under its
/// lock, and a reader that has a loop of its own (the MQTT bridge's broker
/// thread) drives them directly. Unmapped by ``unmap()`` only (a value type
/// holding a mapping: whoever removes it unmaps it).
public struct SampleRing {
    /// Why a ring offered could not be read.
    public enum MapFailure: Error, Equatable {
        /// The descriptor failed the checks (seals, size, header): errno.
        case refused(Int32)
    }

    public let stream: StreamName
    let fd: Int32
    /// The mapping (read-only).
    public let base: UnsafeRawPointer
    let length: Int
    /// The memfd's inode: the same ring offered again (an interval change) is the same inode.
    public let inode: UInt64
    /// The next record to read.
    public private(set) var next: UInt64
    /// The wake word's value this reader last passed a wake on for: at
    /// most one relay per delivery, so a chain of relays ends.
    private var relayed: UInt32 = 0

    /// Maps the ring `fd` (passed by the agent) for `stream`, reading from
    /// record `start`. Takes the descriptor over: kept in the value, closed
    /// on failure.
    public static func map(_ stream: StreamName, fd: Int32, start: UInt64) -> Result<SampleRing, MapFailure> {
        var st = stat()
        guard fstat(fd, &st) == 0 else { let e = errno; close(fd); return .failure(.refused(e)) }
        var base: UnsafeRawPointer?
        var length = 0
        let r = edge_ring_map_reader(fd, SampleRingFormat.layoutID, UInt32(SampleRingFormat.recordBytes),
                                     UInt32(stream.index), &base, &length)
        guard r == 0, let base else { close(fd); return .failure(.refused(-r)) }
        return .success(SampleRing(stream: stream, fd: fd, base: base, length: length, inode: UInt64(st.st_ino), next: start))
    }

    /// The inode of a descriptor (to tell whether an offer is the ring already mapped); nil when fstat fails.
    public static func inode(of fd: Int32) -> UInt64? {
        var st = stat()
        return fstat(fd, &st) == 0 ? UInt64(st.st_ino) : nil
    }

    /// Unmaps the ring and closes its descriptor.
    public func unmap() {
        edge_ring_unmap(base, length)
        close(fd)
    }

    /// The wake word now: load it before ``read(into:_:)``, so that a record
    /// written after the read changes the word and a wait on it returns.
    public var wakeWord: UInt32 { edge_ring_wake_word(base) }

    /// Copies every record written since the last call into `record` (one
    /// record's bytes, 8-byte aligned) and hands each sample to `body`, in
    /// order. Returns how many were lost: overwritten before they were read
    /// (this reader fell more than a ring behind) or torn during the copy.
    public mutating func read(into record: UnsafeMutableRawPointer, _ body: (Sample) -> Void) -> Int {
        let written = edge_ring_write_seq(base)
        guard written > next else { return 0 }
        var lost = 0
        let slots = UInt64(edge_ring_slot_count(base))
        if written - next > slots {
            lost += Int(written - slots - next)
            next = written - slots
        }
        while next < written {
            if edge_ring_read(base, next, record) == 0 {
                body(record.load(as: Sample.self))
            } else {
                lost += 1
            }
            next += 1
        }
        return lost
    }

    /// The agent closed the ring and every record in it has been read.
    public var isFinished: Bool { edge_ring_is_closed(base) != 0 && edge_ring_write_seq(base) == next }

    /// Passes the agent's wake on to the next reader waiting on this ring
    /// (the agent wakes one; each woken reader wakes one more), once per
    /// value of the wake word. Call it once the wake that ended a wait
    /// (``waitAny(_:seen:count:control:controlSeen:timeoutMs:)`` returned
    /// this ring) has been taken, whether or not the reader found news.
    public mutating func relayWake() {
        let word = edge_ring_wake_word(base)
        guard word != relayed else { return }
        relayed = word
        _ = edge_ring_relay(base)
    }

    /// Waits until the wake word of any of the first `count` rings in
    /// `bases` differs from `seen` (the words loaded before the last read),
    /// or the process-private word `control` differs from `controlSeen`,
    /// or `timeoutMs` passes. i + 1 when ring i's wake ended the wait (pass
    /// it on: ``relayWake()``), 0 for any other end, -ETIMEDOUT, -EINTR.
    public static func waitAny(_ bases: UnsafePointer<UnsafeRawPointer?>, seen: UnsafePointer<UInt32>, count: Int,
                               control: UnsafePointer<UInt32>, controlSeen: UInt32, timeoutMs: Int32) -> Int32 {
        edge_ring_wait_any(bases, seen, Int32(count), control, controlSeen, timeoutMs)
    }
}
