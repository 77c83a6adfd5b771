import Testing
@testable import EdgeActivity

/// The activity classifier on what no shared recording holds (issue 18):
/// a car through city traffic with stops, a seated person who fidgets,
/// running, cycling. Physically generated signals (GaitModel, NoGaitModel).
@Suite struct ActivityStressTests {
    /// A windshield mount through city traffic (drive-offs, cruising, turns,
    /// braking, stops of 5-25 s at lights with the engine idling):
    /// automotive ≥ 90 % of the trip, the stops included (Core Motion keeps
    /// `automotive` with `stationary` while a car waits), and no step.
    @Test(arguments: [5, 6, 7] as [UInt64])
    func aCarWithStopsIsAutomotiveNinetyPercentOfTheTripWithNoStep(seed: UInt64) {
        let r = NoGaitModel.car(seconds: 300, seed: seed)
        let a = pipelineActivity(r)
        let s = share(a.kinds, .automotive)
        #expect(s >= 0.9, "seed \(seed): automotive \(s)")
        #expect(a.steps == 0)
        // at a stop once the car was recognised, both flags are set
        let recognised = a.kinds.firstIndex(of: .automotive) ?? a.kinds.count
        let stopped = a.flags.indices.filter { $0 >= recognised && a.flags[$0].contains(.stationary) }
        #expect(stopped.count > 1000, "the trip has stops")
        #expect(stopped.allSatisfy { a.flags[$0].contains(.automotive) }, "a stop in the car keeps automotive")
    }

    /// The same without a gyroscope (an accelerometer-only board).
    @Test func aCarWithoutGyroscopeIsStillMostlyAutomotive() {
        let r = NoGaitModel.car(seconds: 300, seed: 8)
        let a = pipelineActivity(r, gyro: false)
        #expect(share(a.kinds, .automotive) >= 0.8, "automotive \(share(a.kinds, .automotive))")
        #expect(a.steps == 0)
    }

    /// Seated with the phone in a trouser pocket, fidgeting every 2-10 s
    /// (a leg shifted, a knee jiggled, a shift on the seat): stationary
    /// ≥ 85 % of the time, never automotive, no step.
    @Test(arguments: [41, 42, 43] as [UInt64])
    func aSeatedPersonWhoFidgetsIsStationary(seed: UInt64) {
        let r = NoGaitModel.fidgeting(seconds: 300, seed: seed)
        let a = pipelineActivity(r)
        #expect(share(a.kinds, .stationary, from: 100) >= 0.85, "seed \(seed): stationary \(share(a.kinds, .stationary, from: 100))")
        let automotive = a.kinds.contains(.automotive)
        #expect(!automotive)
        #expect(a.steps == 0)
    }

    /// Running at 150-190 steps/min (2.5-3.2 steps/s; 2-3 g impacts, the
    /// centre of mass bouncing 40 mm): steps within 3 % and `running` for
    /// most of the run.
    @Test(arguments: [(2.6, GaitModel.Placement.frontPocket), (2.9, .armband), (3.1, .handHeld)])
    func runningCountsEveryStepAndIsRunning(cadence: Double, placement: GaitModel.Placement) {
        var g = GaitModel(); g.placement = placement; g.cadence = cadence; g.bounceMeters = 0.04
        g.farSide = 0.8; g.seconds = 120; g.seed = UInt64(cadence * 10)
        let r = g.generate()
        let a = pipelineActivity(r)
        #expect(abs(Double(a.steps - r.steps.count)) <= 0.03 * Double(r.steps.count), "\(a.steps) of \(r.steps.count)")
        #expect(share(a.kinds, .running, from: 1500) >= 0.8, "running \(share(a.kinds, .running, from: 1500))")
    }

    /// Cycling with the phone in a front pocket (the thigh rotating once per
    /// pedal turn, no impacts) at 60-90 rpm: no step, and `cycling` for
    /// most of the ride.
    @Test(arguments: [(1.0, 51), (1.25, 52), (1.5, 53)] as [(Double, UInt64)])
    func cyclingCountsNoStepAndIsCycling(cadenceHz: Double, seed: UInt64) {
        let r = NoGaitModel.cycling(seconds: 240, cadenceHz: cadenceHz, seed: seed)
        let a = pipelineActivity(r)
        #expect(a.steps == 0, "\(a.steps) steps")
        #expect(share(a.kinds, .cycling, from: 1500) >= 0.7, "cycling \(share(a.kinds, .cycling, from: 1500))")
    }
}
