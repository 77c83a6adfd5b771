import EdgeBus
import EdgeConfig
import EdgeEngine
import EdgeRuntime

/// The engine the in-process benchmarks run: the repository's simulated
/// board profile (boards/simulated.json5 without its accessory IMU: the
/// MPU-6050, BMP280 and QMC5883L the simulated reference board carries),
/// built by EngineSetup - the wiring `run`, `record`, `replay` and
/// `simulate` use - with the benchmark's own settings. Run from the
/// repository root, as every benchmark is.
enum BenchEngine {
    static let profilePath = "boards/simulated.json5"

    static func profile() throws -> BoardProfile {
        var p = try ConfigLoader.load(BoardProfile.self, from: profilePath)
        p.chips = p.chips.filter { $0.role != .accessory }
        return p
    }

    static func make<B: I2CBus>(bus: B, clock: any TimeSource, settings: EngineSettings,
                                sink: any SampleSink) throws -> (hub: SensorHub<B>, loop: EngineLoop<B>) {
        EngineSetup.engine(bus: bus, clock: clock, profile: try profile(), config: AgentConfig(), settings: settings, sink: sink)
    }
}
