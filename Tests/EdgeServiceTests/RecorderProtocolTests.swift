import Testing
#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
import EdgeProtocol
@testable import EdgeService

/// A recorder that remembers what it was asked, by which uid.
final class StubRecorder: RecorderSource, @unchecked Sendable {
    var asked: [(uid: UInt32, what: String)] = []
    func record(uid: UInt32, durationS: Double) -> Result<RecordingWindow, HistorySourceError> {
        asked.append((uid, "record \(durationS)"))
        return .success(RecordingWindow(uid: uid, startUnixNs: 1_000, endUnixNs: 1_000 + Int64(durationS * 1e9)))
    }
    func recorded(uid: UInt32, fromNs: Int64, toNs: Int64, maxSamples: Int) -> Result<RecordedPage, HistorySourceError> {
        asked.append((uid, "recorded \(fromNs) \(toNs) \(maxSamples)"))
        if fromNs == 666 { return .failure(HistorySourceError("disk on fire")) }
        return .success(RecordedPage(samples: [RecordedAccelerometerSample(identifier: 64, unixNs: fromNs, acceleration: Vector3(0.1, -0.2, 9.80665))],
                                     nextFromNs: toNs > fromNs + 1 ? fromNs + 1 : nil))
    }
}

@Suite("Sensor recorder requests") struct RecorderProtocolTests {
    /// `record` and `recorded` as the agent decodes them, with a typed
    /// error for every bad form.
    @Test func requestsDecodeAndBadOnesAreMalformed() throws {
        #expect(try Request.decode(line: Array(#"{"class":"record","duration_s":600}"#.utf8)).kind == .record(durationS: 600))
        #expect(try Request.decode(line: Array(#"{"class":"record","duration_s":43200}"#.utf8)).kind == .record(durationS: 43200))
        #expect(try Request.decode(line: Array(#"{"class":"recorded","from_ns":5,"to_ns":9}"#.utf8)).kind == .recorded(fromNs: 5, toNs: 9))
        #expect(try Request.decode(line: Array(#"{"class":"recorded","from_s":1.5,"to_s":2}"#.utf8)).kind
                == .recorded(fromNs: 1_500_000_000, toNs: 2_000_000_000))
        for bad in [#"{"class":"record"}"#, #"{"class":"record","duration_s":0}"#, #"{"class":"record","duration_s":-1}"#,
                    #"{"class":"record","duration_s":43200.5}"#, #"{"class":"record","duration_s":"600"}"#,
                    #"{"class":"recorded","to_ns":9}"#, #"{"class":"recorded","from_ns":9,"to_ns":5}"#,
                    #"{"class":"recorded","from_ns":-1,"to_ns":5}"#] {
            #expect(throws: Request.DecodeError.self, "\(bad)") { _ = try Request.decode(line: Array(bad.utf8)) }
            do { _ = try Request.decode(line: Array(bad.utf8)) } catch { #expect(error.code == .malformedRequest, "\(bad)") }
        }
        // the client's encoding is what the agent decodes
        for kind in [Request.Kind.record(durationS: 12.5), .recorded(fromNs: 1_764_547_200_123_456_789, toNs: 1_764_547_300_000_000_000)] {
            var w = JSONWriter()
            Request(kind: kind, id: .number("3")).encode(into: &w)
            #expect(try Request.decode(line: w.bytes.dropLast()).kind == kind)
        }
    }

    /// The replies round-trip through the client's decoder exactly.
    @Test func repliesRoundTrip() throws {
        let page = RecordedPage(samples: [
            RecordedAccelerometerSample(identifier: 64, unixNs: 1_764_547_200_000_100_000, acceleration: Vector3(0.0047884033203125, -0.2, -9.80665)),
            RecordedAccelerometerSample(identifier: 65, unixNs: 1_764_547_200_020_000_000, acceleration: Vector3(0, 0, 0)),
        ], nextFromNs: 1_764_547_200_040_000_000)
        var w = JSONWriter()
        MessageEncoder.recorded(page, id: .string("p"), into: &w)
        #expect(try ServerMessage.decode(line: w.bytes.dropLast()) == .recorded(page, id: .string("p")))
        w = JSONWriter()
        let window = RecordingWindow(uid: 0, startUnixNs: 1_764_547_200_000_000_000, endUnixNs: 1_764_590_400_000_000_000)
        MessageEncoder.recording(window, id: .number("7"), into: &w)
        #expect(try ServerMessage.decode(line: w.bytes.dropLast()) == .recording(window, id: .number("7")))
    }

    /// The version line says whether the agent keeps a recorder (the
    /// library's `isAccelerometerRecordingAvailable()` reads it).
    @Test func theVersionLineSaysWhetherTheAgentRecords() throws {
        for recorder in [true, false] {
            var w = JSONWriter()
            MessageEncoder.version(agentVersion: "t", uid: 1, gid: 1, entitlements: [.recorder], maxLineBytes: 4096,
                                   queueCapacity: 256, recorder: recorder, into: &w)
            guard case .version(let v) = try ServerMessage.decode(line: w.bytes.dropLast()) else { Issue.record("not a version line"); continue }
            #expect(v.recorder == recorder)
        }
        let server = try makeServer("rec2", policy: EntitlementPolicy(byUID: [getuid(): [.recorder]]))
        defer { server.stop() }
        server.setRecorderSource(StubRecorder())
        let c = try TestClient(path: server.socketPath)
        #expect(try #require(c.readMessage())["recorder"] == .bool(true))
    }

    /// Only a uid holding `recorder` reaches the recorder, which is asked
    /// for that uid; an agent without a recorder says so; the source's
    /// failure reaches the client in words; the connection stays.
    @Test func requestsAreGatedByUIDAndAnswered() throws {
        let denied = try makeServer("rec0", policy: EntitlementPolicy(byUID: [getuid(): [.motion, .fitness]]))
        defer { denied.stop() }
        let stubDenied = StubRecorder()
        denied.setRecorderSource(stubDenied)
        let d = try TestClient(path: denied.socketPath)
        _ = try #require(d.readMessage())
        d.request(#"{"class":"record","duration_s":60,"id":1}"#)
        let e = try #require(d.waitFor("error").0)
        #expect(e.string("code") == "notEntitled" && e.string("message")?.contains("recorder") == true)
        d.request(#"{"class":"recorded","from_ns":0,"to_ns":10,"id":2}"#)
        #expect(d.waitFor("error").0?.string("code") == "notEntitled")
        #expect(stubDenied.asked.isEmpty)

        let server = try makeServer("rec1", policy: EntitlementPolicy(byUID: [getuid(): [.recorder]]))
        defer { server.stop() }
        let c = try TestClient(path: server.socketPath)
        _ = try #require(c.readMessage())
        c.request(#"{"class":"record","duration_s":60,"id":1}"#)
        let none = try #require(c.waitFor("error").0)
        #expect(none.string("code") == "noHistory" && none.string("message")?.contains("recorder.path") == true)

        let stub = StubRecorder()
        server.setRecorderSource(stub)
        c.request(#"{"class":"record","duration_s":60,"id":2}"#)
        let r = try #require(c.waitFor("recording").0)
        #expect(r.number("from_ns") == 1000 && r.number("to_ns") == 60_000_001_000)
        c.request(#"{"class":"recorded","from_ns":100,"to_ns":200,"id":3}"#)
        let p = try #require(c.waitFor("recorded").0)
        #expect(p.number("next_from_ns") == 101)
        c.request(#"{"class":"recorded","from_ns":666,"to_ns":667,"id":4}"#)
        let failed = try #require(c.waitFor("error").0)
        #expect(failed.string("code") == "noHistory" && failed.string("message") == "disk on fire")
        c.request(#"{"class":"record","duration_s":1e9,"id":5}"#)
        #expect(c.waitFor("error").0?.string("code") == "malformedRequest")
        c.request(#"{"class":"ping","id":6}"#)
        #expect(c.waitFor("pong").0 != nil)
        #expect(stub.asked.map(\.uid) == [getuid(), getuid(), getuid()])
        #expect(stub.asked.map(\.what) == ["record 60.0", "recorded 100 200 \(Request.maxRecordedSamples)", "recorded 666 667 1000"])
    }
}
