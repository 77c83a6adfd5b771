import EdgeChips
import EdgeProtocol

/// Pressure readings → the submersion stream (``SubmersionStateMachine``):
/// every reading while submerged (≈ 3 Hz from the MS5837), one a second at
/// the surface, and every change of the event state at once.
struct SubmersionStage: EngineStage {
    static let name = "submersion"
    static let produces = [StageProduct(.submersion, needs: [.pressure, .depthPressure])]
    /// `.depthPressure` (the MS5837) or `.pressure` (the barometer, without one).
    let consumes: StageInputs
    /// The sensor went down: its next reading restarts the event state.
    var needsRestart = false
    var state = SubmersionMachineState()
    var settings: SubmersionSettings
    var lastPublished: UInt64?
    /// Spacing of samples while not submerged, ns.
    let surfaceInterval: UInt64 = 1_000_000_000

    init(settings: SubmersionSettings, source: StageInputs = .depthPressure) {
        self.settings = settings
        consumes = source
    }

    /// The state machine follows every reading, wanted or not.
    func runs(_ p: Publisher) -> Bool { true }

    mutating func inputLost(_ input: StageInputs, at t: UInt64, publisher p: inout Publisher) {
        guard input == consumes else { return }
        sensorLost(at: t, publisher: &p)   // once: the state is unknown after it
        if input == .depthPressure { needsRestart = true }
    }

    mutating func pressure(_ r: BarometerReading, publisher p: inout Publisher) {
        guard consumes == .pressure, let pa = r.pressurePascals else { return }
        reading(pressurePascals: pa, temperatureCelsius: r.temperatureCelsius, at: r.captureNanoseconds, publisher: &p)
    }

    mutating func depthPressure(_ r: MS5837Sample, publisher p: inout Publisher) {
        if needsRestart { restart(); needsRestart = false }
        reading(pressurePascals: r.pressurePascals, temperatureCelsius: r.temperatureCelsius, at: r.captureNanoseconds,
                publisher: &p)
    }

    /// Reported for a depth sensor (the barometer's outage is the altitude stage's report).
    func status(at t: UInt64, sources: StageSources, publisher p: Publisher) -> StageStatus? {
        guard consumes == .depthPressure, let d = sources.depthPressure else { return nil }
        let ok = d.isReading || d.idle
        return StageStatus(name: Self.name, degraded: !ok, reason: ok ? nil : "no depth sensor: \(d.reason ?? "")")
    }

    /// The sensor (re)started after a gap: the event state is unknown again
    /// until the next reading; the surface pressure is kept.
    mutating func restart() {
        let surface = state.surfacePascals
        state = SubmersionMachineState()
        state.surfacePascals = surface
    }

    /// The pressure sensor stopped (a bus fault, the chip gone): clients
    /// must not take the last depth for a live one. One sample says so —
    /// event state `unknown`, depth state `sensorDepthError`, no depth,
    /// pressure or temperature — and the state is unknown until the next
    /// reading (whose first reading under water is `submerged` at once).
    /// Nothing when nothing was known yet.
    mutating func sensorLost(at ns: UInt64, publisher: inout Publisher) {
        guard state.event != .unknown else { return }
        let surface = state.surfacePascals ?? settings.defaultSurfacePascals
        restart()
        guard publisher.wants(.submersion) else { return }
        lastPublished = ns
        publisher.publish(.submersion(SubmersionSample(timestampNs: ns, depth: .nan, pressure: .nan, surfacePressure: surface,
                                                       temperature: .nan, state: .unknown, depthState: .sensorDepthError,
                                                       shallowDepthState: .sensorDepthError,
                                                       maximumDepth: SubmersionSample.fullMaximumDepth)))
    }

    mutating func reading(pressurePascals p: Double, temperatureCelsius t: Double, at ns: UInt64, publisher: inout Publisher) {
        guard p.isFinite, t.isFinite else { return }
        let u = SubmersionStateMachine.update(&state, pressurePascals: p, temperatureCelsius: t,
                                              seconds: Double(ns) / 1e9, timestampNs: ns, settings)
        guard publisher.wants(.submersion) else { return }
        let due = u.sample.state == .submerged || u.eventChanged || lastPublished.map { ns &- $0 >= surfaceInterval } ?? true
        guard due else { return }
        lastPublished = ns
        publisher.publish(.submersion(u.sample))
    }
}
