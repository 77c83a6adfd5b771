import EdgeCommandLine
import EdgeFusion
import EdgeProtocol

/// `edge-agent depth PRESSURE_PA ...`: the depth model, for checking a setting.
public enum DepthCommand: Subcommand {
    public static let name = "depth"
    public static let summary = "Convert a pressure to a water depth (the submersion stream's depth model)"
    public static let help = """
    Usage: edge-agent depth PRESSURE_PA [--surface PA] [--water fresh|en13319|salt|teos10|KG_M3]
                            [--latitude DEG] [--gravity standard|normal] [--json]

    Prints the depth in metres, positive downward, that the submersion stream
    reports for an absolute pressure PRESSURE_PA (Pa) under a surface (air)
    pressure.

    Options:
      --surface PA     surface pressure, Pa (default 101325)
      --water W        fresh (997 kg/m³), en13319 (1019.716 kg/m³: 10 m per
                       bar with standard gravity), salt (1025 kg/m³, the
                       default), a density in kg/m³ (500…2000), or teos10:
                       TEOS-10's sea pressure → height relation (GSW
                       gsw_z_from_p) for the sea pressure PRESSURE − surface;
                       needs --latitude
      --latitude DEG   latitude, degrees north (−90…90)
      --gravity G      hydrostatic modes: standard (9.80665 m/s², default) or
                       normal (WGS 84 normal gravity at --latitude)
      --json           {"depth_m": ..., "pressure_pa": ..., "surface_pa": ...,
                        "water": ..., "density_kg_m3": ... or null,
                        "gravity_mps2": ... or null, "latitude_deg": ... or null}

    Exit status: 0 printed; 2 bad usage (the message says what is wrong).

    Examples:
      edge-agent depth 201325                       # 1 bar below the surface, salt water
      edge-agent depth 201325 --water en13319       # exactly 10 m
      edge-agent depth 1101325 --water teos10 --latitude 45 --json
    """

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let json = a.flag("--json")
        let surface = try a.double("--surface", in: 0...1e9) ?? 101_325
        let waterName = try a.option("--water") ?? "salt"
        guard let water = WaterType(name: waterName) else {
            throw UsageError("--water must be fresh, en13319, salt, teos10 or a density in kg/m³ between 500 and 2000, got '\(waterName)'")
        }
        let latitude = try a.double("--latitude", in: -90...90)
        let gravityName = try a.option("--gravity") ?? "standard"
        let gravity: GravityModel
        switch gravityName {
        case "standard": gravity = .standard
        case "normal":
            guard let lat = latitude else { throw UsageError("--gravity normal needs --latitude DEG") }
            gravity = .normal(latitudeDegrees: lat)
        default: throw UsageError("--gravity must be standard or normal, got '\(gravityName)'")
        }
        let text = try a.positional("PRESSURE_PA (absolute pressure in Pa)")
        try a.finish()
        guard let pressure = Double(text), pressure.isFinite, pressure >= 0 else {
            throw UsageError("PRESSURE_PA must be a non-negative number of pascals, got '\(text)'")
        }
        if water == .teos10 && latitude == nil { throw UsageError("--water teos10 needs --latitude DEG (−90…90)") }
        let settings = DepthSettings(water: water, gravity: gravity, latitudeDegrees: latitude)
        let depth: Double
        do { depth = try WaterDepth.depth(pressurePascals: pressure, surfacePascals: surface, settings) } catch {
            throw UsageError("\(error)")
        }
        if json {
            var o = JSONObject()
            o["depth_m"] = .number(depth)
            o["pressure_pa"] = .number(pressure)
            o["surface_pa"] = .number(surface)
            o["water"] = .string(water.name)
            o["density_kg_m3"] = water.densityKilogramsPerCubicMetre.map { .number($0) } ?? .null
            o["gravity_mps2"] = water == .teos10 ? .null : .number(gravity.metresPerSecondSquared)
            o["latitude_deg"] = latitude.map { .number($0) } ?? .null
            console.print(o.rendered)
        } else {
            console.print("\(fixed(depth, 4)) m")
        }
        return 0
    }
}
