import EdgeChips
import EdgeProtocol

/// Pressure readings → the submersion stream (``SubmersionStateMachine``):
/// every reading while submerged (≈ 3 Hz from the MS5837), one a second at
/// the surface, and every change of the event state at once.
struct SubmersionStage {
    var state = SubmersionMachineState()
    var settings: SubmersionSettings
    var lastPublished: UInt64?
    /// Spacing of samples while not submerged, ns.
    let surfaceInterval: UInt64 = 1_000_000_000

    init(settings: SubmersionSettings) { self.settings = settings }

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
