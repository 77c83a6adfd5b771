// Issue 16, item 7: during a 12 m dive a client holding only `altitude`
// read 171.8 kPa from the altitude stream, 7 m of depth, past the 6 m that
// `submersion.shallow` allows. No stream may reveal a depth (or a pressure
// it follows from) beyond what the client's submersion entitlement admits.
// Truth: hydrostatic pressure p = surface + ρ·g·depth, worked here by hand.
import Testing
#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
import EdgeProtocol
@testable import EdgeService

@Suite struct DepthDisclosureTests {
    static let surface = 101_325.0
    static let rhoG = 1025 * 9.80665   // salt water, Pa/m

    func submersion(_ t: UInt64, depth: Double) -> Sample {
        .submersion(SubmersionSample(timestampNs: t, depth: depth, pressure: Self.surface + Self.rhoG * depth,
                                     surfacePressure: Self.surface, temperature: 20, state: .submerged,
                                     depthState: .submergedDeep, shallowDepthState: depth > 6 ? .pastMaxDepth : .submergedShallow))
    }

    func altitude(_ t: UInt64, depth: Double) -> Sample {
        let p = Self.surface + Self.rhoG * depth
        return .altitude(AltitudeSample(timestampNs: t, relativeAltitude: PressureAltitude.altitude(pressure: p), pressure: p,
                                        temperature: 20))
    }

    func absolute(_ t: UInt64, depth: Double) -> Sample {
        .absoluteAltitude(AbsoluteAltitudeSample(timestampNs: t, altitude: PressureAltitude.altitude(pressure: Self.surface + Self.rhoG * depth),
                                                 accuracy: 10, precision: 0.1))
    }

    @Test func pureRuleFollowsTheHydrostaticDepth() {
        var d = DepthDisclosure()
        // Before any submersion sample: standard atmosphere, fresh water (the largest depth for a pressure).
        #expect(!d.isBeyond(pressure: 101_325 + 997 * 9.80665 * 5.99, maximumDepth: 6))
        #expect(d.isBeyond(pressure: 101_325 + 997 * 9.80665 * 6.01, maximumDepth: 6))
        if case .submersion(let s) = submersion(1, depth: 12) { d.update(s) }
        #expect(abs(d.pressurePerMetre - Self.rhoG) < 1e-6)
        #expect(!d.isBeyond(pressure: Self.surface + Self.rhoG * 5.9, maximumDepth: 6))
        #expect(d.isBeyond(pressure: 171_800, maximumDepth: 6), "the issue's 171.8 kPa is 6.9 m of salt water")
        #expect(!d.isBeyond(pressure: 171_800, maximumDepth: 40))
        #expect(!d.isBeyond(pressure: .nan, maximumDepth: 6))
    }

    @Test func noStreamRevealsADepthPastTheClientsCap() throws {
        let plain: UInt32 = 2001, shallow: UInt32 = 2002, full: UInt32 = 2003
        let credentials = ScriptedCredentials([plain, shallow, full])
        let policy = EntitlementPolicy(byUID: [plain: [.altitude], shallow: [.altitude, .submersionShallow],
                                               full: [.altitude, .submersionFull]])
        let server = try makeServer("depthcap", policy: policy, credentials: credentials)
        defer { server.stop() }
        var clients: [TestClient] = []
        for _ in 0..<3 {
            let c = try connectClient(server)
            #expect(subscribe(c, "altitude") != nil && subscribe(c, "absoluteAltitude") != nil)
            clients.append(c)
        }
        // At 5 m everyone sees the pressure; at 12 m only submersion.full does.
        var t: UInt64 = 1_000_000_000
        for depth in [5.0, 12.0] {
            server.publish(submersion(t, depth: depth)); t += 1_000_000
            server.publish(altitude(t, depth: depth)); t += 1_000_000
            server.publish(absolute(t, depth: depth)); t += 1_000_000
            for (i, c) in clients.enumerated() {
                let seen = try #require(c.barrier())
                let alt = try #require(seen.last { $0.string("stream") == "altitude" }, "client \(i) at \(depth) m: \(seen)")
                let absolute = try #require(seen.last { $0.string("stream") == "absoluteAltitude" })
                let shown = depth <= 6 || i == 2
                #expect((alt.number("pressure_pa") != nil) == shown, "client \(i) at \(depth) m: \(alt)")
                #expect((alt.number("relativeAltitude_m") != nil) == shown, "client \(i) at \(depth) m: \(alt)")
                #expect((absolute.number("altitude_m") != nil) == shown, "client \(i) at \(depth) m: \(absolute)")
                if shown { #expect(abs(alt.number("pressure_pa")! - (Self.surface + Self.rhoG * depth)) < 1) }
                // poll says the same
                c.request(#"{"class":"poll","stream":"altitude"}"#)
                let polled = try #require(c.waitFor("sample").0)
                #expect((polled.number("pressure_pa") != nil) == shown, "poll, client \(i) at \(depth) m: \(polled)")
            }
        }
    }
}
