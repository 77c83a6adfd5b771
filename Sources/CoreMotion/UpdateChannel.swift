import EdgeProtocol

/// One kind of update of a manager (accelerometer, gyro, device motion...):
/// its interval, push or pull, the latest sample, and the stream source
/// while active.
final class UpdateChannel<Data: AnyObject>: @unchecked Sendable {
    let stream: StreamName
    private let lock = NSLock()
    private var _interval: TimeInterval
    private var source: StreamSource?
    private var pacing: Pacer<Data>?
    private var latest: Data?
    private var active = false

    init(stream: StreamName, interval: TimeInterval) {
        self.stream = stream
        self._interval = interval
    }

    var interval: TimeInterval {
        get { lock.withLock { _interval } }
        set {
            let s: StreamSource? = lock.withLock {
                _interval = newValue
                return source
            }
            s?.setInterval(newValue)
        }
    }

    var isActive: Bool { lock.withLock { active } }
    var data: Data? { lock.withLock { latest } }

    /// Starts (or restarts, replacing the handler) the updates: `convert`
    /// makes the app's object from a sample (nil: skip it); with a queue
    /// and a handler each object goes to the handler on the queue, else
    /// (pull) it is only kept for ``data`` (as soon as it arrives).
    ///
    /// The motion streams' handler calls are paced (``DeliveryPacing``):
    /// each goes to the queue at its sample's capture time plus a fixed
    /// latency, so they come at the update interval as Apple's do, not in
    /// the agent's delivery bursts. Calls not yet made when the updates
    /// stop are dropped.
    ///
    /// `notice` looks at each sample before it is converted: an error it
    /// returns goes to the handler (before the sample), and the updates go on.
    func start(queue: OperationQueue?, handler: ((Data?, (any Error)?) -> Void)?,
               precheck: (@Sendable () -> NSError?)? = nil, notice: (@Sendable (Sample) -> NSError?)? = nil,
               convert: @escaping (Sample) -> Data?) {
        stop()
        let push = Push(queue: queue, handler: handler)
        let make = Converter(convert)
        let paced = push.delivers && Self.pacedStreams.contains(stream) ? Pacer(push) : nil
        let s = StreamSource(stream: stream, interval: interval, onSample: { [weak self] sample in
            guard let self else { return }
            if let e = notice?(sample) {
                if let paced { paced.submitUnpaced(nil, e) } else { push.send(nil, e) }
            }
            guard let d = make.convert(sample) else { return }
            self.keep(d)
            if let paced {
                paced.submit(captureNs: sample.timestampNs, d)
            } else {
                push.send(d, nil)
            }
        }, onError: { e in
            if let paced { paced.submitUnpaced(nil, e) } else { push.send(nil, e) }
        })
        s.precheck = precheck
        lock.withLock {
            source = s
            pacing = paced
            active = true
        }
        s.start()
    }

    /// The streams whose handler calls are paced: the periodic motion
    /// streams an app sets an update interval for (batches come once a
    /// second; altitude, fitness and submersion updates are events).
    static var pacedStreams: Set<StreamName> { [.accelerometer, .gyroscope, .magnetometer, .deviceMotion, .accessoryMotion] }

    private func keep(_ d: Data) { lock.withLock { latest = d } }

    func stop() {
        let (s, p): (StreamSource?, Pacer<Data>?) = lock.withLock {
            active = false
            defer { source = nil; pacing = nil }
            return (source, pacing)
        }
        s?.stop()
        p?.cancel()
    }
}

/// Where a channel's objects go: a handler on a queue (push) or nowhere (pull).
final class Push<Data>: @unchecked Sendable {
    let queue: OperationQueue?
    let handler: ((Data?, (any Error)?) -> Void)?
    init(queue: OperationQueue?, handler: ((Data?, (any Error)?) -> Void)?) {
        self.queue = queue; self.handler = handler
    }
    /// Calls the handler on this thread (already one of the queue's).
    func call(_ d: Data?, _ e: NSError?) { handler?(d, e) }
    /// Whether calls go anywhere (a queue and a handler).
    var delivers: Bool { queue != nil && handler != nil }
    func send(_ d: Data?, _ e: NSError?) {
        guard let queue, let handler else { return }
        deliver(queue, handler, d, e)
    }
}

/// A conversion from samples to the app's objects, called on the client's
/// reader thread only.
final class Converter<Data>: @unchecked Sendable {
    let convert: (Sample) -> Data?
    init(_ convert: @escaping (Sample) -> Data?) { self.convert = convert }
}

/// A channel's paced handler calls: on a concurrent queue of the app's,
/// operations that wait on the queue's thread for each call's time
/// (``QueuePacedDelivery``); on the main queue or a queue running one
/// operation at a time, the ``PacingThread`` adding one operation per call
/// (the app's own work on that queue is never held back). Chosen when the
/// updates start.
final class Pacer<Data>: @unchecked Sendable {
    private let push: Push<Data>
    private let onQueue: QueuePacedDelivery?
    private let onThread: PacedDelivery?

    init(_ push: Push<Data>) {
        self.push = push
        if let q = push.queue, QueuePacedDelivery.canWait(on: q) {
            onQueue = QueuePacedDelivery.on(q); onThread = nil
        } else {
            onQueue = nil; onThread = PacedDelivery.onPacingThread()
        }
    }

    func submit(captureNs: UInt64, _ d: Data) {
        let item = UncheckedSendable(d)
        if let onQueue {
            onQueue.submit(captureNs: captureNs) { [push] in push.call(item.value, nil) }
        } else {
            onThread?.submit(captureNs: captureNs) { [push] in push.send(item.value, nil) }
        }
    }

    func submitUnpaced(_ d: Data?, _ e: NSError?) {
        let item = UncheckedSendable(d)
        if let onQueue {
            onQueue.submitUnpaced { [push] in push.call(item.value, e) }
        } else {
            onThread?.submitUnpaced { [push] in push.send(item.value, e) }
        }
    }

    /// The updates stopped: calls not yet made are dropped, and so is a
    /// sample still on its way from the client's thread; when this returns
    /// no handler call is added to the queue any more.
    func cancel() {
        onQueue?.close()
        onThread?.close()
    }
}
