// The sensor recorder's messages (Core Motion's CMSensorRecorder through the
// agent): the `recording` reply to `record`, the `recorded` reply to
// `recorded` (docs/protocol.md, "Sensor recorder").

/// One recorded accelerometer sample: Core Motion's
/// `CMRecordedAccelerometerData` in SI.
public struct RecordedAccelerometerSample: Sendable, Hashable {
    /// Unique and increasing in time within one agent's recording (Apple: `identifier`).
    public var identifier: UInt64
    /// CLOCK_REALTIME of the capture, ns since 1970 (Apple: `startDate`).
    public var unixNs: Int64
    /// Specific force, m/s², board frame (as the accelerometer stream).
    public var acceleration: Vector3
    public init(identifier: UInt64, unixNs: Int64, acceleration: Vector3) {
        self.identifier = identifier; self.unixNs = unixNs; self.acceleration = acceleration
    }
}

/// A span of time a user asked the recorder to record
/// (`CMSensorRecorder.recordAccelerometer(forDuration:)`), ns since 1970.
public struct RecordingWindow: Sendable, Hashable {
    public var uid: UInt32
    public var startUnixNs: Int64
    public var endUnixNs: Int64
    public init(uid: UInt32, startUnixNs: Int64, endUnixNs: Int64) {
        self.uid = uid; self.startUnixNs = startUnixNs; self.endUnixNs = endUnixNs
    }
    public func contains(_ t: Int64) -> Bool { t >= startUnixNs && t <= endUnixNs }
}

/// One page of a `recorded` reply: the samples, oldest first, and where
/// the rest begins (ask again with `from_ns` set to it), nil when complete.
public struct RecordedPage: Sendable, Hashable {
    public var samples: [RecordedAccelerometerSample]
    public var nextFromNs: Int64?
    public init(samples: [RecordedAccelerometerSample], nextFromNs: Int64?) {
        self.samples = samples; self.nextFromNs = nextFromNs
    }
}

extension MessageEncoder {
    /// `{"class":"recording","from_ns":A,"to_ns":B}`: the client's uid's
    /// recording window after a `record` request.
    public static func recording(_ w: RecordingWindow, id: RequestID? = nil, into out: inout JSONWriter) {
        out.beginObject()
        out.key("class"); out.name("recording")
        requestID(id, &out)
        out.key("from_ns"); out.int(w.startUnixNs)
        out.key("to_ns"); out.int(w.endUnixNs)
        out.endObject(); out.endLine()
    }

    /// `{"class":"recorded","samples":[[identifier,t_ns,x,y,z],…]}` (with
    /// `"next_from_ns":N` when it is one page of a longer answer): x, y, z
    /// in m/s², t_ns since 1970 (UTC).
    public static func recorded(_ page: RecordedPage, id: RequestID? = nil, into out: inout JSONWriter) {
        out.beginObject()
        out.key("class"); out.name("recorded")
        requestID(id, &out)
        if let next = page.nextFromNs { out.key("next_from_ns"); out.int(next) }
        out.key("samples"); out.beginArray()
        for s in page.samples {
            out.beginArray()
            out.int(s.identifier); out.int(s.unixNs)
            out.double(s.acceleration.x); out.double(s.acceleration.y); out.double(s.acceleration.z)
            out.endArray()
        }
        out.endArray()
        out.endObject(); out.endLine()
    }
}

extension ServerMessage {
    /// The `recording` and `recorded` replies (nil for another class).
    static func decodeRecorder(_ cls: String, _ r: Reader, id: RequestID?) throws(DecodeError) -> ServerMessage? {
        switch cls {
        case "recording":
            func ns(_ key: String) throws(DecodeError) -> Int64 {
                guard case .number(_, let literal)? = r.value[key], let n = Int64(literal) else {
                    throw DecodeError(reason: "\"\(key)\" is not a time in ns")
                }
                return n
            }
            return .recording(RecordingWindow(uid: 0, startUnixNs: try ns("from_ns"), endUnixNs: try ns("to_ns")), id: id)
        case "recorded":
            var samples: [RecordedAccelerometerSample] = []
            for e in try r.array("samples") {
                guard case .array(let a) = e, a.count == 5,
                      case .number(_, let idText) = a[0], let ident = UInt64(idText),
                      case .number(_, let tText) = a[1], let t = Int64(tText),
                      case .number(let x, _) = a[2], case .number(let y, _) = a[3], case .number(let z, _) = a[4] else {
                    throw DecodeError(reason: "a recorded sample is [identifier, t_ns, x, y, z]")
                }
                samples.append(RecordedAccelerometerSample(identifier: ident, unixNs: t, acceleration: Vector3(x, y, z)))
            }
            var next: Int64?
            if let v = r.value["next_from_ns"] {
                guard case .number(_, let literal) = v, let n = Int64(literal), n >= 0 else {
                    throw DecodeError(reason: "\"next_from_ns\" is not a time in ns")
                }
                next = n
            }
            return .recorded(RecordedPage(samples: samples, nextFromNs: next), id: id)
        default:
            return nil
        }
    }
}
