/// Encoders for every message the agent sends. Each writes one complete line
/// (JSON object + `\n`) at the end of the writer's buffer; call
/// ``JSONWriter/reset()`` first to encode a message on its own.
public enum MessageEncoder {
    // MARK: samples

    /// `{"class":"sample","stream":…,"timestamp_ns":…,<stream keys>}\n`;
    /// a `poll`'s reply carries the request's `id` right after the class
    /// (`{"class":"sample","id":…,…}`), so a client that also subscribes to
    /// the stream tells the reply from the stream's samples.
    public static func sample(_ sample: Sample, id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("sample")
        requestID(id, &w)
        w.key("stream"); w.name(streamName(sample.stream))
        w.key("timestamp_ns"); w.int(sample.timestampNs)
        switch sample {
        case .accelerometer(let s), .accelerometerBatch(let s):
            w.key("acceleration_mps2"); w.vector(s.acceleration)
        case .gyroscope(let s):
            w.key("rotationRate_radps"); w.vector(s.rotationRate)
        case .magnetometer(let s):
            w.key("magneticField_uT"); w.vector(s.magneticField)
        case .deviceMotion(let s), .deviceMotionBatch(let s), .accessoryMotion(let s):
            w.key("attitude"); w.beginObject()
            w.key("w"); w.double(s.attitude.w); w.key("x"); w.double(s.attitude.x)
            w.key("y"); w.double(s.attitude.y); w.key("z"); w.double(s.attitude.z)
            w.endObject()
            w.key("gravity_mps2"); w.vector(s.gravity)
            w.key("userAcceleration_mps2"); w.vector(s.userAcceleration)
            w.key("rotationRate_radps"); w.vector(s.rotationRate)
            w.key("magneticField_uT"); w.vector(s.magneticField)
            w.key("magneticFieldAccuracy"); w.name(s.magneticFieldAccuracy.wireName)
            w.key("heading_deg"); w.double(s.headingDeg)
            w.key("frame"); w.name(s.referenceFrame.wireName)
            w.key("attitude6D"); w.beginObject()
            w.key("w"); w.double(s.attitude6D.w); w.key("x"); w.double(s.attitude6D.x)
            w.key("y"); w.double(s.attitude6D.y); w.key("z"); w.double(s.attitude6D.z)
            w.endObject()
            w.key("northYaw_deg"); w.double(s.northYawDeg)
            w.key("northYawState"); w.name(s.northYawState.wireName)
        case .altitude(let s):
            w.key("relativeAltitude_m"); w.double(s.relativeAltitude)
            w.key("pressure_pa"); w.double(s.pressure)
            w.key("temperature_c"); w.double(s.temperature)
        case .absoluteAltitude(let s):
            w.key("altitude_m"); w.double(s.altitude)
            w.key("accuracy_m"); w.double(s.accuracy)
            w.key("precision_m"); w.double(s.precision)
        case .submersion(let s):
            w.key("depth_m"); w.double(s.depth)
            w.key("pressure_pa"); w.double(s.pressure)
            w.key("surfacePressure_pa"); w.double(s.surfacePressure)
            w.key("temperature_c"); w.double(s.temperature)
            w.key("state"); w.name(s.state.wireName)
            w.key("depthState"); w.name(s.depthState.wireName)
            w.key("maximumDepth_m"); w.double(s.maximumDepth)
            w.key("temperatureUncertainty_c"); w.double(s.temperatureUncertainty)
        case .pedometer(let s):
            w.key("startDate_ns"); w.int(s.startNs)
            w.key("steps"); w.int(s.steps)
            w.key("distance_m"); w.double(s.distance)
            w.key("floorsAscended"); w.int(s.floorsAscended)
            w.key("floorsDescended"); w.int(s.floorsDescended)
            w.key("currentCadence_stepsps"); w.double(s.currentCadence)
            w.key("currentPace_spm"); w.double(s.currentPace)
            w.key("averageActivePace_spm"); w.double(s.averageActivePace)
        case .pedometerEvent(let s):
            w.key("type"); w.name(s.type.wireName)
        case .activity(let s):
            w.key("startDate_ns"); w.int(s.startNs)
            activity(s.flags, s.confidence, into: &w)
        case .humidity(let s):
            w.key("relativeHumidity_pct"); w.double(s.relativeHumidity)
        }
        w.endObject(); w.endLine()
    }

    /// The stream's wire name as a static string (no allocation).
    public static func streamName(_ s: StreamName) -> StaticString {
        switch s {
        case .accelerometer: return "accelerometer"
        case .gyroscope: return "gyroscope"
        case .magnetometer: return "magnetometer"
        case .deviceMotion: return "deviceMotion"
        case .accelerometerBatch: return "accelerometerBatch"
        case .deviceMotionBatch: return "deviceMotionBatch"
        case .accessoryMotion: return "accessoryMotion"
        case .accessoryConnection: return "accessoryConnection"
        case .altitude: return "altitude"
        case .absoluteAltitude: return "absoluteAltitude"
        case .submersion: return "submersion"
        case .pedometer: return "pedometer"
        case .pedometerEvent: return "pedometerEvent"
        case .activity: return "activity"
        case .humidity: return "humidity"
        }
    }

    // MARK: control messages

    /// The first line on every connection.
    /// `{"class":"version","protocol":…,"agent":"edge-agent","agentVersion":…,"uid":…,"gid":…,"entitlements":[…],"maxLineBytes":…,"queueCapacity":…,"convention":…,"frame":…,"declination_deg":…}`
    /// `frame` is the reference frame the agent's north attitude is in
    /// (its configuration's `fusion.frame`), `declination_deg` the magnetic
    /// declination it was given (absent: none, so no true north).
    public static func version(agentVersion: String, uid: UInt32, gid: UInt32,
                               entitlements: [Entitlement], maxLineBytes: Int,
                               queueCapacity: Int, frame: String? = nil, declinationDeg: Double? = nil,
                               recorder: Bool = false, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("version")
        w.key("protocol"); w.int(EdgeProtocolInfo.version)
        w.key("agent"); w.string(EdgeProtocolInfo.agentName)
        w.key("agentVersion"); w.string(agentVersion)
        w.key("uid"); w.int(uid)
        w.key("gid"); w.int(gid)
        w.key("entitlements"); w.beginArray()
        for e in entitlements { w.string(e.rawValue) }
        w.endArray()
        w.key("maxLineBytes"); w.int(maxLineBytes)
        w.key("queueCapacity"); w.int(queueCapacity)
        w.key("convention"); w.string(EdgeProtocolInfo.convention)
        if let frame { w.key("frame"); w.string(frame) }
        if let d = declinationDeg, d.isFinite { w.key("declination_deg"); w.double(d) }
        // The agent keeps a sensor recorder (docs/protocol.md, "Sensor recorder").
        if recorder { w.key("recorder"); w.bool(true) }
        // The sample layout of this build, for clients that read shared-memory
        // rings (docs/protocol.md, "Shared-memory rings").
        w.key("ring_layout"); w.string(SampleRingFormat.layoutIDText)
        w.endObject(); w.endLine()
    }

    static func requestID(_ id: RequestID?, _ w: inout JSONWriter) {
        guard let id else { return }
        w.key("id")
        switch id {
        case .number(let literal): w.rawValue(literal)
        case .string(let s): w.string(s)
        }
    }

    /// `{"class":"devices","devices":[{"id":…,"kind":…,"address":…,"state":…,"streams":[…],"rate_hz":…,"errorCount":…,"resetCount":…,"lastError":…,"reason":…,"retryCount":…,"stallCount":…,"calibration":…,"calibrationNote":…}]}`
    public static func devices(_ devices: [DeviceInfo], id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("devices")
        requestID(id, &w)
        w.key("devices"); w.beginArray()
        for d in devices {
            w.beginObject()
            w.key("id"); w.string(d.id)
            w.key("kind"); w.string(d.kind)
            w.key("address"); w.string(d.address)
            w.key("state"); w.string(d.state.rawValue)
            w.key("streams"); w.beginArray()
            for s in d.streams { w.name(streamName(s)) }
            w.endArray()
            w.key("rate_hz"); w.double(d.rateHz)
            w.key("errorCount"); w.int(d.errorCount)
            w.key("resetCount"); w.int(d.resetCount)
            w.key("lastError"); if let e = d.lastError { w.string(e) } else { w.null() }
            w.key("reason"); if let r = d.reason { w.string(r) } else { w.null() }
            w.key("retryCount"); w.int(d.retryCount)
            w.key("stallCount"); w.int(d.stallCount)
            w.key("calibration"); if let c = d.calibration { w.string(c.rawValue) } else { w.null() }
            w.key("calibrationNote"); if let n = d.calibrationNote { w.string(n) } else { w.null() }
            w.endObject()
        }
        w.endArray()
        w.endObject(); w.endLine()
    }

    /// One entry of a `streams` reply.
    public struct StreamStatus: Sendable, Hashable {
        public var stream: StreamName
        public var entitled: Bool
        public var subscribed: Bool
        /// Fastest interval any client asked for, s; nil when nobody subscribes.
        public var demandIntervalS: Double?
        public init(stream: StreamName, entitled: Bool, subscribed: Bool, demandIntervalS: Double?) {
            self.stream = stream; self.entitled = entitled; self.subscribed = subscribed
            self.demandIntervalS = demandIntervalS
        }
    }

    /// `{"class":"streams","streams":[{"stream":…,"entitlement":…,"entitled":…,"subscribed":…,"demandInterval_s":…}]}`
    public static func streams(_ list: [StreamStatus], id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("streams")
        requestID(id, &w)
        w.key("streams"); w.beginArray()
        for s in list {
            w.beginObject()
            w.key("stream"); w.name(streamName(s.stream))
            w.key("entitlement"); w.string(s.stream.entitlement.rawValue)
            w.key("entitled"); w.bool(s.entitled)
            w.key("subscribed"); w.bool(s.subscribed)
            w.key("demandInterval_s"); w.double(s.demandIntervalS)
            w.endObject()
        }
        w.endArray()
        w.endObject(); w.endLine()
    }

    /// `{"class":"subscribed","stream":…,"interval_s":…,"entitlement":…}`
    /// With `ring`: the shared-memory ring offered for the subscription
    /// (`"ring":{"slots":1024,"record_bytes":248,"layout":"…","start":N}`;
    /// docs/protocol.md, "Shared-memory rings").
    public static func subscribed(_ stream: StreamName, intervalS: Double, ring: RingOffer? = nil, id: RequestID? = nil,
                                  into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("subscribed")
        requestID(id, &w)
        w.key("stream"); w.name(streamName(stream))
        w.key("interval_s"); w.double(intervalS)
        w.key("entitlement"); w.string(stream.entitlement.rawValue)
        if let ring {
            w.key("ring"); w.beginObject()
            w.key("slots"); w.int(ring.slots)
            w.key("record_bytes"); w.int(ring.recordBytes)
            w.key("layout"); w.string(SampleRingFormat.hex(ring.layoutID))
            w.key("start"); w.int(ring.start)
            w.endObject()
        }
        w.endObject(); w.endLine()
    }

    /// `{"class":"unsubscribed","stream":…}`
    public static func unsubscribed(_ stream: StreamName, id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("unsubscribed")
        requestID(id, &w)
        w.key("stream"); w.name(streamName(stream))
        w.endObject(); w.endLine()
    }

    /// `{"class":"error","code":…,"message":…,"stream":…}` (`stream` only when the error concerns one).
    public static func error(_ code: ErrorCode, message: String, stream: StreamName? = nil,
                             id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("error")
        requestID(id, &w)
        w.key("code"); w.name(code.wireName)
        w.key("message"); w.string(message)
        if let stream { w.key("stream"); w.name(streamName(stream)) }
        w.key("closesConnection"); w.bool(code.closesConnection)
        w.endObject(); w.endLine()
    }

    /// `{"class":"connection","timestamp_ns":…,"device":…,"kind":…,"connected":…,"state":…,"reason":…}`
    public static func connection(_ e: ConnectionEvent, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("connection")
        w.key("timestamp_ns"); w.int(e.timestampNs)
        w.key("device"); w.string(e.deviceID)
        w.key("kind"); w.string(e.kind)
        w.key("connected"); w.bool(e.connected)
        w.key("state"); w.string(e.state.rawValue)
        w.key("reason"); if let r = e.reason { w.string(r) } else { w.null() }
        w.endObject(); w.endLine()
    }

    /// Per-client counters: `{"class":"stats","queued":…,"delivered":…,"dropped":…,"queueCapacity":…}`
    public static func stats(queued: Int, delivered: Int, dropped: Int, queueCapacity: Int,
                             id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("stats")
        requestID(id, &w)
        w.key("queued"); w.int(queued)
        w.key("delivered"); w.int(delivered)
        w.key("dropped"); w.int(dropped)
        w.key("queueCapacity"); w.int(queueCapacity)
        w.endObject(); w.endLine()
    }

    /// `{"class":"pong","timestamp_ns":…}` (agent's CLOCK_MONOTONIC now).
    public static func pong(timestampNs: UInt64, id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("pong")
        requestID(id, &w)
        w.key("timestamp_ns"); w.int(timestampNs)
        w.endObject(); w.endLine()
    }

    /// An activity's keys, as the `activity` stream and the `history` reply
    /// carry them: one boolean per flag, then `confidence`.
    static func activity(_ flags: ActivityFlags, _ confidence: ActivityConfidence, into w: inout JSONWriter) {
        w.key("stationary"); w.bool(flags.contains(.stationary))
        w.key("walking"); w.bool(flags.contains(.walking))
        w.key("running"); w.bool(flags.contains(.running))
        w.key("cycling"); w.bool(flags.contains(.cycling))
        w.key("automotive"); w.bool(flags.contains(.automotive))
        w.key("unknown"); w.bool(flags.contains(.unknown))
        w.key("confidence"); w.name(confidence.wireName)
    }

    /// `{"class":"history","stream":"pedometer","totals":{…}}` or
    /// `{"class":"history","stream":"activity","activities":[…]}` (with
    /// `"next_from_ns":N` when it is one page of a longer answer): the reply to
    /// a `history` request (times in seconds since 1970, UTC).
    public static func history(_ reply: HistoryReply, id: RequestID? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("history")
        requestID(id, &w)
        switch reply {
        case .pedometer(let t):
            w.key("stream"); w.name("pedometer")
            w.key("totals"); w.beginObject()
            w.key("steps"); w.int(t.steps)
            w.key("distance_m"); w.double(t.distanceMeters)
            w.key("floorsAscended"); w.int(t.floorsAscended)
            w.key("floorsDescended"); w.int(t.floorsDescended)
            w.key("active_s"); w.double(t.activeSeconds)
            w.endObject()
        case .activities(let list, let next):
            w.key("stream"); w.name("activity")
            if let next { w.key("next_from_ns"); w.int(next) }
            w.key("activities"); w.beginArray()
            for a in list {
                w.beginObject()
                w.key("start_s"); w.double(a.startS)
                activity(a.flags, a.confidence, into: &w)
                w.endObject()
            }
            w.endArray()
        }
        w.endObject(); w.endLine()
    }

    /// `{"class":"shutdown","reason":…}` — the last line before the agent closes.
    public static func shutdown(reason: String, into w: inout JSONWriter) {
        w.beginObject()
        w.key("class"); w.name("shutdown")
        w.key("reason"); w.string(reason)
        w.endObject(); w.endLine()
    }
}
