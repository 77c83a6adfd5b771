// Shared-memory rings (docs/protocol.md, "Shared-memory rings"): a local
// client may ask for a stream's samples in a ring the agent writes once for
// every reader, instead of as lines. The request and the reply are the JSON
// protocol's `subscribe` and `subscribed` with one more key each; the ring's
// descriptor comes over the same socket (SCM_RIGHTS). The ring's records are
// ``Sample`` values as they lie in memory, so both ends must lay them out
// alike: ``SampleRingFormat/layoutID`` says so, and a client whose layout
// differs is simply not offered a ring (its samples come as lines).

/// What a ring holds and how it is laid out.
public enum SampleRingFormat {
    /// Bumped whenever a sample type changes in a way the offsets below do
    /// not show (the order of ``Sample``'s cases, an enum's raw values).
    public static let revision: UInt64 = 1

    /// Bytes of one record: a ``Sample``, rounded up to 8.
    public static let recordBytes: Int = (MemoryLayout<Sample>.size + 7) / 8 * 8

    /// Slots in a ring (a power of two): 1024 samples, over 10 s of the
    /// 100 Hz streams and 1 s of the fastest batched stream, before a reader
    /// that does not read loses any.
    public static let slotCount = 1024

    /// A fingerprint of the sample types' layout in this build: the sizes,
    /// strides and alignments of ``Sample`` and of every sample type, the
    /// offset of every stored property, and ``revision`` (FNV-1a, 64 bit).
    /// Two builds that lay samples out alike agree on it.
    public static let layoutID: UInt64 = {
        var h = Fingerprint()
        h.add(revision)
        h.layout(Sample.self)
        h.layout(AccelerometerSample.self, \.timestampNs, \.acceleration)
        h.layout(GyroscopeSample.self, \.timestampNs, \.rotationRate)
        h.layout(MagnetometerSample.self, \.timestampNs, \.magneticField)
        h.layout(DeviceMotionSample.self, \.timestampNs, \.attitude, \.gravity, \.userAcceleration,
                 \.rotationRate, \.magneticField, \.magneticFieldAccuracy, \.headingDeg, \.referenceFrame,
                 \.attitude6D, \.northYawDeg, \.northYawState)
        h.layout(AltitudeSample.self, \.timestampNs, \.relativeAltitude, \.pressure, \.temperature)
        h.layout(HumiditySample.self, \.timestampNs, \.relativeHumidity)
        h.layout(AbsoluteAltitudeSample.self, \.timestampNs, \.altitude, \.accuracy, \.precision)
        h.layout(SubmersionSample.self, \.timestampNs, \.depth, \.pressure, \.surfacePressure, \.temperature,
                 \.state, \.depthState, \.shallowDepthState, \.maximumDepth, \.temperatureUncertainty)
        h.layout(PedometerSample.self, \.timestampNs, \.startNs, \.steps, \.distance, \.floorsAscended,
                 \.floorsDescended, \.currentCadence, \.currentPace, \.averageActivePace)
        h.layout(PedometerEventSample.self, \.timestampNs, \.type)
        h.layout(ActivitySample.self, \.timestampNs, \.startNs, \.flags, \.confidence)
        h.add(UInt64(StreamName.count))
        return h.value
    }()

    /// ``layoutID`` as the wire spells it: 16 lowercase hex digits.
    public static var layoutIDText: String { hex(layoutID) }

    static func hex(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    private struct Fingerprint {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        mutating func add(_ v: UInt64) {
            var x = v
            for _ in 0..<8 {
                value ^= x & 0xff
                value = value &* 0x100_0000_01b3
                x >>= 8
            }
        }
        mutating func layout<T>(_ type: T.Type, _ fields: PartialKeyPath<T>...) {
            add(UInt64(MemoryLayout<T>.size)); add(UInt64(MemoryLayout<T>.stride)); add(UInt64(MemoryLayout<T>.alignment))
            for f in fields { add(UInt64(MemoryLayout<T>.offset(of: f) ?? 0xffff)) }
        }
    }
}

/// The `ring` object of a `subscribed` reply: the agent put a ring's
/// descriptor on the socket for this subscription (it arrives with or before
/// the reply's bytes, in the order of the replies that offer one).
public struct RingOffer: Sendable, Hashable {
    /// Slots in the ring.
    public var slots: Int
    /// Bytes of one record.
    public var recordBytes: Int
    /// The layout the agent writes (``SampleRingFormat/layoutID``).
    public var layoutID: UInt64
    /// The sequence number of the first record for this subscription: the
    /// records before it were written before the reply (and went out as
    /// lines, or to other readers).
    public var start: UInt64

    public init(slots: Int, recordBytes: Int, layoutID: UInt64, start: UInt64) {
        self.slots = slots; self.recordBytes = recordBytes; self.layoutID = layoutID; self.start = start
    }

    /// The offer this build's agent makes, from record `start` on.
    public static func current(start: UInt64) -> RingOffer {
        RingOffer(slots: SampleRingFormat.slotCount, recordBytes: SampleRingFormat.recordBytes,
                  layoutID: SampleRingFormat.layoutID, start: start)
    }

    /// Whether this build can read the ring offered.
    public var isReadable: Bool {
        slots == SampleRingFormat.slotCount && recordBytes == SampleRingFormat.recordBytes
            && layoutID == SampleRingFormat.layoutID
    }
}

extension RequestID {
    /// Parses a layout id as the wire spells it (16 hex digits).
    static func layout(_ text: String) -> UInt64? {
        guard text.utf8.count == 16 else { return nil }
        return UInt64(text, radix: 16)
    }
}

extension ServerMessage {
    /// The ring a `subscribed` line offers (nil for every other line and for
    /// a subscription served as lines). Checked by the line's first bytes, so
    /// samples cost nothing more.
    public static func ringOffer<C: Collection>(line: C) -> RingOffer? where C.Element == UInt8 {
        guard line.starts(with: subscribedPrefix), let v = try? JSONValue.parse(Array(line)),
              case .object(let ring)? = v["ring"],
              case .number(let slots, _)? = ring["slots"], case .number(let bytes, _)? = ring["record_bytes"],
              case .string(let layout)? = ring["layout"], let id = RequestID.layout(layout),
              case .number(_, let startText)? = ring["start"], let start = UInt64(startText),
              let s = Int(exactly: slots), let b = Int(exactly: bytes) else { return nil }
        return RingOffer(slots: s, recordBytes: b, layoutID: id, start: start)
    }

    private static let subscribedPrefix = Array(#"{"class":"subscribed""#.utf8)
}
