import Testing
import Foundation
@testable import EdgeFusion

/// The heading correction of the edge path (`magnetometerSelfCalibration`
/// on) uses `tauMagSelfCalibrated` (30 s), VQF's path `tauMag` (9 s). The
/// heading offset δ is a first-order low-pass of the disagreement between
/// the field's heading and the gyroscope's (gain 1 − exp(−dt/τ) per field
/// sample), so against the truth of a first-order filter:
///
/// * a heading error of the field that swings with angular frequency ω
///   (iron near the path, a calibration's leftover: the field's direction
///   wrong by A sin ωt) reaches the attitude as A/√(1 + (ωτ)²);
/// * a vertical gyroscope bias b that nothing observes (turning flat, never
///   at rest) leaves a heading lag of b·τ (a first-order filter following a ramp).
///
/// The first is what BROAD rewards (docs/fusion.md, leave-one-trial-out), the
/// second what it costs.
@Suite struct HeadingTimeConstantTests {
    static let dt = 0.005
    static let turnRate = 30.0 * .pi / 180       // rad/s about the vertical

    /// The settings each path's filter runs with.
    @Test func edgePathRunsWithItsOwnTimeConstantVQFPathWithVQFs() throws {
        var s = AttitudeFilter.Settings()
        #expect(s.running.tauMag == 30)
        s.magnetometerSelfCalibration = false
        #expect(s.running == s && s.running.tauMag == 9)
        let decoded = try JSONDecoder().decode(AttitudeFilter.Settings.self, from: Data(#"{"tauMagSelfCalibrated": 20}"#.utf8))
        #expect(decoded.running.tauMag == 20 && decoded.tauMag == 9)
    }

    /// RMS heading error (rad) over the last `window` seconds of a flat board
    /// turning at `turnRate`, the field rotated by `fieldError(t)` about the
    /// vertical, the gyroscope's vertical bias `bias`.
    static func headingError(settings: AttitudeFilter.Settings, duration: Double, window: Double,
                             fieldError: @escaping (Double) -> Double, bias: Double = 0) -> (rms: Double, mean: Double) {
        var synthetic = Synthetic()
        synthetic.dt = dt
        synthetic.gyroNoise = 0
        synthetic.accelNoise = 0
        synthetic.magNoise = 0
        synthetic.gyroBias = Vector3(0, 0, bias)
        let truth = { (t: Double) in Quaternion(yaw: turnRate * t) }
        let data = synthetic.generate(duration: duration, orientation: truth, magDisturbance: { t in
            let m = Synthetic.earthField
            return truth(t).conjugate.rotate(Quaternion(yaw: fieldError(t)).rotate(m) - m)
        })
        var filter = AttitudeFilter(settings: settings.running, sampleInterval: dt)
        var sum = 0.0, sumSquares = 0.0, count = 0.0
        for s in data {
            filter.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: dt)
            guard s.t >= duration - window else { continue }
            let d = filter.deviceMotion(in: .xMagneticNorthZVertical).attitude.quaternion * s.truth.conjugate
            let e = 2 * mathAtan2(d.z, d.w)
            let wrapped = mathAtan2(mathSin(e), mathCos(e))
            sum += wrapped; sumSquares += wrapped * wrapped; count += 1
        }
        return ((sumSquares / count).squareRoot(), sum / count)
    }

    @Test(arguments: [true, false])
    func aSwingingFieldErrorIsLowPassedWithThePathsTimeConstant(edge: Bool) {
        var settings = AttitudeFilter.Settings()
        settings.magnetometerSelfCalibration = edge
        let amplitude = 3 * Double.pi / 180, omega = 2 * Double.pi / 10
        let rms = Self.headingError(settings: settings, duration: 240, window: 120,
                                    fieldError: { amplitude * mathSin(omega * $0) }).rms
        let tau = settings.running.tauMag
        let expected = amplitude / 2.0.squareRoot() / (1 + omega * omega * tau * tau).squareRoot()
        #expect(abs(rms / expected - 1) < 0.1, "RMS \(rms * 180 / .pi)° against \(expected * 180 / .pi)° for τ = \(tau) s")
    }

    @Test(arguments: [true, false])
    func anUnobservedVerticalGyroBiasLagsByBiasTimesTimeConstant(edge: Bool) {
        var settings = AttitudeFilter.Settings()
        settings.magnetometerSelfCalibration = edge
        let bias = 0.1 * Double.pi / 180
        let tau = settings.running.tauMag
        let mean = Self.headingError(settings: settings, duration: 240, window: 60, fieldError: { _ in 0 }, bias: bias).mean
        #expect(abs(abs(mean) / (bias * tau) - 1) < 0.15, "lag \(mean * 180 / .pi)° against \(bias * tau * 180 / .pi)° for τ = \(tau) s")
    }
}
