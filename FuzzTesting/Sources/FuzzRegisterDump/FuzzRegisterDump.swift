// Fuzz target (d): `i2cdump` register dumps, as `edge-agent decode` reads
// them: `RegisterDump.image` (EdgeChips/Common/RegisterDump.swift), then
// each chip's `decode(image:)` (MPU-6050, BMP280, QMC5883L) and the
// command's text and JSON formatting of the reading.
//
// A thrown `RegisterDumpError` or `DriverError` is the right answer to a bad
// dump. Findings are traps, sanitizer reports, hangs, huge allocations, and
// the invariant that a decoded reading holds no NaN or infinity (the
// readings are what the tool prints: a NaN is no reading).
import EdgeChips
@testable import EdgeAgentCLI
@testable import EdgeRuntime
import FuzzSupport

/// One input (libFuzzer's LLVMFuzzerTestOneInput); returns 0, findings trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRegisterDump(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    // DecodeCommand reads the file with String(decoding:as:).
    let text = fuzzString(data, size)
    let image: RegisterImage
    do {
        image = try RegisterDump.image(text)
    } catch {
        _ = error.description
        return 0
    }
    if image.values.count != 256 { invariantBroken("an image of \(image.values.count) registers") }
    if let r = try? MPU6050Decoder.decode(image: image) {
        requireFinite(r, "an MPU-6050 reading")
        _ = DecodeCommand.format(r, json: false); _ = DecodeCommand.format(r, json: true)
    }
    if let r = try? BMP280Compensation.decode(image: image) {
        requireFinite(r, "a BMP280 reading")
        _ = DecodeCommand.format(r, json: false); _ = DecodeCommand.format(r, json: true)
    }
    if let r = try? QMC5883LDecoder.decode(image: image) {
        requireFinite(r, "a QMC5883L reading")
        _ = DecodeCommand.format(r, json: false); _ = DecodeCommand.format(r, json: true)
    }
    return 0
}
