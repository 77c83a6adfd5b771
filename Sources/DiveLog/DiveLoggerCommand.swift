// The dive-logger command line.
#if canImport(Glibc)
import Glibc
#endif
import EdgeProtocol
import EdgeClient
import EdgeValues
import EdgeCommandLine

public enum DiveLoggerCommand {
    public static let usage = """
    Usage: dive-logger [--db FILE] record [--socket PATH | --config FILE] [--water fresh|en13319|salt|teos10|KG_M3]
           dive-logger [--db FILE] import FILE|- [--epoch ISO8601] [--water W]
           dive-logger [--db FILE] list [--json]
           dive-logger [--db FILE] show N [--json]
           dive-logger [--db FILE] export N --format subsurface|uddf|csv [--output FILE] [--utc-offset ±HH:MM]
           dive-logger [--db FILE] plot N [--output FILE]

    Logs dives from the edge-agent's submersion stream (a client of the
    agent: it needs the submersion.shallow or submersion.full entitlement).
    A dive starts when the state goes submerged and ends after --surface-end
    seconds at the surface (default 60; several dives in one outing are
    several dives). Depth and temperature are logged at least once a second
    (--interval S, on a time grid; surface intervals inside a dive too), with
    the ascent rate (warning above --ascent-limit m/min, default 10) and the
    time spent in the 3–6 m safety-stop band after a dive deeper than 10 m.
    If the log cannot be written (a full disk), recording goes on in memory
    and is written when there is room again; the logger says so.

    The log: --db FILE, else $DIVE_LOGGER_DB, else
    $XDG_DATA_HOME/dive-logger/dives.sqlite (~/.local/share/dive-logger/
    dives.sqlite). SQLite in WAL mode with synchronous=FULL, one commit a
    second: a crash or power cut loses at most the last second of samples.
    Dives are numbered 1, 2, 3 ... in the order they started; a number is
    never reused. One logger records into a log at a time (FILE.lock);
    list, show, export and plot read while it records.

    record   until SIGINT/SIGTERM; if the agent goes away the dive is kept
             and continues when it comes back (the client reconnects).
             The socket is found as `edge-agent watch` finds it: --socket
             PATH, else service.socket_path of --config FILE, else
             $EDGE_AGENT_SOCKET, else that of the configuration `edge-agent
             run` would read ($EDGE_AGENT_CONFIG, /etc/edge-agent/
             edge-agent.json5, ./config/edge-agent.json5, the build tree
             this dive-logger belongs to), else /run/edge-agent/agent.sock.
             It says which and why. While no agent answers it says so and
             keeps retrying (reminding every 30 s).
    import   protocol lines from `edge-agent simulate --jsonl` or `replay`;
             --epoch says which Unix time their timestamp 0 is (default:
             this machine's boot, as for a live agent's CLOCK_MONOTONIC).
             Lines of at most 64 KiB, files of at most 1 GiB. A sample out
             of time order or outside what the sensors report (pressure
             0–3.3 MPa, surface 30–115.5 kPa, depth −2…340 m, −40…+85 °C)
             is skipped, with its line and why; then the exit status is 1.
             A dive already in the log (same start on the agent's clock,
             same surface pressure) is named and not logged again. Only a
             dive log, a new file or an empty database is written: another
             program's SQLite database is refused (also by record).
    list     number, start, duration, max/mean depth, minimum temperature.
             --json: [{"number","start","duration_s","max_depth_m",
             "mean_depth_m","min_temperature_c",...}]
    export   Subsurface XML, UDDF 3.2 or CSV, to --output or standard output.
             Subsurface takes the dive's date and time as the local time
             of the dive (its XML has no zone): they are written in this
             machine's zone (TZ, else /etc/localtime) as it was at the
             dive's start, or at --utc-offset ±HH:MM (the zone where you
             dived, if it is another). Its sample times are whole seconds,
             one at most per second. UDDF and list/show say UTC (…Z).
    plot     an SVG depth (downward) and temperature profile.

    --water names the dive's water in the log and the exports (Subsurface's
    salinity). Without it, the water is the one the agent computes depth
    for (its submersion.water), read back from each dive's first sample:
    fresh, en13319, salt, or the density in kg/m³ (teos10 or a value).
    """

    struct Failure: Error, CustomStringConvertible { var description: String }

    public static func defaultDatabase(_ env: [String: String]) -> String {
        if let p = env["DIVE_LOGGER_DB"], !p.isEmpty { return p }
        let base = env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? ".") + "/.local/share")
        return base + "/dive-logger/dives.sqlite"
    }

    /// Runs one command; output through `out`/`err`. Returns the exit status.
    public static func run(_ argv: [String], environment env: [String: String],
                           out: (String) -> Void, err: (String) -> Void) -> Int32 {
        var a = Arguments(argv, command: "dive-logger")
        do {
            if a.remaining.isEmpty || a.flag("--help") || a.flag("-h") { out(usage); return a.remaining.isEmpty && argv.isEmpty ? 2 : 0 }
            let db = try a.option("--db") ?? defaultDatabase(env)
            var settings = DiveSettings()
            if let s = try a.option("--surface-end") {
                guard let v = Double(s), v > 0 else { throw Failure(description: "--surface-end expects seconds > 0") }
                settings.surfaceEndSeconds = v
            }
            if let s = try a.option("--ascent-limit") {
                guard let v = Double(s), v > 0 else { throw Failure(description: "--ascent-limit expects m/min > 0") }
                settings.ascentRateLimitMetresPerMinute = v
            }
            if let s = try a.option("--interval") {
                guard let v = Double(s), v > 0, v <= 1 else { throw Failure(description: "--interval expects seconds in (0, 1] (at least 1 Hz)") }
                settings.sampleIntervalSeconds = v
            }
            let command = try a.positional("a command (record, import, list, show, export, plot)")
            switch command {
            case "record": return try record(&a, db: db, settings: settings, env: env, out: out, err: err)
            case "import": return try importLines(&a, db: db, settings: settings, out: out, err: err)
            case "list": return try list(&a, db: db, out: out)
            case "show": return try show(&a, db: db, out: out)
            case "export": return try export(&a, db: db, out: out, err: err)
            case "plot": return try plot(&a, db: db, out: out, err: err)
            default: throw Failure(description: "unknown command '\(command)'; see dive-logger --help")
            }
        } catch let e as DiveLogError {
            err("dive-logger: \(e)")
            return 1
        } catch {
            err("dive-logger: \(error)")
            err("Run 'dive-logger --help' for usage.")
            return 2
        }
    }

    static func makeDirectory(for path: String) {
        var dir = path
        guard let slash = dir.lastIndex(of: "/") else { return }
        dir = String(dir[..<slash])
        guard !dir.isEmpty else { return }
        var prefix = ""
        for part in dir.split(separator: "/", omittingEmptySubsequences: false) {
            prefix += (prefix.isEmpty && dir.hasPrefix("/") ? "" : (prefix.isEmpty ? "" : "/")) + part
            if prefix.isEmpty { prefix = "/"; continue }
            mkdir(prefix, 0o755)
        }
    }

    /// `--water`, or nil: the water the agent's depths imply.
    static func water(_ a: inout Arguments) throws -> String? {
        guard let w = try a.option("--water") else { return nil }
        guard ["fresh", "en13319", "salt", "teos10"].contains(w) || Double(w).map({ $0 >= 500 && $0 <= 2000 }) == true else {
            throw Failure(description: "--water must be fresh, en13319, salt, teos10 or a density in kg/m³ (500…2000)")
        }
        return w
    }

    static func monotonicToUnixOffset() -> Int64 { Int64(realtimeNowNs()) - Int64(monotonicNowNs()) }

    // MARK: record

    static func record(_ a: inout Arguments, db: String, settings: DiveSettings, env: [String: String],
                       out: (String) -> Void, err: (String) -> Void) throws -> Int32 {
        let socketArg = try a.option("--socket")
        let configArg = try a.option("--config")
        let w = try water(&a)
        try a.finish()
        if socketArg != nil && configArg != nil {
            throw Failure(description: "use either --socket PATH or --config FILE (whose service.socket_path is used), not both")
        }
        // The lookup `edge-agent watch` and `poll` use (AgentSocketLocator):
        // the socket `edge-agent run` binds with the configuration it reads.
        let socket: String, socketSource: String
        if let socketArg {
            (socket, socketSource) = (socketArg, "--socket")
        } else {
            let location: AgentSocketLocation
            do {
                if let configArg { location = try AgentSocketLocator.fromConfig(configArg) }
                else { location = try AgentSocketLocator.locate(environment: env) }
            } catch {
                throw Failure(description: "cannot tell which socket the agent listens on: \(error)")
            }
            (socket, socketSource) = (location.path, location.source)
        }
        makeDirectory(for: db)
        let store = try DiveStore(path: db, writer: true)
        let recorder = try DiveRecorder(store: store, settings: settings, water: w, unixOffsetNanoseconds: monotonicToUnixOffset())
        // Signals to the main thread only (sigwait), before the client's thread exists.
        var set = sigset_t()
        sigemptyset(&set); sigaddset(&set, SIGINT); sigaddset(&set, SIGTERM)
        var previousMask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &set, &previousMask)
        defer { pthread_sigmask(SIG_SETMASK, &previousMask, nil) }
        let client = AgentClient(socketPath: socket)
        let state = RecordState()
        // The stall watchdog: the agent sends a submersion sample at least
        // once a second (three a second under water), so silence on an open
        // connection is a hung agent or a pressure sensor that stopped.
        let live = Locked(StreamLiveness.State())
        let stallAfterNs = StreamLiveness.Settings().thresholdNs(intervalNs: 1_000_000_000)
        let observation = client.observe { e in
            switch e {
            case .connected:
                live.withLock { StreamLiveness.reset(&$0) }
                state.connected(true)
                state.note("connected to the agent at \(socket)", key: "connection")
            case .disconnected(let why):
                live.withLock { StreamLiveness.reset(&$0) }
                state.connected(false)
                state.note("the agent went away (\(why)); the dive is kept, reconnecting", key: "connection")
            case .connectFailed(let why):
                state.noteOnce("no agent answers at \(socket) (\(why)); retrying until one does (Ctrl-C stops). Is `edge-agent run` running, with this socket? \(Self.socketAdvice)")
            case .shutdown(let r):
                live.withLock { StreamLiveness.reset(&$0) }
                state.note("the agent is shutting down (\(r)); reconnecting", key: "connection")
            case .device(let d) where Self.pressureSensorKinds.contains(d.kind):
                state.note(d.connected
                    ? "the agent's pressure sensor \(d.deviceID) is back"
                    : "the agent's pressure sensor \(d.deviceID) stopped (\(d.state.rawValue): \(d.reason ?? "no reason given")); no depth is logged until it is back",
                    key: "sensor " + d.deviceID)
            case .device: break
            }
        }
        let sub = client.subscribe(.submersion, intervalNs: 0, onSample: { s in
            guard case .submersion(let x) = s else { return }
            if case .resumed(let silentNs)? = live.withLock({ StreamLiveness.sample(&$0, nowNs: monotonicNowNs()) }) {
                state.note("submersion samples again after \(Self.seconds(silentNs)) s without one")
            }
            // A failed write does not stop recording: the recorder keeps the
            // samples in memory, retries and says so in its log.
            let lines = state.withRecorder { () -> [String] in
                recorder.feed(x)
                defer { recorder.clearLog() }
                return recorder.log
            }
            for line in lines { state.note(line) }
        }, onError: { e in
            if case .notEntitled = e {
                state.fail("the agent refuses the submersion stream: this user holds neither the \"submersion.shallow\" nor the \"submersion.full\" entitlement. Nothing was logged. Grant one in the agent's configuration (clients: [{ user: \"…\", entitlements: [\"submersion.full\"] }]) and restart the agent.")
            } else {
                state.fail("\(e)")
            }
        })
        err("dive-logger: socket \(socket) (\(socketSource))")
        out("dive-logger: recording into \(db) from \(socket) (Ctrl-C stops)")
        // Until SIGINT/SIGTERM, or a refusal (checked every 100 ms).
        var timeout = timespec(tv_sec: 0, tv_nsec: 100_000_000)
        var ticks = 0
        while state.failure == nil {
            if sigtimedwait(&set, nil, &timeout) > 0 { break }
            ticks += 1
            if ticks % 5 == 0 { state.flushSuppressed() }
            if let since = state.unconnectedSeconds(nowNs: monotonicNowNs()), since >= 30, ticks % 300 == 0 {
                state.note("still no agent at \(socket) after \(Int(since)) s; retrying")
            }
            if case .stalled(_, let silentNs)? = live.withLock({ StreamLiveness.check(&$0, thresholdNs: stallAfterNs, nowNs: monotonicNowNs()) }) {
                state.note("no submersion sample from the agent for \(Self.seconds(silentNs)) s although it is connected (it sends one a second at least): the agent is hung or its pressure sensor stopped; nothing is logged until samples return")
            }
            if ticks % 10 == 0 {
                // A failed write is retried each second even while no sample comes.
                let lines = state.withRecorder { () -> [String] in
                    recorder.retry()
                    defer { recorder.clearLog() }
                    return recorder.log
                }
                for line in lines { state.note(line) }
            }
        }
        sub.cancel(); observation.cancel(); client.close()
        state.flushSuppressed(all: true)
        for line in state.takeNotes() { err("dive-logger: \(line)") }
        let unwritten = state.withRecorder { () -> (DiveLogError, Int)? in
            defer { recorder.clearLog() }
            do throws(DiveLogError) { try recorder.flush() } catch { return (error, recorder.pendingSampleCount) }
            return nil
        }
        if let (e, n) = unwritten {
            err("dive-logger: stopped with \(n) recorded samples still unwritten: \(e)")
            return 1
        }
        if let f = state.failure { err("dive-logger: \(f)"); return 1 }
        out("dive-logger: stopped; \(try store.records().count) dives in \(db)")
        return 0
    }

    static let socketAdvice = "The socket is --socket PATH, else service.socket_path of --config FILE, else $EDGE_AGENT_SOCKET, else that of the configuration `edge-agent run` reads ($EDGE_AGENT_CONFIG, /etc/edge-agent/edge-agent.json5, ./config/edge-agent.json5, the build tree's), else /run/edge-agent/agent.sock."

    /// The chips the agent takes depth from (`connection` events of these are said).
    static let pressureSensorKinds: Set<String> = ["ms5837", "bmp280"]

    /// Seconds with one decimal, for the log.
    static func seconds(_ ns: UInt64) -> String { String(Double(ns / 100_000_000) / 10) }

    // MARK: import

    static func importLines(_ a: inout Arguments, db: String, settings: DiveSettings,
                            out: (String) -> Void, err: (String) -> Void) throws -> Int32 {
        let w = try water(&a)
        var offset = monotonicToUnixOffset()
        if let e = try a.option("--epoch") {
            guard let s = UTCTime.parse(e), case let (ns, false) = s.multipliedReportingOverflow(by: 1_000_000_000),
                  ns <= 1 << 62, ns >= -(1 << 62) else {
                throw Failure(description: "--epoch expects an ISO 8601 UTC time like 2026-06-01T09:30:00Z (years 1824…2116), got '\(e)'")
            }
            offset = ns
        }
        let file = try a.positional("FILE (protocol lines, or - for standard input)")
        try a.finish()
        let fd = file == "-" ? dup(0) : Glibc.open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot open \(file): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        var st = stat()
        if fstat(fd, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR { throw Failure(description: "\(file) is a directory; give a file of protocol lines") }
            if (st.st_mode & S_IFMT) == S_IFREG, Int64(st.st_size) > DiveImporter.maximumFileBytes {
                throw Failure(description: "\(file) is \(st.st_size) bytes; import reads at most \(DiveImporter.maximumFileBytes) (1 GiB). Nothing was logged. Split it, or keep the submersion lines only (grep '\"stream\":\"submersion\"', or `edge-agent simulate --streams submersion`)")
            }
        }
        makeDirectory(for: db)
        let store = try DiveStore(path: db, writer: true)
        let before = try store.records().count
        let recorder = try DiveRecorder(store: store, settings: settings, water: w, unixOffsetNanoseconds: offset)
        let importer = DiveImporter(recorder: recorder)
        func say() {
            importer.take()
            for l in importer.messages { err("dive-logger: \(l)") }
            importer.messages.removeAll()
        }
        var reader = BoundedLineReader(fd: fd, maximumLineBytes: DiveImporter.maximumLineBytes)
        var overLimit = false
        reading: while true {
            switch try reader.next() {
            case .line(let bytes): bytes.withUnsafeBytes { importer.line($0) }
            case .tooLong: importer.longLine()
            case .end: break reading
            }
            if !importer.messages.isEmpty { say() }
            if reader.total > DiveImporter.maximumFileBytes { overLimit = true; break }
        }
        for l in importer.summary() { err("dive-logger: \(l)") }
        do { try recorder.finishInput() } catch {
            say()
            err("dive-logger: \(recorder.pendingSampleCount) recorded samples could not be written to \(db): \(error)")
            return 1
        }
        say()
        let after = try store.records().count
        out("dive-logger: \(importer.samples) submersion samples in \(importer.lines) lines; \(after - before) new dives in \(db)")
        if overLimit {
            err("dive-logger: \(file) goes on past \(DiveImporter.maximumFileBytes) bytes (1 GiB), which is as much as import reads; stopped at line \(importer.lines) (what was read up to it is logged). Split the input")
            return 1
        }
        if importer.samples == 0 && importer.refused { return 1 }
        if importer.decoded == 0 && (importer.undecodable > 0 || importer.tooLong > 0) {
            err("dive-logger: nothing in \(file) is a protocol line (from `edge-agent simulate --jsonl` or `replay`); nothing was logged")
            return 1
        }
        if importer.samples > 0 && importer.skippedSamples == importer.samples {
            err("dive-logger: every submersion sample in \(file) was skipped (see above); nothing was logged")
            return 1
        }
        // Skipped samples are an error in the input, said above; the rest is logged.
        return importer.skippedSamples > 0 ? 1 : 0
    }

    // MARK: reading

    static func open(_ db: String) throws -> DiveStore {
        guard access(db, F_OK) == 0 else { throw Failure(description: "no dive log at \(db) yet (record or import a dive first, or give --db FILE)") }
        return try DiveStore(path: db, writer: false)
    }

    static func number(_ a: inout Arguments) throws -> Int64 {
        let s = try a.positional("N (a dive number, see `dive-logger list`)")
        guard let n = Int64(s), n > 0 else { throw Failure(description: "N must be a dive number (1, 2, ...), got '\(s)'") }
        return n
    }

    static func json(_ s: DiveSummary) -> String {
        func d(_ v: Double) -> String { v.isFinite ? "\(v)" : "null" }
        return "{\"number\": \(s.number), \"start\": \"\(UTCTime.format(unixSeconds: s.startUnixNanoseconds / 1_000_000_000))\", "
            + "\"duration_s\": \(d(s.durationSeconds)), \"max_depth_m\": \(d(s.maxDepth)), \"mean_depth_m\": \(d(s.meanDepth)), "
            + "\"min_temperature_c\": \(d(s.minTemperature)), \"surface_pressure_pa\": \(d(s.surfacePressure)), "
            + "\"water\": \"\(s.water)\", \"ascent_warnings\": \(s.ascentWarnings), \"max_ascent_rate_m_per_min\": \(d(s.maxAscentRate)), "
            + "\"safety_stop_s\": \(d(s.safetyStopSeconds)), \"samples\": \(s.sampleCount), \"complete\": \(s.complete)}"
    }

    static func list(_ a: inout Arguments, db: String, out: (String) -> Void) throws -> Int32 {
        let asJSON = a.flag("--json")
        try a.finish()
        let all = try open(db).summaries()
        if asJSON { out("[" + all.map(json).joined(separator: ", ") + "]"); return 0 }
        if all.isEmpty { out("no dives in \(db)"); return 0 }
        out("  #  start                 duration  max m  mean m  min °C  warnings")
        for s in all {
            let row = "\(s.number)".leftPad(3) + "  " + UTCTime.format(unixSeconds: s.startUnixNanoseconds / 1_000_000_000)
                + "  " + DiveExport.minutes(s.durationSeconds).leftPad(9) + "  " + num(s.maxDepth, 1).leftPad(5)
                + "  " + num(s.meanDepth, 1).leftPad(6) + "  " + num(s.minTemperature, 1).leftPad(6) + "  " + "\(s.ascentWarnings)".leftPad(8)
                + (s.complete ? "" : "  (open)")
            out(row)
        }
        return 0
    }

    static func show(_ a: inout Arguments, db: String, out: (String) -> Void) throws -> Int32 {
        let asJSON = a.flag("--json")
        let n = try number(&a)
        try a.finish()
        let (_, s, _) = try open(db).dive(n)
        if asJSON { out(json(s)); return 0 }
        out("dive \(s.number): \(UTCTime.format(unixSeconds: s.startUnixNanoseconds / 1_000_000_000)), \(DiveExport.minutes(s.durationSeconds))" + (s.complete ? "" : " (still open)"))
        out("  max depth \(num(s.maxDepth, 2)) m, mean \(num(s.meanDepth, 2)) m, minimum temperature \(num(s.minTemperature, 1)) °C")
        out("  surface pressure \(num(s.surfacePressure, 0)) Pa, water \(s.water)")
        out("  ascent: max \(num(s.maxAscentRate, 1)) m/min, \(s.ascentWarnings) samples above the limit")
        out("  safety stop (3–6 m): \(num(s.safetyStopSeconds, 0)) s" + (s.maxDepth > 10 ? (s.safetyStopSeconds >= 180 ? " (done)" : " (short of 3 min)") : " (not needed above 10 m)"))
        out("  \(s.sampleCount) samples")
        return 0
    }

    static func write(_ text: String, to path: String?, out: (String) -> Void) throws {
        guard let path else { out(text.hasSuffix("\n") ? String(text.dropLast()) : text); return }
        guard let fp = fopen(path, "w") else { throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
        fputs(text, fp)
        if fclose(fp) != 0 { throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    static func export(_ a: inout Arguments, db: String, out: (String) -> Void, err: (String) -> Void) throws -> Int32 {
        guard let format = try a.option("--format") else { throw Failure(description: "export needs --format subsurface|uddf|csv") }
        let output = try a.option("--output")
        var zone = ExportZone.local
        if let z = try a.option("--utc-offset") {
            guard let parsed = ExportZone.parseOffset(z) else {
                throw Failure(description: "--utc-offset expects the dive's offset from UTC like +02:00, -05:00 or Z (−14:00…+14:00), got '\(z)'")
            }
            zone = parsed
        }
        let n = try number(&a)
        try a.finish()
        let (r, s, xs) = try open(db).dive(n)
        switch format {
        case "subsurface": try write(DiveExport.subsurface(r, s, xs, zone: zone), to: output, out: out)
        case "uddf": try write(DiveExport.uddf(r, s, xs), to: output, out: out)
        case "csv": try write(DiveExport.csv(xs), to: output, out: out)
        default: throw Failure(description: "--format must be subsurface, uddf or csv, got '\(format)'")
        }
        return 0
    }

    static func plot(_ a: inout Arguments, db: String, out: (String) -> Void, err: (String) -> Void) throws -> Int32 {
        let output = try a.option("--output")
        let n = try number(&a)
        try a.finish()
        let (r, s, xs) = try open(db).dive(n)
        try write(DiveExport.svg(r, s, xs), to: output, out: out)
        return 0
    }
}

/// What the record command's threads share.
final class RecordState: @unchecked Sendable {
    /// On the heap (an inline pthread_mutex_t passed by `&` is at an address
    /// Swift does not promise to keep).
    private let lock = ConditionLock()
    private var notes: [String] = []
    private var said = Set<String>()
    private var failureText: String?
    var failure: String? { locked { failureText } }
    func locked<T>(_ body: () throws -> T) rethrows -> T { try lock.withLock(body) }
    func note(_ s: String) { locked { say(s) } }
    func noteOnce(_ s: String) { locked { if said.insert(s).inserted { say(s) } } }
    /// Lines something outside the logger can repeat at will (a pressure
    /// sensor that flaps, an agent that restarts in a loop): at most 5 of one
    /// `key` per 10 s, then one line counting the rest (EdgeValues' LimitedLog).
    private let limited = LimitedLog { RecordState.write($0) }
    func note(_ s: String, key: String) { limited.line(key, s) }
    /// Says how many lines were suppressed in windows that have ended
    /// (`all`: in every window, when the logger stops).
    func flushSuppressed(all: Bool = false) { limited.flush(all: all) }
    func say(_ s: String) { Self.write(s) }
    static func write(_ s: String) {
        let line = "dive-logger: \(s)\n"
        _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
    }
    func fail(_ s: String) { locked { if failureText == nil { failureText = s } } }
    /// Since when (monotonic ns) no connection is up; nil while connected.
    private var unconnectedSinceNs: UInt64? = monotonicNowNs()
    func connected(_ up: Bool) { locked { unconnectedSinceNs = up ? nil : (unconnectedSinceNs ?? monotonicNowNs()) } }
    func unconnectedSeconds(nowNs: UInt64) -> Double? { locked { unconnectedSinceNs.map { Double(nowNs &- $0) / 1e9 } } }
    func takeNotes() -> [String] { locked { let n = notes; notes = []; return n } }
    /// The recorder, under the lock (do not note inside: the lock is not recursive).
    func withRecorder<T>(_ body: () -> T) -> T { locked(body) }
}

extension DiveRecorder {
    func clearLog() { log.removeAll() }
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
