import EdgeProtocol

extension ServiceLoop {
    /// `record` and `recorded`: for clients whose uid holds the `recorder`
    /// entitlement, each uid's own windows only.
    func handleRecorder(_ request: Request, from c: Client) {
        let id = request.id
        let uid = c.counters.identity.uid
        guard c.entitlements.contains(.recorder) else {
            let msg = "the sensor recorder needs the recorder entitlement, which uid \(uid) does not hold (grant it in the agent's clients: section)"
            reply(c) { MessageEncoder.error(.notEntitled, message: msg, stream: .accelerometer, id: id, into: &$0) }
            return
        }
        guard let source = core.recorderSource.withLock({ $0 }) else {
            let msg = "this agent keeps no sensor recording: set recorder.path in its configuration"
            reply(c) { MessageEncoder.error(.noHistory, message: msg, stream: .accelerometer, id: id, into: &$0) }
            return
        }
        switch request.kind {
        case .record(let d):
            switch source.record(uid: uid, durationS: d) {
            case .success(let w): reply(c) { MessageEncoder.recording(w, id: id, into: &$0) }
            case .failure(let e): reply(c) { MessageEncoder.error(.noHistory, message: e.message, stream: .accelerometer, id: id, into: &$0) }
            }
        case .recorded(let from, let to):
            switch source.recorded(uid: uid, fromNs: from, toNs: to, maxSamples: Request.maxRecordedSamples) {
            case .success(let page): reply(c) { MessageEncoder.recorded(page, id: id, into: &$0) }
            case .failure(let e): reply(c) { MessageEncoder.error(.noHistory, message: e.message, stream: .accelerometer, id: id, into: &$0) }
            }
        default:
            break
        }
    }
}
