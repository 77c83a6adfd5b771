/// `0x68`-style formatting for I2C addresses and registers (two lower-case
/// hex digits), the way `i2cdetect` and the data sheets write them.
@inlinable
public func hex(_ v: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return "0x" + String(digits[Int(v >> 4)]) + String(digits[Int(v & 0xF)])
}

extension String {
    /// The text of a C character buffer up to its first NUL (what getcwd,
    /// readlink or realpath wrote into a fixed array), invalid UTF-8
    /// repaired. (`String(cString:)` on an array is deprecated.)
    public init(nulTerminated buffer: [CChar]) {
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
