// `edge-bench alloc`: heap allocations on the loop thread in steady state,
// counted by the malloc interposer in CAllocCount (this thread only).
#if canImport(Glibc)
import Glibc
#endif
import CAllocCount
import EdgeAgentCLI
import EdgeBus
import EdgeChips
import EdgeEngine
import EdgeFusion
import EdgeProtocol
import EdgeService
import EdgeSim
import EdgeClient
import Synchronization

/// A bare register file behind the bus protocol that never allocates: the
/// engine and drivers run on it so that what is counted is theirs alone.
/// Seeded like chips at rest (the BMP280 with the datasheet example);
/// INT_STATUS and the QMC5883L's DRDY always read "ready".
final class RegisterFileBus: I2CBus, @unchecked Sendable {
    let name = "register-file"
    private var regs = [UInt8](repeating: 0, count: 128 * 256)
    private var present = [Bool](repeating: false, count: 128)

    init() {
        func set(_ a: Int, _ r: Int, _ bytes: [UInt8]) {
            present[a] = true
            for (i, b) in bytes.enumerated() { regs[a * 256 + r + i] = b }
        }
        set(0x68, 0x75, [0x68]); set(0x68, 0x3A, [0x01]); set(0x68, 0x3F, [0x40, 0x00])
        set(0x76, 0xD0, [0x58])
        set(0x76, 0x88, [0x70, 0x6b, 0x43, 0x67, 0x18, 0xfc, 0x7d, 0x8e, 0x43, 0xd6, 0xd0, 0x0b,
                         0x27, 0x0b, 0x8c, 0x00, 0xf9, 0xff, 0x8c, 0x3c, 0xf8, 0xc6, 0x70, 0x17])
        set(0x76, 0xF7, [0x65, 0x5a, 0xc0, 0x7e, 0xed, 0x00])
        set(0x0D, 0x0D, [0xFF]); set(0x0D, 0x00, [0x58, 0x02, 0xd4, 0xfe, 0x50, 0xfb, 0x01])
        // HMC5883L 0x1E ("H43", RDY) and BME280 0x77 (the BMP280's example trimming plus
        // humidity trimming 75, 362, 0, 313, 50, 30; P, T and adc_H 30000): the driver seams' reads.
        set(0x1E, 0x0A, [0x48, 0x34, 0x33]); set(0x1E, 0x03, [0x01, 0x06, 0xFE, 0x4A, 0x00, 0x00, 0x01])
        set(0x77, 0xD0, [0x60])
        set(0x77, 0x88, [0x70, 0x6b, 0x43, 0x67, 0x18, 0xfc, 0x7d, 0x8e, 0x43, 0xd6, 0xd0, 0x0b,
                         0x27, 0x0b, 0x8c, 0x00, 0xf9, 0xff, 0x8c, 0x3c, 0xf8, 0xc6, 0x70, 0x17])
        set(0x77, 0xA1, [0x4B]); set(0x77, 0xE1, [0x6A, 0x01, 0x00, 0x13, 0x29, 0x03, 0x1E])
        set(0x77, 0xF7, [0x65, 0x5a, 0xc0, 0x7e, 0xed, 0x00, 0x75, 0x30])
    }

    func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        let a = Int(address & 0x7F)
        guard present[a] else { throw I2CError(errno: ENXIO, bus: name, address: address, operation: "transfer") }
        guard let reg = write.first else { return }
        let base = a * 256
        for i in 1..<max(1, write.count) { regs[base + (Int(reg) + i - 1) & 0xFF] = write[i] }
        // Keep the "ready" flags that a real chip would set again.
        regs[0x68 * 256 + 0x3A] = 0x01; regs[0x0D * 256 + 0x06] = 0x01; regs[0x76 * 256 + 0xF3] = 0x00
        regs[0x1E * 256 + 0x09] = 0x01; regs[0x77 * 256 + 0xF3] = 0x00
        for i in 0..<read.count { read[i] = regs[base + (Int(reg) + i) & 0xFF] }
    }
}

/// Heap allocations of `n` polls of a magnetometer through the engine's seam
/// (readField, and a configuration check every 100th), counted on this thread.
func allocationsOfReads<D: MagnetometerDriver>(_ d: inout D, _ n: Int) -> (allocations: UInt, fields: Int) {
    var fields = 0
    edge_alloc_count_begin()
    for i in 0..<n {
        if case .field? = try? d.readField() { fields += 1 }
        if i % 100 == 0 { _ = try? d.verifyConfiguration() }
    }
    return (edge_alloc_count_end(), fields)
}

/// The same for a barometer (readConversion).
func allocationsOfConversions<D: BarometerDriver>(_ d: D, _ n: Int) -> (allocations: UInt, conversions: Int) {
    var good = 0
    edge_alloc_count_begin()
    for i in 0..<n {
        if (try? d.readConversion()) != nil { good += 1 }
        if i % 100 == 0 { _ = try? d.verifyConfiguration() }
    }
    return (edge_alloc_count_end(), good)
}

enum AllocBenchmark {
    static let help = """
    Usage: edge-bench alloc [--ticks N]

    Counts heap allocations (malloc, calloc, realloc, aligned allocations) on
    the loop thread while SensorHub ticks in steady state, with every stream
    produced (deviceMotion, accelerometer, gyroscope, magnetometer, batch
    streams, altitude):
      engine + drivers  on a bare register file that never allocates, into the
                        real ServiceServer (lock-free ring; its own thread,
                        not counted, encodes and sends)
      engine + simulator  on the simulated board (the models' own work counted too)
      engine + drivers → 4 reading clients: as the first, with four clients
                        reading every stream, paced at 200 Hz on the real clock
                        (10 s): the loop thread encodes and writes to them when
                        the service thread is idle
    after a warm-up. The target is 0 for the first and the last line.
    """

    static func run(_ args: [String]) throws -> Bool {
        var ticks = 10_000
        var i = 0
        while i < args.count {
            switch args[i] {
            case "--ticks": ticks = Int(args[i + 1]) ?? ticks; i += 2
            case "--help", "-h": print(help); return true
            default: print("edge-bench alloc: unknown option \(args[i])"); exit(2)
            }
        }
        // The counter must see an allocation, or a 0 below would mean nothing.
        edge_alloc_count_begin()
        let probe = [Int](repeating: ticks, count: 64 + ticks % 7)
        let seen = edge_alloc_count_end()
        guard seen >= 1, probe.count > 0 else {
            print("edge-bench alloc: the malloc interposer counted no allocation for a new array; cannot measure")
            exit(2)
        }
        var settings = EngineSettings()
        settings.mpu6050.sampleRateHz = 200
        settings.alwaysOn = Set(StreamName.allCases)
        // 1. Engine + drivers on the register file, into the real service.
        let socket = "/tmp/edge-bench-alloc-\(getpid()).sock"
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: socket))
        defer { server.stop(reason: "benchmark done") }
        let clock1 = VirtualClock(startNanoseconds: 1_000_000_000)
        let (hub1, loop1) = try BenchEngine.make(bus: RegisterFileBus(), clock: clock1, settings: settings, sink: server)
        hub1.start()
        loop1.run(maxTicks: 2000)
        edge_alloc_count_begin()
        loop1.run(maxTicks: ticks)
        let a1 = edge_alloc_count_end()
        let published = hub1.publishedCounts.reduce(0, +)

        // 2. Engine + simulated board.
        let clock2 = VirtualClock(startNanoseconds: 1_000_000_000)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.realistic), truth: ConstantTruth(),
                                       clock: clock2, seed: 1)
        let (hub2, loop2) = try BenchEngine.make(bus: board.bus, clock: clock2, settings: settings, sink: DiscardingSink())
        hub2.start()
        loop2.run(maxTicks: 2000)
        edge_alloc_count_begin()
        loop2.run(maxTicks: ticks)
        let a2 = edge_alloc_count_end()

        // 3. The same with four clients reading every stream, paced at 200 Hz
        //    on the real clock: the loop thread delivers to them itself (the
        //    service thread idles), so encoding and the socket writes count.
        let socket3 = "/tmp/edge-bench-alloc3-\(getpid()).sock"
        let server3 = try ServiceServer(configuration: ServiceConfiguration(socketPath: socket3))
        defer { server3.stop(reason: "benchmark done") }
        let clock3 = MonotonicClock()
        let (hub3, loop3) = try BenchEngine.make(bus: RegisterFileBus(), clock: clock3, settings: settings, sink: server3)
        hub3.start()
        var readers: [ReadingClient] = []
        for _ in 0..<4 {
            let c = try ReadingClient(socket: socket3, streams: StreamName.allCases.filter(\.carriesSamples).map(\.rawValue))
            try c.start()
            readers.append(c)
        }
        defer { for c in readers { c.stop(); c.join() } }
        let pacedTicks = min(ticks, 2000)
        loop3.run(maxTicks: 400)   // 2 s: subscriptions in, queues and the line pool warm
        edge_alloc_count_begin()
        loop3.run(maxTicks: pacedTicks)
        let a3 = edge_alloc_count_end()
        for c in readers { c.stop() }
        for c in readers { c.join() }
        let delivered = readers.map { $0.tally.samples.values.reduce(0, +) }.reduce(0, +)

        // 4. The driver seams the engine's device table consumes, for the chips it
        //    does not run yet: HMC5883L and BME280 through MagnetometerDriver /
        //    BarometerDriver (started first: start-up may allocate).
        let seamClock = VirtualClock(startNanoseconds: 1_000_000_000)
        let seamBus = RegisterFileBus()
        var hmc = HMC5883L(bus: seamBus, address: 0x1E, clock: seamClock)
        var bme = BME280(bus: seamBus, address: 0x77, clock: seamClock)
        var qmc = QMC5883L(bus: seamBus, address: 0x0D, clock: seamClock)
        var bmp = BMP280(bus: seamBus, address: 0x76, clock: seamClock)
        try hmc.start(.default); try bme.start(.default); try qmc.start(.default); try bmp.start(.default)
        _ = allocationsOfReads(&hmc, 10); _ = allocationsOfConversions(bme, 10)
        let h = allocationsOfReads(&hmc, ticks), q = allocationsOfReads(&qmc, ticks)
        let e = allocationsOfConversions(bme, ticks), p = allocationsOfConversions(bmp, ticks)
        let seams: [(String, (UInt, Int))] = [("HMC5883L readField", (h.allocations, h.fields)),
                                              ("QMC5883L readField", (q.allocations, q.fields)),
                                              ("BME280 readConversion", (e.allocations, e.conversions)),
                                              ("BMP280 readConversion", (p.allocations, p.conversions))]

        // 5. A client's decode path: what the thread that hands samples to
        //    handlers allocates per sample, through a shared-memory ring and
        //    through lines (counted on that thread, from the handler).
        let ringPath = try clientPathAllocations(rings: true, samples: ticks)
        let linePath = try clientPathAllocations(rings: false, samples: ticks)
        // 6. The sensor recorder's hand-over on the loop thread while it records.
        let recorderPath = try recorderOfferAllocations(flushes: 10)

        print("== alloc: heap allocations on the loop thread in steady state (\(ticks) ticks at 200 Hz, every stream on)")
        print("  setup                                  allocations  per tick   samples published")
        print("  -------------------------------------  -----------  ---------  -----------------")
        print("  engine + drivers → ServiceServer ring  " + String(a1).leftPad(11) + "  " + String(Double(a1) / Double(ticks)).leftPad(9) + "  " + String(published).leftPad(17))
        print("  engine + simulated chips               " + String(a2).leftPad(11) + "  " + String(Double(a2) / Double(ticks)).leftPad(9))
        print("  engine + drivers → 4 reading clients   " + String(a3).leftPad(11) + "  " + String(Double(a3) / Double(pacedTicks)).leftPad(9) + "  " + String(delivered).leftPad(17) + " delivered (\(pacedTicks) ticks paced at 200 Hz; the loop thread delivers)")
        for (name, r) in seams {
            print("  driver seam: " + name.padding(toLength: 24, withPad: " ", startingAt: 0) + String(r.0).leftPad(11)
                  + "  (\(ticks) reads, \(r.1) with a value, a configuration check every 100th)")
        }
        let seamAllocations = seams.map(\.1.0).reduce(0, +)
        print("  client decode path, ring (EdgeClient)  " + String(ringPath.allocations).leftPad(11) + "  " + String(Double(ringPath.allocations) / Double(ringPath.samples)).leftPad(9) + "  per sample, \(ringPath.samples) device-motion samples handed to a handler")
        print("  client decode path, lines (EdgeClient) " + String(linePath.allocations).leftPad(11) + "  " + String(Double(linePath.allocations) / Double(linePath.samples)).leftPad(9) + "  per sample (JSON lines; for comparison)")
        print("  sensor recorder offer (loop thread)    " + String(recorderPath.allocations).leftPad(11) + "  " + String(Double(recorderPath.allocations) / Double(recorderPath.offered)).leftPad(9) + "  per sample, \(recorderPath.offered) offered at 200 Hz, \(recorderPath.kept) kept at 50 Hz, a flush every 400")
        let ok = a1 == 0 && a3 == 0 && seamAllocations == 0 && recorderPath.allocations == 0
        print("  target: the loop allocates nothing in steady state, delivering to clients and recording included: \(ok ? "PASS" : "FAIL") (\(a1), \(a3), \(seamAllocations) and \(recorderPath.allocations) allocations)")
        let ringOK = ringPath.allocations == 0
        print("  target: a ring client's decode path allocates nothing per sample: \(ringOK ? "PASS" : "FAIL") (\(ringPath.allocations) allocations)")
        return ok && ringOK
    }

    /// Allocations on the client's delivering thread over `samples`
    /// device-motion samples (after 200 to warm up), counted from the
    /// subscriber's handler, which itself allocates nothing.
    static func clientPathAllocations(rings: Bool, samples: Int) throws -> (allocations: UInt, samples: Int) {
        let socket = "/tmp/edge-bench-alloc5-\(getpid())-\(rings).sock"
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: socket))
        defer { server.stop(reason: "benchmark done") }
        let client = AgentClient(socketPath: socket, usesRings: rings)
        defer { client.close() }
        final class Count: @unchecked Sendable {
            var seen = 0
            var allocations: UInt = 0
            let done = Atomic<Bool>(false)
            let handled = Atomic<Int>(0)
        }
        let warm = 200
        let count = Count()
        let sub = client.subscribe(.deviceMotion, intervalNs: 0, onSample: { _ in
            count.seen += 1
            if count.seen == warm { edge_alloc_count_begin() }
            if count.seen == warm + samples { count.allocations = edge_alloc_count_end(); count.done.store(true, ordering: .releasing) }
            count.handled.store(count.seen, ordering: .releasing)
        }, onError: { e in print("edge-bench alloc: subscription refused: \(e)") })
        defer { sub.cancel() }
        let deadline = monotonicNanoseconds() + 30_000_000_000
        while server.statistics().clients.first?.subscriptions.contains(.deviceMotion) != true {
            guard monotonicNanoseconds() < deadline else { throw BenchError("the client did not subscribe") }
            sleepSeconds(0.01)
        }
        sleepSeconds(0.2)   // the reply (and the ring) reach the client
        // In chunks the client keeps up with (a ring holds 1024).
        var published = 0
        while published < warm + samples {
            for _ in 0..<min(100, warm + samples - published) {
                let t = 1_000_000_000 + UInt64(published) * 5_000_000
                server.publish(.deviceMotion(DeviceMotionSample(timestampNs: t, attitude: .identity, gravity: Vector3(0, 0, 9.80665),
                                                                userAcceleration: .zero, rotationRate: .zero)))
                published += 1
            }
            while count.handled.load(ordering: .acquiring) < published - 10 {
                guard monotonicNanoseconds() < deadline else { throw BenchError("the client stopped at \(count.handled.load(ordering: .acquiring)) of \(published) samples") }
                sleepSeconds(0.001)
            }
        }
        while !count.done.load(ordering: .acquiring) {
            guard monotonicNanoseconds() < deadline else { throw BenchError("the client got \(count.handled.load(ordering: .acquiring)) of \(published) samples") }
            sleepSeconds(0.001)
        }
        return (count.allocations, samples)
    }
}

private extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
