import Testing
import Foundation

/// The chip layer's data and decoders live where nothing but the standard
/// library (and EdgeValues, whose only import is the C maths library) is
/// imported: no bus module, no libi2c, no libgpiod. This test target itself
/// links EdgeChipsCore alone, so the decoders are tested without them.
@Suite struct LayeringTests {
    static let sources: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Sources")
    }()

    func imports(of module: String) throws -> Set<String> {
        let dir = Self.sources.appendingPathComponent(module)
        var out = Set<String>()
        for f in FileManager.default.enumerator(atPath: dir.path)!.compactMap({ $0 as? String }) where f.hasSuffix(".swift") {
            let text = try String(contentsOf: dir.appendingPathComponent(f), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                if let i = words.firstIndex(of: "import"), i + 1 < words.count, words[..<i].allSatisfy({ $0.hasPrefix("@") }) {
                    out.insert(String(words[i + 1]))
                }
            }
        }
        return out
    }

    @Test func theChipCoreImportsOnlyEdgeValues() throws {
        #expect(try imports(of: "EdgeChipsCore") == ["EdgeValues"])
        #expect(try imports(of: "EdgeValues").isSubset(of: ["Glibc", "Musl", "Darwin"]))
    }

    @Test func onlyTheLinuxModuleTouchesTheCLibraries() throws {
        for module in ["EdgeBus", "EdgeChips", "EdgeChipsCore", "EdgeEngine", "EdgeFusion", "EdgeProtocol", "EdgeConfig"] {
            let i = try imports(of: module)
            #expect(i.isDisjoint(with: ["CI2C", "CGPIOD"]), "\(module) imports \(i.intersection(["CI2C", "CGPIOD"]))")
        }
        #expect(try imports(of: "EdgeLinux").isSuperset(of: ["CI2C", "CGPIOD"]))
    }
}
