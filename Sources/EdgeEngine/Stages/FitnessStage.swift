import EdgeActivity
import EdgeChips
import EdgeProtocol

/// The pedometer, the floor counter and the activity classifier
/// (EdgeActivity.FitnessPipeline, the code `edge-agent steps|activity|floors`
/// runs offline) fed from the primary IMU and the barometer; publishes the
/// pedometer totals on every change, pause/resume events and the activity
/// on every change.
///
/// The pipeline's filters are designed for a sample rate. When the IMU's
/// rate changes (an app asked for 100 Hz motion; the hub calls
/// ``setRate(_:)``), the pipeline goes on at the new rate: its filters take
/// the new coefficients, and the walk being recognised, the counts, the
/// floor counter's reference and the activity in effect carry on.
struct FitnessStage: EngineStage {
    static let name = "fitness"
    static let produces = [StageProduct(.pedometer, needs: [.motion, .pressure]),
                           StageProduct(.pedometerEvent, needs: [.motion, .pressure]),
                           StageProduct(.activity, needs: [.motion, .pressure])]
    let consumes: StageInputs

    struct Settings: Sendable, Equatable {
        var stride = StrideModel()
        var floorHeightMeters = 3.0
    }

    let settings: Settings
    var pipeline: FitnessPipeline
    var rateHz: Double
    var t0: UInt64?
    /// Time spent walking and the distance covered then (average active pace).
    var activeSeconds = 0.0, activeDistance = 0.0
    var lastDistance = 0.0
    var lastFloors = (0, 0)
    var lastSampleNs: UInt64 = 0
    /// CLOCK_MONOTONIC ns of the last IMU sample fed (the stage's health).
    var lastMotionNs: UInt64?

    init(settings: Settings, rateHz: Double, hasBarometer: Bool = true) {
        self.settings = settings
        consumes = hasBarometer ? [.motion, .pressure] : .motion
        self.rateHz = rateHz
        pipeline = FitnessPipeline(FitnessSettings(sampleRateHz: rateHz, stride: settings.stride,
                                                   floorHeightMeters: settings.floorHeightMeters))
    }

    var totals: (steps: Int, distance: Double, up: Int, down: Int) {
        let o = pipeline.output
        return (o.steps.steps, o.steps.distanceMeters, o.floors.floorsAscended, o.floors.floorsDescended)
    }

    @inline(__always) func seconds(_ t: UInt64) -> Double { Double(t &- (t0 ?? t)) * 1e-9 }

    /// One IMU sample (board frame, m/s² and rad/s; `dt` the interval before it, s).
    @inline(__always)
    mutating func motion(_ m: inout MotionInput, publisher p: inout Publisher) {
        let a = m.accel, g = m.gyro, dt = m.dt, t = m.t
        if t0 == nil { t0 = t }
        lastMotionNs = t
        let ts = seconds(t)
        let before = pipeline.output
        let o = pipeline.update(t: ts, ax: a.x, ay: a.y, az: a.z, gx: g.x, gy: g.y, gz: g.z)
        if o.steps.isWalking { activeSeconds += dt; activeDistance += o.steps.distanceMeters - before.steps.distanceMeters }
        if let e = o.steps.event, p.wants(.pedometerEvent) {
            p.publish(.pedometerEvent(PedometerEventSample(timestampNs: t, type: e)))
        }
        if o.steps.newSteps > 0 || (o.steps.event != nil) { publishTotals(at: t, &p) }
        if o.activity.changed && p.wants(.activity) {
            p.publish(.activity(ActivitySample(timestampNs: t, startNs: (t0 ?? t) &+ UInt64(max(0, o.activity.startTime) * 1e9),
                                               flags: o.activity.flags, confidence: o.activity.confidence)))
        }
    }

    /// One barometer reading.
    @inline(__always)
    mutating func pressure(_ r: BarometerReading, publisher p: inout Publisher) {
        guard let pa = r.pressurePascals, pa.isFinite, t0 != nil else { return }
        let before = pipeline.output.floors
        let f = pipeline.pressure(t: seconds(r.captureNanoseconds), pressurePa: pa)
        if f.floorsAscended != before.floorsAscended || f.floorsDescended != before.floorsDescended {
            publishTotals(at: max(r.captureNanoseconds, lastMotionNs ?? 0), &p)
        }
    }

    mutating func publishTotals(at t: UInt64, _ p: inout Publisher) {
        guard p.wants(.pedometer) else { return }
        let tot = totals
        let cadence = pipeline.output.steps.cadence
        p.publish(.pedometer(PedometerSample(
            timestampNs: t, startNs: t0 ?? t, steps: UInt32(clamping: tot.steps), distance: tot.distance,
            floorsAscended: UInt32(clamping: tot.up), floorsDescended: UInt32(clamping: tot.down),
            currentCadence: cadence, currentPace: settings.stride.pace(cadence: cadence),
            averageActivePace: activeDistance > 0 ? activeSeconds / activeDistance : 0)))
    }

    /// The IMU's rate, Hz: the pipeline goes on at it.
    mutating func timingChanged(_ t: StageTiming) { setRate(t.imuRateHz) }

    mutating func setRate(_ hz: Double) {
        guard hz.isFinite, hz > 0, abs(hz - rateHz) > 1e-6 * rateHz else { return }
        rateHz = hz
        pipeline.setSampleRate(max(hz, 10))
    }

    /// Reported while it runs (someone wants a fitness stream, or it is always on).
    func status(at t: UInt64, sources: StageSources, publisher p: Publisher) -> StageStatus? {
        guard runs(p), let imu = sources.motion else { return nil }
        let ok = imu.isReading
        return StageStatus(name: Self.name, degraded: !ok, reason: ok ? nil : "no IMU samples: \(imu.reason ?? "")")
    }
}
