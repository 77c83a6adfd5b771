#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import EdgeValues

/// Finds the configuration, board profiles and scenarios, wherever the tool
/// is run from.
///
/// The data files (`boards/`, `scenarios/`, `config/`) live in one of these
/// *data directories*, searched in this order:
///
/// 1. the repository of a build tree: an executable under `ROOT/.build/…`
///    (`swift build`, `swift run`, `swift test`) uses `ROOT`;
/// 2. an installation next to the executable: `BIN/../share/edge-agent`
///    (`/usr/local/bin/edge-agent` → `/usr/local/share/edge-agent`);
/// 3. `/usr/local/share/edge-agent` and `/usr/share/edge-agent`, where
///    `deploy/install.sh` puts them.
///
/// The executable is looked up both as invoked (`argv[0]`, when it holds a
/// `/`) and as the kernel resolves it (`/proc/self/exe`, symlinks followed).
public enum BoardLocator {
    /// The system configuration `deploy/install.sh` installs.
    public static let systemConfigPath = "/etc/edge-agent/edge-agent.json5"
    /// Environment variable naming the configuration file.
    public static let configEnvironmentVariable = "EDGE_AGENT_CONFIG"
    /// Where installed data files live when nothing is known about the executable.
    public static let installedDataDirectories = ["/usr/local/share/edge-agent", "/usr/share/edge-agent"]

    /// The running executable's paths: as invoked (argv[0], if it names a
    /// path) and as resolved by the kernel (`/proc/self/exe`). Duplicates removed.
    public static func currentExecutablePaths() -> [String] {
        var paths: [String] = []
        if let argv0 = CommandLine.arguments.first, argv0.contains("/") {
            paths.append(argv0.hasPrefix("/") ? argv0 : workingDirectory() + "/" + argv0)
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 {
            buffer[n] = 0
            paths.append(String(nulTerminated: buffer))
        }
        return unique(paths.map(normalize))
    }

    /// The data directories for an executable at `executablePaths`, most
    /// specific first (see ``BoardLocator``). A build tree counts only when
    /// its root holds `boards/`.
    public static func dataDirectories(executablePaths: [String] = currentExecutablePaths()) -> [String] {
        var dirs: [String] = []
        for exe in executablePaths {
            if let root = buildTreeRoot(of: exe) { dirs.append(root) }
        }
        for exe in executablePaths where buildTreeRoot(of: exe) == nil {
            dirs.append(normalize(directory(of: exe) + "/../share/edge-agent"))
        }
        dirs += installedDataDirectories
        return unique(dirs)
    }

    /// The repository root of an executable inside `ROOT/.build/`, if that
    /// root holds board profiles.
    public static func buildTreeRoot(of executable: String) -> String? {
        let parts = executable.split(separator: "/", omittingEmptySubsequences: false)
        guard let i = parts.lastIndex(of: ".build"), i < parts.count - 1 else { return nil }
        let root = parts[..<i].joined(separator: "/")
        let candidate = root.isEmpty ? "/" : root
        return isDirectory(candidate + "/boards") ? candidate : nil
    }

    /// The configuration files tried, in order, when no `--config` is given:
    /// `$EDGE_AGENT_CONFIG`, `/etc/edge-agent/edge-agent.json5` (installed),
    /// `config/edge-agent.json5` in the working directory, then
    /// `config/edge-agent.json5` of the build tree the executable lives in.
    public static func configCandidates(environment: [String: String],
                                        executablePaths: [String] = currentExecutablePaths()) -> [String] {
        if let p = environment[configEnvironmentVariable], !p.isEmpty { return [p] }
        var list = [systemConfigPath, "config/edge-agent.json5"]
        for exe in executablePaths {
            if let root = buildTreeRoot(of: exe) { list.append(root + "/config/edge-agent.json5") }
        }
        return unique(list)
    }

    /// The configuration used when none is given: the first of
    /// ``configCandidates(environment:executablePaths:)`` that exists
    /// (`$EDGE_AGENT_CONFIG` is taken as given, so a wrong one is an error
    /// naming it, not a silent fallback). nil: no file; the built-in
    /// defaults apply (the simulated board, the system service's socket).
    public static func defaultConfigPath(environment: [String: String],
                                         executablePaths: [String] = currentExecutablePaths()) -> String? {
        if let p = environment[configEnvironmentVariable], !p.isEmpty { return p }
        return configCandidates(environment: environment, executablePaths: executablePaths)
            .first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Resolves a board reference from a config file: a path (contains `/`
    /// or ends in `.json5`) is relative to the config file's directory; a
    /// bare name is looked up as `NAME.json5` in `<config dir>/../boards`,
    /// `<config dir>/boards`, the `boards/` of every data directory, then
    /// `./boards`. Without a config file, only the data directories and
    /// `./boards` are searched. A path that is not next to the configuration
    /// is then looked for as `--board` looks for it
    /// (``resolveBoardArgument(_:executablePaths:)``).
    public static func resolveBoard(_ reference: String, relativeTo configPath: String?,
                                    executablePaths: [String] = currentExecutablePaths()) -> (path: String?, searched: [String]) {
        guard let configPath else { return resolveBoardArgument(reference, executablePaths: executablePaths) }
        var candidates: [String] = []
        let configDir = directory(of: configPath)
        if reference.contains("/") || reference.hasSuffix(".json5") {
            candidates.append(reference.hasPrefix("/") ? reference : configDir + "/" + reference)
            if reference.hasPrefix("/") { return (exists(reference) ? reference : nil, [reference]) }
        } else {
            candidates += [normalize(configDir + "/../boards"), normalize(configDir + "/boards")].map { $0 + "/" + reference + ".json5" }
        }
        if let found = candidates.first(where: exists) { return (found, candidates) }
        let more = resolveBoardArgument(reference, executablePaths: executablePaths)
        return (more.path, unique(candidates + more.searched))
    }

    /// Resolves a board profile as given on a command line (`--board`), as
    /// scenarios are: a file that exists as written; else, for a relative
    /// path, the same path in each data directory (`boards/simulated.json5`
    /// from anywhere); a bare name (`simulated`, `simulated.json5`) is also
    /// looked up in each data directory's `boards/` and in `./boards`.
    public static func resolveBoardArgument(_ reference: String,
                                            executablePaths: [String] = currentExecutablePaths()) -> (path: String?, searched: [String]) {
        resolveDataFile(reference, folder: "boards", executablePaths: executablePaths)
    }

    /// Resolves a scenario as given on a command line: a file that exists as
    /// written; else, for a relative path, the same path in each data
    /// directory (`scenarios/lift-3m.json5` from anywhere); a bare name
    /// (`lift-3m`, `lift-3m.json5`) is also looked up in each data
    /// directory's `scenarios/`.
    public static func resolveScenario(_ reference: String,
                                       executablePaths: [String] = currentExecutablePaths()) -> (path: String?, searched: [String]) {
        resolveDataFile(reference, folder: "scenarios", executablePaths: executablePaths)
    }

    /// The lookup of ``resolveScenario(_:executablePaths:)`` and
    /// ``resolveBoardArgument(_:executablePaths:)``: `folder` is the data
    /// directory's subdirectory that holds such files.
    static func resolveDataFile(_ reference: String, folder: String,
                                executablePaths: [String]) -> (path: String?, searched: [String]) {
        if exists(reference) || reference.hasPrefix("/") {
            return (exists(reference) ? reference : nil, [reference])
        }
        var candidates = [reference]
        let name = reference.hasSuffix(".json5") ? reference : reference + ".json5"
        let bare = !reference.contains("/")
        for dir in dataDirectories(executablePaths: executablePaths) {
            candidates.append(normalize(dir + "/" + reference))
            if !bare && !reference.hasSuffix(".json5") { candidates.append(normalize(dir + "/" + name)) }
            if bare { candidates.append(dir + "/" + folder + "/" + name) }
        }
        if bare { candidates.append(folder + "/" + name) }
        candidates = unique(candidates)
        return (candidates.first(where: exists), candidates)
    }

    /// The names (without `.json5`) of the files in each data directory's
    /// `folder` (`boards`, `scenarios`), sorted, with the directory that
    /// holds them: what a "not found" message offers instead.
    public static func available(in folder: String,
                                 executablePaths: [String] = currentExecutablePaths()) -> (names: [String], directory: String)? {
        for dir in dataDirectories(executablePaths: executablePaths) {
            let path = dir + "/" + folder
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else { continue }
            let names = entries.filter { $0.hasSuffix(".json5") }.map { String($0.dropLast(6)) }.sorted()
            if !names.isEmpty { return (names, path) }
        }
        return nil
    }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// The directory part of a path (`.` for a bare file name).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Resolves `relative` against the directory of `file`.
    public static func resolve(_ relative: String, nextTo file: String) -> String {
        relative.hasPrefix("/") ? relative : directory(of: file) + "/" + relative
    }

    /// `path` with `.` and empty components removed and `..` applied
    /// lexically (`/a/b/../c` → `/a/c`, `./../x` → `../x`).
    public static func normalize(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for c in path.split(separator: "/", omittingEmptySubsequences: true) {
            if c == "." { continue }
            if c == "..", let last = parts.last, last != ".." { parts.removeLast(); continue }
            if c == "..", absolute { continue }
            parts.append(c)
        }
        let joined = parts.joined(separator: "/")
        if absolute { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    static func workingDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(nulTerminated: buffer)
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func unique(_ list: [String]) -> [String] {
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }
    }
}
