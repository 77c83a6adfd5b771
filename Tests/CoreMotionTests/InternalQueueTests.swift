// The library's own queues (OperationQueue.coreMotionInternal): serial, at
// .userInitiated. Why, and why the setting is checked rather than the delay
// timed: BehaviourWhereAppleIsSilent.md, "Threads and queues".
@testable import CoreMotion
import Foundation
import Testing

@Suite struct InternalQueueTests {
    @Test func theLibrarysOwnQueuesAreSerialAndUserInitiated() {
        let q = OperationQueue.coreMotionInternal("a name")
        #expect(q.maxConcurrentOperationCount == 1)
        #expect(q.qualityOfService == .userInitiated)
        #expect(q.name == "a name")
        #expect(CMPedometer().handlerQueue.qualityOfService == .userInitiated)
        #expect(CMWaterSubmersionManager().queue.qualityOfService == .userInitiated)
    }
}
