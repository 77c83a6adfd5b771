import Testing
import Foundation
@testable import EdgeFusion

@Suite struct EllipsoidFitTests {
    /// Directions spread over the sphere (Fibonacci lattice).
    static func directions(_ n: Int) -> [Vector3] {
        (0..<n).map { i in
            let z = 1 - 2 * (Double(i) + 0.5) / Double(n)
            let r = (1 - z * z).squareRoot(), phi = Double(i) * 2.399963229728653
            return Vector3(r * mathCos(phi), r * mathSin(phi), z)
        }
    }

    let truth = MagnetometerCalibration(
        hardIron: Vector3(12.5, -20, 7.25),
        softIron: {
            // symmetric positive definite, determinant 1
            let m = Matrix3(Vector3(1.10, 0.05, -0.03), Vector3(0.05, 0.92, 0.04), Vector3(-0.03, 0.04, 1.0))
            return (1 / mathCbrt(m.determinant)) * m
        }())

    @Test func recoversKnownHardAndSoftIron() throws {
        let raw = Self.directions(300).map { truth.distort($0 * 48) }
        let fit = try MagnetometerCalibration.fit(raw)
        #expect((fit.hardIron - truth.hardIron).norm < 1e-6)
        let d = fit.softIron - truth.softIron
        #expect(d.r0.norm + d.r1.norm + d.r2.norm < 1e-6)
        #expect(abs(fit.fieldStrength - 48) < 1e-6)
        #expect(fit.residual < 1e-9)
        for s in raw { #expect(abs(fit.apply(s).norm - 48) < 1e-6) }
    }

    @Test func toleratesNoiseAndPartialCoverage() throws {
        var rng = Synthetic.Random(seed: 3)
        // a few seconds of turning: upper three quarters of the sphere only, noisy
        let raw = Self.directions(400).filter { $0.z > -0.5 }.map { truth.distort($0 * 50) + rng.vector(0.3) }
        let fit = try MagnetometerCalibration.fit(raw)
        #expect((fit.hardIron - truth.hardIron).norm < 1.0)
        #expect(fit.residual < 0.02)
    }

    @Test func rejectsTooFewOrDegenerateSamples() {
        #expect(throws: EllipsoidFitError.tooFewSamples(got: 3, needed: 12)) {
            try MagnetometerCalibration.fit([Vector3(1, 0, 0), Vector3(0, 1, 0), Vector3(0, 0, 1)])
        }
        // all in one plane: no ellipsoid
        let planar = (0..<50).map { i in Vector3(mathCos(Double(i)), mathSin(Double(i)), 0) * 40 }
        #expect(throws: EllipsoidFitError.self) { try MagnetometerCalibration.fit(planar) }
    }

    @Test func calibrationRoundTripsThroughJSON() throws {
        let data = try JSONEncoder().encode(truth)
        let back = try JSONDecoder().decode(MagnetometerCalibration.self, from: data)
        #expect(back == truth)
        let text = #"{"hardIron":[1,2,3],"softIron":[[1,0,0],[0,2,0],[0,0,0.5]]}"#
        let c = try JSONDecoder().decode(MagnetometerCalibration.self, from: Data(text.utf8))
        #expect(c.apply(Vector3(2, 3, 5)) == Vector3(1, 2, 1))
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(MagnetometerCalibration.self, from: Data(#"{"hardIron":[1,2]}"#.utf8))
        }
    }

    @Test func calibrationIsAppliedBeforeFusion() {
        // a badly distorted magnetometer, calibrated, gives the right heading
        var settings = AttitudeFilter.Settings()
        settings.magnetometerCalibration = truth
        let q = Quaternion(yaw: 1.0)
        var f = AttitudeFilter(settings: settings, sampleInterval: 0.005)
        for _ in 0..<600 {
            let m = truth.distort(q.inverseRotate(Synthetic.earthField))
            f.update(gyro: .zero, accel: q.inverseRotate(Vector3(0, 0, 9.81)), mag: m, dt: 0.005)
        }
        #expect(f.quaternion(in: .xMagneticNorthZVertical).angle(to: q) < 0.5 * deg)
    }
}
