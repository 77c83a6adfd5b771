import EdgeProtocol

/// `edge-mqtt discovery`: the Home Assistant discovery payloads `run` would
/// publish (through the same ``Bridge/retainedPlan(config:plan:input:)``),
/// one JSON line each: `{"topic":…,"payload":{…}}`, with every configured
/// stream taken as granted. `--every-stream` adds every stream that has
/// scalar topics, so a schema check sees every payload the bridge can make
/// (Tests/Integration/ha-discovery-check.py). Removals (empty payloads of
/// disabled streams) are left out: they carry no configuration.
enum DiscoveryCommand {
    static func run(_ options: Options) -> Int32 {
        var setup: ResolvedBridge
        do { setup = try BridgeSetup.resolve(config: options.config, overrides: options.overrides, readPassword: false) } catch {
            printError("edge-mqtt discovery: \(error.description)")
            return 2
        }
        if options.everyStream {
            for stream in ScalarCatalog.streamsWithScalars + [.deviceMotion] where setup.config.settings(of: stream) == nil {
                setup.config.streams.append(StreamSettings(stream: stream))
            }
            for i in setup.config.streams.indices {
                setup.config.streams[i].enabled = true
                setup.config.streams[i].scalars = true
            }
        }
        setup.config.topics.discovery = true
        let plan = TopicPlan(prefix: setup.config.topics.prefix, node: setup.node, discoveryPrefix: setup.config.topics.discoveryPrefix)
        var grants: [StreamName: Bridge.Grant] = [:]
        for s in setup.config.enabledStreams { grants[s.stream] = .granted }
        let input = Bridge.PlanInput(agentConnected: true, agentVersion: EdgeMQTTInfo.version, grants: grants,
                                     active: Set(grants.keys), devices: nil, calibration: nil, stopping: false)
        var out = ""
        for e in Bridge.retainedPlan(config: setup.config, plan: plan, input: input)
        where e.group == .discovery && !e.payload.isEmpty {
            var w = JSONWriter(capacity: 64)
            w.beginObject()
            w.key("topic"); w.string(e.topic)
            w.endObject()
            var head = w.bytes
            if head.last == UInt8(ascii: "\n") { head.removeLast() }
            head.removeLast()   // the closing brace
            out += String(decoding: head, as: UTF8.self) + ",\"payload\":" + String(decoding: e.payload, as: UTF8.self) + "}\n"
        }
        print(out, terminator: "")
        return 0
    }
}
