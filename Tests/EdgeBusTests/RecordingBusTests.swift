import Testing
import Glibc
@testable import EdgeBus

/// A bus that moves a virtual clock on every transfer, so the time a record
/// carries is visibly "when it completed".
final class TimedScriptBus: I2CBus, @unchecked Sendable {
    let script: ScriptedI2CBus
    let clock: VirtualClock
    let transferNanoseconds: UInt64
    init(_ script: [ScriptedI2CBus.Transaction], clock: VirtualClock, transferNanoseconds: UInt64 = 250_000) {
        self.script = ScriptedI2CBus(name: "/dev/i2c-1", script)
        self.clock = clock
        self.transferNanoseconds = transferNanoseconds
    }
    var name: String { script.name }
    func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        clock.advance(nanoseconds: transferNanoseconds)
        try script.transfer(address: address, write: write, read: read)
    }
}

@Suite struct RecordingBusTests {
    @Test func recordsEachTransferWithItsCompletionTimeAndAnswer() throws {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let base = TimedScriptBus([
            .read(0x68, register: 0x75, reply: [0x68]),
            .write(0x68, [0x6B, 0x80]),
            .read(0x68, register: 0x3B, reply: Array(1...14)),
            .fail(0x76, [0xD0], readCount: 1, errno: EREMOTEIO),
        ], clock: clock)
        let log = TransactionLogWriter(header: TransactionLogHeader(bus: base.name, startNanoseconds: clock.nowNanoseconds))
        let bus = RecordingBus(base, log: log, clock: clock)
        #expect(bus.name == "/dev/i2c-1")

        #expect(try bus.readRegister(0x68, 0x75) == 0x68)
        try bus.writeRegister(0x68, 0x6B, 0x80)
        clock.sleep(nanoseconds: 10_000_000)
        #expect(try bus.readRegisters(0x68, 0x3B, count: 14) == Array(1...14))
        let e = #expect(throws: I2CError.self) { _ = try bus.readRegister(0x76, 0xD0) }
        #expect(e?.kind == .noDevice)
        #expect(e?.errno == EREMOTEIO)
        #expect(base.script.verify().isEmpty)

        #expect(log.text == """
        # edge-agent transaction log v1
        @bus /dev/i2c-1
        @start-ns 1000000000
        1000250000 0x68 w 75 r 1 68
        1000500000 0x68 w 6b80 r 0
        1010750000 0x68 w 3b r 14 0102030405060708090a0b0c0d0e
        1011000000 0x76 w d0 r 1 ! noDevice 121 0xd0 read 1 bytes

        """)
        #expect(log.recordCount == 4)
    }

    @Test func recordsProbesThroughTheBasesOwnProbe() throws {
        let clock = VirtualClock(startNanoseconds: 7)
        // The default probe is a one-byte read with no register pointer.
        let base = TimedScriptBus([
            .writeRead(0x0D, [], reply: [0x00]),
            .fail(0x50, [], readCount: 1, errno: ENXIO),
            .fail(0x51, [], readCount: 1, errno: ETIMEDOUT),
        ], clock: clock, transferNanoseconds: 100)
        let log = TransactionLogWriter(header: TransactionLogHeader(bus: "b", startNanoseconds: 7))
        let bus = RecordingBus(base, log: log, clock: clock)
        #expect(try bus.probe(address: 0x0D) == true)
        #expect(try bus.probe(address: 0x50) == false)
        #expect(throws: I2CError.self) { _ = try bus.probe(address: 0x51) }
        let parsed = try TransactionLog.parse(log.text)
        #expect(parsed.records.map(\.request) == [.probe, .probe, .probe])
        #expect(parsed.records.map(\.timeNanoseconds) == [107, 207, 307])
        #expect(parsed.records[0].outcome == .present(true))
        #expect(parsed.records[1].outcome == .present(false))
        guard case .failed(let f) = parsed.records[2].outcome else { Issue.record("not a failure"); return }
        #expect(f.kind == .busTimeout && f.errno == ETIMEDOUT)
    }

    /// A recording replays through the same calls to the same answers,
    /// errors and times; twice in a row, identically.
    @Test func whatIsRecordedReplaysIdentically() throws {
        let clock = VirtualClock(startNanoseconds: 42_000)
        let base = TimedScriptBus([
            .read(0x68, register: 0x75, reply: [0x72]),
            .write(0x68, [0x19, 0x09]),
            .read(0x68, register: 0x3B, reply: Array(20..<34)),
            .fail(0x68, [0x3B], readCount: 14, errno: EIO),
            .read(0x68, register: 0x3B, reply: Array(40..<54)),
            .writeRead(0x0D, [], reply: [0]),
        ], clock: clock)
        let writer = TransactionLogWriter(header: TransactionLogHeader(bus: base.name, startNanoseconds: 42_000))
        let recording = RecordingBus(base, log: writer, clock: clock)

        struct Run: Equatable { var values: [[UInt8]] = []; var errors: [String] = []; var times: [UInt64] = [] }
        func drive(_ bus: some I2CBus, _ clock: any TimeSource) -> Run {
            var run = Run()
            func step(_ body: () throws(I2CError) -> [UInt8]) {
                do { run.values.append(try body()) } catch { run.errors.append("\(error.kind) \(error.errno) \(error.operation)") }
                run.times.append(clock.nowNanoseconds)
            }
            step { () throws(I2CError) in [try bus.readRegister(0x68, 0x75)] }
            step { () throws(I2CError) in try bus.writeRegister(0x68, 0x19, 0x09); return [] }
            clock.sleep(untilNanoseconds: 5_000_000)
            step { () throws(I2CError) in try bus.readRegisters(0x68, 0x3B, count: 14) }
            clock.sleep(untilNanoseconds: 15_000_000)
            step { () throws(I2CError) in try bus.readRegisters(0x68, 0x3B, count: 14) }
            step { () throws(I2CError) in try bus.readRegisters(0x68, 0x3B, count: 14) }
            step { () throws(I2CError) in [try bus.probe(address: 0x0D) ? 1 : 0] }
            return run
        }
        let live = drive(recording, clock)
        #expect(live.errors.count == 1)
        let log = try TransactionLog.parse(writer.text, file: "rt.log")
        for _ in 0..<2 {
            let replayClock = ReplayClock(log: log)
            let replay = ReplayBus(log: log, clock: replayClock)
            #expect(replay.name == "/dev/i2c-1")
            let replayed = drive(replay, replayClock)
            #expect(replayed == live)
            #expect(replay.isAtEnd)
            #expect(replay.divergence == nil)
        }
    }
}
