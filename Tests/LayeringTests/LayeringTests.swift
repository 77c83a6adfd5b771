// The module arrows of issue 17, checked from the sources themselves: every
// `import` line of every Sources/<Module>/**/*.swift, and the dependency
// lists of Package.swift. A rule broken here is an arrow that points the
// wrong way; the message names the file and line.
//
// The package root is found from #filePath (Tests/LayeringTests/this file),
// so the test reads the tree it was built from, from any directory.

import Testing
import Foundation

/// One `import` line of a source file.
struct ImportLine: Hashable, CustomStringConvertible {
    var module: String
    /// Path relative to the package root, and 1-based line number.
    var file: String
    var line: Int
    var description: String { "\(file):\(line): import \(module)" }
}

enum Layering {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The modules under Sources/ (directory names).
    static func sourceModules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
            .filter { !$0.hasPrefix(".") }.sorted()
    }

    /// The executables' modules: the only ones that may import the CLI module.
    static let executables: Set<String> = ["edge-agent", "edge-bench", "edge-mqtt", "dive-logger"]

    /// Every `import` of the module's Swift files. Lines inside multi-line
    /// string literals (help texts) are skipped; attributes (`@testable`,
    /// `@_exported`, `@preconcurrency`), access levels and import kinds
    /// (`import struct M.T`) are understood.
    static func imports(of module: String) throws -> [ImportLine] {
        let dir = root.appendingPathComponent("Sources").appendingPathComponent(module)
        guard let walker = FileManager.default.enumerator(atPath: dir.path) else { return [] }
        var out: [ImportLine] = []
        for case let relative as String in walker where relative.hasSuffix(".swift") {
            let text = try String(contentsOf: dir.appendingPathComponent(relative), encoding: .utf8)
            out += parseImports(text, file: "Sources/\(module)/\(relative)")
        }
        return out
    }

    static func parseImports(_ text: String, file: String) -> [ImportLine] {
        var out: [ImportLine] = []
        var inString = false
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let quotes = line.components(separatedBy: "\"\"\"").count - 1
            defer { if quotes % 2 == 1 { inString.toggle() } }
            if inString { continue }
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            while let w = words.first, w.hasPrefix("@") || ["public", "package", "internal", "private", "fileprivate"].contains(w) {
                words.removeFirst()
            }
            guard words.first == "import", words.count >= 2 else { continue }
            var name = words[1]
            if ["struct", "class", "enum", "protocol", "typealias", "func", "let", "var"].contains(name), words.count >= 3 {
                name = words[2]
            }
            let module = String(name.split(separator: ".").first ?? "")
            out.append(ImportLine(module: module, file: file, line: index + 1))
        }
        return out
    }

    /// Package.swift's targets and the names in their `dependencies:` lists.
    static func packageDependencies() throws -> [String: [String]] {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard let r = line.range(of: "//") else { return line }
            return line[..<r.lowerBound]
        }.joined(separator: "\n")
        var targets: [String: [String]] = [:]
        let kinds = [".target(", ".executableTarget(", ".testTarget(", ".systemLibrary("]
        var rest = Substring(uncommented)
        while let start = kinds.compactMap({ rest.range(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }) {
            // The call's text up to its matching parenthesis.
            var depth = 1
            var i = start.upperBound
            while i < rest.endIndex && depth > 0 {
                if rest[i] == "(" { depth += 1 } else if rest[i] == ")" { depth -= 1 }
                i = rest.index(after: i)
            }
            let call = rest[start.upperBound..<i]
            rest = rest[i...]
            guard let name = quoted(after: "name:", in: call) else { continue }
            var deps: [String] = []
            if let d = call.range(of: "dependencies:"), let open = call[d.upperBound...].firstIndex(of: "["),
               let close = call[open...].firstIndex(of: "]") {
                deps = call[open..<close].split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            }
            targets[name] = deps
        }
        return targets
    }

    private static func quoted(after key: String, in text: Substring) -> String? {
        guard let k = text.range(of: key), let q1 = text[k.upperBound...].firstIndex(of: "\"") else { return nil }
        let after = text.index(after: q1)
        guard let q2 = text[after...].firstIndex(of: "\"") else { return nil }
        return String(text[after..<q2])
    }

    /// Every target `target` links, directly or through others.
    static func closure(of target: String, in deps: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var todo = deps[target] ?? []
        while let t = todo.popLast() {
            if seen.insert(t).inserted { todo += deps[t] ?? [] }
        }
        return seen
    }
}

@Suite struct LayeringTests {
    /// The module that wraps libsqlite3; nothing else imports CSQLite.
    static let sqliteModules: Set<String> = ["EdgeSQLite"]

    @Test func theSourcesAndPackageAreFound() throws {
        // The rules below would pass vacuously on an empty tree.
        let modules = try Layering.sourceModules()
        for m in ["EdgeValues", "EdgeSim", "EdgeMQTT", "CoreMotion", "EdgeAgentCLI"] { #expect(modules.contains(m)) }
        #expect(try Layering.imports(of: "EdgeAgentCLI").contains { $0.module == "EdgeEngine" })
        let deps = try Layering.packageDependencies()
        #expect(deps["EdgeAgentCLI"]?.contains("EdgeEngine") == true)
        #expect(deps["EdgeValues"] == [])
    }

    @Test func theImportParserReadsAttributesAndSkipsHelpTexts() {
        let text = """
        @testable import A
        @_exported public import B.Sub
        import struct C.Thing
        let help = \"\"\"
            import   NotAModule
            \"\"\"
        // import Commented
        import D // why
        """
        #expect(Layering.parseImports(text, file: "x").map(\.module) == ["A", "B", "C", "D"])
    }

    /// No library imports the command-line module: an app or a daemon that
    /// links a library must not link every command. (CoreMotion still does,
    /// for EmbeddedAgent: `coreMotionImportsOnlyTheClientSide` below.)
    @Test func noLibraryImportsTheCommandLineModule() throws {
        let libraries = try Layering.sourceModules().filter {
            !Layering.executables.contains($0) && $0 != "EdgeAgentCLI" && $0 != "CoreMotion"
        }
        for module in libraries {
            for i in try Layering.imports(of: module) where i.module == "EdgeAgentCLI" {
                Issue.record("\(i): a library must not import the command-line module")
            }
        }
    }

    /// The truth model must not depend on the estimator, and the simulators
    /// transcribe the datasheets independently of the drivers and their
    /// register tables (a register typo must be made twice to pass).
    @Test func theSimulatorsImportNeitherTheEstimatorNorTheDrivers() throws {
        for i in try Layering.imports(of: "EdgeSim") where ["EdgeFusion", "EdgeChips", "EdgeChipsCore"].contains(i.module) {
            Issue.record("\(i): EdgeSim must not import \(i.module)")
        }
        let deps = try Layering.packageDependencies()
        for bad in ["EdgeFusion", "EdgeChips", "EdgeChipsCore"] where Layering.closure(of: "EdgeSim", in: deps).contains(bad) {
            Issue.record("Package.swift: EdgeSim depends on \(bad)")
        }
    }

    /// The MQTT bridge is a client of the agent: no server, no estimator, no engine.
    @Test func theBridgeImportsNoAgentModule() throws {
        for i in try Layering.imports(of: "EdgeMQTT") where ["EdgeService", "EdgeFusion", "EdgeEngine"].contains(i.module) {
            Issue.record("\(i): EdgeMQTT must not import \(i.module)")
        }
        let deps = try Layering.packageDependencies()
        for bad in ["EdgeService", "EdgeFusion", "EdgeEngine"] where deps["EdgeMQTT"]?.contains(bad) == true {
            Issue.record("Package.swift: EdgeMQTT depends on \(bad)")
        }
    }

    /// The agent's clients (the MQTT bridge, the dive logger) link neither
    /// the estimator nor the chips nor the agent's configuration: they read
    /// their own files with EdgeConfigFiles, which imports nothing of the
    /// agent.
    @Test func theClientsLinkNoAgentModule() throws {
        let deps = try Layering.packageDependencies()
        for client in ["EdgeMQTT", "DiveLog", "EdgeConfigFiles"] {
            let linked = Layering.closure(of: client, in: deps)
            for bad in ["EdgeFusion", "EdgeEngine", "EdgeChips", "EdgeChipsCore", "EdgeConfig", "EdgeService", "EdgeSim", "EdgeRuntime"]
            where linked.contains(bad) {
                Issue.record("Package.swift: \(client) links \(bad)")
            }
        }
    }

    /// One SQLite layer: only it talks to libsqlite3.
    @Test func onlyTheSQLiteModuleImportsCSQLite() throws {
        for module in try Layering.sourceModules() where !Self.sqliteModules.contains(module) {
            for i in try Layering.imports(of: module) where i.module == "CSQLite" {
                Issue.record("\(i): only \(Self.sqliteModules.sorted()) may import CSQLite")
            }
        }
    }

    /// Apple's API for apps talks to the agent through the client library
    /// and shares its value types; it links no engine, no bus, no SQLite.
    /// The in-process agent is the opt-in CoreMotionInProcessAgent product.
    @Test func coreMotionImportsOnlyTheClientSide() throws {
        let allowed: Set<String> = ["EdgeClient", "EdgeProtocol", "EdgeValues",
                                    "Foundation", "FoundationEssentials", "Glibc", "Musl", "Darwin", "Dispatch", "Synchronization"]
        for i in try Layering.imports(of: "CoreMotion") where !allowed.contains(i.module) {
            Issue.record("\(i): CoreMotion may import only \(allowed.sorted())")
        }
        let linked = Layering.closure(of: "CoreMotion", in: try Layering.packageDependencies())
        for bad in ["EdgeAgentCLI", "EdgeRuntime", "EdgeLinux", "EdgeEngine", "EdgeSim", "EdgeConfig", "CSQLite"] where linked.contains(bad) {
            Issue.record("Package.swift: CoreMotion links \(bad)")
        }
    }

    /// The engine's hub runs the stages the stage table gives it and names
    /// none of them: a new derived stream is a stage and a row in
    /// `StageTable`, not an edit of the hub. (The stage types are found in
    /// the sources: every `struct X: EngineStage`.)
    @Test func theHubNamesNoStage() throws {
        let engine = Layering.root.appendingPathComponent("Sources/EdgeEngine")
        var stages: [String] = []
        let walker = try #require(FileManager.default.enumerator(atPath: engine.path))
        for case let relative as String in walker where relative.hasSuffix(".swift") {
            let text = try String(contentsOf: engine.appendingPathComponent(relative), encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains(": EngineStage") {
                let words = line.split(whereSeparator: { " :{".contains($0) })
                if let i = words.firstIndex(of: "struct"), i + 1 < words.count { stages.append(String(words[i + 1])) }
            }
        }
        #expect(stages.count >= 5, "found the stages: \(stages)")
        let hub = try String(contentsOf: engine.appendingPathComponent("SensorHub.swift"), encoding: .utf8)
        for s in stages where hub.contains(s) {
            Issue.record("SensorHub.swift names the stage \(s): the hub runs what StageTable gives it")
        }
    }

    /// State shared between threads is behind `Locked` (EdgeValues), a
    /// pthread mutex, never the toolchain's `Synchronization.Mutex`: its
    /// contended path hands the lock over in the kernel (a PI futex), so
    /// ThreadSanitizer sees no order between the holders and reports their
    /// accesses as races. It did in CI's ThreadSanitizer step, three times,
    /// each when the lock happened to be contended (Locked.swift says where).
    @Test func noCodeLocksWithTheToolchainsMutex() throws {
        var found: [String] = []
        for top in ["Sources", "Tests", "Examples"] {
            let dir = Layering.root.appendingPathComponent(top)
            guard let walker = FileManager.default.enumerator(atPath: dir.path) else { continue }
            // (not this directory, whose examples name the type)
            for case let relative as String in walker where relative.hasSuffix(".swift") && !relative.hasPrefix("LayeringTests/") {
                let text = try String(contentsOf: dir.appendingPathComponent(relative), encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    if code.hasPrefix("//") { continue }
                    if Self.namesTheMutexType(code) { found.append("\(top)/\(relative):\(n + 1): \(code)") }
                }
            }
        }
        #expect(found.isEmpty, "use Locked (EdgeValues), not Synchronization.Mutex:\n\(found.joined(separator: "\n"))")
    }

    /// Whether a line of code names the type `Mutex` (generic or called),
    /// not a word that ends in it (`pthread_mutex`, `MyMutex`).
    static func namesTheMutexType(_ line: String) -> Bool {
        var rest = Substring(line)
        while let r = rest.range(of: "Mutex") {
            let before = rest[..<r.lowerBound].last
            let after = rest[r.upperBound...].drop(while: { $0 == " " }).first
            let startsWord = before.map { !($0.isLetter || $0.isNumber || $0 == "_") } ?? true
            if startsWord && (after == "<" || after == "(") { return true }
            rest = rest[r.upperBound...]
        }
        return false
    }

    @Test func theMutexRuleTellsTheTypeFromWordsEndingInIt() {
        #expect(Self.namesTheMutexType("private let state: Mutex<State>"))
        #expect(Self.namesTheMutexType("state = Mutex(State())"))
        #expect(Self.namesTheMutexType("let m = Synchronization.Mutex (0)"))
        #expect(!Self.namesTheMutexType("private var mutex = pthread_mutex_t()"))
        #expect(!Self.namesTheMutexType("let m = MyMutex<Int>(0)"))
        #expect(!Self.namesTheMutexType("import Synchronization"))
    }
}
