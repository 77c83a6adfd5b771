// `edge-bench step`: the CPU cost of one loop step, in process on a virtual
// clock: the whole engine tick next to the simulated chips read through
// their drivers alone, so the footprint figure can be split into what the
// simulator costs (replaced by I2C transfers on a real board) and what the
// engine costs.
#if canImport(Glibc)
import Glibc
#endif
import EdgeBus
import EdgeChips
import EdgeEngine
import EdgeProtocol
import EdgeSim

enum StepBenchmark {
    static let help = """
    Usage: edge-bench step [--rate HZ] [--seconds S] [--repeat N]

    CPU time of one loop step, in process on a virtual clock (nothing
    sleeps), on the simulated reference board (MPU-6050, BMP280 at
    ultra-high resolution, QMC5883L at 100 Hz), side by side:
      engine        SensorHub.tick() with deviceMotion, accelerometer, gyroscope,
                    magnetometer and altitude demanded, into a sink that discards
                    the samples (no ring, no JSON)
      chips alone   the same chips read through their drivers at the same
                    rates (MPU-6050 data-ready burst every tick, QMC5883L polled
                    every tick, BMP280 every 45 ms): the simulator's share
      with fitness  the engine tick with pedometer, pedometerEvent and activity
                    demanded as well (the fitness stage: EdgeActivity's pipeline)
      VQF path      the engine tick with the continuous magnetometer
                    calibration off (fusion.magnetometerSelfCalibration):
                    the difference is what the learning costs
    Thread CPU time (CLOCK_THREAD_CPUTIME_ID) per tick, medians of --repeat
    alternating runs; "% of a core at HZ" = µs per tick × HZ / 10⁴.

    Options:
      --rate HZ     MPU-6050 rate = loop rate (default 100)
      --seconds S   simulated seconds per run (default 60)
      --repeat N    alternating runs of each (default 3)
    """

    static func threadCPU() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func board(_ clock: VirtualClock, seed: UInt64) throws -> SimulatedBoard {
        try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.realistic), truth: ConstantTruth(),
                           clock: clock, seed: seed)
    }

    /// ns of thread CPU per engine tick.
    static func engine(rate: Int, ticks: Int, fitness: Bool = false, selfCalibration: Bool = true) throws -> Double {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let b = try board(clock, seed: 7)
        var settings = AltitudeEngineBenchmark.engineSettings(rate: rate)
        settings.imuBatch = 1
        settings.fusion.magnetometerSelfCalibration = selfCalibration
        var wanted: [StreamName: Double] = [.deviceMotion: 0, .accelerometer: 0, .gyroscope: 0, .magnetometer: 0, .altitude: 0]
        if fitness { wanted[.pedometer] = 0; wanted[.pedometerEvent] = 0; wanted[.activity] = 0 }
        let sink = DiscardingSink(wanted)
        let (hub, loop) = try BenchEngine.make(bus: b.bus, clock: clock, settings: settings, sink: sink)
        hub.start()
        loop.run(maxTicks: rate)   // settle: 1 s
        let c0 = threadCPU()
        loop.run(maxTicks: ticks)
        return Double(threadCPU() - c0) / Double(ticks)
    }

    /// ns of thread CPU per tick for the chips read through their drivers alone.
    static func chips(rate: Int, ticks: Int) throws -> Double {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let b = try board(clock, seed: 7)
        let settings = AltitudeEngineBenchmark.engineSettings(rate: rate)
        var mpu = MPU6050(bus: b.bus, address: 0x68, clock: clock)
        var bmp = BMP280(bus: b.bus, address: 0x76, clock: clock)
        var qmc = QMC5883L(bus: b.bus, address: 0x0D, clock: clock)
        _ = try mpu.start(settings.mpu6050)
        _ = try bmp.start(settings.bmp280)
        try qmc.start(settings.qmc5883l)
        let period = UInt64(1e9 / settings.imuRateHz)
        var next = clock.nowNanoseconds + period
        var nextBaro = next
        var sink = 0.0
        func step() throws {
            clock.sleep(untilNanoseconds: next)
            next += period
            if let r = try? mpu.readRawIfReady() { sink += Double(r.accel.x) }
            if case .field(let f)? = try? qmc.read() { sink += f.magneticField.x }
            if clock.nowNanoseconds >= nextBaro {
                nextBaro = clock.nowNanoseconds + 45_000_000
                sink += (try? bmp.read().temperatureCelsius) ?? 0
            }
        }
        for _ in 0..<rate { try step() }
        let c0 = threadCPU()
        for _ in 0..<ticks { try step() }
        let ns = Double(threadCPU() - c0) / Double(ticks)
        if sink.isNaN { say("") }   // keep the reads observable
        return ns
    }

    static func run(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let rate = try o.int("--rate", default: 100, in: 10...1000)
        let seconds = try o.double("--seconds", default: 60, in: 1...3600)
        let repeats = try o.int("--repeat", default: 3, in: 1...50)
        try o.finish("step")
        let ticks = Int(seconds * Double(rate))
        say("== step: CPU time of one loop step at \(rate) Hz, in process, virtual clock, \(ticks) ticks a run, \(repeats) runs each")
        var e: [Double] = [], c: [Double] = [], f: [Double] = [], fd: [Double] = [], v: [Double] = [], ld: [Double] = []
        for _ in 0..<repeats {
            let plain = try engine(rate: rate, ticks: ticks)
            let fit = try engine(rate: rate, ticks: ticks, fitness: true)
            let vqf = try engine(rate: rate, ticks: ticks, selfCalibration: false)
            e.append(plain); f.append(fit); fd.append(fit - plain); v.append(vqf); ld.append(plain - vqf)
            c.append(try chips(rate: rate, ticks: ticks))
        }
        let em = median(e), cm = median(c), fm = median(f), fdm = median(fd)
        var t = Table(["part", "µs per tick (median)", "min .. max", "% of a core at \(rate) Hz"])
        func row(_ name: String, _ v: [Double], _ m: Double) {
            t.add([name, fixed(m / 1000, 1), fixed((v.min() ?? 0) / 1000, 1) + " .. " + fixed((v.max() ?? 0) / 1000, 1),
                   fixed(m / 1000 * Double(rate) / 1e4, 2)])
        }
        row("engine tick (chips + fusion + altitude + samples)", e, em)
        row("chips alone (simulator + drivers)", c, cm)
        t.add(["engine's own work (difference)", fixed((em - cm) / 1000, 1), "", fixed((em - cm) / 1000 * Double(rate) / 1e4, 2)])
        row("engine tick with pedometer, floors, activity", f, fm)
        t.add(["fitness stage's share (difference, median of pairs)", fixed(fdm / 1000, 2),
               fixed((fd.min() ?? 0) / 1000, 2) + " .. " + fixed((fd.max() ?? 0) / 1000, 2),
               fixed(fdm / 1000 * Double(rate) / 1e4, 3)])
        row("engine tick, VQF path (magnetometer self-calibration off)", v, median(v))
        t.add(["self-calibration's share (difference, median of pairs)", fixed(median(ld) / 1000, 2),
               fixed((ld.min() ?? 0) / 1000, 2) + " .. " + fixed((ld.max() ?? 0) / 1000, 2),
               fixed(median(ld) / 1000 * Double(rate) / 1e4, 3)])
        say(t.text)
        say("   target (issue 11): the fitness stage adds <= 0.2 % of one core at 100 Hz")
        say("   the simulator's share: \(fixed(cm / max(em, 1) * 100, 0)) % of the engine tick")
        return true
    }
}
