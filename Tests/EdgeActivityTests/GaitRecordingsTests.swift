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

/// The activity and stair stress sets (issue 18) as recording folders the
/// shared scorers read: `geotec_har/` (a windshield mount through city
/// traffic with stops, with and without a gyroscope; a seated person who
/// fidgets; running; cycling; walks at five placements) for
/// `score_activity.py --data-root DIR --dataset geotec_har`, and
/// `ipin2023_floors/` (four floors up, stopping 3 s on each floor's
/// landing, and down without a stop, at 0.15-0.3 m/s, three placements) for `score_floors.py --data-root DIR`.
/// Fixed seeds. Written only with EDGE_STRESS_RECORDINGS=DIR (it takes a
/// minute in a debug build); the models themselves are tested in
/// ActivityStressTests and StairsTests.
@Suite struct StressRecordingsWriter {
    static func csv(_ r: GaitModel.Recording, gyro: Bool = true, pressure: [Int: Double] = [:]) -> String {
        var csv = "t,ax,ay,az,gx,gy,gz,p\n"
        csv.reserveCapacity(r.t.count * 80)
        for i in r.t.indices {
            let a = r.a[i], w = r.g[i]
            var row = [r.t[i], a.x, a.y, a.z].map { String($0) }
            row += gyro ? [w.x, w.y, w.z].map { String($0) } : ["", "", ""]
            row.append(pressure[i].map { String($0) } ?? "")
            csv += row.joined(separator: ",") + "\n"
        }
        return csv
    }

    static func write(_ json: [String: Any], _ url: URL) throws {
        try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]).write(to: url)
    }

    @Test func writeTheActivityAndStairStressSets() throws {
        guard let env = ProcessInfo.processInfo.environment["EDGE_STRESS_RECORDINGS"] else { return }
        let root = URL(fileURLWithPath: env)
        // activity
        let act = root.appendingPathComponent("geotec_har")
        try FileManager.default.createDirectory(at: act, withIntermediateDirectories: true)
        var ids: [String] = []
        func add(_ id: String, _ r: GaitModel.Recording, _ label: String, subject: String, gyro: Bool = true) throws {
            try Self.csv(r, gyro: gyro).write(to: act.appendingPathComponent(id + ".csv"), atomically: true, encoding: .utf8)
            try Self.write(["dataset": "geotec_har", "recording": id, "subject": subject, "device": gyro ? "model" : "model-no-gyro",
                       "segments": [[0.0, r.t.last!, label, label]]], act.appendingPathComponent(id + ".truth.json"))
            ids.append(id)
        }
        for seed in [5, 6, 7] as [UInt64] { try add("car_seed\(seed)", NoGaitModel.car(seconds: 300, seed: seed), "automotive", subject: "car") }
        try add("car_nogyro_seed8", NoGaitModel.car(seconds: 300, seed: 8), "automotive", subject: "car", gyro: false)
        for seed in [41, 42, 43] as [UInt64] { try add("fidget_seed\(seed)", NoGaitModel.fidgeting(seconds: 300, seed: seed), "stationary", subject: "fidget") }
        for (c, p) in [(2.6, GaitModel.Placement.frontPocket), (2.9, .armband), (3.1, .handHeld)] {
            var g = GaitModel(); g.placement = p; g.cadence = c; g.bounceMeters = 0.04; g.farSide = 0.8; g.seconds = 120; g.seed = UInt64(c * 10)
            try add("run_\(p.rawValue)_\(Int(c * 60))spm", g.generate(), "running", subject: "run")
        }
        for (c, seed) in [(1.0, 51), (1.25, 52), (1.5, 53)] as [(Double, UInt64)] {
            try add("cycle_\(Int(c * 60))rpm", NoGaitModel.cycling(seconds: 240, cadenceHz: c, seed: seed), "cycling", subject: "cycle")
        }
        for p in GaitModel.Placement.allCases {
            var g = GaitModel(); g.placement = p; g.cadence = 1.4; g.seed = 35
            try add("walk_\(p.rawValue)_84spm", g.generate(), "walking", subject: "walk")
        }
        try Self.write(["dataset": "geotec_har", "recordings": ids], act.appendingPathComponent("index.json"))
        // stairs
        let fl = root.appendingPathComponent("ipin2023_floors")
        try FileManager.default.createDirectory(at: fl, withIntermediateDirectories: true)
        var fids: [String] = []
        for (k, rate) in [0.15, 0.2, 0.25, 0.3].enumerated() {
            for (j, floors) in [4, -4].enumerated() {
                let placement = [GaitModel.Placement.frontPocket, .backPocket, .handHeld][(k + j) % 3]
                var m = StairModel(); m.climbRate = rate; m.floors = floors; m.placement = placement
                m.pauseSeconds = floors > 0 ? 3 : 0          // up: a 3 s stop on each floor's landing
                m.seed = UInt64(60 + 2 * k + j)
                let r = m.generate()
                // each barometer reading on the row at or after it
                var p: [Int: Double] = [:]
                var i = 0
                for (bt, bp) in zip(r.baroT, r.baroP) {
                    while i < r.imu.t.count && r.imu.t[i] < bt { i += 1 }
                    if i < r.imu.t.count { p[i] = bp }
                }
                let id = "stairs_\(floors > 0 ? "up" : "down")4_\(Int(rate * 100))cms_\(placement.rawValue)"
                try Self.csv(r.imu, pressure: p).write(to: fl.appendingPathComponent(id + ".csv"), atomically: true, encoding: .utf8)
                let end = r.imu.t.last!
                try Self.write(["transition_mode": "stairs",
                           "floors_ascended_walked": max(floors, 0), "floors_descended_walked": max(-floors, 0),
                           "floors_ascended_any": max(floors, 0), "floors_descended_any": max(-floors, 0),
                           "landmarks": [[0.0, 0], [end, floors]], "start_floor": 0, "duration_s": end,
                           "note": "synthetic: Tests/EdgeActivityTests/StairModel.swift"], fl.appendingPathComponent(id + ".truth.json"))
                fids.append(id)
            }
        }
        try Self.write(["recordings": fids], fl.appendingPathComponent("index.json"))
    }
}
