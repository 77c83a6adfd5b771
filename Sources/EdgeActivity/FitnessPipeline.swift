// The pedometer, the floor counter and the activity classifier fed from one
// stream of samples: what the agent's fitness stage and the offline tools
// (`edge-agent steps|activity|floors`) both run, so they give the same
// answers for the same samples.

public struct FitnessSettings: Sendable, Equatable {
    public var sampleRateHz: Double
    public var stride: StrideModel
    public var floorHeightMeters: Double

    public init(sampleRateHz: Double = 100, stride: StrideModel = StrideModel(), floorHeightMeters: Double = 3) {
        self.sampleRateHz = sampleRateHz; self.stride = stride; self.floorHeightMeters = floorHeightMeters
    }
}

public struct FitnessOutput: Sendable, Equatable {
    public var steps = StepOutput()
    public var floors = FloorOutput()
    public var activity = ActivityOutput()
    public init() {}
}

public struct FitnessPipeline: Sendable {
    public private(set) var steps: StepDetector
    public private(set) var floors: FloorCounter
    public private(set) var activity: ActivityClassifier
    public private(set) var output = FitnessOutput()
    public private(set) var settings: FitnessSettings

    public init(_ settings: FitnessSettings = FitnessSettings()) {
        self.settings = settings
        steps = StepDetector(.init(sampleRateHz: settings.sampleRateHz, stride: settings.stride))
        floors = FloorCounter(.init(floorHeightMeters: settings.floorHeightMeters))
        activity = ActivityClassifier(.init(sampleRateHz: settings.sampleRateHz))
    }

    /// Goes on at another sample rate (the agent's IMU was re-rated by
    /// demand): the filters change, nothing counted or being recognised is
    /// lost (the floor counter does not depend on the rate).
    public mutating func setSampleRate(_ hz: Double) {
        settings.sampleRateHz = hz
        steps.setSampleRate(hz)
        activity.setSampleRate(hz)
    }

    /// One sample at `t` s: accelerometer m/s² (required), gyroscope rad/s
    /// (NaN when absent), pressure Pa (NaN when there is no new reading).
    @discardableResult
    public mutating func update(t: Double, ax: Double, ay: Double, az: Double,
                                gx: Double = .nan, gy: Double = .nan, gz: Double = .nan,
                                pressurePa: Double = .nan) -> FitnessOutput {
        output.steps = steps.update(t: t, ax: ax, ay: ay, az: az, gx: gx, gy: gy, gz: gz)
        // a walk recognised now began at its first step: the floors climbed since count as walked
        if output.steps.event == .resume { floors.walkStarted(at: output.steps.walkStartTime) }
        output.activity = activity.update(t: t, ax: ax, ay: ay, az: az, gx: gx, gy: gy, gz: gz,
                                          steps: output.steps, gait: steps.state.period)
        if pressurePa.isFinite { pressure(t: t, pressurePa: pressurePa) }
        return output
    }

    /// One barometer reading at `t` s (when it comes apart from the IMU's
    /// samples): floors count while the pedometer says the wearer walks.
    @discardableResult
    public mutating func pressure(t: Double, pressurePa: Double) -> FloorOutput {
        output.floors = floors.update(t: t, pressurePa: pressurePa, onFoot: output.steps.isWalking)
        return output.floors
    }
}
