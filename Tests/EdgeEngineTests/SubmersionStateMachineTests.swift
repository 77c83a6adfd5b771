import Testing
import EdgeFusion
import EdgeProtocol
@testable import EdgeEngine

/// Every transition of the event and depth states, the hysteresis, the
/// approach and pass of both maxima (6 m shallow, 40 m full), the sensor's
/// range, and the surface pressure. Depths are turned into pressures with
/// ρ g h for salt water computed here.
@Suite struct SubmersionStateMachineTests {
    static let surface = 101_325.0
    static let rhoG = 1025 * 9.80665

    struct Run {
        var st = SubmersionMachineState()
        var s: SubmersionSettings
        var t = 0.0
        var events: [SubmersionState] = []
        var last: SubmersionSample?
        init(sensorMax: Double = 3_000_000) { s = SubmersionSettings(sensorMaximumPascals: sensorMax) }

        /// Holds `depth` for `seconds` at 3 Hz.
        mutating func hold(_ depth: Double, for seconds: Double, surface: Double = SubmersionStateMachineTests.surface) {
            let n = max(1, Int((seconds * 3).rounded()))
            for _ in 0..<n { step(pressure: surface + depth * SubmersionStateMachineTests.rhoG) }
        }
        mutating func step(pressure: Double, temperature: Double = 20) {
            t += 1.0 / 3
            let u = SubmersionStateMachine.update(&st, pressurePascals: pressure, temperatureCelsius: temperature,
                                                  seconds: t, timestampNs: UInt64(t * 1e9), s)
            if u.eventChanged { events.append(u.sample.state) }
            last = u.sample
        }
        var full: SubmersionDepthState { st.fullDepthState }
        var shallow: SubmersionDepthState { st.shallowDepthState }
    }

    @Test func unknownUntilTheFirstReadingThenNotSubmerged() {
        var r = Run()
        #expect(r.st.event == .unknown && r.full == .unknown)
        r.hold(0, for: 1)
        #expect(r.st.event == .notSubmerged && r.full == .notSubmerged && r.shallow == .notSubmerged)
        #expect(r.events == [.notSubmerged])
        #expect(abs(r.last!.surfacePressure - Self.surface) < 1e-6)
    }

    /// An agent that starts under water (or a sensor that restarts there):
    /// the first reading, at 10 m, is submerged at once; never notSubmerged.
    /// 0.4 m is not clearly under water: notSubmerged, then the dwell.
    @Test(arguments: [0.6, 10.0, 35.0])
    func firstReadingUnderWaterIsSubmergedNeverNotSubmerged(depth: Double) {
        var r = Run()
        r.hold(depth, for: 5)
        #expect(r.events == [.submerged])
        #expect(r.full != .notSubmerged && r.full != .unknown)
        #expect(abs(r.last!.depth - depth) < 1e-6, "standard surface pressure when none was measured")
        var shallow = Run()
        shallow.hold(0.4, for: 1)
        #expect(shallow.events == [.notSubmerged])
    }

    /// A splash (0.6 m for half a second) does not submerge; a second at
    /// 0.6 m does.
    @Test func splashDoesNotSubmergeDwellDoes() {
        var r = Run()
        r.hold(0, for: 2)
        r.hold(0.6, for: 0.67)
        r.hold(0, for: 1)
        #expect(r.st.event == .notSubmerged)
        r.hold(0.6, for: 1.4)
        #expect(r.st.event == .submerged)
        #expect(r.full == .submergedShallow)
        #expect(r.events == [.notSubmerged, .submerged])
    }

    /// Waves at the surface (a moment above 0.2 m) keep it submerged; 3 s
    /// above 0.2 m surface it.
    @Test func wavesDoNotSurfaceThreeSecondsDo() {
        var r = Run()
        r.hold(0, for: 1); r.hold(2, for: 3)
        for _ in 0..<5 { r.hold(0.1, for: 2); r.hold(0.5, for: 1) }
        #expect(r.st.event == .submerged)
        r.hold(0.1, for: 3.4)
        #expect(r.st.event == .notSubmerged && r.full == .notSubmerged)
        #expect(r.events == [.notSubmerged, .submerged, .notSubmerged])
    }

    @Test func shallowDeepHysteresis() {
        var r = Run()
        r.hold(0, for: 1); r.hold(0.8, for: 2)
        #expect(r.full == .submergedShallow)
        r.hold(1.0, for: 1)
        #expect(r.full == .submergedDeep)
        r.hold(0.95, for: 1)
        #expect(r.full == .submergedDeep)     // inside the 0.1 m band
        r.hold(0.85, for: 1)
        #expect(r.full == .submergedShallow)
        r.hold(0.98, for: 1)
        #expect(r.full == .submergedShallow)  // not yet 1 m
    }

    /// Down to 45 m and back: the shallow maximum (6 m) is approached at 5 m
    /// and passed above 6 m; the full one (40 m) at 39 and 40 m; coming up,
    /// each returns with its hysteresis.
    @Test func approachAndPassBothMaxima() {
        var r = Run()
        r.hold(0, for: 1); r.hold(3, for: 2)
        #expect(r.shallow == .submergedDeep && r.full == .submergedDeep)
        r.hold(4.99, for: 1)
        #expect(r.shallow == .submergedDeep)
        r.hold(5.01, for: 1)
        #expect(r.shallow == .approachingMaxDepth && r.full == .submergedDeep)
        r.hold(6.01, for: 1)
        #expect(r.shallow == .pastMaxDepth)
        r.hold(39.01, for: 1)
        #expect(r.shallow == .pastMaxDepth && r.full == .approachingMaxDepth)
        r.hold(40.01, for: 1)
        #expect(r.full == .pastMaxDepth)
        // The sample as each client sees it: depth withheld past the maximum.
        let s = r.last!
        #expect(s.capped(shallow: false).depth.isNaN && s.capped(shallow: false).depthState == .pastMaxDepth)
        #expect(s.capped(shallow: true).depth.isNaN && s.capped(shallow: true).maximumDepth == 6)
        r.hold(45, for: 1)
        r.hold(39.8, for: 1)
        #expect(r.full == .pastMaxDepth)          // within 0.25 m of 40
        r.hold(39.7, for: 1)
        #expect(r.full == .approachingMaxDepth)
        r.hold(38.8, for: 1)
        #expect(r.full == .approachingMaxDepth)   // within the 0.25 m approach band
        r.hold(38.7, for: 1)
        #expect(r.full == .submergedDeep)
        r.hold(5.8, for: 1)
        #expect(r.shallow == .pastMaxDepth && r.full == .submergedDeep)
        r.hold(5.7, for: 1)
        #expect(r.shallow == .approachingMaxDepth)
        let ok = r.last!.capped(shallow: true)
        #expect(abs(ok.depth - 5.7) < 1e-9 && ok.depthState == .approachingMaxDepth)
        r.hold(3.7, for: 1)
        #expect(r.shallow == .submergedDeep)
    }

    /// A BMP280 (full scale 110 kPa, ≈ 0.9 m of sea water): beyond it the
    /// state is sensorDepthError and no depth is given; back in range the
    /// depth states resume.
    @Test func beyondTheSensorsRangeIsSensorDepthError() {
        var r = Run(sensorMax: 110_000)
        r.hold(0, for: 1); r.hold(0.7, for: 2)
        #expect(r.full == .submergedShallow)
        r.step(pressure: 115_000)
        #expect(r.full == .sensorDepthError && r.shallow == .sensorDepthError)
        #expect(r.last!.depth.isNaN)
        #expect(r.last!.capped(shallow: false).pressure.isNaN)
        #expect(r.st.event == .submerged)
        r.step(pressure: 109_500)   // within 1 % of full scale: still an error
        #expect(r.full == .sensorDepthError)
        r.hold(0.6, for: 1)
        #expect(r.full == .submergedShallow && r.last!.depth.isFinite)
    }

    /// A mountain lake: the surface follows the air while out of water and
    /// is frozen under water.
    @Test func surfacePressureAveragedWhileNotSubmerged() {
        var r = Run()
        r.hold(0, for: 1, surface: 80_000)
        #expect(abs(r.last!.surfacePressure - 80_000) < 1e-6)
        r.hold(0, for: 300, surface: 80_500)       // weather: 5 hPa in minutes
        #expect(abs(r.last!.surfacePressure - 80_500) < 1)
        r.hold(10, for: 60, surface: 80_500)
        let frozen = r.last!.surfacePressure
        r.hold(10, for: 60, surface: 80_500)
        #expect(r.last!.surfacePressure == frozen)
        #expect(abs(r.last!.depth - 10) < 0.02)
    }

    /// State hand-over: a copy of the state continues identically.
    @Test func stateHandOver() {
        var a = Run()
        a.hold(0, for: 1); a.hold(4, for: 5)
        var b = a
        a.hold(7, for: 3); b.hold(7, for: 3)
        #expect(a.st == b.st && a.last == b.last)
    }
}
