import EdgeEngine
import EdgeHistory
import EdgeProtocol

/// The engine's sink when the fitness history is on: every sample goes to
/// the service as before; the fitness samples are also handed to the
/// history recorder (a short lock, no I/O on the loop thread).
final class HistorySink: SampleSink, @unchecked Sendable {
    let inner: any SampleSink
    let recorder: HistoryRecorder
    init(inner: any SampleSink, recorder: HistoryRecorder) { self.inner = inner; self.recorder = recorder }

    @discardableResult func publish(_ sample: Sample, wake: Bool) -> Bool {
        switch sample.stream {
        case .pedometer, .pedometerEvent, .activity: recorder.offer(sample)
        default: break
        }
        return inner.publish(sample, wake: wake)
    }
    func wakeService() { inner.wakeService() }
    func publishConnection(_ event: ConnectionEvent) { inner.publishConnection(event) }
    func setDevices(_ devices: [DeviceInfo]) { inner.setDevices(devices) }
    var demandGeneration: Int { inner.demandGeneration }
    func demand() -> [StreamName: Double] { inner.demand() }
}
