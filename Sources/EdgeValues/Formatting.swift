/// `0x68`-style formatting for I2C addresses and registers (two lower-case
/// hex digits), the way `i2cdetect` and the data sheets write them.
@inlinable
public func hex(_ v: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return "0x" + String(digits[Int(v >> 4)]) + String(digits[Int(v & 0xF)])
}
