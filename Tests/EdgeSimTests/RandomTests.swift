import Testing
@testable import EdgeSim

@Suite struct RandomTests {
    @Test func sameSeedSameStream() {
        var a = SimRandom(seed: 42), b = SimRandom(seed: 42), c = SimRandom(seed: 43)
        let xa = (0..<100).map { _ in a.next() }
        let xb = (0..<100).map { _ in b.next() }
        let xc = (0..<100).map { _ in c.next() }
        #expect(xa == xb)
        #expect(xa != xc)
    }

    @Test func gaussianMoments() {
        var r = SimRandom(seed: 7)
        let n = 20_000
        var sum = 0.0, sq = 0.0
        for _ in 0..<n { let g = r.gaussian(); sum += g; sq += g * g }
        let mean = sum / Double(n), variance = sq / Double(n) - mean * mean
        #expect(abs(mean) < 0.03)
        #expect(abs(variance - 1) < 0.05)
    }

    @Test func zeroSigmaDrawsNothing() {
        var a = SimRandom(seed: 1), b = SimRandom(seed: 1)
        _ = a.gaussian(sigma: 0)
        #expect(a == b)
        _ = b.next()
        #expect(a != b)
    }

    @Test func derivedSeedsDiffer() {
        #expect(deriveSeed(1, salt: 0x68) != deriveSeed(1, salt: 0x69))
        #expect(deriveSeed(1, salt: 0x68) == deriveSeed(1, salt: 0x68))
    }
}
