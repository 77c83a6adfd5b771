#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeBus
import EdgeConfig
import EdgeSim
import EdgeLocations

/// Builds the simulated board a profile describes: its scenario (relative to
/// the profile file) becomes the world, each profile chip a register model.
///
/// The chips are the board's: their imperfections (offsets, gains, noise)
/// come from the board's own scenario, their noise seed from the profile's
/// `simulation.seed` or that scenario's `seed`. A scenario played instead
/// (`calibrate --scenario`) changes the motion and the environment, not the
/// chips, so a calibration measured on it fits the chips the agent then runs
/// with.
package enum SimulatedBoardFactory {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    /// Loads a scenario: the file as given, else found in the data
    /// directories (``BoardLocator/resolveScenario(_:executablePaths:)``),
    /// so `scenarios/lift-3m.json5` or `lift-3m` work from any directory.
    /// A scenario that is missing or invalid is a ``SetupError`` (exit 2).
    package static func loadScenario(_ path: String) throws(SetupError) -> Scenario {
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
    package static func scenarioPath(profile: BoardProfile, profilePath: String) -> String? {
        profile.simulation.map { BoardLocator.resolve($0.scenario, nextTo: profilePath) }
    }

    /// - Parameter scenarioOverride: a scenario to play instead of the
    ///   profile's: its motion, environment and faults, on the board's chips.
    ///   It must not declare imperfections of its own.
    package static func make(profile: BoardProfile, profilePath: String, clock: any TimeSource,
                     scenarioOverride: String? = nil) throws -> SimulatedBoard {
        guard let boardPath = scenarioPath(profile: profile, profilePath: profilePath) else {
            throw Failure(description: "\(profilePath): a simulated board needs simulation.scenario")
        }
        let boardScenario = try loadScenario(boardPath)
        var played = boardScenario, playedPath = boardPath
        if let o = scenarioOverride {
            played = try loadScenario(o)
            playedPath = o
            if case .object(let byChip) = played.imperfections, !byChip.isEmpty {
                throw Failure(description: "\(o): declares imperfections (\(byChip.keys.sorted().joined(separator: ", "))), but a scenario played on a board "
                    + "moves the board's own chips, whose imperfections come from its scenario \(boardPath): remove them from \(o), "
                    + "or put them in the board's scenario")
            }
        }
        let world: ScenarioWorld
        do {
            world = try ScenarioWorld(played, startNanoseconds: clock.nowNanoseconds)
        } catch {
            throw Failure(description: "\(playedPath): \(error)")
        }
        return try make(profile: profile, world: world, scenarioPath: playedPath, clock: clock,
                        seed: profile.simulation?.seed ?? boardScenario.seed, chipsFrom: boardScenario, chipsPath: boardPath)
    }

    /// - Parameters:
    ///   - chipsFrom: the scenario whose imperfections the chips get (default: the world's).
    package static func make(profile: BoardProfile, world: ScenarioWorld, scenarioPath: String,
                     clock: any TimeSource, seed: UInt64, chipsFrom: Scenario? = nil,
                     chipsPath: String? = nil) throws -> SimulatedBoard {
        var specs: [SimulatedChipSpec] = []
        for chip in profile.chips {
            specs.append(SimulatedChipSpec(
                kind: chip.kind.rawValue, address: chip.address, boardFromChip: chip.mounting.matrix,
                body: chip.role == .accessory ? .accessory : .board, behind: chip.behind,
                imperfections: try imperfections(of: chip, in: chipsFrom ?? world.scenario, path: chipsPath ?? scenarioPath)))
        }
        do {
            return try SimulatedBoard(chips: specs, truth: world, clock: clock, seed: seed, faults: world.faults)
        } catch {
            throw Failure(description: "\(scenarioPath): \(error)")
        }
    }

    /// The imperfections `scenario` gives the chip (realistic when it says nothing).
    package static func imperfections(of chip: ChipSpec, in scenario: Scenario, path: String) throws -> ChipImperfections {
        // In the chip models' own format: "realistic", "ideal" or {mpu6050: {...}}.
        guard let value = scenario.imperfections(forAddress: chip.address) else { return .realistic }
        do {
            return try value.decode(ChipImperfections.self)
        } catch {
            throw Failure(description: "\(path): imperfections[\"\(hex(chip.address))\"]: \(error)")
        }
    }

    // MARK: - identity, for calibrations

    /// What makes each simulated chip of the board the chip it is, by chip
    /// id: the board's noise seed and a fingerprint of the imperfections its
    /// model gets (presets resolved to their values, so a change to the
    /// `realistic` preset is a different chip too).
    package static func chipIdentities(profile: BoardProfile, profilePath: String) throws -> [String: CalibrationOrigin.Simulation] {
        guard let path = scenarioPath(profile: profile, profilePath: profilePath) else { return [:] }
        let scenario = try loadScenario(path)
        let seed = profile.simulation?.seed ?? scenario.seed
        var out: [String: CalibrationOrigin.Simulation] = [:]
        for chip in profile.chips {
            let imp = resolved(try imperfections(of: chip, in: scenario, path: path), kind: chip.kind)
            out[chip.id] = .init(seed: seed, imperfections: fingerprint(imp), scenario: profile.simulation?.scenario ?? path)
        }
        return out
    }

    /// `.realistic` / `.ideal` as the kind's values.
    package static func resolved(_ imp: ChipImperfections, kind: ChipSpec.Kind) -> ChipImperfections {
        switch (kind, imp) {
        case (.mpu6050, .realistic): return .mpu6050(.realistic)
        case (.mpu6050, .ideal): return .mpu6050(.ideal)
        case (.bmp280, .realistic): return .bmp280(.realistic)
        case (.bmp280, .ideal): return .bmp280(.ideal)
        case (.qmc5883l, .realistic): return .qmc5883l(.realistic)
        case (.qmc5883l, .ideal): return .qmc5883l(.ideal)
        case (.hmc5883l, .realistic): return .hmc5883l(.realistic)
        case (.hmc5883l, .ideal): return .hmc5883l(.ideal)
        case (.bme280, .realistic): return .bmp280(.realistic)   // the BME280 is the BMP280 model's variant
        case (.bme280, .ideal): return .bmp280(.ideal)
        default: return imp
        }
    }

    /// `fnv1a64:` and 16 hex digits of the canonical JSON (sorted keys).
    package static func fingerprint(_ imp: ChipImperfections) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        let bytes = Array((try? e.encode(imp)) ?? Data())
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        let digits = String(h, radix: 16)
        return "fnv1a64:" + String(repeating: "0", count: 16 - digits.count) + digits
    }
}
