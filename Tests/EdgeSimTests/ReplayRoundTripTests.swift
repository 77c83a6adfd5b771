import Testing
import EdgeBus
import EdgeChips
import EdgeSim
#if canImport(Glibc)
import Glibc
#endif

/// Record the real drivers on a simulated board through a RecordingBus,
/// then replay the log through fresh drivers on a ReplayBus: the same
/// samples, capture times and errors come out.
@Suite struct ReplayRoundTripTests {
    enum Event: Equatable, CustomStringConvertible {
        case probe(UInt8, Bool)
        case started(String)
        case mpu(MPU6050Sample)
        case bmp(BMP280Sample)
        case mag(QMC5883LReading)
        case failure(String)
        case time(UInt64)
        var description: String {
            switch self {
            case .probe(let a, let p): "probe \(hex(a)) \(p)"
            case .started(let s): "started \(s)"
            case .mpu(let s): "mpu \(s.captureNanoseconds) \(s.acceleration) \(s.rotationRate)"
            case .bmp(let s): "bmp \(s.captureNanoseconds) \(s.pressurePascals.map { "\($0)" } ?? "-")"
            case .mag(let r): "mag \(r)"
            case .failure(let e): "failure \(e)"
            case .time(let t): "time \(t)"
            }
        }
    }

    /// What a tool or the engine would do: probe, start the three chips, then
    /// read on a 100 Hz schedule (BMP280 and QMC5883L every fifth tick).
    static func drive<B: I2CBus>(_ bus: B, clock: any TimeSource, ticks: Int = 60,
                                 mpuConfig: MPU6050Configuration = .default) -> [Event] {
        var events: [Event] = []
        func attempt(_ body: () throws -> Event) {
            do { events.append(try body()) } catch { events.append(.failure("\(error)")) }
        }
        for a: UInt8 in [0x68, 0x76, 0x0D, 0x50] {
            attempt { .probe(a, try bus.probe(address: a)) }
        }
        var mpu = MPU6050(bus: bus, address: 0x68, clock: clock)
        var bmp = BMP280(bus: bus, address: 0x76, clock: clock)
        var mag = QMC5883L(bus: bus, address: 0x0D, clock: clock)
        attempt { .started("\(try mpu.start(mpuConfig))") }
        attempt { .started("\(try bmp.start(.default))") }
        attempt { try mag.start(.default); return .started("qmc5883l") }
        let t0 = clock.nowNanoseconds + 100_000_000
        for i in 0..<ticks {
            clock.sleep(untilNanoseconds: t0 + UInt64(i) * 10_000_000)
            attempt { .mpu(try mpu.read()) }
            if i % 5 == 0 {
                attempt { .bmp(try bmp.read()) }
                attempt { .mag(try mag.read()) }
            }
        }
        events.append(.time(clock.nowNanoseconds))
        return events
    }

    /// A board whose BMP280 stops answering for a while, so errors are recorded too.
    static func record(ticks: Int = 60) throws -> (events: [Event], log: String) {
        let clock = VirtualClock(startNanoseconds: 2_000_000_000)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.realistic), truth: ConstantTruth(),
                                       clock: clock, seed: 7,
                                       faults: [.nack(address: 0x76, register: nil, from: 0.25, to: 0.36)])
        let writer = TransactionLogWriter(header: TransactionLogHeader(bus: board.bus.name,
                                                                       startNanoseconds: clock.nowNanoseconds,
                                                                       startUTC: "2026-11-29T16:00:00Z"))
        writer.addMetadata(TransactionLogHeader.Key.tool, "ReplayRoundTripTests")
        writer.addMetadata(TransactionLogHeader.Key.board, "reference board, realistic, seed 7")
        let recording = RecordingBus(board.bus, log: writer, clock: clock)
        let events = drive(recording, clock: clock, ticks: ticks)
        return (events, writer.text)
    }

    @Test func theRealDriversReplayToTheSameSamplesTimesAndErrors() throws {
        let (live, text) = try Self.record()
        #expect(live.contains(.probe(0x68, true)) && live.contains(.probe(0x50, false)))
        #expect(live.contains { if case .failure(let e) = $0 { e.contains("0x76") } else { false } },
                "the NACK window should have produced a BMP280 error")
        #expect(live.contains { if case .mag(.field) = $0 { true } else { false } })
        #expect(live.filter { if case .mpu = $0 { true } else { false } }.count == 60)

        let log = try TransactionLog.parse(text, file: "roundtrip.log")
        #expect(log.header.bus == "simulated")
        #expect(log.header[TransactionLogHeader.Key.tool] == "ReplayRoundTripTests")
        let clock = ReplayClock(log: log)
        let bus = ReplayBus(log: log, clock: clock)
        let replayed = Self.drive(bus, clock: clock)
        #expect(bus.divergence == nil, "\(bus.divergence?.description ?? "")")
        #expect(bus.isAtEnd)
        #expect(replayed.count == live.count)
        for (a, b) in zip(replayed, live) where a != b {
            Issue.record("replayed \(a)\n    live \(b)")
            break
        }
        #expect(replayed == live)
    }

    @Test func recordingTwiceGivesTheSameLogAndReplayingTwiceTheSameEvents() throws {
        let first = try Self.record(ticks: 12)
        let second = try Self.record(ticks: 12)
        #expect(first.log == second.log)
        let log = try TransactionLog.parse(first.log)
        var runs: [[Event]] = []
        for _ in 0..<2 {
            let clock = ReplayClock(log: log)
            runs.append(Self.drive(ReplayBus(log: log, clock: clock), clock: clock, ticks: 12))
        }
        #expect(runs[0] == runs[1])
        #expect(runs[0] == first.events)
    }

    /// Replaying with another configuration leaves the recording at the
    /// first register that differs: the driver fails, and the bus says where.
    @Test func anotherConfigurationDivergesAtTheFirstDifferentRegister() throws {
        let (_, text) = try Self.record(ticks: 3)
        let log = try TransactionLog.parse(text, file: "config.log")
        let clock = ReplayClock(log: log)
        let bus = ReplayBus(log: log, clock: clock)
        var other = MPU6050Configuration.default
        other.sampleRateHz = MPU6050Configuration.default.sampleRateHz / 2
        let events = Self.drive(bus, clock: clock, ticks: 3, mpuConfig: other)
        let d = try #require(bus.divergence)
        #expect(d.kind == .mismatch)
        #expect(d.actualAddress == 0x68)
        #expect(d.difference == "other bytes written")
        let line = try #require(text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(d.line - 1).first)
        #expect(line.contains("0x68 w 19"), "line \(d.line) is '\(line)'")
        // The driver's error carries the replay's explanation.
        let failure = events.first { if case .failure = $0 { true } else { false } }
        #expect(failure?.description.contains("config.log:\(d.line)") == true, "\(failure?.description ?? "none")")
    }

    /// An engine paced by the MPU-6050's INT pin: the waits are recorded in
    /// order with the transfers and replayed from the same log.
    @Test func aDataReadyPacedLoopReplaysWithItsEdges() throws {
        func drive<B: I2CBus>(_ bus: B, _ line: some DataReadyLine, _ clock: any TimeSource) -> [Event] {
            var events: [Event] = []
            var mpu = MPU6050(bus: bus, address: 0x68, clock: clock)
            var c = MPU6050Configuration.default
            c.dataReadyInterrupt = true
            do { events.append(.started("\(try mpu.start(c))")) } catch { events.append(.failure("\(error)")) }
            for _ in 0..<25 {
                do {
                    guard let edge = try line.waitForEdge(timeoutNanoseconds: 50_000_000) else {
                        events.append(.failure("timeout")); continue
                    }
                    events.append(.time(edge))
                    _ = try mpu.readInterruptStatus()
                    events.append(.mpu(try mpu.read()))
                } catch {
                    events.append(.failure("\(error)"))
                }
            }
            events.append(.time(clock.nowNanoseconds))
            return events
        }
        let clock = VirtualClock(startNanoseconds: 3_000_000_000)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.realistic), truth: ConstantTruth(),
                                       clock: clock, seed: 3)
        let writer = TransactionLogWriter(header: TransactionLogHeader(bus: board.bus.name, startNanoseconds: clock.nowNanoseconds))
        let int = try #require(board.dataReadyLine(forAddress: 0x68))
        let live = drive(RecordingBus(board.bus, log: writer, clock: clock),
                         RecordingDataReadyLine(int, name: "mpu-int", log: writer, clock: clock), clock)
        #expect(live.filter { if case .mpu = $0 { true } else { false } }.count == 25)
        #expect(writer.text.contains(" gpio mpu-int edge "))

        let log = try TransactionLog.parse(writer.text, file: "int.log")
        let replayClock = ReplayClock(log: log)
        let bus = ReplayBus(log: log, clock: replayClock)
        let replayed = drive(bus, bus.dataReadyLine(named: "mpu-int"), replayClock)
        #expect(bus.divergence == nil, "\(bus.divergence?.description ?? "")")
        #expect(bus.isAtEnd)
        #expect(replayed == live)
    }

    /// A recording cut short (the record command stopped mid-way) ends with
    /// ``ReplayDivergence/Kind/endOfRecording`` naming the last line.
    @Test func aShortRecordingEndsWithEndOfRecording() throws {
        let (_, text) = try Self.record(ticks: 10)
        let log = try TransactionLog.parse(text, file: "short.log")
        let clock = ReplayClock(log: log)
        let bus = ReplayBus(log: log, clock: clock)
        _ = Self.drive(bus, clock: clock, ticks: 11)
        let d = try #require(bus.divergence)
        #expect(d.kind == .endOfRecording)
        #expect(d.line == log.records.last?.line)
        #expect(d.actualAddress == 0x68)
    }
}
