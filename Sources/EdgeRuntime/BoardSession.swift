#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeCommandLine
import EdgeBus
import EdgeLinux
import EdgeChips
import EdgeConfig
import EdgeSim
import EdgeLocations

/// What the tools need to talk to a board: the profile, the bus (Linux or
/// simulated) and the clock. Shared by `probe`, `read` and later `run`.
package final class BoardSession {
    package let profile: BoardProfile
    /// Where the profile came from (`--bus N` makes one up: "(--bus N)").
    package let profileSource: String
    package let bus: AnyI2CBus
    package let clock: any TimeSource
    /// e.g. "I2C_RDWR" or "SMBus (I2C block reads, 32 bytes a chunk)".
    package let transport: String
    /// The simulated board, when the bus is simulated.
    package let simulated: SimulatedBoard?
    /// Held for a Linux bus while the session lives: a second agent or tool
    /// refuses clearly instead of fighting over the chips.
    package var lock: BusLock?

    package init(profile: BoardProfile, source: String, bus: AnyI2CBus, clock: any TimeSource,
         transport: String, simulated: SimulatedBoard?) {
        self.profile = profile; self.profileSource = source; self.bus = bus; self.clock = clock
        self.transport = transport; self.simulated = simulated
    }

    /// The default board for `--bus N`: the three chips at their default
    /// addresses, identity mountings.
    package static func defaultProfile(bus n: Int) -> BoardProfile {
        BoardProfile(name: "default chips on /dev/i2c-\(n)", bus: .linux(n), chips: [
            ChipSpec(kind: .mpu6050, address: 0x68),
            ChipSpec(kind: .bmp280, address: 0x76),
            ChipSpec(kind: .qmc5883l, address: 0x0D),
        ])
    }

    /// Options shared by the tools: `--board FILE | --bus N` and `--config FILE`.
    package struct Selection {
        package var profile: BoardProfile
        package var profilePath: String?
        package var config: AgentConfig
        package var configPath: String?
        package init(profile: BoardProfile, profilePath: String?, config: AgentConfig, configPath: String?) {
            self.profile = profile; self.profilePath = profilePath; self.config = config; self.configPath = configPath
        }
    }

    /// Resolves a board (`boardArg`: a name or a file), a bus (`busArg`:
    /// the default chips on /dev/i2c-N) and a configuration (`configArg`):
    /// an explicit board wins, else the bus, else the config's board
    /// (default config: the simulated board). The configuration and the
    /// board are found from any working directory (``BoardLocator``); a file
    /// that is missing or invalid is a ``SetupError`` (exit 2). The command
    /// line's `--board`, `--bus`, `--config` come here (EdgeAgentCLI).
    package static func select(board boardArg: String?, bus busArg: Int?, config configArg: String?,
                               environment: [String: String],
                               executablePaths: [String] = BoardLocator.currentExecutablePaths()) throws -> Selection {
        precondition(boardArg == nil || busArg == nil, "a board or a bus, not both (the caller checks)")
        let configPath = configArg ?? BoardLocator.defaultConfigPath(environment: environment, executablePaths: executablePaths)
        let config: AgentConfig
        do {
            config = try configPath.map { p throws(ConfigError) in try ConfigLoader.load(AgentConfig.self, from: p) } ?? AgentConfig()
        } catch {
            throw SetupError(error, hint: configHint(error, configArg: configArg, environment: environment))
        }
        if let n = busArg {
            return Selection(profile: defaultProfile(bus: n), profilePath: nil, config: config, configPath: configPath)
        }
        let ref = boardArg ?? config.board
        let (found, searched) = boardArg != nil
            ? BoardLocator.resolveBoardArgument(ref, executablePaths: executablePaths)
            : BoardLocator.resolveBoard(ref, relativeTo: configPath, executablePaths: executablePaths)
        guard let path = found else {
            throw SetupError(boardNotFound(ref, explicit: boardArg != nil, configPath: configPath, searched: searched,
                                           environment: environment, executablePaths: executablePaths))
        }
        do {
            let profile = try ConfigLoader.load(BoardProfile.self, from: path)
            return Selection(profile: profile, profilePath: path, config: config, configPath: configPath)
        } catch {
            throw SetupError(error)
        }
    }

    /// What to do about a configuration that could not be read.
    package static func configHint(_ e: ConfigError, configArg: String?, environment: [String: String]) -> String? {
        configHint(unreadable: [.notFound, .unreadable, .notARegularFile, .tooLarge].contains(e.kind), configArg: configArg,
                   environment: environment)
    }

    /// What to do about a configuration file that could not be read at all.
    package static func configHint(unreadable: Bool, configArg: String?, environment: [String: String]) -> String? {
        guard unreadable else { return nil }
        if configArg != nil { return "check the path given to --config" }
        if let v = environment[BoardLocator.configEnvironmentVariable], !v.isEmpty {
            return "$\(BoardLocator.configEnvironmentVariable) names it: correct or unset it, or pass --config FILE"
        }
        return nil
    }

    /// A board profile that is nowhere to be found: which, named by what,
    /// where we looked, and what to pass instead.
    package static func boardNotFound(_ ref: String, explicit: Bool, configPath: String?, searched: [String],
                              environment: [String: String], executablePaths: [String]) -> ConfigError {
        let namedBy: String
        if explicit {
            namedBy = "--board"
        } else if let configPath {
            namedBy = "board in \(configPath)"
        } else {
            let tried = BoardLocator.configCandidates(environment: environment, executablePaths: executablePaths)
            namedBy = "the built-in default configuration (no configuration file found; looked for \(tried.joined(separator: ", ")))"
        }
        var message = "board profile '\(ref)' not found (named by \(namedBy); looked in: \(searched.joined(separator: ", ")))."
        if let known = BoardLocator.available(in: "boards", executablePaths: executablePaths) {
            message += " Pass --board NAME with one of the boards in \(known.directory): \(known.names.joined(separator: ", "))"
                + " (e.g. --board \(known.names.contains("simulated") ? "simulated" : known.names[0])), or --board FILE (a board profile's path)"
        } else {
            message += " Pass --board FILE (a board profile's path); no board profiles are installed: deploy/install.sh installs them into /usr/local/share/edge-agent/boards"
        }
        message += explicit ? "." : ", or --config FILE (a configuration whose board is found)."
        return ConfigError(kind: .notFound, file: explicit ? ref : (configPath ?? "(built-in default configuration)"),
                           keyPath: explicit ? "" : "board", message: message)
    }

    /// Opens the profile's bus. Simulated boards run on the real monotonic
    /// clock, so their scenario plays in real time.
    package static func open(_ s: Selection, clock: (any TimeSource)? = nil, purpose: String = "tool") throws -> BoardSession {
        let source = s.profilePath ?? "(--bus \(s.profile.bus))"
        switch s.profile.bus {
        case .linux(let n):
            let lock: BusLock
            do {
                lock = try BusLock(bus: "/dev/i2c-\(n)", environment: ProcessInfo.processInfo.environment,
                                   purpose: "edge-agent " + purpose)
            } catch {
                throw error
            }
            let linux = try LinuxI2CBus(busNumber: n)
            let transport = linux.transport == .i2cRdwr
                ? "I2C_RDWR (plain I2C adapter)"
                : "SMBus (adapter has no plain I2C: I2C-block transfers of at most 32 bytes)"
            let session = BoardSession(profile: s.profile, source: source, bus: AnyI2CBus(linux),
                                       clock: clock ?? MonotonicClock(), transport: transport, simulated: nil)
            session.lock = lock
            return session
        case .simulated:
            let c = clock ?? MonotonicClock()
            let board = try SimulatedBoardFactory.make(profile: s.profile, profilePath: s.profilePath ?? ".", clock: c)
            return BoardSession(profile: s.profile, source: source, bus: AnyI2CBus(board.bus), clock: c,
                                transport: "simulated (register-accurate chip models)", simulated: board)
        }
    }
}
