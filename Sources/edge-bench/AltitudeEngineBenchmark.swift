// `edge-bench altitude`: the engine's fused altitude on the simulated board
// (virtual clock, no waiting) next to the barometer alone on the same
// pressure samples.
#if canImport(Glibc)
import Glibc
#endif
import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeProtocol
import EdgeSim

enum AltitudeEngineBenchmark {
    static let help = """
    Usage: edge-bench altitude [--seeds N] [--rate HZ] [--tau S] [--settle S] [--root DIR]

    The altitude target on the simulator, with the BMP280 at ultra-high
    resolution (pressure x16, temperature x2, IIR off, standby 0.5 ms) and
    realistic chip imperfections (noise, offsets, quantisation). On a virtual
    clock, the engine (SensorHub + EngineLoop, as the agent runs it, MPU-6050
    at --rate Hz) plays:
      * scenarios/rest-flat.json5 (60 s still): rest noise = RMS of relative
        altitude about its mean from --settle s to the end;
      * scenarios/lift-3m.json5 (3 s still, 3 m up in 3 s on a minimum-jerk
        curve, 4 s still): t90 = when relative altitude, minus its mean over
        the rest before the lift, first reaches 90 % of the true lift, in
        seconds after the lift ends (lift start and end from the scenario's
        truth, ScenarioWorld.sample(atNanoseconds:).altitudeMeters); "t90 stays"
        is when it reaches 90 % for good. The truth itself crosses 90 % 0.74 s
        before the end.
    Side by side on the same pressure samples (the pressure_pa the engine
    published with each altitude sample), the barometer alone
    (EdgeFusion.BarometricAltimeter): raw pressure altitude, and a first-order
    low-pass whose time constant gives the same rest noise as the fused filter
    (so the lag is compared at equal noise), and one at --tau.
    Each scenario runs with --seeds noise seeds; figures are medians (and worst).

    Targets: rest noise <= 5 cm RMS; t90 <= 0.3 s after the lift ends; both better
    than the barometer alone (quieter than raw; faster than the low-pass of equal noise).

    Options:
      --seeds N    noise seeds per scenario (default 5)
      --rate HZ    MPU-6050 rate = loop rate (default 200, as config/edge-agent.json5)
      --tau S      time constant of the fixed low-pass row (default 0.5)
      --settle S   rest-noise window starts here (default 10)
      --root DIR   repository root (scenarios/)
    """

    /// One engine run: the altitude samples it published.
    struct Run {
        var t: [UInt64] = []
        var fused: [Double] = []
        var pressure: [Double] = []
        var liftStart: UInt64 = 0
        var liftEnd: UInt64 = 0
        var liftHeight = 0.0
        var start: UInt64 = 0
    }

    static func engineSettings(rate: Int) -> EngineSettings {
        var mpu = MPU6050Configuration.default
        mpu.sampleRateHz = Double(rate)
        mpu.dlpf = rate > 500 ? .hz184 : (rate > 200 ? .hz94 : .hz44)
        let bmp = BMP280Configuration(mode: .normal, pressureOversampling: .x16, temperatureOversampling: .x2,
                                      filter: .off, standby: .ms0_5)
        return EngineSettings(mpu6050: mpu, bmp280: bmp, qmc5883l: .default, imuBatch: 1)
    }

    static func play(_ scenario: Scenario, seed: UInt64, settings: EngineSettings,
                     imperfections: ChipImperfections) throws -> Run {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let world = try ScenarioWorld(scenario, startNanoseconds: clock.nowNanoseconds)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(imperfections), truth: world,
                                       clock: clock, seed: seed, faults: world.faults)
        let sink = CollectingSink(demand: [.altitude: 0])
        let (hub, loop) = try BenchEngine.make(bus: board.bus, clock: clock, settings: settings, sink: sink)
        hub.start()
        let duration = scenario.durationSeconds
        loop.run(maxTicks: Int((duration * 1e9 / Double(loop.periodNanoseconds)).rounded(.down)) - 1)
        var r = Run()
        r.start = world.startNanoseconds
        for case .altitude(let a) in sink.samples {
            r.t.append(a.timestampNs); r.fused.append(a.relativeAltitude); r.pressure.append(a.pressure)
        }
        // The lift from the truth: where the altitude starts and stops changing (1 ms steps).
        let h0 = world.sample(atNanoseconds: world.startNanoseconds).altitudeMeters
        let end = world.startNanoseconds + UInt64(duration * 1e9)
        let hEnd = world.sample(atNanoseconds: end).altitudeMeters
        r.liftHeight = hEnd - h0
        if abs(r.liftHeight) > 0.01 {
            var t = world.startNanoseconds
            while t < end && abs(world.sample(atNanoseconds: t).altitudeMeters - h0) < 1e-6 { t += 1_000_000 }
            r.liftStart = t - 1_000_000
            var u = end
            while u > t && abs(world.sample(atNanoseconds: u).altitudeMeters - hEnd) < 1e-6 { u -= 1_000_000 }
            r.liftEnd = u + 1_000_000
        }
        return r
    }

    /// Relative altitude of the barometer alone over the published pressures.
    static func baseline(_ r: Run, tau: Double, sampleRate: Double) -> [Double] {
        var b = BarometricAltimeter(settings: .init(seaLevelPressure: PressureAltitude.standardSeaLevelPressure,
                                                    timeConstant: tau, sampleRate: sampleRate))
        return r.pressure.map { b.updateBarometer(pressure: $0); return b.relativeAltitude }
    }

    /// RMS about the mean, cm, over samples from `from` ns on; and the mean, cm.
    static func restNoise(_ t: [UInt64], _ y: [Double], from: UInt64) -> (rms: Double, mean: Double) {
        let v = zip(t, y).filter { $0.0 >= from }.map(\.1)
        guard !v.isEmpty else { return (.nan, .nan) }
        let mean = v.reduce(0, +) / Double(v.count)
        let ms = v.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(v.count)
        return (ms.squareRoot() * 100, mean * 100)
    }

    /// (first crossing, stays above) of 90 % of the lift, s after the lift
    /// ends; and the final value (mean of the last second), m above the rest mean.
    static func t90(_ r: Run, _ y: [Double]) -> (first: Double, stays: Double, final: Double) {
        let restFrom = r.start + 500_000_000
        let rest = zip(r.t, y).filter { $0.0 >= restFrom && $0.0 < r.liftStart }.map(\.1)
        let base = rest.isEmpty ? 0 : rest.reduce(0, +) / Double(rest.count)
        let target = 0.9 * r.liftHeight
        var first = Double.nan, lastBelow: Int?
        for i in r.t.indices where r.t[i] >= r.liftStart {
            let above = (y[i] - base) >= target
            if above && first.isNaN { first = (Double(r.t[i]) - Double(r.liftEnd)) / 1e9 }
            if !above { lastBelow = i }
        }
        var stays = Double.nan
        if let lb = lastBelow { if lb + 1 < r.t.count { stays = (Double(r.t[lb + 1]) - Double(r.liftEnd)) / 1e9 } }
        else { stays = first }
        let lastT = r.t.last ?? 0
        let tail = zip(r.t, y).filter { $0.0 + 1_000_000_000 >= lastT }.map(\.1)
        let final = (tail.isEmpty ? .nan : tail.reduce(0, +) / Double(tail.count)) - base
        return (first, stays, final)
    }

    struct Row {
        var name: String
        var noise: [Double] = []
        var offset: [Double] = []
        var first: [Double] = []
        var stays: [Double] = []
        var final: [Double] = []
    }

    static func run(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let seeds = try o.int("--seeds", default: 5, in: 1...100)
        let rate = try o.int("--rate", default: 200, in: 10...1000)
        let tau = try o.double("--tau", default: 0.5, in: 0...30)
        let settle = try o.double("--settle", default: 10, in: 0...50)
        let root = try o.string("--root")
        try o.finish("altitude")
        let rootPath = try Paths.findRoot(root)
        let restScenario = try ConfigLoader.load(Scenario.self, from: rootPath + "/scenarios/rest-flat.json5")
        let liftScenario = try ConfigLoader.load(Scenario.self, from: rootPath + "/scenarios/lift-3m.json5")
        let settings = engineSettings(rate: rate)

        say("== altitude: engine (fused AltitudeFilter) vs barometer alone, simulated board on a virtual clock")
        say("   BMP280 x16/x2, IIR off, standby 0.5 ms (\(fixed(settings.bmp280.normalModeRateHz, 1)) Hz conversions); MPU-6050 \(rate) Hz; realistic imperfections; \(seeds) seeds")
        say("   rest: scenarios/rest-flat.json5 (noise from \(fixed(settle, 0)) s on); lift: scenarios/lift-3m.json5")

        var restRuns: [Run] = [], liftRuns: [Run] = [], idealLift: Run?
        for k in 0..<seeds {
            restRuns.append(try play(restScenario, seed: restScenario.seed &+ UInt64(k), settings: settings, imperfections: .realistic))
            liftRuns.append(try play(liftScenario, seed: liftScenario.seed &+ UInt64(k), settings: settings, imperfections: .realistic))
        }
        idealLift = try play(liftScenario, seed: liftScenario.seed, settings: settings, imperfections: .ideal)
        guard let probe = liftRuns.first, probe.t.count > 10, probe.liftEnd > probe.liftStart else {
            throw BenchError("altitude: the engine published too few altitude samples or the scenario has no lift")
        }
        let spacing = Double(probe.t.last! - probe.t.first!) / Double(probe.t.count - 1) / 1e9
        let baroRate = 1 / spacing
        say("   altitude samples every \(fixed(spacing * 1000, 1)) ms (\(fixed(baroRate, 1)) Hz); lift from \(fixed(Double(probe.liftStart - probe.start) / 1e9, 2)) s to \(fixed(Double(probe.liftEnd - probe.start) / 1e9, 2)) s, \(fixed(probe.liftHeight, 2)) m")

        // The low-pass with the fused filter's rest noise (bisection on τ).
        let fusedNoise = median(restRuns.map { restNoise($0.t, $0.fused, from: $0.start + UInt64(settle * 1e9)).rms })
        func lowPassNoise(_ tau: Double) -> Double {
            median(restRuns.map { r in restNoise(r.t, baseline(r, tau: tau, sampleRate: baroRate), from: r.start + UInt64(settle * 1e9)).rms })
        }
        var lo = 0.0, hi = 20.0
        if lowPassNoise(0) <= fusedNoise { hi = 0 }
        for _ in 0..<40 where hi > 0 {
            let mid = (lo + hi) / 2
            if lowPassNoise(mid) > fusedNoise { lo = mid } else { hi = mid }
        }
        let matchedTau = hi

        func row(_ name: String, _ series: (Run) -> [Double]) -> Row {
            var row = Row(name: name)
            for r in restRuns {
                let n = restNoise(r.t, series(r), from: r.start + UInt64(settle * 1e9))
                row.noise.append(n.rms); row.offset.append(n.mean)
            }
            for r in liftRuns {
                let x = t90(r, series(r))
                row.first.append(x.first); row.stays.append(x.stays); row.final.append(x.final)
            }
            return row
        }
        let fused = row("fused (engine)") { $0.fused }
        let raw = row("barometer alone, raw") { baseline($0, tau: 0, sampleRate: baroRate) }
        let matched = row("barometer low-pass, τ \(fixed(matchedTau, 2)) s (same noise)") { baseline($0, tau: matchedTau, sampleRate: baroRate) }
        let fixedTau = row("barometer low-pass, τ \(fixed(tau, 2)) s") { baseline($0, tau: tau, sampleRate: baroRate) }

        func mw(_ v: [Double], _ d: Int, worstIsMax: Bool = true) -> String {
            let finite = v.filter(\.isFinite)
            guard !finite.isEmpty else { return "n/a" }
            let worst = worstIsMax ? finite.max()! : finite.min()!
            return fixed(median(finite), d) + " (" + fixed(worst, d) + ")" + (finite.count < v.count ? " [\(v.count - finite.count) never]" : "")
        }
        say()
        var t = Table(["filter", "rest noise RMS cm", "|rest mean| cm", "t90 first s", "t90 stays s", "final m"])
        for r in [fused, raw, matched, fixedTau] {
            t.add([r.name, mw(r.noise, 2), mw(r.offset.map(abs), 2), mw(r.first, 3), mw(r.stays, 3), mw(r.final, 3, worstIsMax: false)])
        }
        say(t.text)
        say("   median over \(seeds) seeds (worst in brackets); t90 in seconds after the lift ends (negative: before).")
        if let ideal = idealLift {
            let f = t90(ideal, ideal.fused)
            let b = t90(ideal, baseline(ideal, tau: 0, sampleRate: baroRate))
            say("   ideal chips (no noise, offsets or quantisation), lift-3m: fused t90 first \(fixed(f.first, 3)) s, stays \(fixed(f.stays, 3)) s, final \(fixed(f.final, 3)) m; raw barometer t90 \(fixed(b.first, 3)) s")
        }

        let noise = median(fused.noise), lag = median(fused.first), lagStays = median(fused.stays)
        let noiseOK = noise <= 5
        let lagOK = lag <= 0.3 && lagStays <= 0.3
        let quieterThanRaw = noise < median(raw.noise)
        let fasterThanMatched = lagStays < median(matched.stays) && lag < median(matched.first)
        var v = Table(["target", "measured", "verdict"])
        v.add(["rest noise <= 5 cm RMS", fixed(noise, 2) + " cm", verdict(noiseOK)])
        v.add(["90 % <= 0.3 s after the lift ends (first / for good)", fixed(lag, 3) + " s / " + fixed(lagStays, 3) + " s", verdict(lagOK)])
        v.add(["quieter than the raw barometer", fixed(noise, 2) + " vs " + fixed(median(raw.noise), 2) + " cm", verdict(quieterThanRaw)])
        v.add(["faster than the barometer low-pass of equal noise", fixed(lagStays, 3) + " vs " + fixed(median(matched.stays), 3) + " s", verdict(fasterThanMatched)])
        say(v.text)
        return noiseOK && lagOK && quieterThanRaw && fasterThanMatched
    }
}
