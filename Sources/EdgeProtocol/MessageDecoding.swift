#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
    /// The reply to `record`: the client's uid's recording window (its `uid` is 0: the wire does not carry it).
    case recording(RecordingWindow, id: RequestID?)
    /// The reply to `recorded`: one page of recorded accelerometer samples.
    case recorded(RecordedPage, id: RequestID?)
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
        /// Whether the agent keeps a sensor recorder (`record`, `recorded`).
        public var recorder: Bool = false
    }

    /// Why a line could not be decoded.
    public struct DecodeError: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// Decodes one line (without its newline). A `sample` line as the
    /// agent writes it is decoded straight into its ``Sample`` with no
    /// allocation (``SampleScan``); anything else goes through the JSON tree.
    public static func decode<C: Collection>(line: C) throws(DecodeError) -> ServerMessage where C.Element == UInt8 {
        if let fast = line.withContiguousStorageIfAvailable({ SampleScan.decode($0) }), let sample = fast {
            return .sample(sample)
        }
        return try decodeWithTree(line: line)
    }

    /// ``decode(line:)`` through the JSON tree only (every class; the
    /// reference the sample fast path is tested against).
    static func decodeWithTree<C: Collection>(line: C) throws(DecodeError) -> ServerMessage where C.Element == UInt8 {
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
                convention: r.optionalString("convention"), recorder: r.value["recorder"] == .bool(true)))
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
            return try decodeRecorder(cls, r, id: id) ?? .unknown(className: cls)
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

        // SampleMembers (the keys of sample lines, for ``SampleMembers/sample()``).
        func number(_ key: StaticString) -> SampleMemberNumber {
            switch value[key.description] {
            case nil: return .missing
            case .null?: return .null
            case .number(let d, let literal)?: return .number(d, unsigned: UInt64(literal), signed: Int(literal))
            default: return .other
            }
        }
        func flag(_ key: StaticString) -> Bool? {
            if case .bool(let b)? = value[key.description] { return b }
            return nil
        }
        func has(_ key: StaticString) -> Bool { value[key.description] != nil }
        func nested(_ key: StaticString) -> Reader? {
            if let m = value[key.description], case .object = m { return Reader(value: m) }
            return nil
        }
        func name<E: CaseIterable>(_ key: StaticString, _ wireName: (E) -> StaticString) throws(DecodeError) -> E {
            try named(key.description, wireName)
        }
        func streamName() throws(DecodeError) -> StreamName { try stream() }
    }
}

// MARK: - samples: one mapping from keys to values, two readers

/// A number member of a sample line, as a reader sees it.
enum SampleMemberNumber {
    case missing
    case null
    /// Present, but not a number.
    case other
    /// `unsigned` / `signed`: the literal as an integer, when it is one.
    case number(Double, unsigned: UInt64?, signed: Int?)
}

/// What ``SampleMembers/sample()`` needs of an object: the JSON tree's
/// ``ServerMessage/Reader``, or ``SampleScan`` over the line's bytes.
protocol SampleMembers {
    associatedtype Nested: SampleMembers
    func number(_ key: StaticString) -> SampleMemberNumber
    /// A boolean member; nil when missing or not a boolean.
    func flag(_ key: StaticString) -> Bool?
    func has(_ key: StaticString) -> Bool
    /// An object member; nil when missing or not an object.
    func nested(_ key: StaticString) -> Nested?
    func name<E: CaseIterable>(_ key: StaticString, _ wireName: (E) -> StaticString) throws(ServerMessage.DecodeError) -> E
    func streamName() throws(ServerMessage.DecodeError) -> StreamName
}

extension SampleMembers {
    func mDouble(_ key: StaticString) throws(ServerMessage.DecodeError) -> Double {
        switch number(key) {
        case .number(let d, _, _): return d
        case .null: return .nan // the agent writes null for a value it could not compute
        case .missing: throw ServerMessage.DecodeError(reason: "missing key \"\(key)\"")
        case .other: throw ServerMessage.DecodeError(reason: "\"\(key)\" is not a number")
        }
    }
    func mOptionalDouble(_ key: StaticString) -> Double? {
        if case .number(let d, _, _) = number(key) { return d }
        return nil
    }
    /// Exact for integers beyond 2^53 (timestamps after ~104 days of uptime).
    func mUInt64(_ key: StaticString) throws(ServerMessage.DecodeError) -> UInt64 {
        switch number(key) {
        case .number(_, let u?, _): return u
        case .missing: throw ServerMessage.DecodeError(reason: "missing key \"\(key)\"")
        default: throw ServerMessage.DecodeError(reason: "\"\(key)\" is not an unsigned integer")
        }
    }
    func mInt(_ key: StaticString) throws(ServerMessage.DecodeError) -> Int {
        switch number(key) {
        case .number(_, _, let i?): return i
        case .missing: throw ServerMessage.DecodeError(reason: "missing key \"\(key)\"")
        default: throw ServerMessage.DecodeError(reason: "\"\(key)\" is not an integer")
        }
    }
    func mBool(_ key: StaticString) throws(ServerMessage.DecodeError) -> Bool {
        if let b = flag(key) { return b }
        if !has(key) { throw ServerMessage.DecodeError(reason: "missing key \"\(key)\"") }
        throw ServerMessage.DecodeError(reason: "\"\(key)\" is not a boolean")
    }
    func mObject(_ key: StaticString) throws(ServerMessage.DecodeError) -> Nested {
        if let n = nested(key) { return n }
        if !has(key) { throw ServerMessage.DecodeError(reason: "missing key \"\(key)\"") }
        throw ServerMessage.DecodeError(reason: "\"\(key)\" is not an object")
    }
    func mVector(_ key: StaticString) throws(ServerMessage.DecodeError) -> Vector3 {
        let r = try mObject(key)
        return Vector3(x: try r.mDouble("x"), y: try r.mDouble("y"), z: try r.mDouble("z"))
    }
    func mQuaternion(_ key: StaticString) throws(ServerMessage.DecodeError) -> Quaternion {
        let q = try mObject(key)
        return Quaternion(w: try q.mDouble("w"), x: try q.mDouble("x"), y: try q.mDouble("y"), z: try q.mDouble("z"))
    }

    func motion(_ ts: UInt64) throws(ServerMessage.DecodeError) -> DeviceMotionSample {
        let attitude = try mQuaternion("attitude")
        let heading = mOptionalDouble("heading_deg")
        let frame: ReferenceFrame = try name("frame", \ReferenceFrame.wireName)
        // attitude6D / northYaw_deg / northYawState: agents before them
        // sent only the attitude in `frame`: read it as the 6D attitude
        // of a filter whose north is where that frame's X is (north
        // frames) or unknown (arbitrary frames).
        var attitude6D = attitude
        var northYaw: Double? = frame.hasNorth ? 0 : nil
        var northState: NorthYawState = frame.hasNorth ? .live : .none
        if has("attitude6D") {
            attitude6D = try mQuaternion("attitude6D")
            northYaw = mOptionalDouble("northYaw_deg")
            northState = try name("northYawState", \NorthYawState.wireName)
        }
        return DeviceMotionSample(
            timestampNs: ts, attitude: attitude,
            gravity: try mVector("gravity_mps2"), userAcceleration: try mVector("userAcceleration_mps2"),
            rotationRate: try mVector("rotationRate_radps"), magneticField: try mVector("magneticField_uT"),
            magneticFieldAccuracy: try name("magneticFieldAccuracy", \MagneticFieldCalibrationAccuracy.wireName),
            headingDeg: heading, referenceFrame: frame,
            attitude6D: attitude6D, northYawDeg: northYaw, northYawState: northState)
    }

    func sample() throws(ServerMessage.DecodeError) -> Sample {
        let ts = try mUInt64("timestamp_ns")
        switch try streamName() {
        case .accelerometer:
            return .accelerometer(AccelerometerSample(timestampNs: ts, acceleration: try mVector("acceleration_mps2")))
        case .accelerometerBatch:
            return .accelerometerBatch(AccelerometerSample(timestampNs: ts, acceleration: try mVector("acceleration_mps2")))
        case .gyroscope:
            return .gyroscope(GyroscopeSample(timestampNs: ts, rotationRate: try mVector("rotationRate_radps")))
        case .magnetometer:
            return .magnetometer(MagnetometerSample(timestampNs: ts, magneticField: try mVector("magneticField_uT")))
        case .deviceMotion: return .deviceMotion(try motion(ts))
        case .deviceMotionBatch: return .deviceMotionBatch(try motion(ts))
        case .accessoryMotion: return .accessoryMotion(try motion(ts))
        case .altitude:
            return .altitude(AltitudeSample(timestampNs: ts, relativeAltitude: try mDouble("relativeAltitude_m"),
                                            pressure: try mDouble("pressure_pa"), temperature: try mDouble("temperature_c")))
        case .absoluteAltitude:
            return .absoluteAltitude(AbsoluteAltitudeSample(timestampNs: ts, altitude: try mDouble("altitude_m"),
                                                            accuracy: try mDouble("accuracy_m"),
                                                            precision: try mDouble("precision_m")))
        case .submersion:
            return .submersion(SubmersionSample(timestampNs: ts, depth: try mDouble("depth_m"),
                                                pressure: try mDouble("pressure_pa"),
                                                surfacePressure: try mDouble("surfacePressure_pa"),
                                                temperature: try mDouble("temperature_c"),
                                                state: try name("state", \SubmersionState.wireName),
                                                depthState: !has("depthState") ? .unknown
                                                    : try name("depthState", \SubmersionDepthState.wireName),
                                                maximumDepth: mOptionalDouble("maximumDepth_m") ?? SubmersionSample.fullMaximumDepth,
                                                temperatureUncertainty: mOptionalDouble("temperatureUncertainty_c") ?? 0))
        case .pedometer:
            func count(_ key: StaticString) throws(ServerMessage.DecodeError) -> UInt32 {
                let v = try mInt(key)
                guard v >= 0 && v <= Int(UInt32.max) else { throw ServerMessage.DecodeError(reason: "\(key) out of range") }
                return UInt32(v)
            }
            return .pedometer(PedometerSample(timestampNs: ts, startNs: try mUInt64("startDate_ns"), steps: try count("steps"),
                                              distance: try mDouble("distance_m"),
                                              floorsAscended: try count("floorsAscended"),
                                              floorsDescended: try count("floorsDescended"),
                                              currentCadence: try mDouble("currentCadence_stepsps"),
                                              currentPace: try mDouble("currentPace_spm"),
                                              averageActivePace: try mDouble("averageActivePace_spm")))
        case .humidity:
            return .humidity(HumiditySample(timestampNs: ts, relativeHumidity: try mDouble("relativeHumidity_pct")))
        case .pedometerEvent:
            return .pedometerEvent(PedometerEventSample(timestampNs: ts, type: try name("type", \PedometerEventType.wireName)))
        case .activity:
            var flags = ActivityFlags()
            if try mBool("stationary") { flags.insert(.stationary) }
            if try mBool("walking") { flags.insert(.walking) }
            if try mBool("running") { flags.insert(.running) }
            if try mBool("cycling") { flags.insert(.cycling) }
            if try mBool("automotive") { flags.insert(.automotive) }
            if try mBool("unknown") { flags.insert(.unknown) }
            return .activity(ActivitySample(timestampNs: ts, startNs: try mUInt64("startDate_ns"), flags: flags,
                                            confidence: try name("confidence", \ActivityConfidence.wireName)))
        case .accessoryConnection:
            throw ServerMessage.DecodeError(reason: "accessoryConnection carries no samples")
        }
    }
}

extension ServerMessage.Reader: SampleMembers {}

/// A `sample` line read in place: no JSON tree, no allocation. It reads
/// the subset of JSON the agent writes for samples (``MessageEncoder``):
/// one object of members whose values are numbers, plain strings (no
/// escapes), booleans, null, or objects of numbers, with no whitespace and
/// no repeated key. Anything else makes ``decode(_:)`` answer nil, and the
/// line goes through the JSON tree (which also says what is wrong).
struct SampleScan: SampleMembers {
    let bytes: UnsafeBufferPointer<UInt8>
    /// The object's `{` and one past its `}`.
    let start: Int
    let end: Int

    static let prefix: StaticString = #"{"class":"sample","#

    /// The sample on `line`; nil when the line is not a plain sample line.
    static func decode(_ line: UnsafeBufferPointer<UInt8>) -> Sample? {
        let p = prefix
        guard line.count > p.utf8CodeUnitCount,
              memcmp(line.baseAddress!, p.utf8Start, p.utf8CodeUnitCount) == 0 else { return nil }
        var i = 0
        guard validateObject(line, &i, nested: false), i == line.count else { return nil }
        let scan = SampleScan(bytes: line, start: 0, end: line.count)
        do { return try scan.sample() } catch { return nil }
    }

    // MARK: validation (once per line)

    /// An object at `i` (moved past it): members as described above.
    private static func validateObject(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int, nested: Bool) -> Bool {
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return false }
        let open = i
        i += 1
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return true }
        while true {
            let keyStart = i
            guard skipString(b, &i) else { return false }
            // A key met before in this object: the tree keeps the last, so leave it to the tree.
            var j = open + 1
            while j < keyStart {
                let otherStart = j
                _ = skipString(b, &j)
                if j - otherStart == i - keyStart, memcmp(b.baseAddress! + otherStart, b.baseAddress! + keyStart, i - keyStart) == 0 {
                    return false
                }
                j += 1 // ':'
                _ = skipValue(b, &j)
                j += 1 // ','
            }
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return false }
            i += 1
            guard i < b.count else { return false }
            switch b[i] {
            case UInt8(ascii: "{"):
                guard !nested, validateObject(b, &i, nested: true) else { return false }
            case UInt8(ascii: "\""):
                guard !nested, skipString(b, &i) else { return false }
            case UInt8(ascii: "t"), UInt8(ascii: "f"):
                guard !nested, skipLiteral(b, &i) else { return false }
            case UInt8(ascii: "n"):
                guard skipLiteral(b, &i) else { return false }
            default:
                guard numberEnd(b, i).map({ i = $0 }) != nil else { return false }
            }
            guard i < b.count else { return false }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; return true }
            return false
        }
    }

    /// A string with no escapes and no control characters.
    private static func skipString(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool {
        guard i < b.count, b[i] == UInt8(ascii: "\"") else { return false }
        i += 1
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") { i += 1; return true }
            if c == UInt8(ascii: "\\") || c < 0x20 { return false }
            i += 1
        }
        return false
    }

    private static func skipLiteral(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool {
        for word in ["true", "false", "null"] as [StaticString] {
            let n = word.utf8CodeUnitCount
            if i + n <= b.count, memcmp(b.baseAddress! + i, word.utf8Start, n) == 0 { i += n; return true }
        }
        return false
    }

    /// Past a value already validated.
    private static func skipValue(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Bool {
        switch b[i] {
        case UInt8(ascii: "{"):
            i += 1
            if b[i] == UInt8(ascii: "}") { i += 1; return true }
            while true {
                _ = skipString(b, &i)
                i += 1 // ':'
                _ = skipValue(b, &i)
                if b[i] == UInt8(ascii: "}") { i += 1; return true }
                i += 1 // ','
            }
        case UInt8(ascii: "\""): return skipString(b, &i)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"): return skipLiteral(b, &i)
        default:
            guard let e = numberEnd(b, i) else { return false }
            i = e
            return true
        }
    }

    /// The end of a JSON number starting at `i` (RFC 8259 grammar); nil if none.
    private static func numberEnd(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        var i = start
        func digits() -> Int {
            let s = i
            while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") { i += 1 }
            return i - s
        }
        if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count else { return nil }
        if b[i] == UInt8(ascii: "0") { i += 1 } else if digits() == 0 { return nil }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { return nil }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { return nil }
        }
        return i
    }

    // MARK: members (the object is valid)

    /// The value of `key`: its first byte and one past its last.
    private func find(_ key: StaticString) -> (Int, Int)? {
        let n = key.utf8CodeUnitCount
        var i = start + 1
        guard i < end, bytes[i] != UInt8(ascii: "}") else { return nil }
        while i < end {
            let keyStart = i + 1
            _ = Self.skipString(bytes, &i)
            let match = i - 1 - keyStart == n && memcmp(bytes.baseAddress! + keyStart, key.utf8Start, n) == 0
            i += 1 // ':'
            let valueStart = i
            _ = Self.skipValue(bytes, &i)
            if match { return (valueStart, i) }
            i += 1 // ',' or '}'
        }
        return nil
    }

    func number(_ key: StaticString) -> SampleMemberNumber {
        guard let (s, e) = find(key) else { return .missing }
        switch bytes[s] {
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "\""), UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "{"): return .other
        default: break
        }
        // Integers as the tree reads them (UInt64(literal), Int(literal)).
        var unsigned: UInt64? = 0
        var magnitude: UInt64? = 0
        let negative = bytes[s] == UInt8(ascii: "-")
        if negative { unsigned = nil }
        for k in (negative ? s + 1 : s)..<e {
            let c = bytes[k]
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { unsigned = nil; magnitude = nil; break }
            if let m = magnitude {
                let (m10, o1) = m.multipliedReportingOverflow(by: 10)
                let (sum, o2) = m10.addingReportingOverflow(UInt64(c - UInt8(ascii: "0")))
                magnitude = o1 || o2 ? nil : sum
            }
        }
        if !negative { unsigned = magnitude }
        var signed: Int?
        if let m = magnitude {
            if negative { signed = m <= UInt64(Int.max) + 1 ? (m == UInt64(Int.max) + 1 ? Int.min : -Int(m)) : nil }
            else { signed = m <= UInt64(Int.max) ? Int(m) : nil }
        }
        // The double: strtod on a copy on the stack (the line has no NUL),
        // which must take the whole literal (a locale with a decimal comma
        // would stop at '.': then the tree reads the line).
        let length = e - s
        guard length < 64 else { return .other }
        let d: Double? = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buf in
            let base = buf.baseAddress!
            UnsafeMutableRawPointer(base).copyMemory(from: bytes.baseAddress! + s, byteCount: length)
            base[length] = 0
            var endPointer: UnsafeMutablePointer<CChar>?
            let v = strtod(base, &endPointer)
            return endPointer == base + length ? v : nil
        }
        guard let d else { return .other }
        return .number(d, unsigned: unsigned, signed: signed)
    }

    func flag(_ key: StaticString) -> Bool? {
        guard let (s, _) = find(key) else { return nil }
        if bytes[s] == UInt8(ascii: "t") { return true }
        if bytes[s] == UInt8(ascii: "f") { return false }
        return nil
    }

    func has(_ key: StaticString) -> Bool { find(key) != nil }

    func nested(_ key: StaticString) -> SampleScan? {
        guard let (s, e) = find(key), bytes[s] == UInt8(ascii: "{") else { return nil }
        return SampleScan(bytes: bytes, start: s, end: e)
    }

    /// Whether the string value of `key` is `word`.
    private func string(_ key: StaticString, is word: StaticString) -> Bool? {
        guard let (s, e) = find(key), bytes[s] == UInt8(ascii: "\"") else { return nil }
        let n = word.utf8CodeUnitCount
        return e - s - 2 == n && memcmp(bytes.baseAddress! + s + 1, word.utf8Start, n) == 0
    }

    func name<E: CaseIterable>(_ key: StaticString, _ wireName: (E) -> StaticString) throws(ServerMessage.DecodeError) -> E {
        for c in E.allCases where string(key, is: wireName(c)) == true { return c }
        throw ServerMessage.DecodeError(reason: "unknown \(key)")
    }

    func streamName() throws(ServerMessage.DecodeError) -> StreamName {
        for s in StreamName.allCases where string("stream", is: MessageEncoder.streamName(s)) == true { return s }
        throw ServerMessage.DecodeError(reason: "unknown stream")
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
        case .record(let d):
            w.name("record"); w.key("duration_s"); w.double(d)
        case .recorded(let from, let to):
            w.name("recorded"); w.key("from_ns"); w.int(from); w.key("to_ns"); w.int(to)
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
