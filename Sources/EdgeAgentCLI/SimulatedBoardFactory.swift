import EdgeBus
import EdgeConfig
import EdgeSim

/// Builds the simulated board a profile describes: its scenario (relative to
/// the profile file) becomes the world, each profile chip a register model.
enum SimulatedBoardFactory {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Loads a scenario: the file as given, else found in the data
    /// directories (``BoardLocator/resolveScenario(_:executablePaths:)``),
    /// so `scenarios/lift-3m.json5` or `lift-3m` work from any directory.
    /// A scenario that is missing or invalid is a ``SetupError`` (exit 2).
    static func loadScenario(_ path: String) throws(SetupError) -> Scenario {
        let (found, searched) = BoardLocator.resolveScenario(path)
        guard let found else {
            throw SetupError(ConfigError(kind: .notFound, file: path, message:
                "no such file (a scenario; looked in: \(searched.joined(separator: ", "))). Pass the path of a scenario file, e.g. scenarios/desk-idle.json5 of the repository, or the name of one in it such as desk-idle"))
        }
        do {
            return try ConfigLoader.load(Scenario.self, from: found)
        } catch {
            throw SetupError(error)
        }
    }

    /// The scenario file a simulated profile names, resolved next to the profile.
    static func scenarioPath(profile: BoardProfile, profilePath: String) -> String? {
        profile.simulation.map { BoardLocator.resolve($0.scenario, nextTo: profilePath) }
    }

    static func make(profile: BoardProfile, profilePath: String, clock: any TimeSource,
                     scenarioOverride: String? = nil) throws -> SimulatedBoard {
        guard let path = scenarioOverride ?? scenarioPath(profile: profile, profilePath: profilePath) else {
            throw Failure(description: "\(profilePath): a simulated board needs simulation.scenario")
        }
        let scenario = try loadScenario(path)
        let world: ScenarioWorld
        do {
            world = try ScenarioWorld(scenario, startNanoseconds: clock.nowNanoseconds)
        } catch {
            throw Failure(description: "\(path): \(error)")
        }
        return try make(profile: profile, world: world, scenarioPath: path, clock: clock,
                        seed: profile.simulation?.seed ?? scenario.seed)
    }

    static func make(profile: BoardProfile, world: ScenarioWorld, scenarioPath: String,
                     clock: any TimeSource, seed: UInt64) throws -> SimulatedBoard {
        var specs: [SimulatedChipSpec] = []
        for chip in profile.chips {
            var imperfections = ChipImperfections.realistic
            // In the chip models' own format: "realistic", "ideal" or {mpu6050: {...}}.
            if let value = world.scenario.imperfections(forAddress: chip.address) {
                do {
                    imperfections = try value.decode(ChipImperfections.self)
                } catch {
                    throw Failure(description: "\(scenarioPath): imperfections[\"\(hex(chip.address))\"]: \(error)")
                }
            }
            specs.append(SimulatedChipSpec(
                kind: chip.kind.rawValue, address: chip.address, boardFromChip: chip.mounting.matrix,
                body: chip.role == .accessory ? .accessory : .board, behind: chip.behind,
                imperfections: imperfections))
        }
        do {
            return try SimulatedBoard(chips: specs, truth: world, clock: clock, seed: seed, faults: world.faults)
        } catch {
            throw Failure(description: "\(scenarioPath): \(error)")
        }
    }

}
