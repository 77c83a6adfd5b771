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
}
