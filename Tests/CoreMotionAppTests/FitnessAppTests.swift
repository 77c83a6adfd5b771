// CMPedometer and CMMotionActivityManager as an app uses them: only
// `import CoreMotion`. The agent is a real `edge-agent run` on a simulated
// board that stands still for 1 s, walks 8 s at 1.8 steps/s (14 steps) and
// stands still again (CoreMotionTestSupport `.walking`).
import CoreMotion
import CoreMotionTestSupport
import Testing
import TestThreads

@Suite(.serialized, .ownThread) struct FitnessAppTests {
    @Test func pedometerActivityAndHistoryOfAWalk() async throws {
        try await withAgent(.walking) { agent in
            // through its configuration, so the history file is known too
            EdgeMotionAgent.socketPath = nil
            EdgeMotionAgent.configurationPath = agent.configPath
            defer { EdgeMotionAgent.configurationPath = nil }
            let began = Date().addingTimeInterval(-60)
            #expect(CMPedometer.isStepCountingAvailable())
            #expect(CMPedometer.isDistanceAvailable() && CMPedometer.isCadenceAvailable() && CMPedometer.isPaceAvailable())
            #expect(CMPedometer.isFloorCountingAvailable())
            #expect(CMPedometer.isPedometerEventTrackingAvailable())
            #expect(CMPedometer.authorizationStatus() == .authorized)
            #expect(CMMotionActivityManager.isActivityAvailable())
            #expect(CMMotionActivityManager.authorizationStatus() == .authorized)

            let pedometer = CMPedometer()
            let data = Inbox<CMPedometerData>()
            let events = Inbox<CMPedometerEvent>()
            pedometer.startUpdates(from: Date()) { d, e in data.take(d, e) }
            pedometer.startEventUpdates { e, err in events.take(e, err) }
            let activities = CMMotionActivityManager()
            let queue = serialQueue("activity")
            let seen = Inbox<CMMotionActivity>(queue: queue)
            activities.startActivityUpdates(to: queue) { a in seen.take(a, nil) }

            // the walk ends 9 s after the agent started; the pause 2 s later
            #expect(await eventually(seconds: 40) { events.items.contains { $0.type == .pause } })
            let last = try #require(data.items.last)
            let steps = last.numberOfSteps.intValue
            #expect(abs(steps - 14) <= 2, "\(steps) of 14 steps")
            #expect(last.distance!.doubleValue > 0.5 * Double(steps) && last.distance!.doubleValue < 0.9 * Double(steps))
            #expect(last.floorsAscended?.intValue == 0 && last.floorsDescended?.intValue == 0)
            #expect(data.items.contains { abs(($0.currentCadence?.doubleValue ?? 0) - 1.8) < 0.1 })
            #expect(data.errors.isEmpty && events.errors.isEmpty)
            #expect(events.items.map(\.type) == [.resume, .pause])
            // copies and keyed archives keep every value (CodingAppTests)
            try Coding.checkPedometerData(last)
            for e in events.items { try Coding.checkPedometerEvent(e) }
            #expect(zip(data.items, data.items.dropFirst()).allSatisfy { $0.numberOfSteps.intValue <= $1.numberOfSteps.intValue })

            #expect(await eventually(seconds: 10) { seen.items.last?.stationary == true })
            // A subscriber that starts now, while the board stays still (no
            // change for an hour), gets the current activity at once. Apple,
            // CMMotionActivityManager.startActivityUpdates(to:withHandler:)
            // (developer.apple.com/documentation/coremotion/cmmotionactivitymanager/startactivityupdates(to:withhandler:)):
            // "the handler block ... is executed ... with the current
            // activity" when updates start, then on each change.
            let late = CMMotionActivityManager()
            let lateSeen = Inbox<CMMotionActivity>()
            late.startActivityUpdates(to: appQueue()) { a in lateSeen.take(a, nil) }
            #expect(await eventually(seconds: 10) { lateSeen.count >= 1 }, "no current activity for a late subscriber: \(String(describing: EdgeMotionAgent.lastActivityError(of: late)))")
            #expect(lateSeen.items.first?.stationary == true)
            late.stopActivityUpdates()
            let walking = try #require(seen.items.first { $0.walking })
            #expect(seen.items.contains { $0.walking && $0.confidence == .high })
            #expect(seen.items.last!.startDate > walking.startDate)
            #expect(seen.ranOnOtherQueues == 0)
            pedometer.stopUpdates(); pedometer.stopEventUpdates(); activities.stopActivityUpdates()
            // CMPedometer.startUpdates(from:withHandler:)
            // (developer.apple.com/documentation/coremotion/cmpedometer/startupdates(from:withhandler:)):
            // "This method runs asynchronously, returning immediately" - with
            // the walk in the history and the agent's totals to read. The
            // fastest of three starts under 10 ms (NonBlockingAppTests' rule).
            let again = CMPedometer()
            let againData = Inbox<CMPedometerData>()
            let startMs: [Double] = (0..<3).map { _ in
                let t0 = DispatchTime.now().uptimeNanoseconds
                again.startUpdates(from: began) { d, e in againData.take(d, e) }
                return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
            }
            #expect(startMs.min()! < 10, "startUpdates(from:) took \(startMs) ms")
            again.stopUpdates()

            // the history (committed every 2 s) answers queries
            let history = Inbox<CMPedometerData>()
            #expect(await eventually(seconds: 10) {
                let got = Inbox<CMPedometerData>()
                pedometer.queryPedometerData(from: began, to: Date()) { d, e in got.take(d, e); history.take(d, e) }
                return await_(got) && (got.items.first?.numberOfSteps.intValue ?? 0) == steps
            })
            #expect(history.errors.isEmpty, "\(history.errors)")
            // the stationary after the walk reaches the history within a commit (2 s)
            var kinds: [CMMotionActivity] = []
            #expect(await eventually(seconds: 10) {
                let q = Inbox<[CMMotionActivity]>()
                activities.queryActivityStarting(from: began, to: Date(), to: appQueue()) { a, e in q.take(a, e) }
                kinds = await_(q) ? q.items[0] : []
                return kinds.contains { $0.walking } && kinds.last?.stationary == true
            }, "\(kinds.map { ($0.walking, $0.stationary) })")
            #expect(kinds.map(\.startDate) == kinds.map(\.startDate).sorted())
        }
    }

    /// The same walk served by the agent the library starts in this process
    /// when none answers (its configuration grants this user `fitness`).
    @Test func aWalkThroughTheInProcessFallback() async throws {
        try await withInProcessFallback(.walking) {
            let pedometer = CMPedometer()
            let events = Inbox<CMPedometerEvent>()
            let data = Inbox<CMPedometerData>()
            pedometer.startEventUpdates { e, err in events.take(e, err) }
            pedometer.startUpdates(from: Date()) { d, e in data.take(d, e) }
            #expect(EdgeMotionAgent.dataSource.contains("in this process"), "\(EdgeMotionAgent.dataSource)")
            #expect(CMPedometer.authorizationStatus() == .authorized)
            #expect(await eventually(seconds: 30) { events.items.contains { $0.type == .pause } }, "\(events.errors)")
            let steps = data.items.last?.numberOfSteps.intValue ?? 0
            #expect(abs(steps - 14) <= 2, "\(steps) of 14 steps")
            pedometer.stopUpdates(); pedometer.stopEventUpdates()
            let activities = CMMotionActivityManager()
            var errors: [NSError] = []
            #expect(await eventually(seconds: 10) {
                let q = Inbox<[CMMotionActivity]>()   // one query per pass, waited for
                activities.queryActivityStarting(from: Date().addingTimeInterval(-120), to: Date(), to: appQueue()) { a, e in q.take(a, e) }
                defer { errors = q.errors }
                return await_(q) && q.items.last?.contains { $0.walking } == true
            }, "\(errors)")
        }
    }

    /// Apple gives pedometer and activity failures their own codes:
    /// CMErrorMotionActivityNotAuthorized (105) when motion and fitness
    /// data are not authorized
    /// (developer.apple.com/documentation/coremotion/cmerrormotionactivitynotauthorized),
    /// where the general CMErrorNotEntitled (110) is for the other managers.
    @Test func withoutTheFitnessEntitlementItIsDeniedWithAnError() async throws {
        try await withAgent(.restFlat) { _ in
            #expect(CMPedometer.authorizationStatus() == .denied)
            #expect(CMMotionActivityManager.authorizationStatus() == .denied)
            let pedometer = CMPedometer()
            let data = Inbox<CMPedometerData>()
            pedometer.startUpdates(from: Date()) { d, e in data.take(d, e) }
            #expect(await eventually { !data.errors.isEmpty })
            #expect(data.errors.first?.domain == CMErrorDomain)
            #expect(data.errors.first?.code == Int(CMErrorMotionActivityNotAuthorized.rawValue))
            #expect(data.errors.first?.localizedDescription.contains("fitness") == true, "\(data.errors.first?.localizedDescription ?? "")")
            pedometer.stopUpdates()
            // the activity manager's handler has no error: nothing arrives, and it says why
            let m = CMMotionActivityManager()
            let seen = Inbox<CMMotionActivity>()
            m.startActivityUpdates(to: appQueue()) { a in seen.take(a, nil) }
            #expect(await eventually { EdgeMotionAgent.lastActivityError(of: m) != nil })
            #expect(EdgeMotionAgent.lastActivityError(of: m)?.code == Int(CMErrorMotionActivityNotAuthorized.rawValue))
            #expect(seen.count == 0)
            m.stopActivityUpdates()
            // events and the history: the same error, at once (never a wait)
            let events = Inbox<CMPedometerEvent>()
            pedometer.startEventUpdates { e, err in events.take(e, err) }
            #expect(await eventually { !events.errors.isEmpty })
            #expect(events.errors.first?.code == Int(CMErrorMotionActivityNotAuthorized.rawValue))
            pedometer.stopEventUpdates()
            let query = Inbox<CMPedometerData>()
            pedometer.queryPedometerData(from: Date().addingTimeInterval(-60), to: Date()) { d, e in query.take(d, e) }
            #expect(await_(query) == false && query.errors.first?.code == Int(CMErrorMotionActivityNotAuthorized.rawValue), "\(query.errors)")
            let past = Inbox<[CMMotionActivity]>()
            m.queryActivityStarting(from: Date().addingTimeInterval(-60), to: Date(), to: appQueue()) { a, e in past.take(a, e) }
            #expect(await_(past) == false && past.errors.first?.code == Int(CMErrorMotionActivityNotAuthorized.rawValue), "\(past.errors)")
        }
    }
}

/// Waits (bounded) for one answer in `inbox`; true when it came. Bounded
/// at 30 s like ``eventually``: the answer comes on an `OperationQueue`,
/// which other work in the test process can hold back for seconds
/// (``appQueue()``).
func await_<T>(_ inbox: Inbox<T>) -> Bool {
    let end = Date().addingTimeInterval(30)
    while Date() < end && inbox.count == 0 && inbox.errors.isEmpty { usleep(10_000) }
    return inbox.count > 0
}
