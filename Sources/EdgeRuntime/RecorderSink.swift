import EdgeEngine
import EdgeHistory
import EdgeProtocol
import EdgeService

/// The engine's sink when the sensor recorder is on: every sample goes on
/// to `inner`; the accelerometer's are also offered to the recorder (a
/// short lock, no I/O on the loop thread). The demand is `inner`'s plus the
/// recorder's (the accelerometer at 50 Hz while a window is open), so the
/// IMU runs for a recording with no client subscribed, and not otherwise.
package final class RecorderSink: SampleSink, @unchecked Sendable {
    package let inner: any SampleSink
    package let recorder: AccelerometerRecorder
    package init(inner: any SampleSink, recorder: AccelerometerRecorder) { self.inner = inner; self.recorder = recorder }

    @discardableResult package func publish(_ sample: Sample, wake: Bool) -> Bool {
        if case .accelerometer = sample { recorder.offer(sample) }
        return inner.publish(sample, wake: wake)
    }
    package func wakeService() { inner.wakeService() }
    package func publishConnection(_ event: ConnectionEvent) { inner.publishConnection(event) }
    package func setDevices(_ devices: [DeviceInfo]) { inner.setDevices(devices) }
    /// Both counters only grow: their sum changes whenever either does.
    package var demandGeneration: Int { inner.demandGeneration &+ recorder.demandGeneration }
    package func demand() -> [StreamName: Double] {
        var d = inner.demand()
        for (s, interval) in recorder.demand { d[s] = min(d[s] ?? interval, interval) }
        return d
    }
}

/// The agent's answer to `record` and `recorded` requests: its recorder.
package final class SensorRecorderSource: RecorderSource {
    private let recorder: AccelerometerRecorder
    package init(_ recorder: AccelerometerRecorder) { self.recorder = recorder }

    package func record(uid: UInt32, durationS: Double) -> Result<RecordingWindow, HistorySourceError> {
        .success(recorder.record(uid: uid, durationSeconds: durationS))
    }

    package func recorded(uid: UInt32, fromNs: Int64, toNs: Int64, maxSamples: Int) -> Result<RecordedPage, HistorySourceError> {
        do {
            let r = try recorder.recorded(uid: uid, fromUnixNs: fromNs, toUnixNs: toNs, limit: maxSamples)
            return .success(RecordedPage(samples: r.samples, nextFromNs: r.next))
        } catch {
            return .failure(HistorySourceError("the sensor recording could not be read: \(error)"))
        }
    }
}
