import Foundation
import Testing
@testable import EdgeActivity

/// The GaitModel walks written as a recording folder the shared step scorer
/// reads (`<dir>/oxford_steps/index.json`, `<rec>.csv` with the header
/// t,ax,ay,az,gx,gy,gz,p, `<rec>.truth.json`), so the synthetic stress walks
/// are scored by `../shared/bench/activity/score_steps.py --data-root DIR`
/// like the real ones. With EDGE_GAIT_RECORDINGS=DIR the folder is written
/// there and kept (docs/fitness.md); otherwise into a temporary folder.
@Suite struct GaitRecordingsTests {
    static let walks: [(GaitModel.Placement, Double, UInt64)] = GaitModel.Placement.allCases.flatMap { p in
        [(p, 1.0, 31), (p, 1.4, 32), (p, 1.8, 33), (p, 2.2, 34)]
    }

    @Test func theStressWalksAreWrittenAsAScorerFolderAndReadBack() throws {
        let env = ProcessInfo.processInfo.environment["EDGE_GAIT_RECORDINGS"]
        let root = URL(fileURLWithPath: env ?? NSTemporaryDirectory() + "gait-\(UUID().uuidString)")
        let dir = root.appendingPathComponent("oxford_steps")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { if env == nil { try? FileManager.default.removeItem(at: root) } }
        var ids: [String] = []
        for (p, cadence, seed) in Self.walks {
            var g = GaitModel(); g.placement = p; g.cadence = cadence; g.seed = seed; g.farSide = 0.35
            let r = g.generate()
            let id = "gait_\(p.rawValue)_\(Int(cadence * 60))spm"
            ids.append(id)
            var csv = "t,ax,ay,az,gx,gy,gz,p\n"
            for i in r.t.indices {
                let a = r.a[i], w = r.g[i]
                csv += [r.t[i], a.x, a.y, a.z, w.x, w.y, w.z].map { String($0) }.joined(separator: ",") + ",\n"
            }
            try csv.write(to: dir.appendingPathComponent(id + ".csv"), atomically: true, encoding: .utf8)
            let truth: [String: Any] = [
                "dataset": "oxford_steps", "recording": id, "placement": p.rawValue, "device": "GaitModel",
                "subject": "model seed \(seed)", "steps": r.steps.count, "step_times": r.steps,
                "walk_span_s": [r.steps.first!, r.steps.last!],
                "segments": [[r.steps.first!, r.steps.last!, "walking", "walking"]],
            ]
            try JSONSerialization.data(withJSONObject: truth, options: [.sortedKeys])
                .write(to: dir.appendingPathComponent(id + ".truth.json"))
            // read back: the rows and the truth as a reader sees them
            let back = try String(contentsOf: dir.appendingPathComponent(id + ".csv"), encoding: .utf8).split(separator: "\n")
            #expect(back.count == r.t.count + 1 && back[0] == "t,ax,ay,az,gx,gy,gz,p")
            let last = back[back.count - 1].split(separator: ",", omittingEmptySubsequences: false)
            #expect(last.count == 8 && Double(last[0]) == r.t.last && Double(last[3]) == r.a.last!.z && last[7].isEmpty)
            let t = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent(id + ".truth.json"))) as? [String: Any]
            #expect(t?["steps"] as? Int == r.steps.count && (t?["step_times"] as? [Double])?.count == r.steps.count)
        }
        try JSONSerialization.data(withJSONObject: ["dataset": "oxford_steps", "recordings": ids], options: [.sortedKeys])
            .write(to: dir.appendingPathComponent("index.json"))
        let index = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("index.json"))) as? [String: Any]
        #expect((index?["recordings"] as? [String]) == ids)
    }
}
