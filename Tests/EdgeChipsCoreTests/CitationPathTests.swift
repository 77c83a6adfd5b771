import Testing
import Foundation

/// Sources and documentation cite datasheets by document, revision and
/// section, and outside tools by how to get them, never by a path on one
/// build machine, which no user has (issue 8, "the house"). A user's home
/// (the Raspberry Pi's default user's) may appear in examples on purpose.
@Suite struct CitationPathTests {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    /// Prefixes that only ever name a developer's or a CI machine's files.
    /// Spelled in pieces, so this file does not itself contain them.
    static let buildMachinePrefixes = ["/wo" + "rk/", "/ro" + "ot/", "/Us" + "ers/"]
    static let home = "/ho" + "me/", piHome = "/ho" + "me/pi"

    static func offending(in text: String) -> [String] {
        var found: [String] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            for p in buildMachinePrefixes where line.contains(p) { found.append("line \(n + 1): \(p)") }
            if line.contains(home), !line.contains(piHome), !line.contains(home + "$") { found.append("line \(n + 1): \(home)") }
        }
        return found
    }

    @Test func theDetectorFindsWhatItLooksFor() {
        #expect(Self.offending(in: "see " + Self.buildMachinePrefixes[0] + "shared/reference/sensors.md §2").count == 1)
        #expect(Self.offending(in: "see " + Self.home + "dev/notes.md").count == 1)
        #expect(Self.offending(in: "// RM-MPU-6000A-00 rev 4.2 §4.15\nconfig: " + Self.piHome + "/agent.json5").isEmpty)
    }

    @Test func noSourceOrDocumentCitesABuildMachinePath() throws {
        let fm = FileManager.default
        var offenders: [String] = []
        for top in ["Sources", "docs", "boards", "scenarios", "config", "deploy", "README.md"] {
            let url = Self.root.appendingPathComponent(top)
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: url.path, isDirectory: &isDir) else { continue }
            let files = isDir.boolValue
                ? (fm.enumerator(atPath: url.path)?.compactMap { $0 as? String }.map { url.appendingPathComponent($0) } ?? [])
                : [url]
            for f in files where ["swift", "md", "json5", "c", "h", "service", "sh"].contains(f.pathExtension) {
                guard let text = try? String(contentsOf: f, encoding: .utf8) else { continue }
                for o in Self.offending(in: text) { offenders.append("\(f.path.dropFirst(Self.root.path.count + 1)) \(o)") }
            }
        }
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }
}
