// swift-tools-version:6.0
// libFuzzer targets for the modules that read outside input. A package of
// its own, so the main package's `swift build` and `swift test` never see
// these targets; build and run them with `FuzzTesting/run.sh` (see README.md),
// which adds `-sanitize=fuzzer,address` to every Swift compilation
// (-sanitize=fuzzer instruments for coverage and links libFuzzer).
import PackageDescription

let package = Package(
    name: "EdgeMotionFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "EdgeMotion", path: "..")],
    targets: [
        // Input helpers and invariant checks the targets share.
        .target(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"]),
        // (a) configuration, board profile, scenario and calibration files (JSON5).
        .executableTarget(name: "FuzzConfig",
                          dependencies: ["FuzzSupport", .product(name: "EdgeMotionInputs", package: "EdgeMotion")]),
        // (b) one client request line, and one agent message line (the client side).
        .executableTarget(name: "FuzzRequest",
                          dependencies: ["FuzzSupport", .product(name: "EdgeMotionInputs", package: "EdgeMotion")]),
        // (c) transaction logs (parsed, then replayed) and sample CSV recordings.
        .executableTarget(name: "FuzzRecording",
                          dependencies: ["FuzzSupport", .product(name: "EdgeMotionInputs", package: "EdgeMotion")]),
        // (e) dive-logger import of protocol lines, then its exports and plot.
        .executableTarget(name: "FuzzDiveImport",
                          dependencies: ["FuzzSupport", .product(name: "EdgeMotionInputs", package: "EdgeMotion")]),
        // (d) i2cdump register dumps and the chips' decode(image:).
        .executableTarget(name: "FuzzRegisterDump",
                          dependencies: ["FuzzSupport", .product(name: "EdgeMotionInputs", package: "EdgeMotion")]),
    ],
    swiftLanguageModes: [.v6]
)
