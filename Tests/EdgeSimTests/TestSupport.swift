import EdgeBus
@testable import EdgeSim

/// Raw register helpers written here, independently of any driver.
extension I2CBus {
    func read(_ address: UInt8, _ register: UInt8, _ count: Int) throws(I2CError) -> [UInt8] {
        try readRegisters(address, register, count: count)
    }
    func write(_ address: UInt8, _ bytes: [UInt8]) throws(I2CError) {
        var failure: I2CError?
        bytes.withUnsafeBytes { w in
            do throws(I2CError) {
                try transfer(address: address, write: w, read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            } catch { failure = error }
        }
        if let failure { throw failure }
    }
    /// A read with no register pointer (continues from the device's pointer).
    func readCurrent(_ address: UInt8, _ count: Int) throws(I2CError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var failure: I2CError?
        out.withUnsafeMutableBytes { r in
            do throws(I2CError) {
                try transfer(address: address, write: UnsafeRawBufferPointer(start: nil, count: 0), read: r)
            } catch { failure = error }
        }
        if let failure { throw failure }
        return out
    }
}

func be16(_ b: [UInt8], _ i: Int) -> Int { Int(Int16(bitPattern: UInt16(b[i]) << 8 | UInt16(b[i + 1]))) }
func le16(_ b: [UInt8], _ i: Int) -> Int { Int(Int16(bitPattern: UInt16(b[i + 1]) << 8 | UInt16(b[i]))) }

let ms: UInt64 = 1_000_000

/// A truth that steps from one value to another at a time.
final class StepTruth: TruthSource, @unchecked Sendable {
    var before: PhysicalTruth, after: PhysicalTruth, stepAt: UInt64
    init(before: PhysicalTruth, after: PhysicalTruth, stepAt: UInt64) {
        self.before = before; self.after = after; self.stepAt = stepAt
    }
    func truth(atNanoseconds t: UInt64, body: SimBody) -> PhysicalTruth { t < stepAt ? before : after }
}

func truth(pressure: Double, temperature: Double) -> PhysicalTruth {
    var t = PhysicalTruth.restingLevel
    t.pressure = pressure; t.temperature = temperature
    return t
}
