import EdgeProtocol

/// The engine's one way out: samples to the sink with per-stream counts,
/// device events, the devices snapshot, and when to wake the service.
///
/// Stages publish through it; it decides nothing about what a sample means.
/// Wake policy: the service is woken on a tick that published, at most once
/// per delivery interval (``EngineSettings/deliveryInterval`` in ticks);
/// capture timestamps are not affected.
@usableFromInline struct Publisher {
    weak var sink: (any SampleSink)?
    /// Per ``StreamName/index``: someone wants it.
    var wanted = [Bool](repeating: true, count: StreamName.allCases.count)
    /// Samples handed to the sink, per stream index.
    var publishedCounts = [Int](repeating: 0, count: StreamName.allCases.count)
    /// Samples the sink refused (its ring was full).
    var sinkDrops = 0
    var publishedTotal = 0
    /// Device events of this tick, in order.
    var events: [ConnectionEvent] = []
    /// The devices snapshot must be re-sent.
    var devicesChanged = true
    var pendingWake = false
    var ticksSinceWake = 0
    /// Ticks per service wake-up.
    var wakeEveryTicks = 1

    init(sink: (any SampleSink)?) {
        self.sink = sink
        events.reserveCapacity(16)
    }

    @inline(__always) func wants(_ s: StreamName) -> Bool { wanted[s.index] }

    @inline(__always)
    mutating func publish(_ s: Sample) {
        guard let sink else { return }
        publishedTotal &+= 1
        publishedCounts[s.stream.index] &+= 1
        if !sink.publish(s, wake: false) { sinkDrops &+= 1 }
    }

    /// After a tick: wake the service if the tick published and the interval allows.
    @inline(__always)
    mutating func endTick(published: Bool) {
        if published { pendingWake = true }
        ticksSinceWake &+= 1
        if pendingWake && ticksSinceWake >= wakeEveryTicks {
            sink?.wakeService()
            pendingWake = false
            ticksSinceWake = 0
        }
    }

    /// Wakes the service for samples still waiting on the delivery interval.
    mutating func flush() {
        if pendingWake { sink?.wakeService(); pendingWake = false; ticksSinceWake = 0 }
    }

    /// Sends this tick's events and, if anything changed, the snapshot.
    mutating func sendDevices(_ snapshot: () -> [DeviceInfo]) {
        if !events.isEmpty {
            for e in events { sink?.publishConnection(e) }
            events.removeAll(keepingCapacity: true)
            devicesChanged = true
        }
        guard devicesChanged else { return }
        devicesChanged = false
        sink?.setDevices(snapshot())
    }
}
