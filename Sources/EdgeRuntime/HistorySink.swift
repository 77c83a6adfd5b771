import EdgeEngine
import EdgeHistory
import EdgeProtocol

/// The engine's sink when the fitness history is on: every sample goes to
/// the service as before; the fitness samples are also handed to the
/// history recorder (a short lock, no I/O on the loop thread).
package final class HistorySink: SampleSink, @unchecked Sendable {
    package let inner: any SampleSink
    package let recorder: HistoryRecorder
    package init(inner: any SampleSink, recorder: HistoryRecorder) { self.inner = inner; self.recorder = recorder }

    @discardableResult package func publish(_ sample: Sample, wake: Bool) -> Bool {
        switch sample.stream {
        case .pedometer, .pedometerEvent, .activity: recorder.offer(sample)
        default: break
        }
        return inner.publish(sample, wake: wake)
    }
    package func wakeService() { inner.wakeService() }
    package func publishConnection(_ event: ConnectionEvent) { inner.publishConnection(event) }
    package func setDevices(_ devices: [DeviceInfo]) { inner.setDevices(devices) }
    package var demandGeneration: Int { inner.demandGeneration }
    package func demand() -> [StreamName: Double] { inner.demand() }
}
