import EdgeChips
import EdgeFusion
import EdgeProtocol

/// Barometric altitude fused with the IMU's vertical acceleration, and the
/// relative and absolute altitude streams.
struct AltitudeStage: EngineStage {
    static let name = "altitude"
    static let produces = [StageProduct(.altitude, needs: [.pressure, .motion]),
                           StageProduct(.absoluteAltitude, needs: [.pressure, .motion])]
    let consumes: StageInputs
    var filter: AltitudeFilter
    let settings: AltitudeFilter.Settings
    /// The barometer went down: its next conversion starts a new reference.
    var needsRestart = false

    init(settings: AltitudeFilter.Settings, hasIMU: Bool = true) {
        self.settings = settings
        filter = AltitudeFilter(settings: settings)
        consumes = hasIMU ? [.pressure, .motion] : .pressure
    }

    /// The filter tracks every sample, wanted or not: a subscriber gets a
    /// settled altitude.
    func runs(_ p: Publisher) -> Bool { true }

    /// The barometer (re)started after a gap: a new reference.
    mutating func restart() { filter = AltitudeFilter(settings: settings) }

    mutating func inputLost(_ input: StageInputs, at t: UInt64, publisher p: inout Publisher) {
        if input == .pressure { needsRestart = true }
    }

    /// One IMU sample: the vertical acceleration predicts.
    @inline(__always)
    mutating func motion(_ m: inout MotionInput, publisher p: inout Publisher) {
        filter.updateAccel(verticalAcceleration: AltitudeFilter.verticalAcceleration(attitude: m.attitude6D, specificForce: m.accel),
                           dt: m.dt)
    }

    /// One conversion: correct, then publish what is wanted.
    @inline(__always)
    mutating func pressure(_ r: BarometerReading, publisher p: inout Publisher) {
        if needsRestart { restart(); needsRestart = false }
        guard let pa = r.pressurePascals, pa.isFinite, r.temperatureCelsius.isFinite else { return }
        filter.updateBarometer(pressure: pa)
        let out = filter.output
        guard out.relativeAltitude.isFinite, out.absoluteAltitude.isFinite else { return }
        if p.wants(.altitude) {
            p.publish(.altitude(AltitudeSample(timestampNs: r.captureNanoseconds, relativeAltitude: out.relativeAltitude,
                                               pressure: pa, temperature: r.temperatureCelsius)))
        }
        if p.wants(.absoluteAltitude) {
            let precision = PressureAltitude.altitudePerPascal(pressure: pa, seaLevelPressure: settings.seaLevelPressure)
            p.publish(.absoluteAltitude(AbsoluteAltitudeSample(
                timestampNs: r.captureNanoseconds, altitude: out.absoluteAltitude,
                accuracy: out.absoluteAltitudeAccuracy.isFinite ? out.absoluteAltitudeAccuracy : 1e6,
                precision: abs(precision) * 0.16)))   // 0.16 Pa: UHR resolution (DS Table 3)
        }
    }

    func status(at t: UInt64, sources: StageSources, publisher p: Publisher) -> StageStatus? {
        guard let b = sources.pressure else { return nil }
        let ok = b.isReading || b.idle
        return StageStatus(name: Self.name, degraded: !ok, reason: ok ? nil : "no barometer: \(b.reason ?? "")")
    }
}
