import EdgeProtocol

/// High-rate accelerometer and device-motion samples in batches, from the
/// agent's batch streams (`accelerometerBatch`, `deviceMotionBatch`: every
/// sample of the MPU-6050's FIFO, at the configured IMU rate, up to 1 kHz).
///
/// A batch holds the samples of one second of capture time (Apple delivers
/// about one batch a second and does not document more); handlers without
/// a queue run on a serial queue of the manager's own.
open class CMBatchedSensorManager: NSObject {
    /// Capture time one batch spans, ns.
    static let batchSpanNs: UInt64 = 1_000_000_000

    let accelerometer = UpdateChannel<BatchBox<CMAccelerometerData>>(stream: .accelerometerBatch, interval: 0)
    let motion = UpdateChannel<BatchBox<CMDeviceMotion>>(stream: .deviceMotionBatch, interval: 0)
    private let handlerQueue = OperationQueue.coreMotionInternal("CMBatchedSensorManager")
    private let streamsLock = NSLock()
    private var accelerometerStreams: [ObjectIdentifier: StreamSource] = [:]
    private var motionStreams: [ObjectIdentifier: StreamSource] = [:]

    public override init() { super.init() }

    deinit {
        stopAccelerometerUpdates()
        stopDeviceMotionUpdates()
    }

    /// Whether the board's IMU feeds the accelerometer batch stream.
    open class var isAccelerometerSupported: Bool { MotionService.shared.isAvailable(.accelerometerBatch) }
    /// Whether the board's IMU feeds the device-motion batch stream.
    open class var isDeviceMotionSupported: Bool { MotionService.shared.isAvailable(.deviceMotionBatch) }
    /// From the agent's `motion` entitlement for this user.
    open class var authorizationStatus: CMAuthorizationStatus { MotionService.shared.authorization(.accelerometerBatch) }

    /// Hz: the rate of the batched samples - measured from the batches
    /// while they come, else the IMU's rate in the agent's last devices
    /// report, else the last rate known (an idle IMU reports 0, and a batch
    /// manager whose updates just stopped still delivered at its rate).
    /// Never waits for the agent: answered from what it last said.
    open var accelerometerDataFrequency: Int { MotionService.shared.rate(of: .accelerometerBatch) }
    /// Hz, as ``accelerometerDataFrequency`` (device motion is fused at every IMU sample).
    open var deviceMotionDataFrequency: Int { MotionService.shared.rate(of: .deviceMotionBatch) }

    open var isAccelerometerActive: Bool {
        accelerometer.isActive || streamsLock.withLock { !accelerometerStreams.isEmpty }
    }
    open var isDeviceMotionActive: Bool {
        motion.isActive || streamsLock.withLock { !motionStreams.isEmpty }
    }

    /// The latest batch since ``startAccelerometerUpdates()``.
    open var accelerometerBatch: [CMAccelerometerData]? { accelerometer.data?.items }
    /// The latest batch since ``startDeviceMotionUpdates()``.
    open var deviceMotionBatch: [CMDeviceMotion]? { motion.data?.items }

    open func startAccelerometerUpdates() {
        accelerometer.start(queue: nil, handler: nil, convert: Self.accelerometerBatcher().add)
    }

    open func startAccelerometerUpdates(handler: @escaping ([CMAccelerometerData]?, (any Error)?) -> Void) {
        accelerometer.start(queue: handlerQueue, handler: { box, error in handler(box?.items, error) },
                            convert: Self.accelerometerBatcher().add)
    }

    /// Stops the handler, the pull updates and every
    /// ``accelerometerUpdates()`` sequence (which then ends).
    open func stopAccelerometerUpdates() {
        accelerometer.stop()
        let list = streamsLock.withLock { () -> [StreamSource] in
            defer { accelerometerStreams.removeAll() }
            return Array(accelerometerStreams.values)
        }
        for s in list { s.stop() }
    }

    open func startDeviceMotionUpdates() {
        motion.start(queue: nil, handler: nil, convert: Self.motionBatcher().add)
    }

    open func startDeviceMotionUpdates(handler: @escaping ([CMDeviceMotion]?, (any Error)?) -> Void) {
        motion.start(queue: handlerQueue, handler: { box, error in handler(box?.items, error) },
                     convert: Self.motionBatcher().add)
    }

    open func stopDeviceMotionUpdates() {
        motion.stop()
        let list = streamsLock.withLock { () -> [StreamSource] in
            defer { motionStreams.removeAll() }
            return Array(motionStreams.values)
        }
        for s in list { s.stop() }
    }

    static func accelerometerBatcher() -> Batcher<CMAccelerometerData> {
        Batcher(stream: .accelerometerBatch) { s in
            guard case .accelerometerBatch(let a) = s else { return nil }
            return (a.timestampNs, Wire.accelerometerData(a))
        }
    }

    static func motionBatcher() -> Batcher<CMDeviceMotion> {
        let conversion = MotionConversion(FrameConverter(requested: .xArbitraryZVertical),
                                          stream: .deviceMotionBatch, location: .default)
        return Batcher(stream: .deviceMotionBatch) { s in
            guard let m = conversion.convert(s) else { return nil }
            return (s.timestampNs, m)
        }
    }

    // MARK: async sequences

    /// The accelerometer batches as an async sequence: iterating starts the
    /// updates; they stop when the iteration ends or
    /// ``stopAccelerometerUpdates()`` is called (the sequence then ends).
    /// Throws the `NSError` a handler would get (not entitled, not available).
    public func accelerometerUpdates() -> CMBatchedSensorManager.AccelerometerUpdates {
        AccelerometerUpdates(manager: self)
    }

    /// The device-motion batches as an async sequence (see ``accelerometerUpdates()``).
    public func deviceMotionUpdates() -> CMBatchedSensorManager.DeviceMotionUpdates {
        DeviceMotionUpdates(manager: self)
    }

    public struct AccelerometerUpdates: AsyncSequence {
        public typealias Element = [CMAccelerometerData]
        let manager: CMBatchedSensorManager

        public struct Iterator: AsyncIteratorProtocol {
            var base: AsyncThrowingStream<BatchBox<CMAccelerometerData>, any Error>.Iterator
            /// Iterating keeps the manager (its deinit stops the updates).
            let manager: CMBatchedSensorManager
            public mutating func next() async throws -> [CMAccelerometerData]? { try await base.next()?.items }
            public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [CMAccelerometerData]? {
                try await base.next(isolation: actor)?.items
            }
        }

        public func makeAsyncIterator() -> Iterator {
            Iterator(base: manager.batchStream(.accelerometerBatch, Self.batcher).makeAsyncIterator(), manager: manager)
        }

        static let batcher: @Sendable () -> Batcher<CMAccelerometerData> = { CMBatchedSensorManager.accelerometerBatcher() }
    }

    public struct DeviceMotionUpdates: AsyncSequence {
        public typealias Element = [CMDeviceMotion]
        let manager: CMBatchedSensorManager

        public struct Iterator: AsyncIteratorProtocol {
            var base: AsyncThrowingStream<BatchBox<CMDeviceMotion>, any Error>.Iterator
            /// Iterating keeps the manager (its deinit stops the updates).
            let manager: CMBatchedSensorManager
            public mutating func next() async throws -> [CMDeviceMotion]? { try await base.next()?.items }
            public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [CMDeviceMotion]? {
                try await base.next(isolation: actor)?.items
            }
        }

        public func makeAsyncIterator() -> Iterator {
            Iterator(base: manager.batchStream(.deviceMotionBatch, Self.batcher).makeAsyncIterator(), manager: manager)
        }

        static let batcher: @Sendable () -> Batcher<CMDeviceMotion> = { CMBatchedSensorManager.motionBatcher() }
    }

    func forget(_ key: ObjectIdentifier, _ stream: StreamName) {
        streamsLock.withLock {
            if stream == .accelerometerBatch { accelerometerStreams[key] = nil } else { motionStreams[key] = nil }
        }
    }

    func batchStream<T>(_ stream: StreamName, _ makeBatcher: () -> Batcher<T>) -> AsyncThrowingStream<BatchBox<T>, any Error> {
        let batcher = makeBatcher()
        let (s, continuation) = AsyncThrowingStream<BatchBox<T>, any Error>.makeStream(bufferingPolicy: .bufferingNewest(8))
        let box = UncheckedSendable(batcher)
        let source = StreamSource(stream: stream, interval: 0, onSample: { sample in
            if let batch = box.value.add(sample) { continuation.yield(batch) }
        }, onError: { e in continuation.finish(throwing: e) })
        let key = ObjectIdentifier(source)
        streamsLock.withLock {
            if stream == .accelerometerBatch { accelerometerStreams[key] = source } else { motionStreams[key] = source }
        }
        let manager = WeakBox(self)
        continuation.onTermination = { _ in
            source.stop()
            manager.value?.forget(key, stream)
        }
        source.onStop = { continuation.finish() }
        source.start()
        return s
    }
}

/// One batch (a class, so the update channel can hold it as its latest value).
final class BatchBox<T>: @unchecked Sendable {
    let items: [T]
    init(_ items: [T]) { self.items = items }
}

/// Groups samples into batches of one second of capture time: a batch is
/// complete when a sample at or after its end arrives (that sample starts
/// the next one).
final class Batcher<T>: @unchecked Sendable {
    private let lock = NSLock()
    private let stream: StreamName
    private let make: (Sample) -> (UInt64, T)?
    private var items: [T] = []
    private var endNs: UInt64?
    /// Capture times of the first and last item of the batch being filled, ns.
    private var firstNs: UInt64 = 0, lastNs: UInt64 = 0

    init(stream: StreamName, _ make: @escaping (Sample) -> (UInt64, T)?) { self.stream = stream; self.make = make }

    /// Adds a sample; returns the batch it completed, if any.
    func add(_ s: Sample) -> BatchBox<T>? {
        guard let (t, item) = make(s) else { return nil }
        return lock.withLock {
            var done: BatchBox<T>?
            if let end = endNs, t >= end {
                done = BatchBox(items)
                // The rate the samples came at (``accelerometerDataFrequency``).
                if items.count > 1, lastNs > firstNs {
                    MotionService.shared.noteRate(Int((Double(items.count - 1) * 1e9 / Double(lastNs - firstNs)).rounded()),
                                                  of: stream)
                }
                items.removeAll(keepingCapacity: true)
                var next = end
                while t >= next { next += CMBatchedSensorManager.batchSpanNs }
                endNs = next
            } else if endNs == nil {
                endNs = t + CMBatchedSensorManager.batchSpanNs
            }
            if items.isEmpty { firstNs = t }
            lastNs = t
            items.append(item)
            return done
        }
    }
}
