import Testing
import EdgeChips
import EdgeProtocol
@testable import EdgeEngine

/// Issue 17: the engine's stages behind one protocol (`EngineStage`: the
/// inputs it consumes, the streams it produces with what each needs, its
/// demand) and a table (`StageTable`) that gives a board its stages. The
/// hub derives from it what it used to hard-code: which device a stream
/// wakes, which stage each reading goes to, which streams a device feeds.
@Suite struct StageTableTests {
    /// The devices each stream wakes, as the hand-written map said before
    /// the table (written from what each stream is computed from: device
    /// motion fuses the magnetometer, altitude the IMU's vertical
    /// acceleration, the pedometer counts floors with the barometer).
    @Test func eachStreamWakesTheDevicesItIsComputedFrom() {
        let expected: [StreamName: Set<EngineDevice.Need>] = [
            .accelerometer: [.imu], .gyroscope: [.imu], .accelerometerBatch: [.imu],
            .deviceMotion: [.imu, .magnetometer], .deviceMotionBatch: [.imu, .magnetometer],
            .magnetometer: [.magnetometer],
            .accessoryMotion: [.accessory], .accessoryConnection: [.accessory],
            .altitude: [.barometer, .imu], .absoluteAltitude: [.barometer, .imu],
            .submersion: [.barometer], .humidity: [.barometer],
            .pedometer: [.imu, .barometer], .pedometerEvent: [.imu, .barometer], .activity: [.imu, .barometer],
        ]
        #expect(Set(expected.keys) == Set(StreamName.allCases), "every stream is in this list")
        for s in StreamName.allCases { #expect(s.devices == expected[s], "\(s)") }
    }

    /// One producer per stream: a stream is one stage's job.
    @Test func everyStreamHasExactlyOneProducingStage() {
        for s in StreamName.allCases {
            let producers = StageTable.kinds.filter { k in k.produces.contains { $0.stream == s } }.map { "\($0)" }
            #expect(producers.count == 1, "\(s): \(producers)")
        }
    }

    static func names(_ b: BoardInputs) -> [String] {
        let timing = StageTiming(imuRateHz: 100, fieldLifetimeNanoseconds: 100_000_000)
        return StageTable.stages(for: b, settings: EngineSettings(), calibration: EngineCalibration(), timing: timing)
            .map { "\(type(of: $0).name):\($0.consumes.rawValue)" }
    }

    /// The board decides the stages and what each is fed.
    @Test func theBoardDecidesTheStagesAndTheirInputs() {
        let m = StageInputs.motion.rawValue, f = StageInputs.field.rawValue, p = StageInputs.pressure.rawValue,
            d = StageInputs.depthPressure.rawValue
        // An IMU alone: attitude without a field, the pedometer without floors.
        #expect(Self.names(BoardInputs(imu: true)) == ["fusion:\(m)", "fitness:\(m)"])
        // The reference board with a BME280: humidity is a stage of its own;
        // without a depth sensor the barometer feeds submersion.
        #expect(Self.names(BoardInputs(imu: true, magnetometer: true, barometer: true, barometerMeasuresHumidity: true)) == [
            "fusion:\(m | f)", "altitude:\(m | p)", "submersion:\(p)", "fitness:\(m | p)", "humidity:\(p)", "magnetometer:\(f)",
        ])
        // A depth sensor takes submersion over from the barometer.
        #expect(Self.names(BoardInputs(imu: true, barometer: true, depthSensor: true)) == [
            "fusion:\(m)", "altitude:\(m | p)", "submersion:\(d)", "fitness:\(m | p)",
        ])
        // A barometer alone: altitude from pressure only, no IMU stages.
        #expect(Self.names(BoardInputs(barometer: true)) == ["altitude:\(p)", "submersion:\(p)"])
    }

    /// The devices report lists what each device feeds, from the stages
    /// the board runs: with a depth sensor the barometer no longer lists
    /// submersion, and the MS5837 does; a BMP280 lists no humidity.
    @Test func theDevicesReportFollowsTheStages() throws {
        let dive = try SubmersionStageTests.DiveRig()
        dive.hub.start()
        let devices = dive.hub.devicesSnapshot()
        let baro = try #require(devices.first { $0.kind == "bmp280" })
        let depth = try #require(devices.first { $0.kind == "ms5837" })
        #expect(!baro.streams.contains(.submersion) && baro.streams.contains(.altitude), "\(baro.streams)")
        #expect(!baro.streams.contains(.humidity), "a BMP280 measures no humidity: \(baro.streams)")
        #expect(depth.streams == [.submersion])
        let noDepth = try SubmersionStageTests.DiveRig(depthSensor: false)
        noDepth.hub.start()
        let baro2 = try #require(noDepth.hub.devicesSnapshot().first { $0.kind == "bmp280" })
        #expect(baro2.streams.contains(.submersion), "\(baro2.streams)")
        let imu = try #require(devices.first { $0.kind == "mpu6050" })
        for s: StreamName in [.accelerometer, .gyroscope, .deviceMotion, .pedometer, .activity] {
            #expect(imu.streams.contains(s), "\(s) in \(imu.streams)")
        }
        #expect(!imu.streams.contains(.submersion) && !imu.streams.contains(.magnetometer))
    }
}
