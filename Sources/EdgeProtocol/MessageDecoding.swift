/// A message from the agent, decoded (the client side of ``MessageEncoder``:
/// the `CoreMotion` library and tools read the socket through this).
public enum ServerMessage: Sendable, Hashable {
    case version(VersionInfo)
    case sample(Sample)
    case devices([DeviceInfo], id: RequestID?)
    case streams([MessageEncoder.StreamStatus], id: RequestID?)
    case subscribed(StreamName, intervalS: Double, id: RequestID?)
    case unsubscribed(StreamName, id: RequestID?)
    /// `code` is nil when the agent sent a code this build does not know (`codeName` has it).
    case error(code: ErrorCode?, codeName: String, message: String, stream: StreamName?, id: RequestID?)
    case connection(ConnectionEvent)
    case stats(queued: Int, delivered: Int, dropped: Int, queueCapacity: Int, id: RequestID?)
    case pong(timestampNs: UInt64, id: RequestID?)
    case history(HistoryReply, id: RequestID?)
    case shutdown(reason: String)
    /// A class this build does not know; clients ignore it.
    case unknown(className: String)

    /// The first line's content.
    public struct VersionInfo: Sendable, Hashable {
        public var protocolVersion: Int
        public var agent: String
        public var agentVersion: String
        public var uid: UInt32
        public var gid: UInt32
        public var entitlements: [Entitlement]
        public var maxLineBytes: Int
        public var queueCapacity: Int
        /// The agent's north reference frame (`fusion.frame`); nil from an
        /// agent that does not say.
        public var frame: String? = nil
        /// The magnetic declination the agent applies, degrees east
        /// positive; nil: none configured (no true north).
        public var declinationDeg: Double? = nil
        /// The wire convention in words (``EdgeProtocolInfo/convention``).
        public var convention: String? = nil
    }

    /// Why a line could not be decoded.
    public struct DecodeError: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// Decodes one line (without its newline).
    public static func decode<C: Collection>(line: C) throws(DecodeError) -> ServerMessage where C.Element == UInt8 {
        let v: JSONValue
        do { v = try JSONValue.parse(line) } catch { throw DecodeError(reason: "not JSON: \(error)") }
        let r = Reader(value: v)
        let cls = try r.string("class")
        let id = r.requestID()
        switch cls {
        case "version":
            return .version(VersionInfo(
                protocolVersion: try r.int("protocol"), agent: try r.string("agent"),
                agentVersion: try r.string("agentVersion"), uid: try r.uint32("uid"),
                gid: try r.uint32("gid"),
                entitlements: try r.strings("entitlements").map(Entitlement.init(rawValue:)),
                maxLineBytes: try r.int("maxLineBytes"), queueCapacity: try r.int("queueCapacity"),
                frame: r.optionalString("frame"), declinationDeg: r.optionalDouble("declination_deg"),
                convention: r.optionalString("convention")))
        case "sample":
            return .sample(try r.sample())
        case "devices":
            var list: [DeviceInfo] = []
            for d in try r.array("devices") {
                let e = Reader(value: d)
                let state = try e.string("state")
                guard let s = DeviceState(rawValue: state) else { throw DecodeError(reason: "unknown device state \(state)") }
                list.append(DeviceInfo(id: try e.string("id"), kind: try e.string("kind"),
                                       address: try e.string("address"), state: s,
                                       streams: try e.strings("streams").compactMap(StreamName.init(rawValue:)),
                                       rateHz: try e.double("rate_hz"), errorCount: try e.int("errorCount"),
                                       resetCount: try e.int("resetCount"), lastError: e.optionalString("lastError"),
                                       reason: e.optionalString("reason"), retryCount: e.optionalInt("retryCount") ?? 0,
                                       stallCount: e.optionalInt("stallCount") ?? 0,
                                       calibration: e.optionalString("calibration").flatMap(DeviceInfo.Calibration.init(rawValue:)),
                                       calibrationNote: e.optionalString("calibrationNote")))
            }
            return .devices(list, id: id)
        case "streams":
            var list: [MessageEncoder.StreamStatus] = []
            for s in try r.array("streams") {
                let e = Reader(value: s)
                guard let name = StreamName(rawValue: try e.string("stream")) else { continue }
                list.append(.init(stream: name, entitled: try e.bool("entitled"), subscribed: try e.bool("subscribed"),
                                  demandIntervalS: e.optionalDouble("demandInterval_s")))
            }
            return .streams(list, id: id)
        case "subscribed":
            return .subscribed(try r.stream(), intervalS: try r.double("interval_s"), id: id)
        case "unsubscribed":
            return .unsubscribed(try r.stream(), id: id)
        case "error":
            let name = try r.string("code")
            return .error(code: ErrorCode(rawValue: name), codeName: name, message: try r.string("message"),
                          stream: r.optionalString("stream").flatMap(StreamName.init(rawValue:)), id: id)
        case "connection":
            let connected = try r.bool("connected")
            // Agents before the `state` key sent only `connected`.
            let state = r.optionalString("state").flatMap(DeviceState.init(rawValue:)) ?? (connected ? .present : .missing)
            return .connection(ConnectionEvent(timestampNs: try r.uint64("timestamp_ns"), deviceID: try r.string("device"),
                                               kind: try r.string("kind"), state: state, reason: r.optionalString("reason")))
        case "stats":
            return .stats(queued: try r.int("queued"), delivered: try r.int("delivered"), dropped: try r.int("dropped"),
                          queueCapacity: try r.int("queueCapacity"), id: id)
        case "pong":
            return .pong(timestampNs: try r.uint64("timestamp_ns"), id: id)
        case "history":
            switch try r.stream() {
            case .pedometer:
                let t = Reader(value: try r.member("totals"))
                return .history(.pedometer(PedometerTotals(
                    steps: try t.int("steps"), distanceMeters: try t.double("distance_m"),
                    floorsAscended: try t.int("floorsAscended"), floorsDescended: try t.int("floorsDescended"),
                    activeSeconds: try t.double("active_s"))), id: id)
            case .activity:
                var list: [HistoryReply.Activity] = []
                for a in try r.array("activities") {
                    let e = Reader(value: a)
                    var flags = ActivityFlags()
                    for (key, flag) in [("stationary", ActivityFlags.stationary), ("walking", .walking), ("running", .running),
                                        ("cycling", .cycling), ("automotive", .automotive), ("unknown", .unknown)]
                    where try e.bool(key) { flags.insert(flag) }
                    let c = try e.string("confidence")
                    guard let confidence = ActivityConfidence.allCases.first(where: { $0.name == c }) else {
                        throw DecodeError(reason: "unknown confidence \(c)")
                    }
                    list.append(.init(startS: try e.double("start_s"), flags: flags, confidence: confidence))
                }
                var next: Int64?
                if r.value["next_from_ns"] != nil {
                    guard case .number(_, let literal)? = r.value["next_from_ns"], let n = Int64(literal), n >= 0 else {
                        throw DecodeError(reason: "\"next_from_ns\" is not a time in ns")
                    }
                    next = n
                }
                return .history(.activities(list, nextFromNs: next), id: id)
            case let s:
                throw DecodeError(reason: "no history of \(s.rawValue)")
            }
        case "shutdown":
            return .shutdown(reason: try r.string("reason"))
        default:
            return .unknown(className: cls)
        }
    }

    /// Typed access to an object's members.
    struct Reader {
        let value: JSONValue

        func member(_ key: String) throws(DecodeError) -> JSONValue {
            guard let m = value[key] else { throw DecodeError(reason: "missing key \"\(key)\"") }
            return m
        }
        func string(_ key: String) throws(DecodeError) -> String {
            guard case .string(let s) = try member(key) else { throw DecodeError(reason: "\"\(key)\" is not a string") }
            return s
        }
        func optionalString(_ key: String) -> String? {
            if case .string(let s)? = value[key] { return s }
            return nil
        }
        func double(_ key: String) throws(DecodeError) -> Double {
            switch try member(key) {
            case .number(let d, _): return d
            case .null: return .nan // the agent writes null for a value it could not compute
            default: throw DecodeError(reason: "\"\(key)\" is not a number")
            }
        }
        func optionalDouble(_ key: String) -> Double? {
            if case .number(let d, _)? = value[key] { return d }
            return nil
        }
        func optionalInt(_ key: String) -> Int? {
            if case .number(_, let literal)? = value[key] { return Int(literal) }
            return nil
        }
        /// Exact for integers beyond 2^53 (timestamps after ~104 days of uptime).
        func uint64(_ key: String) throws(DecodeError) -> UInt64 {
            guard case .number(_, let literal) = try member(key), let n = UInt64(literal) else {
                throw DecodeError(reason: "\"\(key)\" is not an unsigned integer")
            }
            return n
        }
        /// A uid or gid: unsigned and 32-bit (a larger number is an error,
        /// not a trap).
        func uint32(_ key: String) throws(DecodeError) -> UInt32 {
            guard let n = UInt32(exactly: try uint64(key)) else {
                throw DecodeError(reason: "\"\(key)\" is not a 32-bit unsigned integer")
            }
            return n
        }
        func int(_ key: String) throws(DecodeError) -> Int {
            guard case .number(_, let literal) = try member(key), let n = Int(literal) else {
                throw DecodeError(reason: "\"\(key)\" is not an integer")
            }
            return n
        }
        func bool(_ key: String) throws(DecodeError) -> Bool {
            guard case .bool(let b) = try member(key) else { throw DecodeError(reason: "\"\(key)\" is not a boolean") }
            return b
        }
        func array(_ key: String) throws(DecodeError) -> [JSONValue] {
            guard case .array(let a) = try member(key) else { throw DecodeError(reason: "\"\(key)\" is not an array") }
            return a
        }
        func strings(_ key: String) throws(DecodeError) -> [String] {
            var out: [String] = []
            for e in try array(key) {
                guard case .string(let s) = e else { throw DecodeError(reason: "\"\(key)\" holds a non-string") }
                out.append(s)
            }
            return out
        }
        func vector(_ key: String) throws(DecodeError) -> Vector3 {
            let r = Reader(value: try member(key))
            return Vector3(x: try r.double("x"), y: try r.double("y"), z: try r.double("z"))
        }
        func stream() throws(DecodeError) -> StreamName {
            let name = try string("stream")
            guard let s = StreamName(rawValue: name) else { throw DecodeError(reason: "unknown stream \(name)") }
            return s
        }
        func requestID() -> RequestID? {
            switch value["id"] {
            case .number(_, let literal)?: return .number(literal)
            case .string(let s)?: return .string(s)
            default: return nil
            }
        }
        func named<E: CaseIterable>(_ key: String, _ wireName: (E) -> StaticString) throws(DecodeError) -> E {
            let s = try string(key)
            for c in E.allCases where wireName(c).description == s { return c }
            throw DecodeError(reason: "unknown \(key) \"\(s)\"")
        }

        func quaternion(_ key: String) throws(DecodeError) -> Quaternion {
            let q = Reader(value: try member(key))
            return Quaternion(w: try q.double("w"), x: try q.double("x"), y: try q.double("y"), z: try q.double("z"))
        }

        func motion(_ ts: UInt64) throws(DecodeError) -> DeviceMotionSample {
            let attitude = try quaternion("attitude")
            var heading: Double?
            if case .number(let h, _)? = value["heading_deg"] { heading = h }
            let frame: ReferenceFrame = try named("frame", \ReferenceFrame.wireName)
            // attitude6D / northYaw_deg / northYawState: agents before them
            // sent only the attitude in `frame`: read it as the 6D attitude
            // of a filter whose north is where that frame's X is (north
            // frames) or unknown (arbitrary frames).
            var attitude6D = attitude
            var northYaw: Double? = frame.hasNorth ? 0 : nil
            var northState: NorthYawState = frame.hasNorth ? .live : .none
            if value["attitude6D"] != nil {
                attitude6D = try quaternion("attitude6D")
                northYaw = nil
                if case .number(let y, _)? = value["northYaw_deg"] { northYaw = y }
                northState = try named("northYawState", \NorthYawState.wireName)
            }
            return DeviceMotionSample(
                timestampNs: ts, attitude: attitude,
                gravity: try vector("gravity_mps2"), userAcceleration: try vector("userAcceleration_mps2"),
                rotationRate: try vector("rotationRate_radps"), magneticField: try vector("magneticField_uT"),
                magneticFieldAccuracy: try named("magneticFieldAccuracy", \MagneticFieldCalibrationAccuracy.wireName),
                headingDeg: heading, referenceFrame: frame,
                attitude6D: attitude6D, northYawDeg: northYaw, northYawState: northState)
        }

        func sample() throws(DecodeError) -> Sample {
            let ts = try uint64("timestamp_ns")
            switch try stream() {
            case .accelerometer:
                return .accelerometer(AccelerometerSample(timestampNs: ts, acceleration: try vector("acceleration_mps2")))
            case .accelerometerBatch:
                return .accelerometerBatch(AccelerometerSample(timestampNs: ts, acceleration: try vector("acceleration_mps2")))
            case .gyroscope:
                return .gyroscope(GyroscopeSample(timestampNs: ts, rotationRate: try vector("rotationRate_radps")))
            case .magnetometer:
                return .magnetometer(MagnetometerSample(timestampNs: ts, magneticField: try vector("magneticField_uT")))
            case .deviceMotion: return .deviceMotion(try motion(ts))
            case .deviceMotionBatch: return .deviceMotionBatch(try motion(ts))
            case .accessoryMotion: return .accessoryMotion(try motion(ts))
            case .altitude:
                return .altitude(AltitudeSample(timestampNs: ts, relativeAltitude: try double("relativeAltitude_m"),
                                                pressure: try double("pressure_pa"), temperature: try double("temperature_c")))
            case .absoluteAltitude:
                return .absoluteAltitude(AbsoluteAltitudeSample(timestampNs: ts, altitude: try double("altitude_m"),
                                                                accuracy: try double("accuracy_m"),
                                                                precision: try double("precision_m")))
            case .submersion:
                return .submersion(SubmersionSample(timestampNs: ts, depth: try double("depth_m"),
                                                    pressure: try double("pressure_pa"),
                                                    surfacePressure: try double("surfacePressure_pa"),
                                                    temperature: try double("temperature_c"),
                                                    state: try named("state", \SubmersionState.wireName),
                                                    depthState: value["depthState"] == nil ? .unknown
                                                        : try named("depthState", \SubmersionDepthState.wireName),
                                                    maximumDepth: optionalDouble("maximumDepth_m") ?? SubmersionSample.fullMaximumDepth,
                                                    temperatureUncertainty: optionalDouble("temperatureUncertainty_c") ?? 0))
            case .pedometer:
                func count(_ key: String) throws(DecodeError) -> UInt32 {
                    let v = try int(key)
                    guard v >= 0 && v <= Int(UInt32.max) else { throw DecodeError(reason: "\(key) out of range") }
                    return UInt32(v)
                }
                return .pedometer(PedometerSample(timestampNs: ts, startNs: try uint64("startDate_ns"), steps: try count("steps"),
                                                  distance: try double("distance_m"),
                                                  floorsAscended: try count("floorsAscended"),
                                                  floorsDescended: try count("floorsDescended"),
                                                  currentCadence: try double("currentCadence_stepsps"),
                                                  currentPace: try double("currentPace_spm"),
                                                  averageActivePace: try double("averageActivePace_spm")))
            case .humidity:
                return .humidity(HumiditySample(timestampNs: ts, relativeHumidity: try double("relativeHumidity_pct")))
            case .pedometerEvent:
                return .pedometerEvent(PedometerEventSample(timestampNs: ts, type: try named("type", \PedometerEventType.wireName)))
            case .activity:
                var flags = ActivityFlags()
                if try bool("stationary") { flags.insert(.stationary) }
                if try bool("walking") { flags.insert(.walking) }
                if try bool("running") { flags.insert(.running) }
                if try bool("cycling") { flags.insert(.cycling) }
                if try bool("automotive") { flags.insert(.automotive) }
                if try bool("unknown") { flags.insert(.unknown) }
                return .activity(ActivitySample(timestampNs: ts, startNs: try uint64("startDate_ns"), flags: flags,
                                                confidence: try named("confidence", \ActivityConfidence.wireName)))
            case .accessoryConnection:
                throw DecodeError(reason: "accessoryConnection carries no samples")
            }
        }
    }
}

extension Request {
    /// Encodes the request as one line (the client side of ``decode(line:)``).
    public func encode(into w: inout JSONWriter) {
        w.beginObject()
        w.key("class")
        switch kind {
        case .devices: w.name("devices")
        case .streams: w.name("streams")
        case .stats: w.name("stats")
        case .ping: w.name("ping")
        case .poll(let s): w.name("poll"); w.key("stream"); w.name(MessageEncoder.streamName(s))
        case .unsubscribe(let s): w.name("unsubscribe"); w.key("stream"); w.name(MessageEncoder.streamName(s))
        case .subscribe(let s, let intervalNs):
            w.name("subscribe"); w.key("stream"); w.name(MessageEncoder.streamName(s))
            w.key("interval_s"); w.double(Double(intervalNs) / 1e9)
            if let ring = ringLayout { w.key("ring"); w.string(SampleRingFormat.hex(ring)) }
        case .history(let s, let from, let to):
            w.name("history"); w.key("stream"); w.name(MessageEncoder.streamName(s))
            w.key("from_ns"); w.int(from)
            w.key("to_ns"); w.int(to)
        }
        MessageEncoder.requestID(id, &w)
        w.endObject(); w.endLine()
    }
}

extension ServerMessage {
    /// The request id of a `poll`'s reply: a sample line that carries an
    /// `id` right after its class (`MessageEncoder.sample(_:id:into:)`);
    /// nil for a subscription's sample (checked by its first bytes, so the
    /// samples of a stream cost nothing more).
    public static func pollReplyID<C: Collection>(line: C) -> RequestID? where C.Element == UInt8 {
        guard line.starts(with: pollReplyPrefix), let v = try? JSONValue.parse(Array(line)) else { return nil }
        switch v["id"] {
        case .number(_, let literal)?: return .number(literal)
        case .string(let s)?: return .string(s)
        default: return nil
        }
    }

    private static let pollReplyPrefix = Array(#"{"class":"sample","id":"#.utf8)
}
