// accelerometerDataFrequency from the batches' samples (issue 21): a
// loaded CI run measured 199 Hz from a batch of a 200 Hz IMU (capture stamps
// jitter by a few ms over a one-second batch) and reported it.
@testable import CoreMotion
import Testing

@Suite struct BatchRateTests {
    @Test func aMeasuredRateNearTheReportedOneIsTheReportedOne() {
        // 200 samples, stamps 5 ms apart but the last one read 5 ms late:
        // 199 gaps over 1.000 s measure 199 Hz; the chip runs at 200.
        let measured = Int((199 * 1e9 / 1_000_000_000.0).rounded())
        #expect(measured == 199)
        #expect(MotionService.nominal(measured: measured, reported: 200) == 200)
        #expect(MotionService.nominal(measured: 201, reported: 200) == 200)
        #expect(MotionService.nominal(measured: 194, reported: 200) == 200)
    }

    @Test func aRateThatDiffersIsTheMeasuredOne() {
        // The IMU was re-rated (another client asked for 100 Hz) or the
        // agent reports idle (0): the samples say what they came at.
        #expect(MotionService.nominal(measured: 100, reported: 200) == 100)
        #expect(MotionService.nominal(measured: 190, reported: 200) == 190)
        #expect(MotionService.nominal(measured: 199, reported: 0) == 199)
    }
}
