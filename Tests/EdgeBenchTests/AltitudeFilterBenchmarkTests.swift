import Testing
@testable import edge_bench

/// `edge-bench altitude-filter` (moved here from EdgeFusion with the
/// benchmark): its report meets the altitude targets, is deterministic, and
/// keeps the labels docs/altitude.md quotes. The filter's own targets are
/// tested on independent synthetic data in EdgeFusionTests.
@Suite struct AltitudeFilterBenchmarkTests {
    @Test func reportMeetsTheTargets() {
        let r = AltitudeFilterBenchmark.measure()
        #expect(r.fused.restNoiseRMS <= 5)
        #expect(r.fused.time90 <= 0.3)
        #expect(r.fused.restNoiseRMS < r.lowPass.restNoiseRMS)
        #expect(r.fused.restNoiseRMS < r.raw.restNoiseRMS)
        #expect(r.fused.time90NoiseFree < r.lowPass.time90NoiseFree)
        #expect(r.fused.time90 < r.lowPass.time90)
        #expect(abs(r.fused.finalErrorNoiseFree) < 1)
        #expect(abs(r.truthTime90 + 0.744) < 0.01)
        let text = AltitudeFilterBenchmark.report()
        #expect(text.contains("fused (AltitudeFilter)"))
        #expect(text.contains("baro low-pass τ 0.50 s"))
        #expect(AltitudeFilterBenchmark.report() == text)     // deterministic
    }

    @Test func commandRejectsUnknownOptions() {
        #expect(throws: BenchError.self) { try AltitudeFilterBenchmark.run(["--bogus"]) }
    }

    /// edge-bench's fixed-point formatter, which the report prints with.
    @Test func fixedPointFormatting() {
        #expect(fixed(1.005, 2) == "1.00" || fixed(1.005, 2) == "1.01")
        #expect(fixed(-0.745, 3) == "-0.745")
        #expect(fixed(-0.0001, 2) == "0.00")
        #expect(fixed(12, 0) == "12")
        #expect(fixed(.nan, 1) == "n/a")
    }
}
