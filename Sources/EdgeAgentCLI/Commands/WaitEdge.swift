import EdgeCommandLine
import EdgeBus
import EdgeLinux

/// `edge-agent wait-edge`: a wiring check for the data-ready line.
public enum WaitEdgeCommand: Subcommand {
    public static let name = "wait-edge"
    public static let summary = "Wait for rising edges on a GPIO line (check the MPU-6050 INT wiring)"
    public static let help = """
    Usage: edge-agent wait-edge --chip LABEL --line N [--count K] [--timeout S]

    Waits for K rising edges (default 10) on a GPIO line through libgpiod and
    prints each edge's monotonic timestamp. Use it to check that the
    MPU-6050's INT pin reaches the Pi: with the agent configured for a
    data-ready interrupt the line pulses once per sample.

    Options:
      --chip LABEL   GPIO chip label as `gpiodetect` prints it (pinctrl-bcm2711
                     on a Pi 4, pinctrl-rp1 on a Pi 5), or /dev/gpiochipN
      --line N       line offset (on a Pi: the BCM GPIO number, e.g. 17)
      --count K      edges to wait for, 1 to 1000000 (default 10)
      --timeout S    seconds to wait for each edge (default 2)

    Output: one line per edge, `edge <n> t_ns=<monotonic ns> dt_ms=<since previous>`.
    Once the line is requested (edges from then on are counted) it says so
    on standard error: `waiting for K rising edges on LABEL line N`.

    Exit status: 0 every edge came; 1 an edge did not come in time (or the
    GPIO line cannot be opened); 2 bad usage.
    """

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        guard let chip = try a.option("--chip") else { throw UsageError("--chip LABEL is required") }
        guard let line = try a.int("--line", in: 0...1023) else { throw UsageError("--line N is required") }
        let count = try a.int("--count", in: 1...1_000_000) ?? 10
        let timeout = try a.double("--timeout", in: 0.001...3600) ?? 2
        try a.finish()
        let gpio = try LibgpiodLine(chipLabel: chip, offset: line)
        // The kernel queues edges from the request on, so a script (or a
        // person) may start pulsing the line once this is printed.
        console.error("waiting for \(count) rising edge\(count == 1 ? "" : "s") on \(chip) line \(line)")
        var previous: UInt64?
        for n in 1...count {
            guard let t = try gpio.waitForEdge(timeoutNanoseconds: UInt64(timeout * 1e9)) else {
                console.error("no rising edge on \(chip) line \(line) within \(timeout) s (edge \(n) of \(count)): check the INT wiring and that the chip's data-ready interrupt is enabled")
                return 1
            }
            let dt = previous.map { " dt_ms=\(Double(t &- $0) / 1e6)" } ?? ""
            console.print("edge \(n) t_ns=\(t)\(dt)")
            previous = t
        }
        return 0
    }
}
