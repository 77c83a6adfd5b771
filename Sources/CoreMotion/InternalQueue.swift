extension OperationQueue {
    /// A serial queue of the library's own (handlers an app gives no queue
    /// for, as Apple calls those on a queue of its own; the library's own
    /// requests), at `.userInitiated`: at the default QoS the app's busy
    /// default-priority tasks can hold its operations back for as long as
    /// they compute (BehaviourWhereAppleIsSilent.md, "Threads and queues").
    static func coreMotionInternal(_ name: String? = nil) -> OperationQueue {
        let q = OperationQueue()
        q.name = name
        q.maxConcurrentOperationCount = 1
        q.qualityOfService = .userInitiated
        return q
    }
}
