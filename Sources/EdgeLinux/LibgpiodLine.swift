#if canImport(Glibc)
import Glibc
#endif
import EdgeBus
import CGPIOD

/// A data-ready line through libgpiod 1.6 (`gpiod_chip_open_by_label`, edge
/// events). The chip is found by its label, not its number, because Pi 5
/// kernels renumbered the gpiochips. This file is the only user of the
/// libgpiod 1.x API.
public final class LibgpiodLine: DataReadyLine, @unchecked Sendable {
    public let chipLabel: String
    public let offset: Int
    private let chip: OpaquePointer
    private let line: OpaquePointer

    /// Requests rising-edge events on `offset` of the chip labelled `chipLabel`
    /// (or a `/dev/gpiochipN` path / `gpiochipN` name).
    public init(chipLabel: String, offset: Int, consumer: String = "edge-agent") throws(GPIOError) {
        self.chipLabel = chipLabel
        self.offset = offset
        errno = 0
        let c: OpaquePointer?
        if chipLabel.hasPrefix("/dev/") || chipLabel.hasPrefix("gpiochip") {
            c = gpiod_chip_open_lookup(chipLabel)
        } else {
            c = gpiod_chip_open_by_label(chipLabel)
        }
        guard let c else {
            let e = errno
            throw GPIOError(kind: e == EACCES || e == EPERM ? .permissionDenied : .chipNotFound,
                            errno: e, chip: chipLabel, operation: "open")
        }
        guard offset >= 0, offset < Int(gpiod_chip_num_lines(c)), let l = gpiod_chip_get_line(c, UInt32(offset)) else {
            gpiod_chip_close(c)
            throw GPIOError(kind: .lineNotFound, errno: 0, chip: chipLabel, line: offset, operation: "get line")
        }
        if gpiod_line_request_rising_edge_events(l, consumer) != 0 {
            let e = errno
            gpiod_chip_close(c)
            throw GPIOError(kind: e == EBUSY ? .lineBusy : (e == EACCES || e == EPERM ? .permissionDenied : .io),
                            errno: e, chip: chipLabel, line: offset, operation: "request rising-edge events")
        }
        chip = c
        line = l
    }

    deinit {
        gpiod_line_release(line)
        gpiod_chip_close(chip)
    }

    public func waitForEdge(timeoutNanoseconds: UInt64) throws(GPIOError) -> UInt64? {
        var ts = timespec(tv_sec: Int(timeoutNanoseconds / 1_000_000_000),
                          tv_nsec: Int(timeoutNanoseconds % 1_000_000_000))
        var r: Int32
        repeat { r = gpiod_line_event_wait(line, &ts) } while r < 0 && errno == EINTR
        if r < 0 { throw GPIOError(kind: .io, errno: errno, chip: chipLabel, line: offset, operation: "wait for edge") }
        if r == 0 { return nil }
        var event = gpiod_line_event()
        if gpiod_line_event_read(line, &event) != 0 {
            throw GPIOError(kind: .io, errno: errno, chip: chipLabel, line: offset, operation: "read edge event")
        }
        // libgpiod 1.6 event timestamps are CLOCK_MONOTONIC on kernels >= 5.7.
        return UInt64(event.ts.tv_sec) * 1_000_000_000 + UInt64(event.ts.tv_nsec)
    }
}
