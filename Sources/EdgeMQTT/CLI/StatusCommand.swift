#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeConfigFiles
import EdgeProtocol

/// `edge-mqtt status`: reads a running bridge's status socket and prints it.
enum StatusCommand {
    static func run(_ options: Options) -> Int32 {
        var path = options.statusSocket
        if path == nil {
            do {
                path = try BridgeSetup.resolve(config: options.config, readPassword: false).statusSocket
            } catch {
                printError("edge-mqtt status: \(error.description) (or pass --socket PATH)")
                return 2
            }
        }
        let socketPath = path!
        switch StatusServer.read(path: socketPath) {
        case .failure(let e):
            let advice = e.errno == ENOENT || e.errno == ECONNREFUSED
                ? "is edge-mqtt running? (systemctl status edge-mqtt)"
                : e.errno == EACCES ? "this user may not read the bridge's status: run as the service's group (edge-mqtt) or root" : ""
            printError("edge-mqtt status: no bridge answers on \(socketPath): \(String(cString: strerror(e.errno)))\(advice.isEmpty ? "" : "; " + advice)")
            return 1
        case .success(let bytes):
            var line = bytes
            while line.last == 0x0A { line.removeLast() }
            if options.json {
                print(String(decoding: line, as: UTF8.self))
                return 0
            }
            guard let v = try? JSONValue.parse(line) else {
                printError("edge-mqtt status: the bridge on \(socketPath) sent something that is not JSON")
                return 1
            }
            print(render(StatusView(v)))
            return 0
        }
    }

    /// Reads the report's keys.
    struct StatusView {
        let v: JSONValue
        init(_ v: JSONValue) { self.v = v }
        subscript(_ path: String...) -> JSONValue? {
            var cur: JSONValue? = v
            for k in path { cur = cur?[k] }
            return cur
        }
        func string(_ path: String...) -> String? {
            var cur: JSONValue? = v
            for k in path { cur = cur?[k] }
            if case .string(let s)? = cur { return s }
            return nil
        }
        func number(_ path: String...) -> Double? {
            var cur: JSONValue? = v
            for k in path { cur = cur?[k] }
            if case .number(let d, _)? = cur { return d }
            return nil
        }
        func bool(_ path: String...) -> Bool? {
            var cur: JSONValue? = v
            for k in path { cur = cur?[k] }
            if case .bool(let b)? = cur { return b }
            return nil
        }
    }

    static func duration(_ s: Double?) -> String {
        guard let s else { return "?" }
        if s < 60 { return ScalarCatalog.format(s, decimals: 1) + " s" }
        let m = Int(s) / 60
        if m < 60 { return "\(m) min \(Int(s) % 60) s" }
        return "\(m / 60) h \(m % 60) min"
    }

    static func int(_ d: Double?) -> String { d.map { String(Int($0)) } ?? "?" }

    static func render(_ s: StatusView) -> String {
        var out: [String] = []
        out.append("edge-mqtt \(s.string("version") ?? "?"), node \(s.string("node") ?? "?"), pid \(int(s.number("pid"))), up \(duration(s.number("uptime_s")))")
        if let n = s.number("process", "restarts"), n > 0 {
            out.append("process  restarted \(int(n)) time(s) by its supervisor; last: \(s.string("process", "last_exit") ?? "?")")
        }
        var broker = "broker   \(s.string("broker", "address") ?? "?") (MQTT \(s.string("broker", "protocol") ?? "?")\(s.bool("broker", "tls") == true ? ", TLS" : "")"
        if let u = s.string("broker", "user") { broker += ", user \(u)" }
        broker += "): \(s.string("broker", "state") ?? "?")"
        if let f = s.number("broker", "connected_for_s") { broker += " for \(duration(f))" }
        if let n = s.number("broker", "next_attempt_in_s") { broker += ", next attempt in \(duration(n)) (backoff at most \(duration(s.number("broker", "backoff_max_s"))))" }
        broker += "; \(int(s.number("broker", "reconnects"))) reconnect(s)"
        out.append(broker)
        if let e = s.string("broker", "last_error") { out.append("         last error: \(e)") }
        var agent = "agent    \(s.string("agent", "socket") ?? "?"): "
        if s.bool("agent", "connected") == true {
            var ents: [String] = []
            if case .array(let a)? = s["agent", "entitlements"] { for case .string(let e) in a { ents.append(e) } }
            agent += "connected as uid \(int(s.number("agent", "uid"))) (entitlements \(ents.isEmpty ? "none" : ents.joined(separator: ", ")))"
            if s.bool("agent", "stalled") == true { agent += "; STALLED: no subscribed stream delivers, status offline" }
            if s.bool("agent", "unresponsive") == true { agent += "; UNRESPONSIVE: a devices request went unanswered, status offline" }
            var rings: [String] = []
            if case .array(let a)? = s["agent", "ring_streams"] { for case .string(let r) in a { rings.append(r) } }
            agent += rings.isEmpty ? "; samples as JSON lines" : "; samples from shared-memory rings (\(rings.joined(separator: ", ")))"
            if let lost = s.number("agent", "ring_lost"), lost > 0 {
                agent += "; \(int(lost)) sample(s) LOST (the bridge fell a ring behind)"
            }
            if let f = s.string("agent", "last_ring_failure") { agent += "; a ring could not be read (\(f)): lines instead" }
        } else {
            agent += "not connected" + (s.string("agent", "last_problem").map { ": \($0)" } ?? "")
        }
        out.append(agent)
        out.append("queue    \(int(s.number("queue", "queued"))) of \(int(s.number("queue", "capacity"))) waiting; \(int(s.number("queue", "dropped"))) dropped in all, \(int(s.number("queue", "dropped_last_outage"))) during the last broker outage, \(int(s.number("queue", "dropped_since_connected"))) since connected; \(int(s.number("queue", "inflight"))) of \(int(s.number("queue", "max_inflight"))) in flight")
        out.append("published \(int(s.number("published", "data"))) data, \(int(s.number("published", "scalars"))) scalar, \(int(s.number("published", "state"))) state, \(int(s.number("published", "discovery"))) discovery messages; \(int(s.number("published", "acknowledged"))) acknowledged, \(int(s.number("published", "refused"))) refused; Home Assistant births \(int(s.number("home_assistant_births")))")
        func rate(_ hz: Double?, _ interval: Double?) -> String {
            let r = hz.map { ScalarCatalog.format($0, decimals: 2) + " Hz" } ?? "-"
            return r + " (every " + (interval.map { ScalarCatalog.format($0, decimals: 3) } ?? "?") + " s)"
        }
        out.append("  stream              agent        received  json                      scalars (per topic)")
        if case .array(let streams)? = s["streams"] {
            for st in streams {
                let v = StatusView(st)
                let name = v.string("stream") ?? "?"
                var agentState = v.bool("stalled") == true ? "STALLED"
                    : v.bool("subscribed") == true ? "subscribed" : v.string("grant") == "refused" ? "refused" : "waiting"
                if agentState == "refused", let r = v.string("reason") { agentState += ": " + r }
                let json = v.bool("json") == true ? rate(v.number("json_rate_hz"), v.number("json_interval_s")) : "off"
                let scalars = v.bool("scalars") == true ? rate(v.number("scalars_rate_hz"), v.number("scalars_interval_s")) : "off"
                if agentState.hasPrefix("refused") {
                    out.append("  \(CheckCommand.pad(name, 19)) \(agentState)")
                } else {
                    out.append("  \(CheckCommand.pad(name, 19)) \(CheckCommand.pad(agentState, 12)) \(CheckCommand.pad(int(v.number("received")), 9)) \(CheckCommand.pad(json, 25)) \(scalars)")
                }
            }
        }
        if case .array(let streams)? = s["streams"] {
            for st in streams {
                let v = StatusView(st)
                guard v.bool("stalled") == true else { continue }
                out.append("  \(v.string("stream") ?? "?") stalled since \(v.string("stalled_since") ?? "?"): no sample for \(duration(v.number("last_sample_age_s"))) (stalled after \(duration(v.number("stall_after_s"))))")
            }
        }
        if case .array(let refusals)? = s["refusals"], !refusals.isEmpty {
            out.append("refused by the broker:")
            for r in refusals {
                let v = StatusView(r)
                out.append("  \(v.string("topic") ?? "?"): \(v.string("reason") ?? "?") (0x\(String(Int(v.number("code") ?? 0), radix: 16)))")
            }
        }
        return out.joined(separator: "\n")
    }
}
