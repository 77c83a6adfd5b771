/// Byte-order helpers. Widen before shifting: `UInt8(x) << 8` is 0.

/// Signed 16-bit from big-endian bytes (MPU-6050 data, HMC5883L).
@inlinable @inline(__always)
public func int16BigEndian(_ hi: UInt8, _ lo: UInt8) -> Int16 {
    Int16(bitPattern: UInt16(hi) << 8 | UInt16(lo))
}

/// Signed 16-bit from little-endian bytes (QMC5883L data, BMP280 calibration).
@inlinable @inline(__always)
public func int16LittleEndian(_ lo: UInt8, _ hi: UInt8) -> Int16 {
    Int16(bitPattern: UInt16(hi) << 8 | UInt16(lo))
}

/// Unsigned 16-bit from little-endian bytes (BMP280 dig_T1, dig_P1).
@inlinable @inline(__always)
public func uint16LittleEndian(_ lo: UInt8, _ hi: UInt8) -> UInt16 {
    UInt16(hi) << 8 | UInt16(lo)
}
