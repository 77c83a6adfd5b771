import Testing
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// One IMU sample a tick (a rate the delivery interval holds one sample of:
/// 50 Hz and below with the default 20 ms, any rate with 0) against a
/// simulated MPU-6050 whose sample clock runs 1 % fast, exact or 1 % slow
/// (PS-MPU-6000A-00 rev 3.4 §6.4: ±1 % with the PLL). The loop ticks on
/// the system's clock at the nominal rate, so the chip's samples slip
/// against it: once every 100 ticks a tick finds two samples made since
/// the last (fast) or none (slow).
///
/// KNOWN ISSUE (open; docs/agent.md, "Known limits"): at one sample a tick the
/// IMU is read from its data registers, not its FIFO, so the first of two
/// samples is overwritten before it is read (fast: 10 of 1010 lost in
/// 20 s), and every sample is stamped with its tick's time (slow: a gap of
/// two periods after an empty tick), and the gyro is integrated over those
/// stamps. Reading through the FIFO at one sample a tick, and stamping the
/// earliest capture a read allows, makes this test pass (tried),
/// but then every IMU sample comes before the same tick's magnetometer
/// field, which the fusion's field-freshness rules take as no current field
/// (see SampleClockTests' known issue): both sensors' stamps must move to
/// capture estimates together.
@Suite struct ChipClockStampTests {
    @Test(arguments: [0.01, 0.0, -0.01])
    func oneSampleATickKeepsEverySampleAndTheChipsSpacing(_ clockError: Double) throws {
        var imperfections = MPU6050Imperfections.realistic
        imperfections.pllClockError = clockError
        imperfections.internalClockError = clockError
        var s = EngineSettings()
        s.mpu6050.sampleRateHz = 50
        let rig = try Rig(settings: s, imuImperfections: .mpu6050(imperfections))
        rig.hub.start()
        rig.sink.setDemand([.accelerometer: 0.02])
        #expect(rig.loop.periodNanoseconds == 20_000_000)
        rig.run(seconds: 1)
        rig.sink.removeAll()
        let seconds = 20.0
        rig.run(seconds: seconds)
        let t = rig.samples(.accelerometer).map(\.timestampNs)
        // The simulator's period is the nominal one divided by (1 + error).
        let truePeriod = 20_000_000 / (1 + clockError)
        let made = seconds * 1e9 / truePeriod
        let gaps = zip(t.dropFirst(), t).map { Double($0) - Double($1) }
        let check = {
            #expect(abs(Double(t.count) - made) <= 2, "\(t.count) samples delivered, the chip made \(made)")
            #expect(gaps.allSatisfy { $0 > 0.9 * truePeriod && $0 < 1.1 * truePeriod },
                    "stamps \(gaps.min() ?? 0)...\(gaps.max() ?? 0) ns apart; the chip's period is \(truePeriod) ns")
        }
        if clockError == 0 { check() } else { withKnownIssue("samples lost or stamped a tick late (see the doc comment)") { check() } }
        #expect(rig.hub.health(of: "mpu6050@0x68")?.errorCount == 0)
    }
}
