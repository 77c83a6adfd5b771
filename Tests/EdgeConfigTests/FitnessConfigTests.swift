import Testing
import EdgeConfig

@Suite struct FitnessConfigTests {
    func error(_ text: String) -> String? {
        do { _ = try ConfigLoader.decode(AgentConfig.self, from: text, file: "c.json5"); return nil } catch { return "\(error)" }
    }

    @Test func defaultsAndValues() throws {
        let d = try ConfigLoader.decode(AgentConfig.self, from: "{ board: 'simulated' }", file: "c.json5")
        #expect(d.fitness == FitnessConfig())
        #expect(!d.fitness.enabled && d.fitness.floorHeightMeters == 3 && d.fitness.history == nil)
        let c = try ConfigLoader.decode(AgentConfig.self, from: """
            { board: 'simulated', fitness: { enabled: true, height_m: 1.82, stride_scale: 1.05, floor_height_m: 3.5,
              history: { path: '/var/lib/edge-agent/fitness.sqlite3', retention_days: 30 } } }
            """, file: "c.json5")
        #expect(c.fitness.enabled && c.fitness.heightMeters == 1.82 && c.fitness.strideScale == 1.05)
        #expect(c.fitness.floorHeightMeters == 3.5)
        #expect(c.fitness.history == FitnessHistoryConfig(path: "/var/lib/edge-agent/fitness.sqlite3", retentionDays: 30))
    }

    @Test func badValuesSayWhereAndWhatIsAllowed() throws {
        let height = try #require(error("{ board: 'simulated',\n fitness: { floor_height_m: 0 } }"))
        #expect(height.contains("c.json5:2") && height.contains("floor_height_m"), "\(height)")
        let unknown = try #require(error("{ board: 'simulated', fitness: { stride: 1 } }"))
        #expect(unknown.contains("stride"), "\(unknown)")
        let noPath = try #require(error("{ board: 'simulated', fitness: { enabled: true, history: { retention_days: 3 } } }"))
        #expect(noPath.contains("path"), "\(noPath)")
        let off = try #require(error("{ board: 'simulated', fitness: { enabled: false, history: { path: 'h.db' } } }"))
        #expect(off.contains("enabled"), "\(off)")
        let implied = try ConfigLoader.decode(AgentConfig.self, from: "{ fitness: { history: { path: 'h.db' } } }", file: "c.json5")
        #expect(implied.fitness.enabled, "a history runs the pedometer all the time")
        let retention = try #require(error("{ board: 'simulated', fitness: { enabled: true, history: { path: 'h.db', retention_days: -1 } } }"))
        #expect(retention.contains("retention_days"), "\(retention)")
        let grant = error("{ board: 'simulated', clients: [{ uid: 1000, entitlements: ['fitness'] }] }")
        #expect(grant == nil, "fitness is a known entitlement: \(grant ?? "")")
    }
}
