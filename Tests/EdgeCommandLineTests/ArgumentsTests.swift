// The one command-line reader of edge-agent, edge-mqtt and dive-logger.
import Testing
import EdgeCommandLine

@Suite struct ArgumentsTests {
    @Test func optionsTakeTheirValueInEitherFormAndFlagsAndPositionalsAreTakenOut() throws {
        var a = Arguments(["export", "--db=/x/d.sqlite", "3", "--format", "csv", "--json", "-"], command: "dive-logger")
        #expect(try a.option("--db") == "/x/d.sqlite")
        #expect(try a.option("--format") == "csv")
        #expect(try a.option("--output") == nil)
        #expect(a.flag("--json") && !a.flag("--json"))
        #expect(try a.positional("a command") == "export")
        #expect(try a.positional("N") == "3")
        #expect(try a.positional("FILE") == "-")      // standard input is a positional
        try a.finish()
        #expect(a.remaining.isEmpty)
    }

    @Test func badUseSaysWhatIsWrong() {
        var a = Arguments(["--config", "--verbose"], command: "run")
        #expect(throws: UsageError("--config needs a value")) { _ = try a.option("--config") }
        var b = Arguments(["--rate", "fast", "--count", "2.5"], command: "read")
        #expect(throws: UsageError("--rate expects a number, got 'fast'")) { _ = try b.double("--rate") }
        #expect(throws: UsageError("--count expects a whole number, got '2.5'")) { _ = try b.int("--count") }
        var c = Arguments(["--hz", "5000"], command: "read")
        #expect(throws: UsageError("--hz must be between 1.0 and 1000.0, got 5000")) { _ = try c.double("--hz", in: 1...1000) }
        var d = Arguments([], command: "show")
        #expect(throws: UsageError("missing N")) { _ = try d.positional("N") }
        #expect(throws: UsageError("unexpected argument 'extra'")) { try Arguments(["extra"], command: "list").finish() }
    }

    /// An unknown option is named, with the nearest known one when it is a
    /// typo (two edits at most), in one form for all three tools.
    @Test func anUnknownOptionIsNamedWithTheNearestKnownOne() {
        let known = ["--agent-socket", "--config", "--node", "--status-socket", "--verbose"]
        #expect(throws: UsageError("unknown option '--confg' (did you mean '--config'?)")) {
            try Arguments(["--confg", "x"], command: "run").finish(known: known)
        }
        #expect(throws: UsageError("unknown option '--nod=a' (did you mean '--node'?)")) {
            try Arguments(["--nod=a"], command: "run").finish(known: known)
        }
        #expect(throws: UsageError("unknown option '--frobnicate'")) {
            try Arguments(["--frobnicate"], command: "run").finish(known: known)
        }
    }

    @Test func editDistanceIsLevenshtein() {
        // Worked examples: kitten → sitting is 3 (two substitutions, one insertion).
        #expect(Arguments.editDistance("kitten", "sitting") == 3)
        #expect(Arguments.editDistance("", "abc") == 3)
        #expect(Arguments.editDistance("chek", "check") == 1)
        #expect(Arguments.editDistance("flaw", "lawn") == 2)
    }
}
