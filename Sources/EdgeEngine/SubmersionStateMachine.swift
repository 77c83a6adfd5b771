// Water submersion: surface pressure, depth and Core Motion's event and
// depth states, with hysteresis. Pure: Settings, State, update(reading).
import EdgeFusion
import EdgeProtocol

/// Thresholds (m of depth, s of dwell). Chosen so a wave or a splash does not
/// flap the state, and documented in docs/submersion.md:
///
/// | transition | condition |
/// |---|---|
/// | notSubmerged → submerged | depth ≥ 0.5 m for 1 s |
/// | unknown → submerged | the first reading (at start or after a sensor restart) ≥ 0.5 m, at once |
/// | submerged → notSubmerged | depth < 0.2 m for 3 s |
/// | submergedShallow → submergedDeep | depth ≥ 1.0 m (Apple's shallow band is above 1 m) |
/// | submergedDeep → submergedShallow | depth < 0.9 m |
/// | → approachingMaxDepth | depth ≥ maximum − 1 m |
/// | approachingMaxDepth → deep | depth < maximum − 1.25 m |
/// | → pastMaxDepth | depth > maximum |
/// | pastMaxDepth → approachingMaxDepth | depth < maximum − 0.25 m |
/// | → sensorDepthError | pressure beyond the sensor's full scale |
/// | surface pressure | averaged (30 s) over readings shallower than 0.05 m while not submerged; reset to the reading after 10 s beyond that without submerging |
/// | sensorDepthError → (depth states) | pressure < 99 % of full scale |
public struct SubmersionSettings: Sendable, Equatable {
    public var depth: DepthSettings
    public var temperature: WaterTemperatureSettings
    public var submergeDepthMetres = 0.5
    public var submergeDwellSeconds = 1.0
    public var surfaceDepthMetres = 0.2
    public var surfaceDwellSeconds = 3.0
    public var deepDepthMetres = 1.0
    public var deepHysteresisMetres = 0.1
    public var approachMarginMetres = 1.0
    public var approachHysteresisMetres = 0.25
    public var pastHysteresisMetres = 0.25
    /// Full scale of the pressure sensor, Pa (BMP280 110 kPa; MS5837-30BA 3 MPa).
    public var sensorMaximumPascals: Double
    /// Time constant of the surface-pressure average while not submerged, s.
    public var surfaceAveragingSeconds = 30.0
    /// Only readings shallower than this (m; noise and ripples) update the
    /// surface pressure, so the start of a descent does not pull it along.
    public var surfaceBandMetres = 0.05
    /// Readings beyond the band for this long without submerging reset the
    /// surface pressure to the reading, s.
    public var surfaceResetSeconds = 10.0
    /// Surface pressure assumed when the first reading is already under water, Pa.
    public var defaultSurfacePascals = 101_325.0

    public init(depth: DepthSettings = DepthSettings(), temperature: WaterTemperatureSettings = .init(),
                sensorMaximumPascals: Double) {
        self.depth = depth; self.temperature = temperature; self.sensorMaximumPascals = sensorMaximumPascals
    }
}

public struct SubmersionMachineState: Sendable, Equatable {
    public var event: SubmersionState = .unknown
    public var fullDepthState: SubmersionDepthState = .unknown
    public var shallowDepthState: SubmersionDepthState = .unknown
    /// Averaged surface pressure, Pa (nil before the first reading).
    public var surfacePascals: Double?
    public var lastSeconds: Double?
    /// Since when the depth has been beyond the enter / leave threshold.
    public var enterSince: Double?
    public var outOfBandSince: Double?
    public var leaveSince: Double?
    public var temperature = WaterTemperatureState()
    public init() {}
}

/// What one reading gives.
public struct SubmersionUpdate: Sendable, Equatable {
    public var sample: SubmersionSample
    /// The event state changed with this reading (a CMWaterSubmersionEvent).
    public var eventChanged: Bool
}

/// The BMP280's operating range tops out at 1100 hPa (BST-BMP280-DS001
/// Table 1, "Operating pressure range 300…1100 hPa"): ≈ 0.9 m of sea water
/// at sea level.
public enum BMP280Range {
    public static let maximumPascals = 110_000.0
}

public enum SubmersionStateMachine {
    /// One pressure/temperature reading at `seconds` (monotonic) captured at
    /// `timestampNs`.
    public static func update(_ st: inout SubmersionMachineState, pressurePascals p: Double, temperatureCelsius t: Double,
                              seconds: Double, timestampNs: UInt64, _ s: SubmersionSettings) -> SubmersionUpdate {
        let dt = st.lastSeconds.map { max(0, seconds - $0) } ?? 0
        st.lastSeconds = seconds
        let before = st.event
        let overRange = !(p <= s.sensorMaximumPascals)
        if st.surfacePascals == nil {
            // Out of water at start (within 0.5 m of a standard atmosphere or lower): that is the surface.
            st.surfacePascals = p < s.defaultSurfacePascals + 5_000 ? p : s.defaultSurfacePascals
        }
        var surface = st.surfacePascals!
        var depth = (try? WaterDepth.depth(pressurePascals: p, surfacePascals: surface, s.depth)) ?? .nan
        if overRange { depth = .nan }

        // Event state with dwell times.
        switch st.event {
        case .unknown where overRange || depth >= s.submergeDepthMetres:
            // The first reading (at start, or after the sensor restarted) is
            // already under water: that is no splash, and reporting
            // notSubmerged for the dwell would be a wrong state.
            st.event = .submerged; st.enterSince = nil; st.leaveSince = nil
        case .unknown, .notSubmerged:
            if overRange || depth >= s.submergeDepthMetres {
                let since = st.enterSince ?? seconds
                st.enterSince = since
                if seconds - since >= s.submergeDwellSeconds - 1e-6 || overRange { st.event = .submerged; st.leaveSince = nil }
                else if st.event == .unknown { st.event = .notSubmerged }
            } else {
                st.enterSince = nil
                st.event = .notSubmerged
            }
        case .submerged:
            if !overRange && depth < s.surfaceDepthMetres {
                let since = st.leaveSince ?? seconds
                st.leaveSince = since
                if seconds - since >= s.surfaceDwellSeconds - 1e-6 { st.event = .notSubmerged; st.enterSince = nil }
            } else {
                st.leaveSince = nil
            }
        }

        // The surface pressure follows the air while not submerged (a
        // mountain lake works), and is frozen under water.
        // Only readings within the surface band (or above it: driving up a
        // mountain) count, so the first half metre of a descent does not
        // pull the surface down with it.
        if st.event == .notSubmerged && st.enterSince == nil && !overRange && dt > 0 {
            if !(depth >= s.surfaceBandMetres) {
                let a = dt / (s.surfaceAveragingSeconds + dt)
                surface += a * (p - surface)
                st.outOfBandSince = nil
            } else {
                // Above the band but not submerged for long: the air
                // pressure moved (a drive downhill), not the sensor.
                let since = st.outOfBandSince ?? seconds
                st.outOfBandSince = since
                if seconds - since >= s.surfaceResetSeconds { surface = p; st.outOfBandSince = nil }
            }
            st.surfacePascals = surface
            depth = (try? WaterDepth.depth(pressurePascals: p, surfacePascals: surface, s.depth)) ?? .nan
        }

        st.fullDepthState = nextDepthState(st.fullDepthState, event: st.event, depth: depth, overRange: overRange,
                                           pressure: p, maximum: SubmersionSample.fullMaximumDepth, s)
        st.shallowDepthState = nextDepthState(st.shallowDepthState, event: st.event, depth: depth, overRange: overRange,
                                              pressure: p, maximum: SubmersionSample.shallowMaximumDepth, s)
        let temp = WaterTemperature.update(&st.temperature, celsius: t, seconds: seconds, s.temperature)
        let reported = depth.isFinite ? max(0, depth) : depth
        let sample = SubmersionSample(timestampNs: timestampNs, depth: reported, pressure: p, surfacePressure: surface,
                                      temperature: temp.celsius, state: st.event, depthState: st.fullDepthState,
                                      shallowDepthState: st.shallowDepthState, maximumDepth: SubmersionSample.fullMaximumDepth,
                                      temperatureUncertainty: temp.uncertaintyCelsius)
        return SubmersionUpdate(sample: sample, eventChanged: st.event != before)
    }

    /// The measurement depth state for one maximum depth.
    public static func nextDepthState(_ current: SubmersionDepthState, event: SubmersionState, depth: Double,
                                      overRange: Bool, pressure: Double, maximum: Double,
                                      _ s: SubmersionSettings) -> SubmersionDepthState {
        if overRange { return .sensorDepthError }
        if current == .sensorDepthError && pressure >= 0.99 * s.sensorMaximumPascals { return .sensorDepthError }
        switch event {
        case .unknown: return .unknown
        case .notSubmerged: return .notSubmerged
        case .submerged: break
        }
        let approach = maximum - s.approachMarginMetres
        switch current {
        case .pastMaxDepth:
            if depth > maximum - s.pastHysteresisMetres { return .pastMaxDepth }
            return depth >= approach - s.approachHysteresisMetres ? .approachingMaxDepth : band(depth, wasDeep: true, s)
        case .approachingMaxDepth:
            if depth > maximum { return .pastMaxDepth }
            if depth >= approach - s.approachHysteresisMetres { return .approachingMaxDepth }
            return band(depth, wasDeep: true, s)
        default:
            if depth > maximum { return .pastMaxDepth }
            if depth >= approach { return .approachingMaxDepth }
            return band(depth, wasDeep: current == .submergedDeep, s)
        }
    }

    static func band(_ depth: Double, wasDeep: Bool, _ s: SubmersionSettings) -> SubmersionDepthState {
        if wasDeep { return depth < s.deepDepthMetres - s.deepHysteresisMetres ? .submergedShallow : .submergedDeep }
        return depth >= s.deepDepthMetres ? .submergedDeep : .submergedShallow
    }
}
