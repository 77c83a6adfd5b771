import EdgeBus
import Testing

// Register constants re-declared here, independently of the drivers, from
// the data sheets (a typo must be made twice to pass).
enum MPU {
    static let address: UInt8 = 0x68
    static let SELF_TEST_X: UInt8 = 0x0D
    static let SMPLRT_DIV: UInt8 = 0x19
    static let CONFIG: UInt8 = 0x1A
    static let GYRO_CONFIG: UInt8 = 0x1B
    static let ACCEL_CONFIG: UInt8 = 0x1C
    static let FIFO_EN: UInt8 = 0x23
    static let INT_PIN_CFG: UInt8 = 0x37
    static let INT_ENABLE: UInt8 = 0x38
    static let INT_STATUS: UInt8 = 0x3A
    static let ACCEL_XOUT_H: UInt8 = 0x3B
    static let USER_CTRL: UInt8 = 0x6A
    static let PWR_MGMT_1: UInt8 = 0x6B
    static let PWR_MGMT_2: UInt8 = 0x6C
    static let FIFO_COUNTH: UInt8 = 0x72
    static let FIFO_R_W: UInt8 = 0x74
    static let WHO_AM_I: UInt8 = 0x75
}

enum BMP {
    static let address: UInt8 = 0x76
    static let calib00: UInt8 = 0x88
    static let id: UInt8 = 0xD0
    static let reset: UInt8 = 0xE0
    static let status: UInt8 = 0xF3
    static let ctrl_meas: UInt8 = 0xF4
    static let config: UInt8 = 0xF5
    static let press_msb: UInt8 = 0xF7
}

enum QMC {
    static let address: UInt8 = 0x0D
    static let DATA: UInt8 = 0x00
    static let STATUS: UInt8 = 0x06
    static let TOUT: UInt8 = 0x07
    static let CTRL1: UInt8 = 0x09
    static let CTRL2: UInt8 = 0x0A
    static let SET_RESET: UInt8 = 0x0B
    static let CHIP_ID: UInt8 = 0x0D
}

/// A bus that forwards to a scripted bus and records the virtual time of
/// every transfer, so tests can check the waits between them.
final class TimedBus: I2CBus {
    let inner: ScriptedI2CBus
    let clock: VirtualClock
    private(set) var times: [UInt64] = []
    init(_ script: [ScriptedI2CBus.Transaction], clock: VirtualClock) {
        inner = ScriptedI2CBus(script); self.clock = clock
    }
    var name: String { inner.name }
    func transfer(address: UInt8, write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        times.append(clock.nowNanoseconds)
        try inner.transfer(address: address, write: write, read: read)
    }
    func verify() -> [String] { inner.verify() }
}

func be(_ v: Int16) -> [UInt8] { let u = UInt16(bitPattern: v); return [UInt8(u >> 8), UInt8(u & 0xFF)] }
func le(_ v: Int16) -> [UInt8] { let u = UInt16(bitPattern: v); return [UInt8(u & 0xFF), UInt8(u >> 8)] }

func expectClose(_ a: Double, _ b: Double, _ tol: Double, _ what: String = "",
                 sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(abs(a - b) <= tol, "\(what): \(a) vs \(b) (tolerance \(tol))", sourceLocation: sourceLocation)
}
