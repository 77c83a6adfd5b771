import EdgeProtocol

/// One kind of update of a manager (accelerometer, gyro, device motion...):
/// its interval, push or pull, the latest sample, and the stream source
/// while active.
final class UpdateChannel<Data: AnyObject>: @unchecked Sendable {
    let stream: StreamName
    private let lock = NSLock()
    private var _interval: TimeInterval
    private var source: StreamSource?
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
    /// (pull) it is only kept for ``data``.
    func start(queue: OperationQueue?, handler: ((Data?, (any Error)?) -> Void)?,
               precheck: (@Sendable () -> NSError?)? = nil, convert: @escaping (Sample) -> Data?) {
        stop()
        let push = Push(queue: queue, handler: handler)
        let make = Converter(convert)
        let s = StreamSource(stream: stream, interval: interval, onSample: { [weak self] sample in
            guard let self, let d = make.convert(sample) else { return }
            self.keep(d)
            push.send(d, nil)
        }, onError: { e in push.send(nil, e) })
        s.precheck = precheck
        lock.withLock {
            source = s
            active = true
        }
        s.start()
    }

    private func keep(_ d: Data) { lock.withLock { latest = d } }

    func stop() {
        let s: StreamSource? = lock.withLock {
            active = false
            let s = source
            source = nil
            return s
        }
        s?.stop()
    }
}

/// Where a channel's objects go: a handler on a queue (push) or nowhere (pull).
final class Push<Data>: @unchecked Sendable {
    let queue: OperationQueue?
    let handler: ((Data?, (any Error)?) -> Void)?
    init(queue: OperationQueue?, handler: ((Data?, (any Error)?) -> Void)?) {
        self.queue = queue; self.handler = handler
    }
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
