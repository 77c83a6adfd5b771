import Testing
@testable import EdgeActivity

/// The walk model is the truth the pedometer, floor and activity tests are
/// scored against, so it must stay physical: what it generates is what an
/// IMU could report.
@Suite struct GaitModelTests {
    /// Every sample of every placement's walk, and of stair climbs made of
    /// several walks (seed 62 is the stress set's `stairs_up4_20cms_backPocket`,
    /// whose third walk ended on a sample of 30 000 m/s²: the limb angle
    /// jumped to 0 during the last stride, and the 1 ms second difference
    /// of the board's position turned the jump into thousands of g; the
    /// pedometer's RMS took 14 s to recover and a floor was lost), stays
    /// within the MPU-6050's widest ranges: ±16 g and ±2000 °/s (register
    /// map rev 4.2 §4.4-4.5).
    @Test(arguments: [62, 1, 2, 3] as [UInt64])
    func accelerationsAndRatesStayWithinAnMPU6050sRange(seed: UInt64) {
        var recordings: [GaitModel.Recording] = []
        for placement in GaitModel.Placement.allCases {
            for cadence in [1.0, 1.25, 1.8, 2.2] {
                var g = GaitModel(); g.placement = placement; g.cadence = cadence; g.seconds = 30; g.seed = seed
                recordings.append(g.generate())
            }
        }
        var m = StairModel(); m.seed = seed; m.pauseSeconds = 3; m.placement = .backPocket
        recordings.append(m.generate().imu)
        let aMax = 16 * 9.80665, wMax = 2000 * Double.pi / 180
        for (k, r) in recordings.enumerated() {
            let worstA = r.a.map { ($0 * $0).sum().squareRoot() }.max() ?? 0
            let worstW = r.g.map { ($0 * $0).sum().squareRoot() }.max() ?? 0
            #expect(worstA <= aMax, "recording \(k): |a| up to \(worstA) m/s²")
            #expect(worstW <= wMax, "recording \(k): |ω| up to \(worstW) rad/s")
        }
    }
}
