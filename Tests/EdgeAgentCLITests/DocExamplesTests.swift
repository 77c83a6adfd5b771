// The protocol documents' examples, executed: every `> request` line of
// docs/protocol.md and Sources/EdgeService/EdgeService.docc/ClientProtocol.md
// is sent to a real `edge-agent run` (the daemon fixture: a simulated board
// whose magnetometer is unplugged from 3 s to 4.5 s, so `connection` events
// happen), and every `< reply` line after it is compared with what the agent
// answers: the same class, the same keys (none missing, none undocumented,
// nested objects and array elements too) and the same kinds of values
// (`null` on either side stands for a value that may be absent). Each code
// block is one connection: a `<` line before any `>` is what the agent sends
// first (the version line); `connection` and `shutdown` lines are events,
// compared with the events a listening client receives during the run and at
// SIGTERM. A request line in a code block without the `> ` marker fails the
// test too, so no example escapes. Waits are bounded; nothing sleeps.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import EdgeProtocol
import TestThreads

/// One marked line of a documented transcript.
struct DocLine: Sendable, CustomStringConvertible {
    enum Direction: Sendable { case sent, received }
    var direction: Direction
    /// The line without its marker.
    var text: String
    var file: String
    var number: Int
    var description: String { "\(file):\(number): \(direction == .sent ? ">" : "<") \(text.prefix(120))" }
}

/// The documents' transcripts, one per code block.
enum DocTranscripts {
    static let files = ["docs/protocol.md", "Sources/EdgeService/EdgeService.docc/ClientProtocol.md"]
    static let requestClasses: Set<String> = ["devices", "streams", "subscribe", "unsubscribe", "poll", "stats", "ping"]
    static let eventClasses: Set<String> = ["connection", "shutdown"]

    /// Marked code blocks of `file` (relative to the package root), and the
    /// unmarked lines in code blocks that are requests.
    static func read(_ file: String) throws -> (blocks: [[DocLine]], unmarked: [DocLine]) {
        let text = try String(contentsOfFile: DaemonPaths.packageRoot + "/" + file, encoding: .utf8)
        var blocks: [[DocLine]] = [], unmarked: [DocLine] = []
        var inFence = false
        var current: [DocLine] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw)
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                if inFence, !current.isEmpty { blocks.append(current) }
                current = []
                inFence.toggle()
                continue
            }
            guard inFence else { continue }
            if line.hasPrefix("> ") {
                current.append(DocLine(direction: .sent, text: String(line.dropFirst(2)), file: file, number: i + 1))
            } else if line.hasPrefix("< ") {
                current.append(DocLine(direction: .received, text: String(line.dropFirst(2)), file: file, number: i + 1))
            } else if let cls = className(line), requestClasses.contains(cls) {
                unmarked.append(DocLine(direction: .sent, text: line, file: file, number: i + 1))
            }
        }
        return (blocks, unmarked)
    }

    static func className(_ line: String) -> String? {
        guard let v = try? JSONValue.parse(Array(line.utf8)), case .string(let c)? = v["class"] else { return nil }
        return c
    }
}

/// Compares the shape of a documented message with a real one.
enum MessageShape {
    static func kind(_ v: JSONValue) -> String {
        switch v {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// One shape for the documented elements of an array: objects merged key
    /// by key, a non-null value standing for a null one.
    static func merge(_ a: JSONValue, _ b: JSONValue) -> JSONValue {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            var out = x
            for (k, v) in y { out[k] = out[k].map { merge($0, v) } ?? v }
            return .object(out)
        case (.null, _): return b
        default: return a
        }
    }

    /// What differs, one line per difference, by key path.
    static func differences(documented d: JSONValue, real r: JSONValue, path: String = "") -> [String] {
        switch (d, r) {
        case (.null, _), (_, .null):
            return []
        case (.object(let dk), .object(let rk)):
            var out: [String] = []
            for k in dk.keys.sorted() where rk[k] == nil {
                out.append("\(path.isEmpty ? "" : path + ".")\(k): documented, but the agent sends no such key")
            }
            for k in rk.keys.sorted() where dk[k] == nil {
                out.append("\(path.isEmpty ? "" : path + ".")\(k): the agent sends it, the document does not show it")
            }
            for k in dk.keys.sorted() {
                if let dv = dk[k], let rv = rk[k] {
                    out += differences(documented: dv, real: rv, path: path.isEmpty ? k : path + "." + k)
                }
            }
            return out
        case (.array(let da), .array(let ra)):
            guard let first = da.first else { return [] }
            let shape = da.dropFirst().reduce(first, merge)
            var seen = Set<String>(), out: [String] = []
            for e in ra {
                for issue in differences(documented: shape, real: e, path: path + "[]") where seen.insert(issue).inserted {
                    out.append(issue)
                }
            }
            return out
        case (.bool, .bool), (.number, .number), (.string, .string):
            return []
        default:
            return ["\(path.isEmpty ? "(the message)" : path): documented as \(kind(d)), the agent sends \(kind(r))"]
        }
    }

    /// Whether a real message is the one a documented line shows: the same
    /// class, and the same stream and error code when the line has them.
    static func matches(_ doc: JSONValue, _ real: JSONValue) -> Bool {
        for key in ["class", "stream", "code"] {
            if let dv = doc[key], dv != real[key] { return false }
        }
        return true
    }
}

extension JSONValue {
    fileprivate static func line(_ text: String) -> JSONValue? { try? JSONValue.parse(Array(text.utf8)) }
}

@Suite(.serialized, .ownThread) struct DocExamplesTests {
    /// The examples are all marked: a request in a code block without `> `
    /// would go unchecked.
    @Test func everyDocumentedRequestIsMarked() throws {
        var marked = 0
        for file in DocTranscripts.files {
            let (blocks, unmarked) = try DocTranscripts.read(file)
            for u in unmarked { Issue.record("\(u): a request example without the `> ` marker, so no test runs it") }
            for block in blocks {
                for (i, l) in block.enumerated() where l.direction == .sent {
                    marked += 1
                    let next = block.dropFirst(i + 1).first
                    #expect(next?.direction == .received, "\(l): a request with no documented reply after it")
                }
                for l in block where l.direction == .received {
                    #expect(JSONValue.line(l.text) != nil, "\(l): not a JSON object")
                }
            }
        }
        #expect(marked >= 20, "the documents hold \(marked) request examples")
    }

    @Test(.timeLimit(.minutes(3)))
    func everyDocumentedReplyHasTheShapeOfTheRealOne() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("docs")
        defer { DaemonPaths.removeTree(dir) }
        // The daemon fixture, with altitude always on so `poll` has a sample.
        let configPath = try DaemonFixture.writeRuntimeConfig(into: dir)
        let config = try String(contentsOfFile: configPath, encoding: .utf8)
        try #require(config.contains("always_on: [],"))
        try config.replacingOccurrences(of: "always_on: [],", with: "always_on: [\"altitude\"],")
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        let socketPath = dir + "/agent.sock"
        let notify = try FakeSystemdNotify(path: dir + "/notify.sock")
        let agent = AgentProcess(arguments: ["run", "--config", configPath, "--socket", socketPath,
                                             "--duration", "120", "--quiet"],
                                 environment: AgentProcess.environment(["NOTIFY_SOCKET": notify.path]),
                                 outputDirectory: dir)
        try agent.start()
        defer { agent.kill() }
        // READY=1: the loop runs and the devices are known.
        try #require(notify.waitFor("READY=1", DaemonDeadline(seconds: 45), while: { agent.isRunning }),
                     "no READY=1\n\(agent.transcript)")
        // Hears every event from the start; read only at the end. Its slow
        // magnetometer subscription keeps the chip read, so its outage is
        // seen (an idle chip is not), without filling its queue.
        let listener = try DaemonClient(path: socketPath, name: "listener")
        listener.request(#"{"class":"subscribe","stream":"magnetometer","interval_s":1}"#)

        var events: [(doc: DocLine, value: JSONValue)] = []
        var checked = 0
        for file in DocTranscripts.files {
            for block in try DocTranscripts.read(file).blocks {
                try run(block, socketPath: socketPath, events: &events, checked: &checked)
            }
        }
        #expect(checked >= 20, "replies checked: \(checked)")

        // Events: every connection event the listener heard until the
        // magnetometer came back (the fixture's outage ends at 4.5 s).
        var connections: [JSONValue] = []
        let deadline = DaemonDeadline(seconds: 30)
        while let m = listener.next(deadline) {
            if m.cls == "connection", let v = JSONValue.line(m.line) {
                connections.append(v)
                if m.bool("connected") == true { break }
            }
        }
        let documentedConnections = events.filter { DocTranscripts.className($0.doc.text) == "connection" }
        #expect(!documentedConnections.isEmpty, "the documents show a connection event")
        #expect(connections.count >= 2, "the agent sent connection events for the magnetometer's outage\n\(agent.transcript)")
        for (doc, value) in documentedConnections {
            for real in connections {
                for d in MessageShape.differences(documented: value, real: real) {
                    Issue.record("\(doc): \(d)\n  real: \(real)")
                }
            }
        }
        // Shutdown: SIGTERM, and the listener's last line.
        agent.signal(SIGTERM)
        let shutdown = listener.waitFor(class: "shutdown", DaemonDeadline(seconds: 30)).flatMap { JSONValue.line($0.line) }
        try #require(shutdown != nil, "no shutdown line after SIGTERM\n\(agent.transcript)")
        for (doc, value) in events where DocTranscripts.className(doc.text) == "shutdown" {
            for d in MessageShape.differences(documented: value, real: shutdown!) { Issue.record("\(doc): \(d)") }
        }
    }

    /// One code block on a connection of its own.
    func run(_ block: [DocLine], socketPath: String, events: inout [(doc: DocLine, value: JSONValue)],
             checked: inout Int) throws {
        let client = try DaemonClient(path: socketPath, name: "\(block[0].file):\(block[0].number)")
        let deadline = DaemonDeadline(seconds: 30)
        let version = try #require(client.next(deadline), "\(block[0]): no version line")
        var lastRequest: String?
        var first = true
        for line in block {
            switch line.direction {
            case .sent:
                first = false
                lastRequest = line.text
                client.request(line.text)
            case .received:
                guard let doc = JSONValue.line(line.text) else {
                    Issue.record("\(line): not a JSON object"); continue
                }
                let cls = DocTranscripts.className(line.text) ?? ""
                if DocTranscripts.eventClasses.contains(cls) { events.append((line, doc)); continue }
                if first {
                    #expect(cls == "version", "\(line): what the agent sends before any request is the version line")
                    if let real = JSONValue.line(version.line) {
                        for d in MessageShape.differences(documented: doc, real: real) {
                            Issue.record("\(line): \(d)\n  real: \(version.line)")
                        }
                    }
                    checked += 1
                    continue
                }
                // The next real message this line shows; a poll answered
                // noSample before the stream has a sample is asked again.
                let replyDeadline = DaemonDeadline(seconds: 20)
                var found: DaemonMessage?
                while let m = client.next(replyDeadline) {
                    guard let real = JSONValue.line(m.line) else { continue }
                    if MessageShape.matches(doc, real) { found = m; break }
                    if let req = lastRequest, DocTranscripts.className(req) == "poll",
                       m.cls == "error", m.string("code") == "noSample" {
                        daemonPause(ms: 100)
                        client.request(req)
                    }
                }
                guard let m = found, let real = JSONValue.line(m.line) else {
                    let recent = client.received.suffix(5).map { $0.line }.joined(separator: "\n  ")
                    Issue.record("\(line): the agent sent no such message after `\(lastRequest ?? "")`; it sent:\n  \(recent)")
                    continue
                }
                checked += 1
                for d in MessageShape.differences(documented: doc, real: real) {
                    Issue.record("\(line): \(d)\n  real: \(m.line)")
                }
            }
        }
    }
}
