import Testing
import Glibc
@testable import EdgeBus

@Suite struct ReplayBusTests {
    static let text = """
    # edge-agent transaction log v1
    @bus /dev/i2c-1
    @start-ns 1000
    @board boards/reference.json5
    2000 0x68 w 75 r 1 68
    3000 0x68 w 6b80 r 0
    # the reset wait
    103000 0x68 w 3b r 2 0102
    104000 0x68 w 3b r 2 ! io 5 0x3b read 2 bytes after writing 1
    105000 0x0d probe yes
    106000 0x50 probe ! busTimeout 110 - probe (quick write)
    """

    func make(realtime: (any TimeSource)? = nil) throws -> (ReplayBus, ReplayClock) {
        let log = try TransactionLog.parse(Self.text, file: "bench.log")
        let clock = ReplayClock(log: log, realtime: realtime)
        return (ReplayBus(log: log, clock: clock), clock)
    }

    @Test func servesTheRecordingInOrderAndMovesTheClock() throws {
        let (bus, clock) = try make()
        #expect(clock.nowNanoseconds == 1000)
        #expect(bus.log.header["board"] == "boards/reference.json5")
        #expect(bus.remaining == 6)
        #expect(try bus.readRegister(0x68, 0x75) == 0x68)
        #expect(clock.nowNanoseconds == 2000)
        try bus.writeRegister(0x68, 0x6B, 0x80)
        #expect(clock.nowNanoseconds == 3000)
        clock.sleep(nanoseconds: 100_000)
        #expect(clock.nowNanoseconds == 103_000)
        #expect(try bus.readRegisters(0x68, 0x3B, count: 2) == [1, 2])
        #expect(bus.nextRecord?.line == 9)

        // A recorded error comes back with the same kind, errno, register and operation.
        let e = #expect(throws: I2CError.self) { _ = try bus.readRegisters(0x68, 0x3B, count: 2) }
        #expect(e == I2CError(kind: .io, errno: EIO, bus: "/dev/i2c-1", address: 0x68, register: 0x3B,
                              operation: "read 2 bytes after writing 1"))
        #expect(clock.nowNanoseconds == 104_000)
        #expect(try bus.probe(address: 0x0D) == true)
        let p = #expect(throws: I2CError.self) { _ = try bus.probe(address: 0x50) }
        #expect(p?.kind == .busTimeout && p?.errno == ETIMEDOUT && p?.register == nil)
        #expect(p?.address == 0x50 && p?.operation == "probe (quick write)")
        #expect(clock.nowNanoseconds == 106_000)
        #expect(bus.isAtEnd && bus.remaining == 0 && bus.nextRecord == nil)
        #expect(bus.divergence == nil)
    }

    @Test func aWrongRegisterNamesBothTransactionsAndTheLine() throws {
        let (bus, clock) = try make()
        _ = try bus.readRegister(0x68, 0x75)
        let e = #expect(throws: I2CError.self) { try bus.writeRegister(0x68, 0x6C, 0x80) }
        #expect(e?.kind == .unsupported && e?.errno == 0)
        #expect(e?.bus == "replay of bench.log")
        #expect(e?.address == 0x68 && e?.register == 0x6C)
        #expect(e?.operation.contains("0x68 write [6c 80] read 0") == true)
        #expect(e?.operation.contains("bench.log:6 has 0x68 write [6b 80] read 0") == true)
        let d = try #require(bus.divergence)
        #expect(d.kind == .mismatch)
        #expect(d.line == 6 && d.index == 1)
        #expect(d.expected?.line == 6)
        #expect(d.actualRequest == .transfer(write: [0x6C, 0x80], readCount: 0))
        #expect(d.difference == "another register (0x6c instead of 0x6b)")
        #expect(d.timeNanoseconds == 2000)
        #expect(d.description.hasPrefix("bench.log:6: the drivers asked for 0x68 write [6c 80] read 0 but the recording has 0x68 write [6b 80] read 0 next (transaction #2)"))
        #expect(clock.nowNanoseconds == 2000, "a mismatch does not move time")

        // Final: even the transfer the recording expected now fails, naming the first divergence.
        let again = #expect(throws: I2CError.self) { try bus.writeRegister(0x68, 0x6B, 0x80) }
        #expect(again == e)
        #expect(bus.position == 1)
    }

    @Test(arguments: [
        ("address", 0x69 as UInt8, [0x75] as [UInt8], 1, "another address"),
        ("length", 0x68, [0x75], 2, "a read of 2 bytes instead of 1"),
        ("bytes", 0x68, [0x75, 0x00], 1, "other bytes written"),
        ("no pointer", 0x68, [], 1, "other bytes written"),
    ])
    func everyPartOfATransferMustMatch(_ label: String, _ address: UInt8, _ write: [UInt8], _ readCount: Int,
                                       _ difference: String) throws {
        let (bus, _) = try make()
        var out = [UInt8](repeating: 0, count: readCount)
        var failure: I2CError?
        write.withUnsafeBytes { w in
            out.withUnsafeMutableBytes { r in
                do throws(I2CError) { try bus.transfer(address: address, write: w, read: r) } catch { failure = error }
            }
        }
        #expect(failure?.kind == .unsupported)
        #expect(bus.divergence?.difference == difference, "\(label)")
        #expect(bus.divergence?.line == 5)
    }

    @Test func aProbeWhereATransferWasRecordedAndTheOtherWayRound() throws {
        let (a, _) = try make()
        #expect(throws: I2CError.self) { _ = try a.probe(address: 0x68) }
        #expect(a.divergence?.difference == "a probe instead of a transfer")
        #expect(a.divergence?.actualDescription == "0x68 probe")

        let (b, _) = try make()
        _ = try b.readRegister(0x68, 0x75)
        try b.writeRegister(0x68, 0x6B, 0x80)
        _ = try b.readRegisters(0x68, 0x3B, count: 2)
        _ = try? b.readRegisters(0x68, 0x3B, count: 2)
        #expect(throws: I2CError.self) { _ = try b.readRegister(0x0D, 0x06) }
        #expect(b.divergence?.difference == "a transfer instead of a probe")
        #expect(b.divergence?.line == 10)
    }

    @Test func aTransferAfterTheEndOfTheRecordingNamesTheLastLine() throws {
        let log = try TransactionLog.parse(Self.text.split(separator: "\n").prefix(6).joined(separator: "\n"),
                                           file: "short.log")
        let bus = ReplayBus(log: log, clock: ReplayClock(log: log))
        _ = try bus.readRegister(0x68, 0x75)
        try bus.writeRegister(0x68, 0x6B, 0x80)
        #expect(bus.isAtEnd)
        let e = #expect(throws: I2CError.self) { _ = try bus.readRegisters(0x68, 0x3B, count: 14) }
        #expect(e?.operation == "0x68 write [3b] read 14 (replay: the recording ended at short.log:6)")
        let d = try #require(bus.divergence)
        #expect(d.kind == .endOfRecording)
        #expect(d.expected == nil && d.line == 6 && d.index == 2)
        #expect(d.description.hasPrefix("short.log:6: the recording ends here (2 transactions replayed) but the drivers asked for 0x68 write [3b] read 14"))
    }

    @Test func sleepsMoveTimeForwardOnlyAndTransfersNeverMoveItBack() throws {
        let (bus, clock) = try make()
        clock.sleep(untilNanoseconds: 500)                  // in the past: nothing
        #expect(clock.nowNanoseconds == 1000)
        clock.sleep(untilNanoseconds: 2500)                 // past the next record's time (2000)
        #expect(clock.nowNanoseconds == 2500)
        _ = try bus.readRegister(0x68, 0x75)
        #expect(clock.nowNanoseconds == 2500, "the record at 2000 does not take time back")
        try bus.writeRegister(0x68, 0x6B, 0x80)
        #expect(clock.nowNanoseconds == 3000)
    }

    @Test func realtimeReplaySleepsThePacingClockToTheRecordedOffsets() throws {
        let wall = VirtualClock(startNanoseconds: 77_000_000)   // stands in for MonotonicClock
        let (bus, clock) = try make(realtime: wall)
        #expect(clock.realtime != nil)
        _ = try bus.readRegister(0x68, 0x75)                    // recorded 1000 after the start
        #expect(wall.nowNanoseconds == 77_001_000)
        try bus.writeRegister(0x68, 0x6B, 0x80)
        clock.sleep(nanoseconds: 100_000)
        #expect(wall.nowNanoseconds == 77_102_000)
        #expect(clock.nowNanoseconds == 103_000)
    }

    @Test func replayingTheSameCallsTwiceGivesTheSameResults() throws {
        func run() throws -> [String] {
            let (bus, clock) = try make()
            var out: [String] = []
            out.append("\(try bus.readRegister(0x68, 0x75)) @\(clock.nowNanoseconds)")
            try bus.writeRegister(0x68, 0x6B, 0x80)
            clock.sleep(nanoseconds: 100_000)
            out.append("\(try bus.readRegisters(0x68, 0x3B, count: 2)) @\(clock.nowNanoseconds)")
            do { _ = try bus.readRegisters(0x68, 0x3B, count: 2) } catch { out.append("\(error) @\(clock.nowNanoseconds)") }
            out.append("\(try bus.probe(address: 0x0D)) @\(clock.nowNanoseconds)")
            do { _ = try bus.probe(address: 0x50) } catch { out.append("\(error) @\(clock.nowNanoseconds)") }
            do { _ = try bus.probe(address: 0x50) } catch { out.append("\(error) @\(clock.nowNanoseconds)") }
            return out
        }
        let first = try run()
        #expect(first.count == 6)
        #expect(try run() == first)
    }

    // MARK: data-ready lines

    /// A data-ready line that returns scripted edges and moves a virtual clock.
    final class ScriptedLine: DataReadyLine, @unchecked Sendable {
        var edges: [UInt64?]
        let clock: VirtualClock
        init(_ edges: [UInt64?], clock: VirtualClock) { self.edges = edges; self.clock = clock }
        func waitForEdge(timeoutNanoseconds: UInt64) throws(GPIOError) -> UInt64? {
            guard !edges.isEmpty else { throw GPIOError(kind: .io, errno: EIO, chip: "gpiochip0", line: 17, operation: "read event") }
            let e = edges.removeFirst()
            clock.sleep(untilNanoseconds: e ?? clock.nowNanoseconds + timeoutNanoseconds)
            return e
        }
    }

    @Test func dataReadyWaitsAreRecordedAndReplayedInOrderWithTheTransfers() throws {
        let clock = VirtualClock(startNanoseconds: 1_000)
        let writer = TransactionLogWriter(header: TransactionLogHeader(bus: "/dev/i2c-1", startNanoseconds: 1_000))
        let bus = RecordingBus(ScriptedI2CBus(name: "/dev/i2c-1", [
            .read(0x68, register: 0x3A, reply: [0x01]), .read(0x68, register: 0x3A, reply: [0x01]),
        ]), log: writer, clock: clock)
        let line = RecordingDataReadyLine(ScriptedLine([5_000, nil], clock: clock), name: "mpu-int", log: writer, clock: clock)

        func run(_ bus: some I2CBus, _ line: some DataReadyLine, _ clock: any TimeSource) -> [String] {
            var out: [String] = []
            do { out.append("edge \(String(describing: try line.waitForEdge(timeoutNanoseconds: 10_000))) @\(clock.nowNanoseconds)") } catch { out.append("\(error)") }
            do { out.append("status \(try bus.readRegister(0x68, 0x3A)) @\(clock.nowNanoseconds)") } catch { out.append("\(error)") }
            do { out.append("edge \(String(describing: try line.waitForEdge(timeoutNanoseconds: 10_000))) @\(clock.nowNanoseconds)") } catch { out.append("\(error)") }
            do { out.append("status \(try bus.readRegister(0x68, 0x3A)) @\(clock.nowNanoseconds)") } catch { out.append("\(error)") }
            do { out.append("edge \(String(describing: try line.waitForEdge(timeoutNanoseconds: 10_000))) @\(clock.nowNanoseconds)") } catch { out.append("\(error)") }
            return out
        }
        let live = run(bus, line, clock)
        #expect(live.first == "edge Optional(5000) @5000")
        #expect(live[2] == "edge nil @15000")
        #expect(writer.text.contains("\n5000 gpio mpu-int edge 5000\n"))
        #expect(writer.text.contains("\n15000 gpio mpu-int timeout\n"))
        #expect(writer.text.hasSuffix("\n15000 gpio mpu-int ! io 5 read event\n"))

        let log = try TransactionLog.parse(writer.text, file: "int.log")
        #expect(log.records.map(\.request) == [.waitForEdge(line: "mpu-int"), .transfer(write: [0x3A], readCount: 1),
                                               .waitForEdge(line: "mpu-int"), .transfer(write: [0x3A], readCount: 1),
                                               .waitForEdge(line: "mpu-int")])
        let replayClock = ReplayClock(log: log)
        let replay = ReplayBus(log: log, clock: replayClock)
        let replayed = run(replay, replay.dataReadyLine(named: "mpu-int"), replayClock)
        // The GPIO error's chip is the line's name in the log, so compare kinds.
        #expect(Array(replayed.prefix(4)) == Array(live.prefix(4)))
        #expect(replayed[4].contains("GPIO read event failed on chip \"mpu-int\" (errno 5)"))
        #expect(replay.isAtEnd && replay.divergence == nil)
    }

    @Test func aDataReadyWaitWhereATransferWasRecordedIsADivergence() throws {
        let (bus, _) = try make()
        let line = bus.dataReadyLine(named: "mpu-int")
        let e = #expect(throws: GPIOError.self) { _ = try line.waitForEdge(timeoutNanoseconds: 1) }
        #expect(e?.chip == "replay of bench.log")
        #expect(e?.operation.contains("gpio mpu-int wait for edge (replay: not in the recording; bench.log:5 has 0x68 write [75] read 1") == true)
        #expect(bus.divergence?.difference == "a data-ready wait instead of a bus transfer")
        #expect(bus.divergence?.line == 5)
        // Final for the bus too.
        #expect(throws: I2CError.self) { _ = try bus.readRegister(0x68, 0x75) }
    }

    @Test func anotherLineNameIsADivergence() throws {
        let log = try TransactionLog.parse("""
            # edge-agent transaction log v1
            @bus b
            @start-ns 0
            10 gpio mpu-int edge 9
            """, file: "g.log")
        let bus = ReplayBus(log: log, clock: ReplayClock(log: log))
        #expect(throws: GPIOError.self) { _ = try bus.dataReadyLine(named: "mag-drdy").waitForEdge(timeoutNanoseconds: 1) }
        #expect(bus.divergence?.difference == "another data-ready line (mag-drdy instead of mpu-int)")
        let other = ReplayBus(log: log, clock: ReplayClock(log: log))
        #expect(throws: I2CError.self) { _ = try other.readRegister(0x68, 0x75) }
        #expect(other.divergence?.difference == "a transfer instead of a data-ready wait")
    }

    @Test func anyI2CBusAndGenericCodeSeeTheSameReplay() throws {
        let (bus, _) = try make()
        let boxed = AnyI2CBus(bus)
        #expect(boxed.name == "/dev/i2c-1")
        #expect(try boxed.readRegister(0x68, 0x75) == 0x68)
        #expect(bus.position == 1)
    }
}
