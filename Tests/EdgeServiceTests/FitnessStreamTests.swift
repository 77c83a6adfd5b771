import Testing
#if canImport(Glibc)
import Glibc
#endif
import EdgeProtocol
import EdgeService

/// The fitness streams on the wire: keys with units, a second reader (the
/// client decoder) gets back what was sent, and the `fitness` entitlement gates them.
@Suite("Fitness streams")
struct FitnessStreamTests {
    let samples: [Sample] = [
        .pedometer(PedometerSample(timestampNs: 9_000_000_000_123, startNs: 1_000, steps: 4321, distance: 3012.25,
                                   floorsAscended: 3, floorsDescended: 1, currentCadence: 1.83,
                                   currentPace: 0.78125, averageActivePace: 0.8)),
        .pedometerEvent(PedometerEventSample(timestampNs: 5, type: .pause)),
        .pedometerEvent(PedometerEventSample(timestampNs: 6, type: .resume)),
        .activity(ActivitySample(timestampNs: 7, startNs: 2, flags: [.stationary, .automotive], confidence: .high)),
        .activity(ActivitySample(timestampNs: 8, startNs: 3, flags: .walking, confidence: .low)),
    ]

    @Test func samplesRoundTripThroughTheClientDecoder() throws {
        for s in samples {
            var w = JSONWriter()
            MessageEncoder.sample(s, into: &w)
            #expect(try ServerMessage.decode(line: w.bytes.dropLast()) == .sample(s))
        }
    }

    @Test func wireKeysSayTheirUnits() throws {
        var w = JSONWriter()
        MessageEncoder.sample(samples[0], into: &w)
        let m = try JSONValue.parse(w.bytes)
        #expect(m.string("stream") == "pedometer")
        #expect(m.number("steps") == 4321)
        #expect(m.number("distance_m") == 3012.25)
        #expect(m.number("currentCadence_stepsps") == 1.83)
        #expect(m.number("currentPace_spm") == 0.78125)
        #expect(m.number("startDate_ns") == 1000)
        w.reset()
        MessageEncoder.sample(samples[3], into: &w)
        let a = try JSONValue.parse(w.bytes)
        #expect(a.bool("stationary") == true && a.bool("automotive") == true && a.bool("walking") == false)
        #expect(a.string("confidence") == "high")
        w.reset()
        MessageEncoder.sample(samples[1], into: &w)
        #expect(try JSONValue.parse(w.bytes).string("type") == "pause")
    }

    @Test func fitnessStreamsNeedTheFitnessEntitlement() {
        for s in [StreamName.pedometer, .pedometerEvent, .activity] { #expect(s.entitlement == .fitness) }
        #expect(Entitlement.fitness.rawValue == "fitness")
    }

    @Test func withoutFitnessASubscriptionIsNotEntitledAndGetsNoData() throws {
        let server = try makeServer("fit", policy: EntitlementPolicy(byUID: [getuid(): [.motion, .altitude]]))
        defer { server.stop() }
        let c = try TestClient(path: server.socketPath)
        _ = try #require(c.readMessage())
        for stream in ["pedometer", "pedometerEvent", "activity"] {
            c.request(#"{"class":"subscribe","stream":"\#(stream)","id":3}"#)
            let e = try #require(c.waitFor("error").0)
            #expect(e.string("code") == "notEntitled")
            #expect(e.string("stream") == stream)
        }
        for s in samples { server.publish(s) }
        c.request(#"{"class":"poll","stream":"pedometer"}"#)
        #expect(c.waitFor("error").0?.string("code") == "notEntitled")
    }

    @Test func withFitnessTheClientGetsTheSamples() throws {
        let server = try makeServer("fit2", policy: EntitlementPolicy(byUID: [getuid(): [.fitness]]))
        defer { server.stop() }
        let c = try connectClient(server)
        _ = subscribe(c, "pedometer")
        server.publish(samples[0])
        let got = try #require(c.barrier())
        #expect(got.count == 1)
        #expect(got.first?.number("steps") == 4321)
    }

    // MARK: history requests

    final class StubHistory: HistorySource, @unchecked Sendable {
        var asked: [(StreamName, Double, Double)] = []
        func history(_ stream: StreamName, fromNs: Int64, toNs: Int64, maxRows: Int) -> Result<HistoryReply, HistorySourceError> {
            let fromS = Double(fromNs) / 1e9, toS = Double(toNs) / 1e9
            asked.append((stream, fromS, toS))
            if stream == .pedometer {
                return .success(.pedometer(.init(steps: 1234, distanceMeters: 987.5, floorsAscended: 2, floorsDescended: 1, activeSeconds: 600)))
            }
            if fromS > toS - 1 { return .failure(HistorySourceError("disk on fire")) }
            return .success(.activities([.init(startS: 1_764_547_200.5, flags: [.stationary, .automotive], confidence: .high),
                                         .init(startS: 1_764_547_260, flags: .walking, confidence: .low)]))
        }
    }

    @Test func historyRepliesRoundTripThroughTheClientDecoder() throws {
        let replies: [HistoryReply] = [
            .pedometer(.init(steps: 1234, distanceMeters: 987.5, floorsAscended: 2, floorsDescended: 1, activeSeconds: 600)),
            .activities([.init(startS: 1_764_547_200.5, flags: [.stationary, .automotive], confidence: .high),
                         .init(startS: 1_764_547_260, flags: .walking, confidence: .low)]),
            .activities([]),
            .activities([.init(startS: 1_764_547_200.5, flags: .walking, confidence: .low)], nextFromNs: 1_764_547_260_123_456_789),
        ]
        for r in replies {
            var w = JSONWriter()
            MessageEncoder.history(r, id: .number("4"), into: &w)
            #expect(try ServerMessage.decode(line: w.bytes.dropLast()) == .history(r, id: .number("4")))
        }
    }

    /// A server that accepts its first client only after its history and
    /// recorder are set (the agent's order since CI heard `noHistory` from
    /// an agent that keeps a history, under ThreadSanitizer, while it
    /// opened a week of history) answers that client from them, and its
    /// version line says there is a recorder. The service loop is stepped
    /// by hand: a cycle with the door closed accepts no one, whatever the
    /// timing.
    @Test func sourcesSetBeforeTheDoorOpensAnswerTheFirstClient() throws {
        let m = try ManualLoop(policy: EntitlementPolicy(byUID: [getuid(): [.fitness, .recorder]]))
        defer { m.close() }
        m.acceptsClients = false
        let c = try TestClient(path: m.path)
        c.request(#"{"class":"history","stream":"pedometer","from_s":1,"to_s":2,"id":1}"#)
        m.cycle()
        let stub = StubHistory()
        m.setSources(history: stub, recorder: StubRecorder())
        m.acceptsClients = true
        #expect(m.cycle(timeoutMs: Int32(waitTimeoutMs)) >= 1)   // accepts: the version line
        let version = try #require(c.readMessage())
        #expect(version["recorder"] == .bool(true))
        #expect(m.cycle(timeoutMs: Int32(waitTimeoutMs)) >= 1)   // reads the request, answers it
        let p = try #require(c.waitFor("history").0)
        #expect(p["totals"]?.number("steps") == 1234)
        #expect(stub.asked.count == 1)
    }

    /// The history is the fitness streams' past: the same entitlement; an
    /// agent without one says so (`noHistory`), the source's failure reaches
    /// the client in words, and the connection stays through all of it.
    @Test func historyRequestsAreGatedAndAnswered() throws {
        let denied = try makeServer("hist0", policy: EntitlementPolicy(byUID: [getuid(): [.motion]]))
        defer { denied.stop() }
        let d = try TestClient(path: denied.socketPath)
        _ = try #require(d.readMessage())
        d.request(#"{"class":"history","stream":"pedometer","from_s":0,"to_s":10,"id":1}"#)
        #expect(d.waitFor("error").0?.string("code") == "notEntitled")

        let server = try makeServer("hist1", policy: EntitlementPolicy(byUID: [getuid(): [.fitness]]))
        defer { server.stop() }
        let c = try TestClient(path: server.socketPath)
        _ = try #require(c.readMessage())
        c.request(#"{"class":"history","stream":"pedometer","from_s":0,"to_s":10,"id":2}"#)
        let none = try #require(c.waitFor("error").0)
        #expect(none.string("code") == "noHistory")
        #expect(none.string("message")?.contains("fitness.history") == true)

        let stub = StubHistory()
        server.setHistorySource(stub)
        c.request(#"{"class":"history","stream":"pedometer","from_s":100.5,"to_s":200,"id":3}"#)
        let p = try #require(c.waitFor("history").0)
        #expect(p.string("stream") == "pedometer")
        #expect(p["totals"]?.number("steps") == 1234 && p["totals"]?.number("distance_m") == 987.5)
        c.request(#"{"class":"history","stream":"activity","from_s":100,"to_s":200,"id":4}"#)
        let a = try #require(c.waitFor("history").0)
        #expect(a["activities"].flatMap { if case .array(let l) = $0 { return l.count } else { return nil } } == 2)
        c.request(#"{"class":"history","stream":"activity","from_s":200,"to_s":200,"id":5}"#)
        let failed = try #require(c.waitFor("error").0)
        #expect(failed.string("code") == "noHistory" && failed.string("message") == "disk on fire")
        // Malformed: another stream, a missing or reversed range.
        for bad in [#"{"class":"history","stream":"altitude","from_s":0,"to_s":1}"#,
                    #"{"class":"history","stream":"pedometer","to_s":1}"#,
                    #"{"class":"history","stream":"pedometer","from_s":5,"to_s":1}"#] {
            c.request(bad)
            #expect(c.waitFor("error").0?.string("code") == "malformedRequest", "\(bad)")
        }
        c.request(#"{"class":"ping","id":6}"#)
        #expect(c.waitFor("pong").0 != nil)
        #expect(stub.asked.count == 3 && stub.asked[0].0 == .pedometer && stub.asked[0].1 == 100.5 && stub.asked[0].2 == 200)
    }
}
