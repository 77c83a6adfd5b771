import EdgeChips
import EdgeFusion
import EdgeProtocol

/// Barometric altitude fused with the IMU's vertical acceleration, and the
/// relative and absolute altitude streams.
struct AltitudeStage {
    var filter: AltitudeFilter
    let settings: AltitudeFilter.Settings

    init(settings: AltitudeFilter.Settings) {
        self.settings = settings
        filter = AltitudeFilter(settings: settings)
    }

    /// The barometer (re)started after a gap: a new reference.
    mutating func restart() { filter = AltitudeFilter(settings: settings) }

    /// One IMU sample: the vertical acceleration predicts.
    @inline(__always)
    mutating func motion(attitude6D q: Quaternion, accel: Vector3, dt: Double) {
        filter.updateAccel(verticalAcceleration: AltitudeFilter.verticalAcceleration(attitude: q, specificForce: accel), dt: dt)
    }

    /// One conversion: correct, then publish what is wanted.
    @inline(__always)
    mutating func pressure(_ r: BarometerReading, publisher p: inout Publisher) {
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
}
