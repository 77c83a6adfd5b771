// Reference frames as Apple documents them (issue 21, item 1), against a
// real `edge-agent run` on a simulated board lying still, turned away from
// north.
//
// Apple, CMAttitudeReferenceFrame.xArbitraryZVertical
// (developer.apple.com/documentation/coremotion/cmattitudereferenceframe/xarbitraryzvertical):
// "When you start the device-motion service, Core Motion sets the frame of
// reference to the device's initial orientation ... Save the first reported
// attitude value, and compare it to new values to determine changes since
// the start of the service." xArbitraryCorrectedZVertical (same site,
// .../xarbitrarycorrectedzvertical): "Core Motion uses the current device
// orientation to set the initial frame of reference ... uses the
// magnetometer to improve long-term accuracy for the z axis (yaw)".
// xMagneticNorthZVertical: yaw 0 when X points to magnetic north.
import CoreMotion
import CoreMotionTestSupport
import Testing
import TestThreads

@Suite(.ownThread) struct ReferenceFrameAppTests {
    /// Device motion of one manager started in `frame`, until `until` holds
    /// for the samples so far (at most `seconds`).
    static func motion(_ frame: CMAttitudeReferenceFrame, seconds: Double = 20,
                       until: @escaping ([CMDeviceMotion]) -> Bool) async -> Inbox<CMDeviceMotion> {
        let manager = CMMotionManager()
        manager.deviceMotionUpdateInterval = 0.05
        let inbox = Inbox<CMDeviceMotion>()
        manager.startDeviceMotionUpdates(using: frame, to: appQueue()) { m, e in inbox.take(m, e) }
        _ = await eventually(seconds: seconds) { until(inbox.items) }
        manager.stopDeviceMotionUpdates()
        return inbox
    }

    /// The board lies still with its top edge facing heading 120° (yaw 150°
    /// from north). Each start of an arbitrary frame begins at yaw ≈ 0,
    /// every time a manager starts (the second start too); the magnetic
    /// north frame says where the board really points.
    @Test func arbitraryFramesStartAtYawZeroEveryTimeAManagerStarts() async throws {
        try await withAgent(.headed(yawDeg: 150, magnetometerLostAfter: nil)) { _ in
            let north = await Self.motion(.xMagneticNorthZVertical) { $0.count >= 40 }
            // an uncalibrated magnetometer: Apple's "requires movement", once
            #expect(north.errors.map(\.code) == [Int(CMErrorDeviceRequiresMovement.rawValue)], "\(north.errors)")
            let last = try #require(north.items.last)
            #expect(abs(last.heading - 120) < 3, "heading \(last.heading): the scenario is not what this test thinks")
            #expect(abs(degrees(last.attitude.yaw) - 150) < 3, "\(last.attitude)")
            // Apple's CMLogItem is NSCopying
            // (developer.apple.com/documentation/coremotion/cmlogitem): a
            // copy is its own object, and keeps its attitude when the
            // original's is made relative to itself (Apple's advice for
            // changes since the start: CMAttitude.multiply(byInverseOf:)).
            let copy = try #require(last.copy() as? CMDeviceMotion)
            let reference = try #require(last.attitude.copy() as? CMAttitude)
            last.attitude.multiply(byInverseOf: reference)
            #expect(abs(last.attitude.yaw) < 1e-9)
            #expect(abs(degrees(copy.attitude.yaw) - 150) < 3, "the copy changed with its original: \(copy.attitude)")
            #expect(copy.timestamp == last.timestamp && copy.heading == last.heading)
            for frame in [CMAttitudeReferenceFrame.xArbitraryZVertical, .xArbitraryCorrectedZVertical] {
                for start in 1...2 {
                    let inbox = await Self.motion(frame) { $0.count >= 5 }
                    #expect(inbox.errors.isEmpty, "\(frame.rawValue) start \(start): \(inbox.errors)")
                    let first = try #require(inbox.items.first, "\(frame.rawValue) start \(start): no samples")
                    #expect(abs(degrees(first.attitude.yaw)) < 1,
                            "\(frame.rawValue) start \(start): first yaw \(degrees(first.attitude.yaw))°, not ≈ 0")
                    for m in inbox.items {
                        #expect(abs(degrees(m.attitude.yaw)) < 1, "\(frame.rawValue) start \(start): \(m.attitude)")
                        #expect(m.heading < 0, "no heading in an arbitrary frame: \(m.heading)")
                    }
                }
            }
        }
    }

    /// The magnetometer stops answering while the updates run: the
    /// arbitrary frames do not turn (the board lies still; at most 1°
    /// between any two samples, and from the first sample), and the
    /// magnetic-north frame keeps its north rather than jumping.
    @Test func aMagnetometerOutageDoesNotTurnTheFrames() async throws {
        try await withAgent(.headed(yawDeg: 150, magnetometerLostAfter: 12)) { _ in
            let managers = [CMAttitudeReferenceFrame.xArbitraryZVertical, .xArbitraryCorrectedZVertical, .xMagneticNorthZVertical]
                .map { frame -> (CMAttitudeReferenceFrame, CMMotionManager, Inbox<CMDeviceMotion>) in
                    let manager = CMMotionManager()
                    manager.deviceMotionUpdateInterval = 0.05
                    let inbox = Inbox<CMDeviceMotion>()
                    manager.startDeviceMotionUpdates(using: frame, to: appQueue()) { m, e in inbox.take(m, e) }
                    return (frame, manager, inbox)
                }
            func norm(_ f: CMMagneticField) -> Double { (f.x * f.x + f.y * f.y + f.z * f.z).squareRoot() }
            // The field is there first, then gone (the agent says so with a
            // zero, uncalibrated field), and some samples after that.
            let seen = await eventually(seconds: 90) {
                let items = managers[0].2.items
                guard let i = items.firstIndex(where: { norm($0.magneticField.field) > 1 }) else { return false }
                guard let j = items[i...].firstIndex(where: { norm($0.magneticField.field) == 0 }) else { return false }
                return items.count - j >= 40
            }
            for (_, manager, _) in managers { manager.stopDeviceMotionUpdates() }
            #expect(seen, "the magnetometer outage was not seen: \(managers[0].2.items.map { norm($0.magneticField.field) })")
            for (frame, _, inbox) in managers {
                // the north frame on an uncalibrated magnetometer: Apple's "requires movement", once
                #expect(inbox.errors.map(\.code) == (frame == .xMagneticNorthZVertical ? [Int(CMErrorDeviceRequiresMovement.rawValue)] : []),
                        "\(frame.rawValue): \(inbox.errors)")
                let yaws = inbox.items.map { degrees($0.attitude.yaw) }
                let expected = frame == .xMagneticNorthZVertical ? 150.0 : 0.0
                let worst = yaws.map { abs($0 - expected) }.max() ?? .infinity
                #expect(worst < 1, "\(frame.rawValue): yaw off \(expected)° by up to \(worst)° (\(yaws.count) samples)")
                let step = gaps(yaws).map(abs).max() ?? .infinity
                #expect(step < 1, "\(frame.rawValue): yaw jumped \(step)° between two samples")
            }
        }
    }

    /// Apple's CMLogItem and CMAttitude conform to NSSecureCoding
    /// (developer.apple.com/documentation/coremotion/cmlogitem: "class
    /// CMLogItem : NSObject, NSCopying, NSSecureCoding"): each sample an app
    /// gets survives an NSKeyedArchiver / NSKeyedUnarchiver round trip
    /// with every value equal, and a copy equals its original.
    @Test func samplesRoundTripThroughAKeyedArchive() async throws {
        try await withSharedAgent { _ in
            let manager = CMMotionManager()
            manager.startAccelerometerUpdates(); manager.startGyroUpdates(); manager.startMagnetometerUpdates()
            manager.startDeviceMotionUpdates(using: .xMagneticNorthZVertical)
            #expect(await eventually(seconds: 20) {
                manager.accelerometerData != nil && manager.gyroData != nil && manager.magnetometerData != nil
                    && manager.deviceMotion.map { $0.heading >= 0 } == true
            })
            manager.stopAccelerometerUpdates(); manager.stopGyroUpdates(); manager.stopMagnetometerUpdates()
            manager.stopDeviceMotionUpdates()
            func roundTrip<T: CMLogItem>(_ item: T) throws -> T {
                let data = try NSKeyedArchiver.archivedData(withRootObject: item, requiringSecureCoding: true)
                return try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: T.self, from: data))
            }
            let a = try #require(manager.accelerometerData)
            for b in [try roundTrip(a), try #require(a.copy() as? CMAccelerometerData)] {
                #expect(b !== a && b.timestamp == a.timestamp && b.acceleration.x == a.acceleration.x
                        && b.acceleration.y == a.acceleration.y && b.acceleration.z == a.acceleration.z, "\(b) vs \(a)")
            }
            let g = try #require(manager.gyroData)
            let g2 = try roundTrip(g)
            #expect(g2.timestamp == g.timestamp && g2.rotationRate.x == g.rotationRate.x
                    && g2.rotationRate.y == g.rotationRate.y && g2.rotationRate.z == g.rotationRate.z)
            let f = try #require(manager.magnetometerData)
            let f2 = try roundTrip(f)
            #expect(f2.timestamp == f.timestamp && f2.magneticField.x == f.magneticField.x
                    && f2.magneticField.y == f.magneticField.y && f2.magneticField.z == f.magneticField.z)
            let m = try #require(manager.deviceMotion)
            for m2 in [try roundTrip(m), try #require(m.copy() as? CMDeviceMotion)] {
                #expect(m2 !== m && m2.attitude !== m.attitude)
                let q = m.attitude.quaternion, q2 = m2.attitude.quaternion
                #expect(q2.w == q.w && q2.x == q.x && q2.y == q.y && q2.z == q.z)
                #expect(m2.timestamp == m.timestamp && m2.heading == m.heading && m2.sensorLocation == m.sensorLocation)
                #expect(m2.gravity.z == m.gravity.z && m2.userAcceleration.x == m.userAcceleration.x
                        && m2.rotationRate.z == m.rotationRate.z)
                #expect(m2.magneticField.field.x == m.magneticField.field.x && m2.magneticField.accuracy == m.magneticField.accuracy)
            }
            let activity = CMMotionActivity()
            let activity2 = try roundTrip(activity)
            #expect(activity2.unknown && activity2.confidence == activity.confidence
                    && activity2.startDate == activity.startDate)
        }
    }
}
