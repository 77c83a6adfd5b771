// altitude-example: an altitude logger, written as an iOS developer writes
// one - CMAltimeter's relative altitude (and the absolute altitude where
// the device has it), handlers on the main queue - printing one CSV line a
// sample. A command-line program runs the main queue itself: dispatchMain()
// here (RunLoop.main.run() serves it as well).
//
//   swift run altitude-example              until Ctrl-C
//   swift run altitude-example --seconds 10 for ten seconds
//
// The data comes from the running agent, or, when none answers, from an
// agent started inside this process on the configured board (the
// simulated board by default): the opt-in of the CoreMotionInProcessAgent
// product, the one line an iOS app would not have.
import CoreMotion
import CoreMotionInProcessAgent

EdgeMotionInProcessAgent.install()

let altimeter = CMAltimeter()
let seconds = CommandLine.arguments.firstIndex(of: "--seconds").flatMap { i in
    i + 1 < CommandLine.arguments.count ? Double(CommandLine.arguments[i + 1]) : nil
}

guard CMAltimeter.isRelativeAltitudeAvailable() else {
    print("altitude-example: this board has no barometer")
    exit(1)
}
switch CMAltimeter.authorizationStatus() {
case .denied, .restricted:
    print("altitude-example: not allowed to read the altitude (the agent's configuration grants this user no \"altitude\" entitlement)")
    exit(1)
default:
    break
}

func fixed(_ value: Double, _ digits: Int) -> String {
    String(format: "%.\(digits)f", value)
}

/// The newest absolute altitude, for the log's last columns.
var absolute: CMAbsoluteAltitudeData?

print("time_s,relative_altitude_m,pressure_kpa,altitude_m,accuracy_m")
if CMAltimeter.isAbsoluteAltitudeAvailable() {
    altimeter.startAbsoluteAltitudeUpdates(to: .main) { data, error in
        if let data { absolute = data }
    }
}
var start: TimeInterval?
altimeter.startRelativeAltitudeUpdates(to: .main) { data, error in
    if let error {
        print("altitude-example: \(error.localizedDescription)")
        exit(1)
    }
    guard let data else { return }
    let t = data.timestamp - (start ?? data.timestamp)
    if start == nil { start = data.timestamp }
    let columns = [fixed(t, 2), fixed(data.relativeAltitude.doubleValue, 2), fixed(data.pressure.doubleValue, 3),
                   absolute.map { fixed($0.altitude, 1) } ?? "", absolute.map { fixed($0.accuracy, 1) } ?? ""]
    print(columns.joined(separator: ","))
    fflush(nil) // all streams: stdout, line by line
}

if let seconds {
    DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
        altimeter.stopRelativeAltitudeUpdates()
        altimeter.stopAbsoluteAltitudeUpdates()
        exit(0)
    }
}

dispatchMain()
