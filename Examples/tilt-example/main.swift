// tilt-example: a spirit level in the terminal, written as an iOS developer
// writes one - CMMotionManager, device motion delivered on the main queue -
// with nothing Linux-specific but the last line: a command-line program has
// no UIApplication to run the main run loop, so it runs it itself (or calls
// dispatchMain()); without that, handlers given OperationQueue.main never
// run.
//
//   swift run tilt-example              until Ctrl-C
//   swift run tilt-example --seconds 5  for five seconds
//
// The data comes from the running agent, or, when none answers, from an
// agent started inside this process on the configured board (the
// simulated board by default): the opt-in of the CoreMotionInProcessAgent
// product, the one line an iOS app would not have.
import CoreMotion
import CoreMotionInProcessAgent

EdgeMotionInProcessAgent.install()

let motion = CMMotionManager()
let seconds = CommandLine.arguments.firstIndex(of: "--seconds").flatMap { i in
    i + 1 < CommandLine.arguments.count ? Double(CommandLine.arguments[i + 1]) : nil
}
let onTerminal = isatty(1) == 1

guard motion.isDeviceMotionAvailable else {
    print("tilt-example: this board has no IMU for device motion")
    exit(1)
}

/// A bubble in a tube `width` characters long: 0° in the middle, ±`range`°
/// at the ends.
func tube(_ degrees: Double, range: Double = 30, width: Int = 31) -> String {
    let half = Double(width / 2)
    let at = Int((min(max(degrees / range, -1), 1) * half + half).rounded())
    return String((0..<width).map { $0 == at ? "o" : ($0 == width / 2 ? "|" : "-") })
}

func format(_ degrees: Double) -> String {
    let tenths = Int((degrees * 10).rounded())
    let text = "\(tenths < 0 ? "-" : "+")\(abs(tenths) / 10).\(abs(tenths) % 10)°"
    return String(repeating: " ", count: max(0, 7 - text.count)) + text
}

motion.deviceMotionUpdateInterval = 1.0 / 20
motion.startDeviceMotionUpdates(to: .main) { data, error in
    if let error {
        print("\ntilt-example: \(error.localizedDescription)")
        exit(1)
    }
    guard let attitude = data?.attitude else { return }
    let roll = attitude.roll * 180 / .pi, pitch = attitude.pitch * 180 / .pi
    let level = abs(roll) < 1 && abs(pitch) < 1 ? "  level" : "       "
    let line = "roll \(format(roll)) [\(tube(roll))]   pitch \(format(pitch)) [\(tube(pitch))]\(level)"
    if onTerminal {
        print("\r" + line, terminator: "")
        fflush(nil) // all streams: stdout, line by line
    } else {
        print(line)
    }
}

if let seconds {
    DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
        motion.stopDeviceMotionUpdates()
        if onTerminal { print() }
        exit(0)
    }
}

// What UIApplicationMain does on iOS: run the main run loop, which serves
// the main queue.
RunLoop.main.run()
