// Copies and keyed archives of the data objects that are not log items
// (issue 21, item 6). Apple declares each of these `NSCopying` and
// `NSSecureCoding`: CMPedometerData
// (developer.apple.com/documentation/coremotion/cmpedometerdata: "class
// CMPedometerData : NSObject, NSCopying, NSSecureCoding"), CMPedometerEvent
// (…/cmpedometerevent), CMWaterSubmersionEvent (…/cmwatersubmersionevent),
// CMWaterSubmersionMeasurement (…/cmwatersubmersionmeasurement) and
// CMWaterTemperature (…/cmwatertemperature). The objects checked are the
// ones the agent's streams delivered (FitnessAppTests, WaterSubmersionAppTests).
import CoreMotion
import Testing

enum Coding {
    /// An `NSKeyedArchiver` / `NSKeyedUnarchiver` round trip with secure
    /// coding required, and `copy()`: both must be new objects.
    static func copies<T: NSObject & NSSecureCoding & NSCopying>(_ item: T) throws -> [T] {
        let data = try NSKeyedArchiver.archivedData(withRootObject: item, requiringSecureCoding: true)
        let decoded = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: T.self, from: data))
        let copy = try #require(item.copy() as? T)
        #expect(decoded !== item && copy !== item, "\(T.self): a copy must be a new object")
        return [decoded, copy]
    }

    static func checkPedometerData(_ d: CMPedometerData) throws {
        for c in try copies(d) {
            #expect(c.startDate == d.startDate && c.endDate == d.endDate)
            #expect(c.numberOfSteps == d.numberOfSteps && c.distance == d.distance)
            #expect(c.floorsAscended == d.floorsAscended && c.floorsDescended == d.floorsDescended)
            #expect(c.currentPace == d.currentPace && c.currentCadence == d.currentCadence
                    && c.averageActivePace == d.averageActivePace)
        }
    }

    static func checkPedometerEvent(_ e: CMPedometerEvent) throws {
        for c in try copies(e) { #expect(c.date == e.date && c.type == e.type) }
    }

    static func checkSubmersionEvent(_ e: CMWaterSubmersionEvent) throws {
        for c in try copies(e) { #expect(c.date == e.date && c.state == e.state) }
    }

    static func checkMeasurement(_ m: CMWaterSubmersionMeasurement) throws {
        for c in try copies(m) {
            #expect(c.date == m.date && c.submersionState == m.submersionState)
            #expect(c.depth?.converted(to: .meters).value == m.depth?.converted(to: .meters).value)
            #expect(c.pressure?.converted(to: .kilopascals).value == m.pressure?.converted(to: .kilopascals).value)
            #expect(c.surfacePressure.converted(to: .kilopascals).value == m.surfacePressure.converted(to: .kilopascals).value)
        }
    }

    static func checkTemperature(_ t: CMWaterTemperature) throws {
        for c in try copies(t) {
            #expect(c.date == t.date)
            #expect(c.temperature.converted(to: .celsius).value == t.temperature.converted(to: .celsius).value)
            #expect(c.temperatureUncertainty.converted(to: .celsius).value
                    == t.temperatureUncertainty.converted(to: .celsius).value)
        }
    }
}
