// edge-mqtt's command options, read by the package's one argument reader.
import Testing
import EdgeCommandLine
@testable import EdgeMQTT

@Suite struct OptionsTests {
    @Test func eachCommandTakesItsOwnOptionsInEitherForm() throws {
        let o = try Options(["--config=/etc/b.json5", "--node", "pi4", "--verbose"], command: "run")
        #expect(o.config == "/etc/b.json5" && o.node == "pi4" && o.verbose)
        let c = try Options(["--timeout", "2.5"], command: "check")
        #expect(c.timeoutS == 2.5)
        let s = try Options(["--socket", "/run/x.sock", "--json"], command: "status")
        #expect(s.statusSocket == "/run/x.sock" && s.json)
    }

    /// Unknown options read as edge-agent's and dive-logger's do: quoted,
    /// with the nearest option of this command (on main edge-mqtt wrote
    /// "unknown option --confg (did you mean --config?)", unquoted).
    @Test func anUnknownOptionIsNamedAsTheOtherToolsNameIt() {
        #expect(throws: UsageError("unknown option '--confg' (did you mean '--config'?)")) {
            _ = try Options(["--confg", "x"], command: "run")
        }
        // --json is status's, not run's
        #expect(throws: UsageError("unknown option '--json'")) { _ = try Options(["--json"], command: "run") }
        #expect(throws: UsageError("--timeout must be a number of seconds from 0 to 600, got 0")) {
            _ = try Options(["--timeout", "0"], command: "check")
        }
        #expect(throws: UsageError("--node needs a value")) { _ = try Options(["--node"], command: "discovery") }
    }
}
