#if canImport(Glibc)
import Glibc
#endif

/// The fuzzer's bytes as an array.
public func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// The fuzzer's bytes as text, invalid UTF-8 repaired (what the tools do
/// when they read a whole file with `String(decoding:as:)`).
public func fuzzString(_ data: UnsafePointer<UInt8>?, _ size: Int) -> String {
    String(decoding: fuzzBytes(data, size), as: UTF8.self)
}

/// The fuzzer's bytes as text, or nil when they are not UTF-8 (what
/// `ConfigLoader.load` does: such a file is refused before decoding).
public func fuzzValidString(_ data: UnsafePointer<UInt8>?, _ size: Int) -> String? {
    String(validating: fuzzBytes(data, size), as: UTF8.self)
}

/// Whether the targets skip the inputs of known open findings (see
/// known-findings.txt): yes while fuzzing, so the fuzzer looks for new ones;
/// `FUZZ_NO_SKIPS=1` turns the skips off, which is how run.sh checks that a
/// known finding is still open.
public let skipKnownFindings: Bool = getenv("FUZZ_NO_SKIPS") == nil
