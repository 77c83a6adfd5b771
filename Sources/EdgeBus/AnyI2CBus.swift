/// A type-erased bus for tools (`probe`, `read`, `decode`) that pick a Linux
/// or simulated bus at run time. Drivers are generic over `I2CBus`; the
/// real-time loop is specialised on the concrete bus type instead of this box.
public final class AnyI2CBus: I2CBus, @unchecked Sendable {
    public let base: any I2CBus
    public init(_ base: any I2CBus) { self.base = base }
    public var name: String { base.name }
    public func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                         read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        try base.transfer(address: address, write: write, read: read)
    }
    public func probe(address: UInt8) throws(I2CError) -> Bool {
        try base.probe(address: address)
    }
}
