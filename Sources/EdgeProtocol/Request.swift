/// An optional `id` a client may put in any request; the agent echoes it in
/// the direct reply (including errors) so clients can match replies.
///
/// The agent accepts only ids every JSON reader can hold exactly: an integer
/// literal (no fraction, no exponent) within ±``Request/maxIDMagnitude``, or
/// a string of at most ``Request/maxIDStringBytes`` UTF-8 bytes. Anything
/// else (`1e400`, `1.5`, `99999999999999999999`, an object) is refused with
/// ``ErrorCode/badRequestID``, so a reply never carries an id that parses to
/// infinity or loses digits.
public enum RequestID: Sendable, Hashable {
    /// A JSON integer, kept as its literal text and echoed verbatim.
    case number(String)
    case string(String)

    /// The id of a request's `id` member; nil when it is not one the agent
    /// accepts (see the type's documentation).
    public init?(validating value: JSONValue) {
        switch value {
        case .number(_, let literal):
            guard Self.isSafeInteger(literal) else { return nil }
            self = .number(literal)
        case .string(let s):
            guard s.utf8.count <= Request.maxIDStringBytes else { return nil }
            self = .string(s)
        default:
            return nil
        }
    }

    /// `-?[0-9]+` whose value is within ±``Request/maxIDMagnitude`` (the
    /// parser has already checked the JSON number grammar: no leading zeros).
    static func isSafeInteger(_ literal: String) -> Bool {
        let digits = literal.utf8.drop { $0 == UInt8(ascii: "-") }
        guard !digits.isEmpty, digits.count <= 16,
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let n = Int64(literal) else { return false }
        return n.magnitude <= UInt64(Request.maxIDMagnitude)
    }
}

/// A client request, one JSON object per line, keyed by `class`.
public struct Request: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// `{"class":"devices"}` → a `devices` reply.
        case devices
        /// `{"class":"streams"}` → a `streams` reply.
        case streams
        /// `{"class":"subscribe","stream":S,"interval_s":T}` → `subscribed`, then samples.
        /// `interval_s` omitted or 0: every sample.
        case subscribe(StreamName, intervalNs: UInt64)
        /// `{"class":"unsubscribe","stream":S}` → `unsubscribed`.
        case unsubscribe(StreamName)
        /// `{"class":"poll","stream":S}` → the latest `sample` of S, or error `noSample`.
        case poll(StreamName)
        /// `{"class":"stats"}` → this client's queue counters.
        case stats
        /// `{"class":"ping"}` → `pong` with the agent's monotonic time.
        case ping
        /// `{"class":"history","stream":S,"from_s":A,"to_s":B}` (or
        /// `from_ns`/`to_ns`: exact integer nanoseconds) → a `history` reply:
        /// what the agent's fitness history holds for S (`pedometer`: the
        /// totals between A and B; `activity`: the activity going on at A,
        /// then each change up to B, at most ``Request/maxHistoryRows`` in one
        /// reply, which then says where the next page starts). A and B are
        /// since 1970 (UTC), within 0 ... ``Request/maxHistoryNs``.
        case history(StreamName, fromNs: Int64, toNs: Int64)
        /// `{"class":"record","duration_s":D}` → a `recording` reply: the
        /// agent's sensor recorder records the accelerometer at 50 Hz for D
        /// seconds (0 < D ≤ ``Request/maxRecordingSeconds``) from now for
        /// the client's uid (`CMSensorRecorder.recordAccelerometer(forDuration:)`).
        case record(durationS: Double)
        /// `{"class":"recorded","from_ns":A,"to_ns":B}` (or `from_s`/`to_s`)
        /// → a `recorded` reply: the accelerometer samples recorded in the
        /// client's uid's windows between A and B (since 1970, UTC), at most
        /// ``Request/maxRecordedSamples`` in one reply, which then says where
        /// the next page starts.
        case recorded(fromNs: Int64, toNs: Int64)
    }
    public var kind: Kind
    public var id: RequestID?
    /// With `subscribe`: the client can read a shared-memory ring of samples
    /// laid out as ``SampleRingFormat/layoutID`` (`"ring":"<16 hex digits>"`);
    /// the agent offers one where it can (docs/protocol.md). Ignored with
    /// any other request.
    public var ringLayout: UInt64?
    public init(kind: Kind, id: RequestID? = nil) {
        self.kind = kind; self.id = id; self.ringLayout = nil
    }
    /// A request that asks for a ring (with `subscribe`).
    public init(kind: Kind, id: RequestID?, ringLayout: UInt64?) {
        self.kind = kind; self.id = id; self.ringLayout = ringLayout
    }

    /// Largest accepted `interval_s`, s.
    public static let maxIntervalS: Double = 3600

    /// Latest time a `history` request may name: 9.2e18 ns since 1970 (the
    /// year 2261), just below what a signed 64-bit count of nanoseconds holds.
    /// `from_s`/`to_s` beyond it are refused (`malformedRequest`), never
    /// converted unchecked.
    public static let maxHistoryNs: Int64 = 9_200_000_000_000_000_000

    /// Most activity rows one `history` reply carries (about 100 bytes each);
    /// a longer answer comes in pages (`next_from_ns`).
    public static let maxHistoryRows = 500

    /// Longest recording one `record` request asks for, s (Apple: 43,200 s,
    /// CMSensorRecorder.recordAccelerometer(forDuration:)).
    public static let maxRecordingSeconds: Double = 43_200

    /// Most samples one `recorded` reply carries (about 75 bytes each: 20 s at 50 Hz).
    public static let maxRecordedSamples = 1000

    /// Largest magnitude of a numeric `id`: 2^53 − 1, the largest integer a
    /// reader that parses JSON numbers as doubles (JavaScript, most
    /// dynamic languages) still holds exactly.
    public static let maxIDMagnitude: Int64 = 9_007_199_254_740_991

    /// Longest string `id`, UTF-8 bytes.
    public static let maxIDStringBytes = 256

    /// Why a request line was refused: the reply's error code and message.
    public struct DecodeError: Error, Sendable, Hashable {
        public var code: ErrorCode
        public var message: String
        public var id: RequestID?
        public var stream: StreamName?
    }

    /// Decodes one request line (without its newline).
    public static func decode<C: Collection>(line: C) throws(DecodeError) -> Request where C.Element == UInt8 {
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            throw DecodeError(code: .malformedRequest, message: "not JSON: \(error)")
        }
        guard case .object(let m) = value else {
            throw DecodeError(code: .malformedRequest, message: "a request is a JSON object")
        }
        var id: RequestID?
        switch m["id"] {
        case nil, .null?: id = nil
        case let value?:
            guard let valid = RequestID(validating: value) else {
                throw DecodeError(code: .badRequestID,
                                  message: "\"id\" must be a string of at most \(maxIDStringBytes) bytes or an integer between -\(maxIDMagnitude) and \(maxIDMagnitude) (no fraction or exponent)")
            }
            id = valid
        }
        guard case .string(let cls)? = m["class"] else {
            throw DecodeError(code: .malformedRequest, message: "missing string key \"class\"", id: id)
        }

        func stream() throws(DecodeError) -> StreamName {
            guard case .string(let name)? = m["stream"] else {
                throw DecodeError(code: .malformedRequest, message: "\(cls) needs a string key \"stream\"", id: id)
            }
            guard let s = StreamName(rawValue: name) else {
                throw DecodeError(code: .unknownStream, message: "no stream named \"\(name)\"", id: id)
            }
            return s
        }

        /// A time given as `<key>_ns` (an integer literal, exact) or
        /// `<key>_s` (a number of seconds), checked before converting.
        func time(_ key: String, stream s: StreamName?) throws(DecodeError) -> Int64 {
            let range = "between 0 and \(Request.maxHistoryNs) ns (\(Request.maxHistoryNs / 1_000_000_000) s) since 1970"
            if let v = m[key + "_ns"] {
                guard case .number(_, let literal) = v, let ns = Int64(literal), ns >= 0, ns <= Request.maxHistoryNs else {
                    throw DecodeError(code: .malformedRequest, message: "\(cls) needs \"\(key)_ns\": an integer \(range)",
                                      id: id, stream: s)
                }
                return ns
            }
            guard case .number(let t, _)? = m[key + "_s"], let ns = Self.nanoseconds(seconds: t) else {
                throw DecodeError(code: .malformedRequest, message: "\(cls) needs \"\(key)_s\": seconds \(range)",
                                  id: id, stream: s)
            }
            return ns
        }

        switch cls {
        case "devices": return Request(kind: .devices, id: id)
        case "streams": return Request(kind: .streams, id: id)
        case "stats": return Request(kind: .stats, id: id)
        case "ping": return Request(kind: .ping, id: id)
        case "poll": return Request(kind: .poll(try stream()), id: id)
        case "unsubscribe": return Request(kind: .unsubscribe(try stream()), id: id)
        case "history":
            let s = try stream()
            guard s == .pedometer || s == .activity else {
                throw DecodeError(code: .malformedRequest, message: "history is kept for pedometer and activity, not \(s.rawValue)",
                                  id: id, stream: s)
            }
            let from = try time("from", stream: s), to = try time("to", stream: s)
            guard from <= to else {
                throw DecodeError(code: .malformedRequest, message: "history needs from <= to", id: id, stream: s)
            }
            return Request(kind: .history(s, fromNs: from, toNs: to), id: id)
        case "record":
            guard case .number(let d, _)? = m["duration_s"], d.isFinite, d > 0, d <= maxRecordingSeconds else {
                throw DecodeError(code: .malformedRequest,
                                  message: "record needs \"duration_s\": seconds to record, more than 0 and at most \(Int(maxRecordingSeconds)) (12 h)",
                                  id: id, stream: .accelerometer)
            }
            return Request(kind: .record(durationS: d), id: id)
        case "recorded":
            let from = try time("from", stream: .accelerometer), to = try time("to", stream: .accelerometer)
            guard from <= to else {
                throw DecodeError(code: .malformedRequest, message: "recorded needs from <= to", id: id, stream: .accelerometer)
            }
            return Request(kind: .recorded(fromNs: from, toNs: to), id: id)
        case "subscribe":
            let s = try stream()
            var intervalNs: UInt64 = 0
            switch m["interval_s"] {
            case nil, .null?: break
            case .number(let t, _)?:
                guard t.isFinite, t >= 0, t <= maxIntervalS else {
                    throw DecodeError(code: .badInterval,
                                      message: "interval_s must be between 0 and \(Int(maxIntervalS)) seconds",
                                      id: id, stream: s)
                }
                intervalNs = UInt64((t * 1e9).rounded())
            default:
                throw DecodeError(code: .badInterval, message: "interval_s must be a number of seconds", id: id, stream: s)
            }
            var ring: UInt64?
            switch m["ring"] {
            case nil, .null?: break
            case .string(let text)? where RequestID.layout(text) != nil: ring = RequestID.layout(text)
            default:
                throw DecodeError(code: .malformedRequest,
                                  message: "ring must be the client's sample layout: 16 hex digits", id: id, stream: s)
            }
            return Request(kind: .subscribe(s, intervalNs: intervalNs), id: id, ringLayout: ring)
        default:
            throw DecodeError(code: .unknownRequest, message: "no request class \"\(cls)\"", id: id)
        }
    }

    /// `seconds` since 1970 as nanoseconds, or nil when it is not a finite
    /// number within 0 ... ``maxHistoryNs`` (the one checked conversion of a
    /// request's seconds).
    public static func nanoseconds(seconds: Double) -> Int64? {
        guard seconds.isFinite, seconds >= 0 else { return nil }
        let ns = (seconds * 1e9).rounded()
        guard ns <= Double(maxHistoryNs) else { return nil }
        return Int64(ns)
    }
}
