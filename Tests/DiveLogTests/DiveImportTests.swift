// Issue 16: the dive logger's import, log, plot and exports as a user meets
// them — `dive-logger` run as a process, the log read back with the sqlite3
// shell, the exports with Foundation's XMLParser.
import Testing
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import EdgeProtocol
import EdgeValues
import EdgeAgentCLI
@testable import DiveLog
import TestThreads

/// What a finished `dive-logger` process said.
struct LoggerRun {
    var status: Int32
    var out: String
    var err: String
    /// False when it had to be killed at the deadline.
    var finished: Bool
}

/// Runs `.build/debug/dive-logger` (or `binary`) with `args`, at most
/// `seconds` (then SIGKILL), in `directory`, with `environment` (default:
/// this process's, less the agent's and the log's variables).
func runLogger(_ args: [String], stdin: Data? = nil, environment: [String: String]? = nil,
               directory: String? = nil, binary: String = repositoryRoot + "/.build/debug/dive-logger",
               seconds: Double = 120) throws -> LoggerRun {
    guard FileManager.default.isExecutableFile(atPath: binary) else { throw DiveLoggerTestFailure("swift build --product dive-logger first") }
    let dir = temporaryDirectory()
    let outPath = dir + "/out", errPath = dir + "/err"
    FileManager.default.createFile(atPath: outPath, contents: nil)
    FileManager.default.createFile(atPath: errPath, contents: nil)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: binary)
    p.arguments = args
    var env = environment ?? ProcessInfo.processInfo.environment
    if environment == nil { for k in ["EDGE_AGENT_SOCKET", "EDGE_AGENT_CONFIG", "DIVE_LOGGER_DB"] { env[k] = nil } }
    p.environment = env
    if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
    p.standardOutput = FileHandle(forWritingAtPath: outPath)
    p.standardError = FileHandle(forWritingAtPath: errPath)
    let input = Pipe()
    p.standardInput = stdin == nil ? FileHandle.nullDevice : input
    try p.run()
    if let stdin {
        input.fileHandleForWriting.write(stdin)
        try input.fileHandleForWriting.close()
    }
    var finished = true
    let deadline = Date().addingTimeInterval(seconds)
    while p.isRunning {
        if Date() > deadline { kill(p.processIdentifier, SIGKILL); finished = false; break }
        usleep(20_000)
    }
    p.waitUntilExit()
    return LoggerRun(status: p.terminationStatus,
                     out: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                     err: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "", finished: finished)
}

/// Protocol lines (as `replay` writes them) of `readings`.
func protocolLines(_ readings: [SubmersionSample]) -> [String] {
    readings.map { x in
        var w = JSONWriter(capacity: 512)
        MessageEncoder.sample(.submersion(x), into: &w)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

func q(_ db: String, _ sql: String) throws -> String { try sqlite3CLI(["-readonly", db, sql]).trimmingWhitespace }

@Suite(.ownThread) struct DiveImportProcessTests {
    static let epoch = "2026-06-01T09:30:00Z"

    /// A reversed file: every line after the first is earlier than the one
    /// before it. Nothing of it is a dive, each skipped line is named (the
    /// first few) with the reason, and the exit status says so. (Before:
    /// a dive of −1255 s.)
    @Test func aReversedFileIsSkippedLineByLine() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/reversed.jsonl"
        try protocolLines(diveReadings(bottom: 120).reversed()).joined().write(toFile: file, atomically: true, encoding: .utf8)
        let r = try runLogger(["--db", db, "import", file, "--epoch", Self.epoch])
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("line 2: skipped: timestamp_ns"), "\(r.err)")
        #expect(r.err.contains("is before the previous sample's"), "\(r.err)")
        #expect(r.err.contains("further lines skipped for this reason are only counted"))
        #expect(r.err.split(separator: "\n").count < 12, "no flood: \(r.err.split(separator: "\n").count) lines")
        #expect(try q(db, "SELECT count(*) FROM samples WHERE time_s < 0") == "0")
        #expect(try q(db, "SELECT count(*) FROM dives WHERE end_s < 0") == "0")
    }

    /// A block of lines repeated: the repetition goes back in time and is
    /// skipped; the dive is logged once with a positive duration.
    @Test func repeatedBlocksDoNotMakeNegativeDurations() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/twice.jsonl"
        let lines = protocolLines(diveReadings(bottom: 120))
        try (lines + lines[100..<300]).joined().write(toFile: file, atomically: true, encoding: .utf8)
        let r = try runLogger(["--db", db, "import", file, "--epoch", Self.epoch])
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("line \(lines.count + 1): skipped: timestamp_ns"), "\(r.err)")
        #expect(r.err.contains("200 of \(lines.count + 200) submersion samples were skipped"), "\(r.err)")
        #expect(try q(db, "SELECT count(*), min(end_s) > 100 FROM dives") == "1|1")
        #expect(try q(db, "SELECT min(time_s) >= 0 FROM samples") == "1")
        #expect(try q(db, "SELECT count(*) > 120, max(time_s) <= (SELECT end_s FROM dives) FROM samples") == "1|1")
    }

    /// Numbers no sensor reports — 1e6 and 5e300 m, −1e300 °C, 1.79e308 Pa —
    /// are skipped with the line and the reason; the log and the exports
    /// hold only the rest (no `inf`).
    @Test func outOfRangeSamplesAreSkippedWithLineAndReason() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/wild.jsonl"
        var readings = diveReadings(bottom: 120)
        let bad = [60, 90, 120, 150]
        readings[bad[0]].depth = 1e6
        readings[bad[1]].depth = 5e300
        readings[bad[2]].temperature = -1e300
        readings[bad[3]].pressure = 1.79e308   // 1.8e308 is past Double.greatestFiniteMagnitude
        try protocolLines(readings).joined().write(toFile: file, atomically: true, encoding: .utf8)
        let r = try runLogger(["--db", db, "import", file, "--epoch", Self.epoch])
        #expect(r.status == 1)
        #expect(r.err.contains("line \(bad[0] + 1): skipped: depth_m 1000000.0 m is outside -2.0…340.0 m"), "\(r.err)")
        #expect(r.err.contains("line \(bad[1] + 1): skipped: depth_m 5e+300 m"), "\(r.err)")
        #expect(r.err.contains("line \(bad[2] + 1): skipped: temperature_c -1e+300 °C is outside -40.0…85.0 °C"), "\(r.err)")
        #expect(r.err.contains("line \(bad[3] + 1): skipped: pressure_pa 1.79e+308 Pa is outside 0.0…3300000.0 Pa"), "\(r.err)")
        #expect(try q(db, "SELECT count(*) FROM dives") == "1")
        #expect(try q(db, "SELECT max(depth_m) < 12, min(temperature_c) > -40, max(pressure_pa) < 3300000 FROM samples") == "1|1|1")
        for format in ["csv", "uddf", "subsurface"] {
            let e = try runLogger(["--db", db, "export", "1", "--format", format])
            #expect(e.status == 0)
            #expect(e.out.range(of: "(^|[^a-z])-?(inf|nan)([^a-z]|$)", options: .regularExpression) == nil, "\(format)")
        }
    }

    /// The same file imported twice is one dive: the second import names
    /// the dive it already is and logs nothing.
    @Test func theSameFileTwiceIsOneDive() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/dive.jsonl"
        try protocolLines(diveReadings(bottom: 120) + diveReadings(bottom: 60, from: 400)).joined()
            .write(toFile: file, atomically: true, encoding: .utf8)
        let first = try runLogger(["--db", db, "import", file, "--epoch", Self.epoch])
        #expect(first.status == 0, "\(first.err)")
        let before = try q(db, "SELECT number, count(*) FROM samples JOIN dives ON dive = number GROUP BY number")
        // Without --epoch: another Unix time, the same samples.
        let again = try runLogger(["--db", db, "import", file])
        #expect(again.status == 0, "\(again.err)")
        #expect(again.err.contains("is dive 1, already in the log"), "\(again.err)")
        #expect(again.err.contains("is dive 2, already in the log"), "\(again.err)")
        #expect(again.out.contains("0 new dives"), "\(again.out)")
        #expect(try q(db, "SELECT count(*) FROM dives") == "2")
        #expect(try q(db, "SELECT number, count(*) FROM samples JOIN dives ON dive = number GROUP BY number") == before)
    }

    /// A 300 MB line (the issue's) is skipped without being held, and said;
    /// a file over the size limit is refused before anything is read.
    @Test func anEndlessLineAndAHugeFile() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite"
        // 300 MB of NUL bytes and one newline (sparse: no disk used).
        let line = dir + "/line.jsonl"
        FileManager.default.createFile(atPath: line, contents: nil)
        let l = try FileHandle(forWritingTo: URL(fileURLWithPath: line))
        try l.seek(toOffset: 300_000_000)
        l.write(Data("\n".utf8))
        try l.close()
        let r = try runLogger(["--db", db, "import", line], seconds: 300)
        #expect(r.finished)
        #expect(r.status == 1, "\(r.out) \(r.err)")
        #expect(r.err.contains("1 lines are longer than 65536 bytes"), "\(r.err)")
        #expect(r.err.contains("nothing in \(line) is a protocol line"), "\(r.err)")

        let huge = dir + "/huge.jsonl"
        FileManager.default.createFile(atPath: huge, contents: nil)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: huge))
        try h.truncate(atOffset: (1 << 30) + 1)   // sparse: no disk used
        try h.close()
        let big = try runLogger(["--db", dir + "/e.sqlite", "import", huge], seconds: 30)
        #expect(big.finished && big.status != 0, "\(big.err)")
        #expect(big.err.contains("import reads at most 1073741824"), "\(big.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/e.sqlite"), "no log made for a refused input")
    }

    /// Another program's SQLite database is never written: import and
    /// record refuse it, byte for byte unchanged, no WAL, no lock file left.
    @Test(arguments: [
        "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('not dives');",
        "PRAGMA application_id = 1096045640;",
        "PRAGMA user_version = 7;",
        "CREATE TABLE dives (x); CREATE TABLE samples (y); CREATE TABLE extra (z);",
    ])
    func aForeignDatabaseIsNeverWritten(setup: String) throws {
        let dir = temporaryDirectory()
        let db = dir + "/other.sqlite", file = dir + "/dive.jsonl"
        _ = try sqlite3CLI([db, setup])
        let before = try #require(FileManager.default.contents(atPath: db))
        try protocolLines(diveReadings(bottom: 60)).joined().write(toFile: file, atomically: true, encoding: .utf8)
        for args in [["import", file, "--epoch", Self.epoch], ["record", "--socket", dir + "/none.sock"]] {
            let r = try runLogger(["--db", db] + args, seconds: 30)
            #expect(r.finished && r.status == 1, "\(args[0]): \(r.err)")
            #expect(r.err.contains("is an SQLite database of another program, not a dive log"), "\(args[0]): \(r.err)")
            #expect(FileManager.default.contents(atPath: db) == before, "\(args[0]) changed the file")
            #expect(!FileManager.default.fileExists(atPath: db + "-wal"))
            #expect(!FileManager.default.fileExists(atPath: db + ".lock"))
        }
        #expect(try q(db, "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'") == "0")
    }

    /// A new log carries the dive log's application_id and schema version,
    /// so other programs (and this one) can tell it.
    @Test func aNewLogIsMarked() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/dive.jsonl"
        try protocolLines(diveReadings(bottom: 60)).joined().write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try runLogger(["--db", db, "import", file]).status == 0)
        #expect(try q(db, "PRAGMA application_id") == "\(0x4456_4C47)")
        #expect(try q(db, "PRAGMA user_version") == "1")
    }

    /// `plot` of any stored dive finishes, small: a sample at 1e9 m (put in
    /// by hand: import refuses it), at 1e300 s, at −1e300 °C.
    @Test func plotIsBoundedForAnyStoredDive() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/dive.jsonl"
        try protocolLines(diveReadings(bottom: 60)).joined().write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try runLogger(["--db", db, "import", file]).status == 0)
        _ = try sqlite3CLI([db, "UPDATE samples SET depth_m = 1e9 WHERE time_s = (SELECT min(time_s) FROM samples WHERE time_s > 10)"])
        _ = try sqlite3CLI([db, "UPDATE samples SET temperature_c = -1e300 WHERE time_s = (SELECT min(time_s) FROM samples WHERE time_s > 20)"])
        _ = try sqlite3CLI([db, "INSERT INTO samples VALUES (1, 1e300, 5, 1e300, 1e308, 0, 0)"])
        for args in [["plot", "1"], ["list"], ["show", "1"], ["export", "1", "--format", "subsurface"],
                     ["export", "1", "--format", "uddf"], ["export", "1", "--format", "csv"]] {
            let r = try runLogger(["--db", db] + args, seconds: 60)
            #expect(r.finished && r.status == 0, "\(args): \(r.err)")
            #expect(r.out.utf8.count < 200_000, "\(args): \(r.out.utf8.count) bytes")
            if args[0] == "plot" {
                let svg = try ExportReader.read(Data(r.out.utf8))
                #expect(svg.root == "svg")
                #expect(r.out.components(separatedBy: "<line ").count < 40, "grid lines: \(r.out.components(separatedBy: "<line ").count)")
            }
        }
    }

    /// The safety-stop label is drawn over the profile (after it in the
    /// SVG, which paints in document order), with a halo, inside the band.
    @Test func theSafetyStopLabelIsReadable() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/dive.jsonl"
        try protocolLines(diveReadings(bottom: 120)).joined().write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try runLogger(["--db", db, "import", file]).status == 0)
        let r = try runLogger(["--db", db, "plot", "1"])
        let svg = r.out
        let label = try #require(svg.range(of: "safety stop 3–6 m"))
        let profile = try #require(svg.range(of: "<path d="))
        #expect(label.lowerBound > profile.lowerBound, "the label is painted before the profile, under it")
        let element = svg[svg[..<label.lowerBound].range(of: "<text", options: .backwards)!.lowerBound..<label.lowerBound]
        #expect(element.contains("paint-order=\"stroke\"") && element.contains("stroke=\"white\""))
    }
}

/// Subsurface takes `date`/`time` as the local time of the dive.
@Suite(.ownThread) struct SubsurfaceTimeTests {
    /// A dive at 09:30:10 UTC on 1 June 2026 (epoch 09:30:00Z + 10 s at
    /// the surface), exported by a process in New York: the file says
    /// 05:30:10 (EDT, UTC−4), as Foundation's time-zone database computes
    /// independently; --utc-offset +05:30 says 15:00:10. Sample times are
    /// strictly increasing although readings every 0.30 s are logged at
    /// 0.9 s steps (4.5 s and 5.4 s both round to 5 s).
    @Test func theStartIsLocalTimeAndSampleTimesIncrease() throws {
        let dir = temporaryDirectory()
        let db = dir + "/d.sqlite", file = dir + "/dive.jsonl"
        var readings: [SubmersionSample] = []
        var t = 0.0
        while t < 200 {
            let down = t >= 10 && t < 130
            readings.append(sample(t, depth: down ? 8 : 0, state: down ? .submerged : .notSubmerged))
            t += 0.30
        }
        try protocolLines(readings).joined().write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try runLogger(["--db", db, "import", file, "--epoch", "2026-06-01T09:30:00Z"]).status == 0)
        let startUnix = try #require(Int64(try q(db, "SELECT start_unix_ns FROM dives WHERE number = 1"))) / 1_000_000_000

        var env = ProcessInfo.processInfo.environment
        env["TZ"] = "America/New_York"
        let ny = try runLogger(["--db", db, "export", "1", "--format", "subsurface"], environment: env)
        #expect(ny.status == 0, "\(ny.err)")
        let x = try ExportReader.read(Data(ny.out.utf8))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "America/New_York"))
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: TimeInterval(startUnix)))
        func two(_ v: Int?) -> String { String(format: "%02d", v ?? -1) }
        #expect(x.attributes["dive"]?["date"] == "\(c.year!)-\(two(c.month))-\(two(c.day))")
        #expect(x.attributes["dive"]?["time"] == "\(two(c.hour)):\(two(c.minute)):\(two(c.second))", "\(x.attributes["dive"] ?? [:])")
        #expect(c.hour == 5)
        let times = x.points.map(\.t)
        #expect(times.count > 100)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "sample times: \(times.prefix(12))")
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 <= 2 }, "at most one dropped in a row")

        let india = try runLogger(["--db", db, "export", "1", "--format", "subsurface", "--utc-offset", "+05:30"], environment: env)
        let y = try ExportReader.read(Data(india.out.utf8))
        let hhmm = try #require(y.attributes["dive"]?["time"]).prefix(5)
        #expect(hhmm == "15:00" || hhmm == "15:01", "\(y.attributes["dive"] ?? [:])")
        let bad = try runLogger(["--db", db, "export", "1", "--format", "subsurface", "--utc-offset", "+25:00"])
        #expect(bad.status == 2 && bad.err.contains("--utc-offset expects"))
    }

    @Test func offsetsParse() {
        #expect(ExportZone.parseOffset("+02:00") == .fixed(seconds: 7200))
        #expect(ExportZone.parseOffset("-0330") == .fixed(seconds: -12600))
        #expect(ExportZone.parseOffset("+05") == .fixed(seconds: 18000))
        #expect(ExportZone.parseOffset("Z") == .fixed(seconds: 0))
        for bad in ["02:00", "+2:00", "+02:60", "+15:00", "+02:0", "+0a:00", "", "+"] { #expect(ExportZone.parseOffset(bad) == nil, "\(bad)") }
    }
}

/// `simulate --jsonl` without --streams: an overview, not every sample.
@Suite(.ownThread) struct SimulateJSONLDefaultTests {
    @Test func withoutStreamsEveryStreamAtOneHertz() throws {
        let dir = temporaryDirectory()
        let jsonl = dir + "/dive.jsonl"
        var err = ""
        let console = Console(out: { _ in }, err: { err += $0 })
        let seconds = 120.0
        #expect(EdgeAgentCLI.run(["edge-agent", "simulate", repositoryRoot + "/scenarios/dive-18m.json5",
                                  "--board", repositoryRoot + "/boards/simulated-dive.json5", "--duration", "\(Int(seconds))",
                                  "--jsonl", jsonl], console: console) == 0, "\(err)")
        let text = try String(contentsOfFile: jsonl, encoding: .utf8)
        var perStream: [String: [UInt64]] = [:]
        for line in text.split(separator: "\n") {
            guard case .sample(let s)? = Array(line.utf8).withUnsafeBytes({ try? ServerMessage.decode(line: $0) }) else { continue }
            perStream[s.stream.rawValue, default: []].append(s.timestampNs)
        }
        #expect(perStream["submersion"] != nil && perStream["deviceMotion"] != nil && perStream["altitude"] != nil, "\(perStream.keys.sorted())")
        for (stream, ts) in perStream where !["accessoryConnection", "pedometerEvent", "activity"].contains(stream) {
            // The protocol's Decimator: a sample up to 1/16 interval early is
            // taken, so at most 16/15 a second.
            #expect(Double(ts.count) <= seconds * 16 / 15 + 2, "\(stream): \(ts.count) samples in \(seconds) s")
            let gaps = zip(ts, ts.dropFirst()).map { Double($1 - $0) / 1e9 }.sorted()
            #expect(gaps.count > 100 && gaps[gaps.count / 2] >= 1 - 1.0 / 16 - 1e-9, "\(stream): median gap \(gaps.isEmpty ? 0 : gaps[gaps.count / 2]) s")
        }
        // 23 minutes of it stay small (at full rate: 377 kB a second).
        #expect(Double(text.utf8.count) / seconds < 10_000, "\(text.utf8.count) bytes in \(seconds) s")
    }
}

/// Issue 16 item 11: `dive-logger record` finds the agent the way `edge-agent
/// watch` does, says which socket and why, and says when none answers.
@Suite(.serialized, .ownThread) struct DiveLoggerSocketTests {
    /// A build tree of its own (so the test's socket is its own): a
    /// `boards/` folder, `config/` with the record test's configuration
    /// (socket `agent.sock` next to it), and `.build/debug/` holding links
    /// to the built `edge-agent` and `dive-logger`. The agent runs from the
    /// tree (`edge-agent run`, no options); the logger runs from another
    /// directory with no options and no environment naming the agent.
    @Test func aLoggerStartedElsewhereFindsTheBuildTreesAgent() throws {
        let tree = temporaryDirectory()
        let elsewhere = temporaryDirectory()
        for d in ["/boards", "/config", "/.build/debug"] {
            try FileManager.default.createDirectory(atPath: tree + d, withIntermediateDirectories: true)
        }
        try DiveLoggerRecordTests.files(tree + "/config")
        for tool in ["edge-agent", "dive-logger"] {
            try FileManager.default.createSymbolicLink(atPath: tree + "/.build/debug/" + tool,
                                                       withDestinationPath: repositoryRoot + "/.build/debug/" + tool)
        }
        var env = ProcessInfo.processInfo.environment
        for k in ["EDGE_AGENT_SOCKET", "EDGE_AGENT_CONFIG", "DIVE_LOGGER_DB"] { env[k] = nil }
        let agent = Process()
        agent.executableURL = URL(fileURLWithPath: tree + "/.build/debug/edge-agent")
        agent.arguments = ["run"]
        agent.currentDirectoryURL = URL(fileURLWithPath: tree)
        agent.environment = env
        agent.standardOutput = FileHandle.nullDevice
        agent.standardError = FileHandle.nullDevice
        try agent.run()
        defer { if agent.isRunning { kill(agent.processIdentifier, SIGTERM); agent.waitUntilExit() } }

        let errPath = elsewhere + "/logger.err"
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let logger = Process()
        logger.executableURL = URL(fileURLWithPath: tree + "/.build/debug/dive-logger")
        logger.arguments = ["--db", elsewhere + "/dives.sqlite", "record"]
        logger.currentDirectoryURL = URL(fileURLWithPath: elsewhere)
        logger.environment = env
        logger.standardOutput = FileHandle.nullDevice
        logger.standardError = FileHandle(forWritingAtPath: errPath)
        try logger.run()
        defer { if logger.isRunning { kill(logger.processIdentifier, SIGKILL); logger.waitUntilExit() } }
        func transcript() -> String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
        let socket = tree + "/config/agent.sock"
        // Bounded: the agent starts and the client's backoff reaches 2 s.
        var connected = false
        for _ in 0..<600 where logger.isRunning {
            if transcript().contains("connected to the agent at \(socket)") { connected = true; break }
            usleep(100_000)
        }
        #expect(connected, "\(transcript())")
        #expect(transcript().contains("socket \(socket) (service.socket_path of \(tree)/config/edge-agent.json5)"), "\(transcript())")
        kill(logger.processIdentifier, SIGTERM)
        logger.waitUntilExit()
        #expect(logger.terminationStatus == 0, "\(transcript())")
    }

    /// No agent at the socket: the logger says so at once (which socket,
    /// why that one, that it keeps trying), not silence.
    @Test func noAgentIsSaidPlainly() throws {
        let dir = temporaryDirectory()
        let errPath = dir + "/err"
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let logger = Process()
        logger.executableURL = URL(fileURLWithPath: repositoryRoot + "/.build/debug/dive-logger")
        logger.arguments = ["--db", dir + "/d.sqlite", "record"]
        var env = ProcessInfo.processInfo.environment
        env["EDGE_AGENT_SOCKET"] = dir + "/nobody.sock"
        logger.environment = env
        logger.standardOutput = FileHandle.nullDevice
        logger.standardError = FileHandle(forWritingAtPath: errPath)
        try logger.run()
        defer { if logger.isRunning { kill(logger.processIdentifier, SIGKILL); logger.waitUntilExit() } }
        func transcript() -> String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
        var said = false
        for _ in 0..<300 where logger.isRunning {
            if transcript().contains("no agent answers at \(dir)/nobody.sock") { said = true; break }
            usleep(100_000)
        }
        #expect(said, "\(transcript())")
        #expect(transcript().contains("socket \(dir)/nobody.sock ($EDGE_AGENT_SOCKET)"), "\(transcript())")
        #expect(transcript().contains("retrying until one does"))
        kill(logger.processIdentifier, SIGTERM)
        logger.waitUntilExit()
        #expect(logger.terminationStatus == 0)
    }
}
