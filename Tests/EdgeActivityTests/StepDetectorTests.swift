import Foundation
import Testing
@testable import EdgeActivity

@Suite struct StepDetectorTests {
    /// The count at the end of the walk, once the pause has been seen.
    func count(_ gait: SyntheticGait, seconds: Double = 60, walking: @escaping (Double) -> Bool = { _ in true })
        -> (counted: Int, truth: Int, out: [StepOutput]) {
        var d = StepDetector(.init(sampleRateHz: gait.rateHz))
        let s = gait.samples(seconds: seconds, walking: walking)
        let out = runSteps(&d, s)
        return (out.last!.steps, s.steps.count, out)
    }

    @Test func countsAnEvenWalkInAnyOrientation() {
        for axis in [SIMD3<Double>(0, 0, 1), SIMD3(1, 0, 0), SIMD3(0.5, -0.7, 0.4)] {
            var g = SyntheticGait(); g.gravityAxis = axis
            let r = count(g)
            #expect(abs(r.counted - r.truth) <= 1, "axis \(axis): \(r.counted) of \(r.truth)")
        }
    }

    @Test(arguments: [1.2, 1.6, 2.0, 2.4, 3.0])
    func countsAcrossCadences(cadence: Double) {
        var g = SyntheticGait(); g.cadence = cadence; g.amplitude = cadence >= 2.5 ? 8 : 2.5
        let r = count(g)
        #expect(abs(r.counted - r.truth) <= 1, "\(cadence) steps/s: \(r.counted) of \(r.truth)")
    }

    @Test func countsStepsWhenEveryOtherStepIsWeak() {
        // a thigh pocket or a bag: the stride shows more than the step
        var g = SyntheticGait(); g.alternate = 0.25
        let r = count(g)
        #expect(abs(r.counted - r.truth) <= 2, "\(r.counted) of \(r.truth)")
    }

    @Test func aHeelToeDoubleBumpIsOneStep() {
        var g = SyntheticGait(); g.secondBump = 0.6
        let r = count(g)
        #expect(abs(r.counted - r.truth) <= 1, "\(r.counted) of \(r.truth)")
    }

    @Test func cadenceMatchesTheGait() {
        var g = SyntheticGait(); g.cadence = 1.75
        let r = count(g)
        let cadence = r.out[r.out.count - 100].cadence
        #expect(abs(cadence - 1.75) * 60 < 1, "cadence \(cadence * 60) steps/min")
    }

    @Test func stillBoardCountsNothing() {
        var g = SyntheticGait(); g.amplitude = 0; g.noise = 0.05
        #expect(count(g, walking: { _ in false }).counted == 0)
    }

    @Test func aBoardShakenByHandCountsNothing() {
        // shaking at 4.5-8 Hz whose frequency and strength change every
        // 0.3-1.1 s. (Bursts of shaking that start and stop at a steady
        // 1-3 Hz are indistinguishable from steps for an accelerometer
        // pedometer and are counted: docs/fitness.md.)
        var rng = SplitMix(seed: 7)
        var d = StepDetector()
        var t = 0.0, phase = 0.0
        var change = 0.0, f = 6.0, amp = 5.0, out = StepOutput()
        while t < 120 {
            if t >= change {
                change = t + 0.3 + rng.uniform() * 0.8
                f = 4.5 + rng.uniform() * 3.5; amp = 5 + rng.uniform() * 5
            }
            phase += 2 * .pi * f * 0.01
            let shake = amp * sin(phase)
            out = d.update(t: t, ax: shake * 0.7 + rng.gaussian() * 0.1, ay: 9.80665 + shake * 0.7, az: rng.gaussian() * 0.1)
            t += 0.01
        }
        #expect(out.steps == 0, "counted \(out.steps) steps while shaken")
    }

    @Test func aBoardInACarCountsNothing() {
        // engine and road vibration (12-30 Hz) and bumps at random times
        var rng = SplitMix(seed: 11)
        var d = StepDetector()
        var t = 0.0, nextBump = 0.0, bumpT = -10.0, bumpAmp = 0.0
        var out = StepOutput()
        while t < 300 {
            if t >= nextBump { bumpT = t; bumpAmp = 1 + rng.uniform() * 3; nextBump = t + 0.2 + rng.uniform() * 4 }
            let bump = t - bumpT < 0.25 ? bumpAmp * sin(.pi * (t - bumpT) / 0.25) : 0
            let vib = 0.4 * sin(2 * .pi * 17 * t) + 0.2 * sin(2 * .pi * 29 * t + 1) + 0.3 * rng.gaussian()
            out = d.update(t: t, ax: 0.2 * vib, ay: 0.1 * vib, az: 9.80665 + vib + bump)
            t += 0.01
        }
        #expect(out.steps == 0, "counted \(out.steps) steps in a car")
    }

    @Test func pauseAndResumeEvents() {
        let g = SyntheticGait()
        let walk: (Double) -> Bool = { $0 < 20 || ($0 > 30 && $0 < 50) }
        let r = count(g, seconds: 60, walking: walk)
        let events = r.out.compactMap(\.event)
        #expect(events == [.resume, .pause, .resume, .pause])
        #expect(abs(r.counted - r.truth) <= 2, "\(r.counted) of \(r.truth)")
        // the pause comes about 2 s after the last step, not before it
        var d = StepDetector()
        let s = g.samples(seconds: 60, walking: walk)
        var pauses: [Double] = []
        for i in s.t.indices where d.update(t: s.t[i], ax: s.a[i].x, ay: s.a[i].y, az: s.a[i].z).event == .pause {
            pauses.append(s.t[i])
        }
        let lastStep = s.steps.last { $0 < 20 }!
        #expect(pauses.first! > lastStep + 1.5 && pauses.first! < lastStep + 3.5)
        // steps are never taken back
        #expect(zip(r.out, r.out.dropFirst()).allSatisfy { $0.steps <= $1.steps })
    }

    @Test func handingTheStateOverGivesTheSameOutput() {
        let s = SyntheticGait().samples(seconds: 30)
        var whole = StepDetector()
        let all = runSteps(&whole, s)
        var first = StepDetector()
        for i in 0..<1500 { _ = first.update(t: s.t[i], ax: s.a[i].x, ay: s.a[i].y, az: s.a[i].z) }
        var second = first          // hand-over: a copy continues
        var rest = [StepOutput]()
        for i in 1500..<s.t.count { rest.append(second.update(t: s.t[i], ax: s.a[i].x, ay: s.a[i].y, az: s.a[i].z)) }
        #expect(Array(all[1500...]) == rest)
    }

    @Test func distanceFollowsTheStrideModel() {
        let model = StrideModel(heightMeters: 1.80)
        var d = StepDetector(.init(sampleRateHz: 100, stride: model))
        let s = SyntheticGait().samples(seconds: 60)
        let out = runSteps(&d, s).last!
        let perStep = model.stepLength(cadence: 1.8)
        #expect(abs(out.distanceMeters - Double(out.steps) * perStep) < 0.03 * out.distanceMeters)
    }

    @Test func strideCalibrationHitsTheKnownDistance() {
        let m = StrideModel(heightMeters: 1.70)
        let c = m.calibrated(knownDistance: 100, steps: 140, meanCadence: 1.8)
        #expect(abs(Double(140) * c.stepLength(cadence: 1.8) - 100) < 1e-9)
        // textbook walking ratio: about 0.41 × height at 1.8 steps/s
        #expect(abs(m.stepLength(cadence: 1.8) / 1.70 - 0.41) < 0.01)
        #expect(m.pace(cadence: 0) == 0)
        #expect(abs(m.pace(cadence: 1.8) - 1 / (m.stepLength(cadence: 1.8) * 1.8)) < 1e-12)
    }

    @Test func worksAtFiftyHertz() {
        var g = SyntheticGait(); g.rateHz = 50
        let r = count(g)
        #expect(abs(r.counted - r.truth) <= 1, "\(r.counted) of \(r.truth)")
    }
}
