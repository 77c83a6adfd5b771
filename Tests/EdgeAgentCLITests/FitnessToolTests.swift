import Testing
import Foundation
@testable import EdgeAgentCLI

/// `edge-agent steps|activity|floors`: the CSV contracts of
/// ../shared/bench/activity and their bad inputs.
@Suite struct FitnessToolTests {
    func run(_ args: [String]) -> (Int32, String) {
        let (c, _, err) = Console.capturing()
        return (EdgeAgentCLI.run(["edge-agent"] + args, console: c), err())
    }
    func temp(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("fit-\(UUID().uuidString)-\(name)").path
    }
    /// A walk: 1.8 steps/s, 30 s, gravity on y, barometer every 4th row.
    func walkCSV() -> String {
        var s = "t,ax,ay,az,gx,gy,gz,p\n"
        for i in 0..<3000 {
            let t = Double(i) / 100
            let ph = (t * 1.8).truncatingRemainder(dividingBy: 1)
            let bump = ph < 0.6 ? 2.5 * 0.5 * (1 - cos(2 * .pi * ph / 0.6)) - 0.75 : -0.75
            s += "\(t),0.1,\(9.80665 + bump),0.2,0.01,0.02,0.03,\(i % 4 == 0 ? "101325.0" : "")\n"
        }
        return s
    }

    @Test(arguments: [("steps", "t,steps,cadence,distance"), ("activity", "t,activity,confidence"),
                      ("floors", "t,floors_ascended,floors_descended,rel_floor")])
    func oneRowPerInputRowWithTheSameT(tool: String, header: String) throws {
        let input = temp("in.csv"), output = temp("out.csv")
        try walkCSV().write(toFile: input, atomically: true, encoding: .utf8)
        let (status, err) = run([tool, input, output])
        #expect(status == 0, "\(err)")
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(lines.first.map(String.init) == header)
        #expect(lines.count == 3001)
        let inT = walkCSV().split(separator: "\n").dropFirst().map { $0.split(separator: ",")[0] }
        #expect(lines.dropFirst().map { $0.split(separator: ",")[0] } == Array(inT))
        if tool == "steps" {
            let steps = lines.dropFirst().map { Int($0.split(separator: ",")[1])! }
            #expect(zip(steps, steps.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(abs(steps.last! - 53) <= 2, "\(steps.last!) of 53 steps")   // 29.4 s × 1.8
        }
        if tool == "activity" {
            let labels = Set(lines.dropFirst().map { String($0.split(separator: ",")[1]) })
            #expect(labels.isSubset(of: ["stationary", "walking", "running", "cycling", "automotive", "unknown"]))
            #expect(lines.last!.hasSuffix("walking,high"))
        }
    }

    @Test(arguments: [
        ("", "empty"),
        ("t,ax,ay,az\n0,0,0,9.8\n", "header"),
        ("t,ax,ay,az,gx,gy,gz,p\n0,0,0,9.8,,,,\n0.01,0,0,9.8,,,,\n0.005,0,0,9.8,,,,\n", "increase"),
        ("t,ax,ay,az,gx,gy,gz,p\n0,0,0,9.8,,,,\n0.01,0,x,9.8,,,,\n", "not a number"),
        ("t,ax,ay,az,gx,gy,gz,p\n0,0,0,9.8,,,,\n0.01,0,9.8,,,,\n", "cells"),
        ("t,ax,ay,az,gx,gy,gz,p\n", "no samples"),
    ])
    func badInputIsAClearErrorWithExitStatus2(text: String, says: String) throws {
        let input = temp("bad.csv"), output = temp("out.csv")
        try text.write(toFile: input, atomically: true, encoding: .utf8)
        for tool in ["steps", "activity", "floors"] {
            let (status, err) = run([tool, input, output])
            #expect(status == 2, "\(tool): \(err)")
            #expect(err.contains(input) && err.contains(says), "\(tool): \(err)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
    }

    @Test func aMissingFileAndBadUseExit2() {
        #expect(run(["steps", "/nonexistent/in.csv", temp("o.csv")]).0 == 2)
        #expect(run(["steps", temp("only-one.csv")]).0 == 2)
        #expect(run(["floors", "--floor-height", "0", temp("a.csv"), temp("b.csv")]).0 == 2)
    }
}
