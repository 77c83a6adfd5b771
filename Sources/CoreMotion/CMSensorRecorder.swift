import EdgeClient
import EdgeProtocol
import EdgeValues

/// One accelerometer sample the agent's sensor recorder recorded.
///
/// As Apple's: a ``CMAccelerometerData`` (acceleration in g, the sign Core
/// Motion uses: z ≈ −1 g lying flat) with the sample's `identifier` and the
/// wall-clock time it was captured (`startDate`). `timestamp` is that time
/// on this boot's CLOCK_MONOTONIC, as the live updates' (a sample recorded
/// before the last reboot gets a time before this boot began).
open class CMRecordedAccelerometerData: CMAccelerometerData {
    let _identifier: UInt64
    let _startDate: Date
    /// Unique for each sample of the agent's recording, increasing in time.
    open var identifier: UInt64 { _identifier }
    /// The wall-clock time the sample was captured.
    open var startDate: Date { _startDate }

    init(_ s: RecordedAccelerometerSample, realtimeMinusMonotonicNs offset: Int64) {
        _identifier = s.identifier
        _startDate = Date(timeIntervalSince1970: Double(s.unixNs) / 1e9)
        super.init(timestamp: Double(s.unixNs - offset) / 1e9,
                   acceleration: Wire.acceleration(specificForce: s.acceleration))
    }

    public override init() { _identifier = 0; _startDate = Date(timeIntervalSince1970: 0); super.init() }

    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(Int64(bitPattern: _identifier), forKey: "identifier")
        coder.encode(date: _startDate, forKey: "startDate")
    }
    public required init?(coder: NSCoder) {
        _identifier = UInt64(bitPattern: coder.decodeInt64(forKey: "identifier"))
        _startDate = coder.decodeDate(forKey: "startDate")
        super.init(coder: coder)
    }

    open override var description: String { "#\(identifier) " + super.description }
}

/// The recorded accelerometer samples of a time range, oldest first: what
/// ``CMSensorRecorder/accelerometerData(from:to:)`` returns.
///
/// Apple's is an `NSFastEnumeration`; here it is a `Sequence` of
/// ``CMRecordedAccelerometerData``, so `for data in list` works as it does
/// in Swift on Apple's platforms (a cast `data as! CMRecordedAccelerometerData`
/// still compiles, with a warning that it always succeeds). The samples are
/// fetched from the agent a page at a time (20 s of samples) as the loop
/// goes; a page that cannot be fetched ends the sequence.
open class CMSensorDataList: NSObject, Sequence {
    let first: RecordedPage
    let fetch: @Sendable (Int64) -> RecordedPage?
    let offsetNs: Int64

    init(first: RecordedPage, offsetNs: Int64, fetch: @escaping @Sendable (Int64) -> RecordedPage?) {
        self.first = first; self.offsetNs = offsetNs; self.fetch = fetch
    }

    public struct Iterator: IteratorProtocol {
        var page: [RecordedAccelerometerSample]
        var index = 0
        var nextFrom: Int64?
        let list: CMSensorDataList

        public mutating func next() -> CMRecordedAccelerometerData? {
            while index == page.count {
                guard let from = nextFrom, let p = list.fetch(from), p.nextFromNs.map({ $0 > from }) ?? true else { return nil }
                page = p.samples; index = 0; nextFrom = p.nextFromNs
            }
            defer { index += 1 }
            return CMRecordedAccelerometerData(page[index], realtimeMinusMonotonicNs: list.offsetNs)
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(page: first.samples, nextFrom: first.nextFromNs, list: self)
    }
}

/// Records the accelerometer at 50 Hz while the app is not running, and
/// gives back what was recorded (Apple's `CMSensorRecorder`).
///
/// The agent records (`recorder` in its configuration, docs/protocol.md
/// "Sensor recorder"): it keeps recording when the app exits, keeps the
/// samples three days, and answers each user with the samples of that
/// user's own recording windows. The app's user needs the agent's
/// `recorder` entitlement.
open class CMSensorRecorder: NSObject {
    /// Whether the agent this process talks to keeps a sensor recorder
    /// (`recorder` in its configuration) and has an accelerometer. Never blocks.
    open class func isAccelerometerRecordingAvailable() -> Bool {
        guard let snap = MotionService.shared.snapshot(), snap.recorder else { return false }
        return snap.devices?.contains { $0.streams.contains(.accelerometer) } ?? false
    }

    /// From the agent's entitlements for this user: `recorder` held →
    /// authorized; not held → denied; no agent → notDetermined. Never blocks.
    open class func authorizationStatus() -> CMAuthorizationStatus {
        guard let held = MotionService.shared.snapshot()?.entitlements else { return .notDetermined }
        return held.contains(.recorder) ? .authorized : .denied
    }

    @available(*, deprecated, message: "Use authorizationStatus() instead")
    open class func isAuthorizedForRecording() -> Bool { authorizationStatus() == .authorized }

    /// Requests go out in order on this queue: a query waits for the
    /// recordings asked for before it.
    private let requests = DispatchQueue(label: "CMSensorRecorder.requests")

    public override init() { super.init() }

    /// Asks the agent to record the accelerometer at 50 Hz from now for
    /// `duration` seconds (at most 43,200: 12 hours; Apple's limit). Asking
    /// again while a recording runs extends it. Returns at once; the
    /// request goes to the agent in the background (nothing is recorded
    /// without the `recorder` entitlement).
    open func recordAccelerometer(forDuration duration: TimeInterval) {
        guard duration.isFinite, duration > 0 else { return }
        let d = min(duration, Request.maxRecordingSeconds)
        requests.async {
            guard case (let s?, nil) = MotionService.shared.connectedSource() else { return }
            _ = try? s.client.request(.record(durationS: d), timeoutMs: 5000)
        }
    }

    /// The samples recorded for this user between `fromDate` and `toDate`
    /// (both included; at most 12 hours apart, as Apple's), oldest first;
    /// nil when they cannot be read (no agent, no recorder, not entitled,
    /// a range over 12 hours). Gaps in the recording are gaps in the list.
    open func accelerometerData(from fromDate: Date, to toDate: Date) -> CMSensorDataList? {
        let from = FitnessTime.unixNs(fromDate), to = FitnessTime.unixNs(toDate)
        guard from <= to, Double(to - from) <= Request.maxRecordingSeconds * 1e9 else { return nil }
        return requests.sync { () -> CMSensorDataList? in
            guard case (let s?, nil) = MotionService.shared.connectedSource() else { return nil }
            let client = s.client
            let clamp: @Sendable (Int64) -> Int64 = { min(max(0, $0), Request.maxHistoryNs) }
            let fetch: @Sendable (Int64) -> RecordedPage? = { pageFrom in
                guard case .recorded(let page, _)? = try? client.request(.recorded(fromNs: clamp(pageFrom), toNs: clamp(to)),
                                                                          timeoutMs: 5000) else { return nil }
                return page
            }
            guard let first = fetch(from) else { return nil }
            return CMSensorDataList(first: first, offsetNs: realtimeMinusMonotonicNs(), fetch: fetch)
        }
    }
}
