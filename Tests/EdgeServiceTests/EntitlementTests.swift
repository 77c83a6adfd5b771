#if canImport(Glibc)
import Glibc
#endif
import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeProtocol
@testable import EdgeService

@Suite("Entitlements")
struct EntitlementTests {
    @Test func defaultGrantsTheAgentUserMotionAndAltitudeOnly() {
        let p = EntitlementPolicy.defaultPolicy(agentUID: 1000)
        #expect(p.entitlements(for: ClientIdentity(pid: 1, uid: 1000, gid: 1000)) == [.motion, .altitude])
        #expect(p.entitlements(for: ClientIdentity(pid: 1, uid: 1001, gid: 1000)).isEmpty)
        #expect(p.entitlements(for: ClientIdentity(pid: 1, uid: 0, gid: 0)).isEmpty)
    }

    @Test func grantsResolveNamesAndUnionOverUserAndGroups() throws {
        let p = try EntitlementPolicy.resolving([
            EntitlementGrant(user: "root", entitlements: ["motion"]),
            EntitlementGrant(group: "root", entitlements: ["altitude"]),
            EntitlementGrant(uid: 4242, entitlements: ["submersion.shallow"]),
            EntitlementGrant(gid: 777, entitlements: ["submersion.full"]),
        ])
        #expect(p.entitlements(for: ClientIdentity(pid: 1, uid: 0, gid: 5)) == [.motion])
        #expect(p.entitlements(for: ClientIdentity(pid: 1, uid: 0, gid: 0)) == [.motion, .altitude])
        #expect(p.entitlements(for: ClientIdentity(pid: 1, uid: 4242, gid: 9, groups: [777]))
                == [.submersionShallow, .submersionFull])
    }

    @Test func unknownNamesAndAmbiguousGrantsAreConfigurationErrors() {
        #expect(throws: ServiceError.unknownUser("no-such-user-edge")) {
            try EntitlementPolicy.resolving([EntitlementGrant(user: "no-such-user-edge", entitlements: ["motion"])])
        }
        #expect(throws: ServiceError.unknownGroup("no-such-group-edge")) {
            try EntitlementPolicy.resolving([EntitlementGrant(group: "no-such-group-edge", entitlements: ["motion"])])
        }
        #expect(throws: ServiceError.self) {
            try EntitlementPolicy.resolving([EntitlementGrant(user: "root", uid: 0, entitlements: ["motion"])])
        }
    }

    @Test func rootSupplementaryGroupsIncludeItsPrimaryGroup() {
        #expect(SystemDatabase.groups(ofUID: 0).contains(0))
    }

    @Test func grantsDecodeFromTheConfigurationShape() throws {
        let json = #"[{"user":"pi","entitlements":["motion","altitude"]},{"group":"divers","entitlements":["submersion.full"]},{"uid":1001,"entitlements":["motion"]}]"#
        let grants = try JSONDecoder().decode([EntitlementGrant].self, from: Data(json.utf8))
        #expect(grants == [
            EntitlementGrant(user: "pi", entitlements: [.motion, .altitude]),
            EntitlementGrant(group: "divers", entitlements: [.submersionFull]),
            EntitlementGrant(uid: 1001, entitlements: [.motion]),
        ])
        let settings = try JSONDecoder().decode(ServiceSettings.self,
                                                from: Data(#"{"socketPath":"/tmp/x.sock","queueCapacity":64}"#.utf8))
        let config = ServiceConfiguration(settings)
        #expect(config.socketPath == "/tmp/x.sock")
        #expect(config.queueCapacity == 64)
        #expect(config.maxLineBytes == 4096)
    }
}
