import Testing
import Foundation

/// The Debian packaging (debian/) and the source install (deploy/install.sh)
/// share one copy of each system file in deploy/, and those files agree with
/// each other: what a unit names, sysusers.d creates and tmpfiles.d owns.
/// The installed system itself is tested by
/// Tests/Integration/debian-systemd-test.sh under a real systemd.
@Suite struct DebianPackagingTests {
    /// debian/NAME -> the deploy/ file it must be (a symlink, not a copy).
    static let shared = [
        "edge-agent.service": "edge-agent.service",
        "edge-agent.udev": "99-edge-agent.rules",
        "edge-agent.sysusers": "edge-agent.sysusers",
        "edge-agent.tmpfiles": "edge-agent.tmpfiles",
        "edge-mqtt.service": "edge-mqtt.service",
        "edge-mqtt.sysusers": "edge-mqtt.sysusers",
    ]

    static func read(_ relative: String) -> String {
        (try? String(contentsOfFile: repositoryRoot + "/" + relative, encoding: .utf8)) ?? ""
    }

    /// `Key=Value` lines of a unit, every value of a key that repeats.
    static func unitValues(_ unit: String, _ key: String) -> [String] {
        read("deploy/" + unit).split(separator: "\n").compactMap { line in
            line.hasPrefix(key + "=") ? String(line.dropFirst(key.count + 1)) : nil
        }
    }

    /// The non-comment lines of a sysusers.d or tmpfiles.d file, split into fields.
    static func entries(_ file: String) -> [[String]] {
        read("deploy/" + file).split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map {
            // Quoted GECOS fields hold spaces: keep them whole.
            var fields: [String] = [], current = "", quoted = false
            for ch in $0 {
                if ch == "\"" { quoted.toggle(); continue }
                if ch == " " && !quoted { if !current.isEmpty { fields.append(current); current = "" } } else { current.append(ch) }
            }
            if !current.isEmpty { fields.append(current) }
            return fields
        }
    }

    @Test func debianLinksToTheDeployFilesAndInstallShInstallsThemToo() throws {
        let installSh = Self.read("deploy/install.sh")
        for (name, target) in Self.shared {
            let link = repositoryRoot + "/debian/" + name
            let destination = try FileManager.default.destinationOfSymbolicLink(atPath: link)
            #expect(destination == "../deploy/" + target, "debian/\(name) must be a symlink to deploy/\(target), not a copy")
            #expect(FileManager.default.fileExists(atPath: repositoryRoot + "/deploy/" + target), "deploy/\(target)")
            #expect(installSh.contains("$here/\(target)\""), "deploy/install.sh installs deploy/\(target) too")
        }
        // The module list and the configuration: installed from deploy/ by both.
        #expect(Self.read("debian/rules").contains("deploy/edge-agent.modules-load"))
        #expect(installSh.contains("$here/edge-agent.modules-load\""))
        #expect(Self.read("debian/edge-agent.install").contains("deploy/edge-agent.json5 etc/edge-agent"))
        #expect(Self.read("debian/edge-mqtt.install").contains("deploy/edge-mqtt.json5 etc/edge-mqtt"))
    }

    /// The shared units start the packaged binaries; install.sh rewrites the
    /// one prefix for /usr/local/bin and nothing else.
    @Test func unitsStartTheBinariesThePackagesInstall() {
        for (unit, binary) in [("edge-agent.service", "edge-agent"), ("edge-mqtt.service", "edge-mqtt")] {
            let exec = Self.unitValues(unit, "ExecStart")
            #expect(exec.count == 1 && exec[0].hasPrefix("/usr/bin/\(binary) run "), "\(unit): \(exec)")
            // debian/rules copies each packaged program to debian/bin/ (the
            // bridge from its small-link build) and says from where.
            #expect(Self.read("debian/\(binary).install").contains("debian/bin/\(binary) usr/bin"), "\(binary)")
            #expect(Self.read("debian/rules").contains("BUILT_\(binary) :="), "\(binary)")
        }
        #expect(Self.read("deploy/install.sh").contains("s|^ExecStart=/usr/bin/|ExecStart=/usr/local/bin/|"))
    }

    /// Every user and group a unit runs as is created by its sysusers.d file,
    /// and the user is a member of each supplementary group.
    @Test func sysusersCreatesWhatTheUnitsNeed() {
        for (unit, sysusers) in [("edge-agent.service", "edge-agent.sysusers"), ("edge-mqtt.service", "edge-mqtt.sysusers")] {
            let entries = Self.entries(sysusers)
            let user = Self.unitValues(unit, "User").first ?? ""
            let group = Self.unitValues(unit, "Group").first ?? ""
            let supplementary = Self.unitValues(unit, "SupplementaryGroups").flatMap { $0.split(separator: " ").map(String.init) }
            #expect(entries.contains { $0.count >= 2 && $0[0] == "u" && $0[1] == user }, "\(sysusers) creates user \(user)")
            // `u NAME` also makes the group NAME.
            let groups = Set(entries.filter { $0.count >= 2 && ($0[0] == "g" || $0[0] == "u") }.map { $0[1] })
            for g in [group] + supplementary {
                #expect(groups.contains(g), "\(sysusers) creates group \(g) that \(unit) names")
                if g != user {
                    #expect(entries.contains { $0 == ["m", user, g] }, "\(sysusers) puts \(user) in \(g)")
                }
            }
        }
    }

    /// tmpfiles.d makes the unit's StateDirectory with the unit's user, group and mode.
    @Test func tmpfilesMatchesTheStateDirectory() throws {
        let unit = "edge-agent.service"
        let state = try #require(Self.unitValues(unit, "StateDirectory").first)
        let mode = try #require(Self.unitValues(unit, "StateDirectoryMode").first)
        let line = Self.entries("edge-agent.tmpfiles").first { $0.count >= 5 && $0[0] == "d" }
        #expect(line == ["d", "/var/lib/" + state, mode, Self.unitValues(unit, "User").first ?? "",
                         Self.unitValues(unit, "Group").first ?? "", "-"], "\(line ?? [])")
    }
}
