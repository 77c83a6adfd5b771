import EdgeFusion
import EdgeValues

/// What an IMU's first moments tell when it starts at rest: its gyroscope
/// bias, and the part of its accelerometer's offset along gravity.
///
/// The attitude filter (VQF) learns the gyroscope bias once its rest
/// detector has seen `restMinTime` (1.5 s) of rest through its 0.5 s
/// low-pass: until then an uncalibrated MPU-6050 reports its bias as
/// rotation (0.02 rad/s on the simulated accessory), and its offset along
/// gravity as user acceleration (0.045 g), which a head-nod detector takes
/// for a nod. Apple's headphone motion starts at about 0 (issue 21, item 9).
///
/// Over the first `seconds` of samples: at rest when every axis of the
/// gyroscope and the accelerometer stays within VQF's rest thresholds of
/// its mean (RMS, `gyroDeviation` 2 °/s, `accelDeviation` 0.5 m/s²: VQF's
/// restThGyr and restThAcc) and the mean rate within VQF's biasClip (a
/// steady turn is not a bias). Then the mean rate is the bias, and the
/// mean specific force less g along it the offset. Only the offset's
/// component along gravity shows at rest (the rest of it looks like tilt),
/// and a scale error looks like an offset there: on a calibrated chip the
/// correction is the calibration's residual at that orientation.
struct StartupRest {
    struct Settings {
        var seconds = 0.25
        /// rad/s, RMS per axis about the mean.
        var gyroDeviation = 2 * Double.pi / 180
        /// m/s², RMS per axis about the mean.
        var accelDeviation = 0.5
        /// rad/s: the largest bias taken, per axis (VQF's biasClip, 2 °/s;
        /// its rest detector too refuses a mean rate above it). A steady
        /// turn has no spread either: this tells the two apart.
        var maxBias = 2 * Double.pi / 180
        /// m/s² (the filter's gravity).
        var g = standardGravity
    }

    enum Outcome: Equatable {
        /// Still collecting: publish nothing yet.
        case collecting
        /// At rest: the gyroscope's bias (rad/s) and the accelerometer's
        /// offset along gravity (m/s²), both in the sensor frame.
        case atRest(gyroBias: Vector3, accelOffset: Vector3)
        /// It moved: nothing learned; publish from now on.
        case moving
    }

    let settings: Settings
    private(set) var elapsed = 0.0
    private(set) var n = 0.0
    private var gyroSum = Vector3.zero, gyroSquares = Vector3.zero
    private var accelSum = Vector3.zero, accelSquares = Vector3.zero
    private(set) var outcome = Outcome.collecting

    init(settings: Settings = Settings()) { self.settings = settings }

    /// Adds one sample (`dt` s after the previous); returns the outcome,
    /// which stays once decided.
    mutating func update(gyro: Vector3, accel: Vector3, dt: Double) -> Outcome {
        guard outcome == .collecting else { return outcome }
        n += 1; elapsed += dt
        gyroSum += gyro; gyroSquares += gyro * gyro
        accelSum += accel; accelSquares += accel * accel
        guard elapsed >= settings.seconds, n >= 2 else { return .collecting }
        let gm = gyroSum / n, am = accelSum / n
        let gv = gyroSquares / n - gm * gm, av = accelSquares / n - am * am
        let still = (0..<3).allSatisfy { gv[$0] <= settings.gyroDeviation * settings.gyroDeviation
            && av[$0] <= settings.accelDeviation * settings.accelDeviation && abs(gm[$0]) <= settings.maxBias }
        let norm = am.norm
        guard still, norm > 0.5 * settings.g, norm < 1.5 * settings.g else { outcome = .moving; return outcome }
        outcome = .atRest(gyroBias: gm, accelOffset: am * ((norm - settings.g) / norm))
        return outcome
    }

    /// Starts over (the input was lost: the next start is a new one).
    mutating func restart() { self = StartupRest(settings: settings) }
}
