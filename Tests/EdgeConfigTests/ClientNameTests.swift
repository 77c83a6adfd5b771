import Testing
import Foundation
@testable import EdgeConfig

/// An entitlement grant naming a user or group the system does not know is
/// an error naming the file, the line and the entry.
@Suite struct ClientNameTests {
    let text = """
    {
      clients: [
        { user: "pi", entitlements: ["motion"] },
        { group: "divers", entitlements: ["submersion.full"] },
        { user: "no-such-user-here", entitlements: ["motion"] },
      ],
    }
    """

    @Test func everyEntryKnowsWhereItWasWritten() throws {
        let c = try ConfigLoader.decode(AgentConfig.self, from: text, file: "/etc/edge-agent/edge-agent.json5")
        let locations = try #require(c.clients).map(\.location)
        #expect(locations.map { $0?.line } == [3, 4, 5])
        #expect(locations.map { $0?.keyPath } == ["clients[0].user", "clients[1].group", "clients[2].user"])
        #expect(locations.allSatisfy { $0?.file == "/etc/edge-agent/edge-agent.json5" })
    }

    @Test func anUnknownUserNamesFileLineAndEntry() throws {
        let c = try ConfigLoader.decode(AgentConfig.self, from: text, file: "agent.json5")
        do {
            try c.checkClientNames(userExists: { $0 == "pi" }, groupExists: { $0 == "divers" })
            Issue.record("expected an error")
        } catch {
            #expect(error.file == "agent.json5")
            #expect(error.line == 5 && error.column == 13)
            #expect(error.keyPath == "clients[2].user")
            #expect(error.message.contains("no user named 'no-such-user-here'"))
            #expect(error.description.hasPrefix("agent.json5:5:13: clients[2].user: "), "\(error.description)")
            #expect(error.description.contains("^"))
        }
    }

    @Test func anUnknownGroupToo() throws {
        let c = try ConfigLoader.decode(AgentConfig.self, from: text, file: "agent.json5")
        do {
            try c.checkClientNames(userExists: { _ in true }, groupExists: { _ in false })
            Issue.record("expected an error")
        } catch {
            #expect(error.line == 4)
            #expect(error.keyPath == "clients[1].group")
            #expect(error.message.contains("no group named 'divers'"))
        }
    }

    /// The real look-up: root always exists, a made-up name never does.
    @Test func theSystemDatabasesAreAsked() throws {
        #expect(SystemAccounts.userExists("root"))
        #expect(SystemAccounts.groupExists("root"))
        #expect(!SystemAccounts.userExists("no-such-user-here"))
        let c = try ConfigLoader.decode(AgentConfig.self, from: text, file: "agent.json5")
        #expect(throws: ConfigError.self) { try c.checkClientNames() }
        let ok = try ConfigLoader.decode(AgentConfig.self, from: "{ clients: [{ uid: 0, entitlements: [] }, { user: 'root', entitlements: [] }] }", file: "a")
        try ok.checkClientNames()
    }

    @Test func locationsDoNotChangeEquality() throws {
        let c = try ConfigLoader.decode(AgentConfig.self, from: "{ clients: [{ uid: 7, entitlements: ['motion'] }] }", file: "a")
        #expect(c.clients == [ClientGrant(uid: 7, entitlements: ["motion"])])
    }
}
