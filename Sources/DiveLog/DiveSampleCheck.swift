// Which submersion samples may enter a dive log: in time order, and every
// number within what the depth sensors can report. Pure: Limits, State,
// a `check` that says why a sample is refused.
//
// The ranges come from the sensors' datasheets (docs/submersion.md):
// * TE MS5837-30BA (datasheet REV C2, 12/2019, "Specifications"): pressure
//   0–30 bar (0–3 MPa), operating temperature −20…+85 °C;
// * Bosch BMP280 (BST-BMP280-DS001-26, Table 1 "Operating range"):
//   300–1100 hPa, −40…+85 °C.
// The agent reports `sensorDepthError` (no depth) above a sensor's full
// scale, so a logged pressure never exceeds 3 MPa; 10 % is allowed above it
// for a sensor at its limit. The deepest depth follows: (3.3 MPa − 30 kPa)
// / (997 kg/m³ · 9.80665 m/s²) ≈ 334 m in fresh water, the least dense water
// the agent computes for; so 340 m. A depth a little above the surface
// reference (a wave, the reference drifting with the weather) is real: down
// to −2 m (20 kPa below the surface pressure, far beyond any weather).
import EdgeProtocol

public struct DiveSampleLimits: Sendable, Equatable {
    /// Absolute pressure, Pa: 0 to the MS5837-30BA's 30 bar + 10 %.
    public var pressurePascals: ClosedRange<Double> = 0...3_300_000
    /// Surface (air) pressure, Pa: the BMP280's 300–1100 hPa operating
    /// range, + 5 % above (the highest sea-level pressure recorded is 108.4 kPa).
    public var surfacePressurePascals: ClosedRange<Double> = 30_000...115_500
    /// Depth, m (see the file's notes).
    public var depthMetres: ClosedRange<Double> = -2...340
    /// Temperature, °C: the union of the chips' operating ranges (BMP280
    /// −40…+85 °C, MS5837-30BA −20…+85 °C).
    public var temperatureCelsius: ClosedRange<Double> = -40...85
    /// Capture time, ns of CLOCK_MONOTONIC: below 2^62 (146 years of
    /// uptime), so dive times and `--epoch` sums cannot overflow.
    public var maximumTimestampNanoseconds: UInt64 = 1 << 62
    public init() {}
}

public enum DiveSampleCheck {
    /// The time of the last sample let through.
    public struct State: Sendable, Equatable {
        public var lastTimestampNanoseconds: UInt64?
        public init() {}
    }

    /// Why a sample is refused, or nil when it may be logged (and then it
    /// is the latest). A value the agent withheld (NaN depth, pressure or
    /// temperature: past the maximum depth, a sensor error) is allowed;
    /// infinities and values outside ``DiveSampleLimits`` are not.
    public static func check(_ st: inout State, _ x: SubmersionSample,
                             _ limits: DiveSampleLimits = DiveSampleLimits()) -> String? {
        if x.timestampNs > limits.maximumTimestampNanoseconds {
            return "timestamp_ns \(x.timestampNs) is beyond \(limits.maximumTimestampNanoseconds) (146 years of uptime)"
        }
        if let last = st.lastTimestampNanoseconds, x.timestampNs <= last {
            return x.timestampNs == last
                ? "timestamp_ns \(x.timestampNs) repeats the previous sample's (a repeated line?)"
                : "timestamp_ns \(x.timestampNs) is before the previous sample's \(last) (lines out of order)"
        }
        func range(_ name: String, _ v: Double, _ r: ClosedRange<Double>, _ unit: String, _ why: String) -> String? {
            if v.isNaN { return nil }
            return r.contains(v) ? nil : "\(name) \(v) \(unit) is outside \(r.lowerBound)…\(r.upperBound) \(unit) (\(why))"
        }
        if let e = range("depth_m", x.depth, limits.depthMetres, "m", "what an MS5837-30BA's 30 bar can measure, plus a margin")
            ?? range("pressure_pa", x.pressure, limits.pressurePascals, "Pa", "the MS5837-30BA's 0–30 bar, plus 10 %")
            ?? range("surfacePressure_pa", x.surfacePressure, limits.surfacePressurePascals, "Pa", "air pressure: the BMP280's 300–1100 hPa, plus 5 %")
            ?? range("temperature_c", x.temperature, limits.temperatureCelsius, "°C", "the sensors' operating range, BMP280 −40…+85 °C, MS5837-30BA −20…+85 °C") {
            return e
        }
        if x.state == .submerged || x.state == .notSubmerged, x.surfacePressure.isNaN {
            return "surfacePressure_pa is missing in a \(x.state == .submerged ? "submerged" : "notSubmerged") sample"
        }
        st.lastTimestampNanoseconds = x.timestampNs
        return nil
    }
}
