// Apple's raw values, as literals from the iOS 17 SDK's headers
// (CMError.h, CMAuthorization.h, CMAttitude.h, CMDeviceMotion.h,
// CMPedometer.h, CMMotionActivity.h, CMWaterSubmersionManager.h): an app
// that stores or sends them, or switches on them, sees the same numbers.
// Independent of the module: the numbers are written here, not read from it.
import CoreMotion
import Testing
import TestThreads

@Suite(.ownThread) struct AppleValuesTests {
    @Test func errorCodesAndDomain() {
        #expect(CMErrorDomain == "CMErrorDomain")
        let codes: [(CMError, UInt32)] = [
            (CMErrorNULL, 100), (CMErrorDeviceRequiresMovement, 101), (CMErrorTrueNorthNotAvailable, 102),
            (CMErrorUnknown, 103), (CMErrorMotionActivityNotAvailable, 104), (CMErrorMotionActivityNotAuthorized, 105),
            (CMErrorMotionActivityNotEntitled, 106), (CMErrorInvalidParameter, 107), (CMErrorInvalidAction, 108),
            (CMErrorNotAvailable, 109), (CMErrorNotEntitled, 110), (CMErrorNotAuthorized, 111),
            (CMErrorNilData, 112), (CMErrorSize, 113),
        ]
        for (e, code) in codes { #expect(UInt32(e.rawValue) == code, "\(e)") }
        #expect(CMError(110) == CMErrorNotEntitled && CMError(rawValue: 105) == CMErrorMotionActivityNotAuthorized)
    }

    @Test func enumsAndOptionSets() {
        #expect([CMAuthorizationStatus.notDetermined, .restricted, .denied, .authorized].map(\.rawValue) == [0, 1, 2, 3])
        #expect([CMAttitudeReferenceFrame.xArbitraryZVertical, .xArbitraryCorrectedZVertical,
                 .xMagneticNorthZVertical, .xTrueNorthZVertical].map(\.rawValue) == [1, 2, 4, 8])
        #expect([CMMagneticFieldCalibrationAccuracy.uncalibrated, .low, .medium, .high].map(\.rawValue) == [-1, 0, 1, 2])
        #expect([CMDeviceMotion.SensorLocation.default, .headphoneLeft, .headphoneRight].map(\.rawValue) == [0, 1, 2])
        #expect([CMPedometerEventType.pause, .resume].map(\.rawValue) == [0, 1])
        #expect([CMMotionActivityConfidence.low, .medium, .high].map(\.rawValue) == [0, 1, 2])
        #expect([CMWaterSubmersionEvent.State.unknown, .notSubmerged, .submerged].map(\.rawValue) == [0, 1, 2])
        #expect([CMWaterSubmersionMeasurement.DepthState.unknown, .notSubmerged, .submergedShallow, .submergedDeep,
                 .approachingMaxDepth, .pastMaxDepth, .sensorDepthError].map(\.rawValue) == [0, 100, 200, 300, 400, 500, 600])
    }
}
