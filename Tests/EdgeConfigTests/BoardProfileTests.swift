import Testing
import Foundation
@testable import EdgeConfig

/// The repository root, found from this file's path (no SwiftPM resources).
let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

@Suite struct BoardProfileTests {
    @Test func everyShippedProfileLoads() throws {
        let dir = repositoryRoot + "/boards"
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".json5") }.sorted()
        #expect(files.count >= 5)
        for f in files {
            do {
                let p = try ConfigLoader.load(BoardProfile.self, from: dir + "/" + f)
                #expect(!p.chips.isEmpty, "\(f) has no chips")
            } catch {
                Issue.record("\(f): \(error)")
            }
        }
    }

    @Test func requiredProfilesExist() throws {
        for name in ["raspberry-pi-4b", "raspberry-pi-5", "raspberry-pi-zero-2w", "gy-87", "simulated", "gy-271-hmc5883l",
                     "gy-bme280", "simulated-hmc5883l-bme280"] {
            #expect(FileManager.default.fileExists(atPath: "\(repositoryRoot)/boards/\(name).json5"), "\(name)")
        }
    }

    @Test func simulatedProfileContents() throws {
        let p = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/simulated.json5")
        #expect(p.bus == .simulated)
        #expect(p.simulation?.scenario == "../scenarios/desk-idle.json5")
        #expect(p.chip(.mpu6050)?.address == 0x68)
        #expect(p.chip(.mpu6050, role: .accessory)?.address == 0x69)
        #expect(p.chip(.qmc5883l)?.mounting.axes == ["-y", "+x", "+z"])
        #expect(p.chip(.mpu6050)?.dataReady == .init(chip: "simulated", line: 0))
    }

    @Test func gy87MagnetometerIsBehindTheMPU() throws {
        let p = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/gy-87.json5")
        #expect(p.chip(.qmc5883l)?.behind == 0x68)
        #expect(p.chip(.bmp280)?.address == 0x77)
        #expect(p.bus == .linux(1))
    }

    @Test func pi5UsesTheRP1Label() throws {
        let p = try ConfigLoader.load(BoardProfile.self, from: repositoryRoot + "/boards/raspberry-pi-5.json5")
        #expect(p.chip(.mpu6050)?.dataReady?.chip == "pinctrl-rp1")
    }

    func error(_ text: String) -> ConfigError? {
        do {
            _ = try ConfigLoader.decode(BoardProfile.self, from: text, file: "test.json5")
            return nil
        } catch {
            return error
        }
    }

    @Test func syntaxErrorReportsLineAndColumn() throws {
        let e = try #require(error("""
        {
          name: "x",
          bus: 1
          chips: [],
        }
        """))
        #expect(e.kind == .syntax)
        #expect(e.file == "test.json5")
        #expect(e.line == 4)
        #expect(e.column == 3)
        #expect(e.description.hasPrefix("test.json5:4:3: syntax error: "))
        #expect(e.description.contains("^"))
    }

    @Test func wrongAddressNamesKeyPathAndLine() throws {
        let e = try #require(error("""
        {
          name: "x", bus: 1,
          chips: [
            { kind: "mpu6050", address: 0x68 },
            { kind: "bmp280", address: 0x68 },
          ],
        }
        """))
        #expect(e.kind == .invalidValue)
        #expect(e.keyPath == "chips[1].address")
        #expect(e.line == 5)
        #expect(e.message.contains("0x76 or 0x77"))
    }

    @Test func unknownKeyIsRejectedWithHint() throws {
        let e = try #require(error("{ name: 'x', bus: 1, chips: [{ kind: 'bmp280', adress: 0x76 }] }"))
        #expect(e.keyPath == "chips[0].adress")
        #expect(e.message.contains("did you mean 'address'"))
    }

    @Test func missingKeyIsNamed() throws {
        let e = try #require(error("{ name: 'x', chips: [] }"))
        #expect(e.kind == .missingKey)
        #expect(e.message.contains("'bus'"))
        #expect(e.line == 1)
    }

    @Test func wrongTypeIsNamed() throws {
        let e = try #require(error("{ name: 'x', bus: 1, chips: [{ kind: 'bmp280', address: 'seventy-six' }] }"))
        #expect(e.kind == .wrongType)
        #expect(e.keyPath == "chips[0].address")
        #expect(e.message.contains("whole number"))
    }

    @Test func duplicateAddressesAreRejected() throws {
        let e = try #require(error("{ name: 'x', bus: 1, chips: [{ kind: 'mpu6050', address: 0x68 }, { kind: 'mpu6050', address: 0x68 }] }"))
        #expect(e.message.contains("both use address 0x68"))
    }

    @Test func simulatedBoardNeedsAScenario() throws {
        let e = try #require(error("{ name: 'x', bus: 'simulated', chips: [] }"))
        #expect(e.message.contains("scenario"))
    }

    @Test func behindMustNameAnMPU() throws {
        let e = try #require(error("{ name: 'x', bus: 1, chips: [{ kind: 'qmc5883l', address: 0x0d, behind: 0x68 }] }"))
        #expect(e.message.contains("no mpu6050 at that address"))
    }

    @Test func unknownKindListsSupported() throws {
        let e = try #require(error("{ name: 'x', bus: 1, chips: [{ kind: 'bmp180', address: 0x77 }] }"))
        #expect(e.message.contains("mpu6050, bmp280, qmc5883l"))
    }

    @Test func missingFileIsNotFound() {
        do {
            _ = try ConfigLoader.load(BoardProfile.self, from: "/nonexistent/board.json5")
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.description.contains("/nonexistent/board.json5"))
        }
    }
}

@Suite struct MountingTests {
    @Test func permutationParsesToMatrix() throws {
        let m = try Mounting(axes: ["-y", "+x", "+z"])
        #expect(m.matrix == [[0, -1, 0], [1, 0, 0], [0, 0, 1]])
        // Chip +Y (0,1,0) points along board -X.
        #expect(m.toBoard(SIMD3(0, 1, 0)) == SIMD3(-1, 0, 0))
        #expect(m.toBoard(SIMD3(1, 2, 3)) == SIMD3(-2, 1, 3))
    }

    @Test func mirrorImageIsRejected() {
        #expect(throws: MountingError.self) { try Mounting(axes: ["+y", "+x", "+z"]) }
        #expect(throws: MountingError.self) { try Mounting(axes: ["+x", "+x", "+z"]) }
        #expect(throws: MountingError.self) { try Mounting(axes: ["+x", "+w", "+z"]) }
        #expect(throws: MountingError.self) { try Mounting(matrix: [[1, 0, 0], [0, 1, 0]]) }
        #expect(throws: MountingError.self) { try Mounting(matrix: [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]) }
    }

    @Test func upsideDownAndRoundTrip() throws {
        let m = try Mounting(axes: ["+x", "-y", "-z"])
        #expect(m.toBoard(SIMD3(0, 0, 9.8)) == SIMD3(0, 0, -9.8))
        #expect(m.axes == ["+x", "-y", "-z"])
        let rotated = try Mounting(matrix: [[0.6, -0.8, 0], [0.8, 0.6, 0], [0, 0, 1]])
        #expect(rotated.axes == nil)
    }
}

@Suite struct ConfigLoaderCrashGuardTests {
    @Test func exponentWithoutDigitsIsASyntaxErrorNotACrash() throws {
        do {
            _ = try ConfigLoader.decode(BoardProfile.self, from: "{ name: 'x', bus: 1e+ }", file: "t.json5")
            Issue.record("expected a syntax error")
        } catch {
            #expect(error.kind == .syntax)
            #expect(error.line == 1)
        }
    }
}

@Suite struct AgentConfigTests {
    @Test func shippedConfigLoads() throws {
        let c = try ConfigLoader.load(AgentConfig.self, from: repositoryRoot + "/config/edge-agent.json5")
        #expect(c.board == "simulated")
        #expect(c.fusion.frame == "xMagneticNorthZVertical")
        #expect(c.loop.imuBatch == 0, "automatic batching")
        #expect(c.sensors.mpu6050.sampleRateHz == 200)
        #expect(c.sensors.bmp280.pressureOversampling.factor == 16)
        #expect(c.clients == nil)
        #expect(c.calibrationFile == "calibration.json")
    }

    func error(_ text: String) -> ConfigError? {
        do { _ = try ConfigLoader.decode(AgentConfig.self, from: text, file: "c.json5"); return nil } catch { return error }
    }

    @Test func badValuesNameTheKey() throws {
        let e1 = try #require(error("{ sensors: { mpu6050: { gyro_range_dps: 300 } } }"))
        #expect(e1.keyPath == "sensors.mpu6050.gyro_range_dps")
        #expect(e1.message.contains("250"))
        let e2 = try #require(error("{ sensors: { bmp280: { oversampling: 4 } } }"))
        #expect(e2.message.contains("unknown key 'oversampling'"))
        let e3 = try #require(error("{ fusion: { frame: 'xTrueNorthZVertical' } }"))
        #expect(e3.message.contains("declination_deg"))
        let e4 = try #require(error("{ clients: [{ user: 'pi', entitlements: ['motion', 'teleport'] }] }"))
        #expect(e4.keyPath == "clients[0].entitlements[1]")
        let e5 = try #require(error("{ always_on: ['altitud'] }"))
        #expect(e5.message.contains("unknown stream 'altitud'"))
        let e6 = try #require(error("{ loop: { imu_batch: 65 } }"))
        #expect(e6.keyPath == "loop.imu_batch")
        #expect(e6.line == 1)
    }
}

@Suite struct DeployConfigTests {
    @Test func systemConfigLoadsAndUsesTheServiceDirectories() throws {
        let c = try ConfigLoader.load(AgentConfig.self, from: repositoryRoot + "/deploy/edge-agent.json5")
        // Simulated: the package starts the service at installation, on any
        // machine; a board without I2C enabled would fail that start.
        #expect(c.board == "simulated")
        #expect(c.service.socketPath == "/run/edge-agent/agent.sock")
        #expect(c.service.socketGroup == "edge-motion")
        #expect(c.clients?.first?.group == "edge-motion")
        #expect(c.calibrationFile?.hasPrefix("/var/lib/edge-agent/") == true)
    }
}
