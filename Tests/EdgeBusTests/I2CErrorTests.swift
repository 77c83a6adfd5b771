import Testing
import Glibc
@testable import EdgeBus
@testable import EdgeLinux

@Suite struct I2CErrorTests {
    @Test(arguments: [
        (ENXIO, I2CError.Kind.noDevice), (EREMOTEIO, .noDevice), (ENODEV, .noDevice),
        (EBUSY, .addressInUse), (EACCES, .permissionDenied), (ENOENT, .busNotFound),
        (ETIMEDOUT, .busTimeout), (EAGAIN, .busTimeout), (EIO, .io), (EOPNOTSUPP, .unsupported),
    ])
    func errnoMapsToKind(_ e: Int32, _ kind: I2CError.Kind) {
        #expect(I2CError.kind(forErrno: e) == kind)
    }

    @Test func messagesSayWhatToDo() {
        let busy = I2CError(errno: EBUSY, bus: "/dev/i2c-1", address: 0x68, register: 0x75, operation: "ioctl(I2C_SLAVE)")
        #expect(busy.description.contains("0x68"))
        #expect(busy.description.contains("register 0x75"))
        #expect(busy.description.contains("overlay"))
        #expect(busy.description.contains("errno 16"))
        let nack = I2CError(errno: EREMOTEIO, bus: "/dev/i2c-1", address: 0x77, operation: "read 1 byte")
        #expect(nack.description.contains("nothing answered at 0x77 on /dev/i2c-1"))
        #expect(nack.description.contains("wiring"))
        let acc = I2CError(errno: EACCES, bus: "/dev/i2c-1", operation: "open")
        #expect(acc.description.contains("i2c` group"))
        let noent = I2CError(errno: ENOENT, bus: "/dev/i2c-7", operation: "open")
        #expect(noent.description.contains("enable I2C"))
        let stuck = I2CError(errno: ETIMEDOUT, bus: "/dev/i2c-1", address: 0x68, operation: "read 14 bytes")
        #expect(stuck.description.contains("stuck"))
    }

    @Test func hexFormatting() {
        #expect(hex(0x0D) == "0x0d")
        #expect(hex(0xFF) == "0xff")
        #expect(hex(0) == "0x00")
    }
}

@Suite struct LinuxBusOpenTests {
    @Test func missingBusIsBusNotFound() {
        #expect(throws: I2CError.self) { try LinuxI2CBus(path: "/dev/i2c-does-not-exist") }
        do {
            _ = try LinuxI2CBus(path: "/dev/i2c-does-not-exist")
        } catch {
            #expect(error.kind == .busNotFound)
            #expect(error.errno == ENOENT)
            #expect(error.operation == "open")
        }
    }

    @Test func notAnI2CDeviceIsAnError() {
        // /dev/null opens but I2C_FUNCS fails (ENOTTY): an io error naming the ioctl.
        do {
            _ = try LinuxI2CBus(path: "/dev/null")
            Issue.record("opening /dev/null as an I2C bus should fail")
        } catch {
            #expect(error.operation == "ioctl(I2C_FUNCS)")
            #expect(error.errno == ENOTTY)
        }
    }
}

@Suite struct ScriptedBusTests {
    @Test func playsScriptAndVerifies() throws {
        let bus = ScriptedI2CBus([
            .read(0x68, register: 0x75, reply: [0x68]),
            .write(0x68, [0x6B, 0x01]),
            .writeRead(0x76, [0xF7], reply: [1, 2, 3]),
        ])
        #expect(try bus.readRegister(0x68, 0x75) == 0x68)
        try bus.writeRegister(0x68, 0x6B, 0x01)
        #expect(try bus.readRegisters(0x76, 0xF7, count: 3) == [1, 2, 3])
        #expect(bus.verify().isEmpty)
    }

    @Test func reportsMismatchAndLeftovers() {
        let bus = ScriptedI2CBus([.write(0x68, [0x6B, 0x01]), .write(0x68, [0x6C, 0x00])])
        #expect(throws: I2CError.self) { try bus.writeRegister(0x68, 0x6B, 0x00) }
        let problems = bus.verify()
        #expect(problems.count == 2)
        #expect(problems[0].contains("expected 0x68: write [0x6b 0x01]"))
    }

    @Test func scriptedFailureCarriesErrno() {
        let bus = ScriptedI2CBus([.fail(0x77, [0xD0], readCount: 1, errno: EREMOTEIO)])
        do {
            _ = try bus.readRegister(0x77, 0xD0)
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .noDevice)
            #expect(error.register == 0xD0)
        }
        #expect(bus.verify().isEmpty)
    }

    @Test func probeTreatsNoDeviceAsAbsent() throws {
        let bus = ScriptedI2CBus([
            .fail(0x50, [], readCount: 1, errno: ENXIO),
            .writeRead(0x68, [], reply: [0]),
        ])
        #expect(try bus.probe(address: 0x50) == false)
        #expect(try bus.probe(address: 0x68) == true)
        #expect(bus.verify().isEmpty)
    }
}

@Suite struct ClockTests {
    @Test func virtualClockAdvancesOnSleep() {
        let c = VirtualClock(startNanoseconds: 1_000)
        c.sleep(milliseconds: 100)
        #expect(c.nowNanoseconds == 100_001_000)
        c.sleep(untilNanoseconds: 5)   // in the past: no change
        #expect(c.nowNanoseconds == 100_001_000)
        c.advance(nanoseconds: 9)
        #expect(c.nowNanoseconds == 100_001_009)
    }

    @Test func monotonicClockIsMonotonic() {
        let c = MonotonicClock()
        let a = c.nowNanoseconds
        let b = c.nowNanoseconds
        #expect(b >= a)
        c.sleep(untilNanoseconds: a)   // already past: returns at once
    }
}

@Suite struct BusLockTests {
    func tempDir() -> String {
        var template = Array("/tmp/edge-lock-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: p!)
    }

    @Test func secondLockOnTheSameBusIsRefusedNamingTheOwner() throws {
        let dir = tempDir()
        let first = try BusLock(bus: "/dev/i2c-1", directory: dir, purpose: "edge-agent run")
        #expect(first.path == dir + "/edge-agent-i2c-1.lock")
        // flock locks belong to the open file description: a second open in
        // the same process conflicts just as another process would.
        do {
            _ = try BusLock(bus: "/dev/i2c-1", directory: dir, purpose: "edge-agent read")
            Issue.record("the second lock should be refused")
        } catch {
            guard case .held(let h) = error else { Issue.record("unexpected \(error)"); return }
            #expect(h.owner.contains("pid \(getpid()): edge-agent run"))
            #expect(h.description.contains("/dev/i2c-1 is in use by another edge-agent"))
        }
        // Another bus is independent.
        _ = try BusLock(bus: "/dev/i2c-2", directory: dir)
    }

    @Test func lockIsReleasedWhenDropped() throws {
        let dir = tempDir()
        do { _ = try BusLock(bus: "/dev/i2c-3", directory: dir) }
        _ = try BusLock(bus: "/dev/i2c-3", directory: dir)
    }

    @Test func unwritableDirectoryIsAClearError() {
        do {
            _ = try BusLock(bus: "/dev/i2c-1", directory: "/nonexistent-dir")
            Issue.record("expected failure")
        } catch {
            guard case .failed(let f) = error else { Issue.record("unexpected \(error)"); return }
            #expect(f.errno == ENOENT)
            #expect(f.description.contains("/nonexistent-dir/edge-agent-i2c-1.lock"))
        }
    }
}
