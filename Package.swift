// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
// Licensed under the Apache License, Version 2.0 (LICENSE). The attitude filter
// follows VQF (MIT licence); its notice is in THIRD_PARTY_NOTICES.
// Core Motion for Linux single-board computers. No outside Swift packages:
// C libraries come from Debian -dev packages as system-library targets.
import PackageDescription

/// Release builds optimise across modules: the drivers and the engine are
/// generic over the bus, and the loop's bus type is only known in the
/// executable; without this the generic code runs unspecialised (runtime
/// metadata look-ups on every tick).
///
/// Per-module optimisation (issue 22): the modules on the loop's and the
/// decode path's every sample are built for speed (-O), the rest (files,
/// command line, configuration, SQLite, the bridge's plumbing) for size
/// (-Osize), chosen by measurement (docs/benchmarks.md, "Per-module
/// optimisation": 31 % fewer instructions in the agent). EdgeFusion is
/// built for size: at -O it measured no faster (1.01, 1.01, 0.99 of -Osize
/// on three commits, stop 28; an earlier "23 % slower" was a timing of a
/// freshly linked binary against a copied one, which `bench/vqf-compare.py
/// --cost` now avoids by timing copies). A generic
/// specialised across modules is compiled in the module that uses it, so
/// the runtime that instantiates the engine over its bus is on the speed
/// side too. EDGE_OPTIMIZE=size or EDGE_OPTIMIZE=speed in the environment
/// builds every module one way, for that comparison.
let optimize = Context.environment["EDGE_OPTIMIZE"]
func releaseFlags(_ flags: String...) -> [SwiftSetting] {
    [.unsafeFlags(["-cross-module-optimization"] + flags, .when(configuration: .release))]
}
/// The speed side also leaves exclusivity to the compiler's static checks
/// in release builds (issue 22, docs/benchmarks.md "Issue 22: the agent's
/// loop"): the run-time checks of class properties (`swift_beginAccess`,
/// an access set in thread-local storage) were 38 % of the agent's
/// instructions. Debug builds, and so every test run, keep the run-time
/// checks, which trap on a violation.
let forSpeed = releaseFlags(optimize == "size" ? "-Osize" : "-O", "-enforce-exclusivity=unchecked")
let forSize = releaseFlags(optimize == "speed" ? "-O" : "-Osize")


let package = Package(
    name: "EdgeMotion",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CoreMotion", targets: ["CoreMotion"]),
        // Opt-in: an agent inside the app's process when none answers
        // (EdgeMotionInProcessAgent.install()). CoreMotion alone links only
        // the agent's client.
        .library(name: "CoreMotionInProcessAgent", targets: ["CoreMotionInProcessAgent"]),
        .executable(name: "edge-agent", targets: ["edge-agent"]),
        .executable(name: "edge-bench", targets: ["edge-bench"]),
        // Core Motion apps as an iOS developer writes them (Examples/); both
        // opt into the in-process agent, so they run with no agent too.
        .executable(name: "tilt-example", targets: ["tilt-example"]),
        .executable(name: "altitude-example", targets: ["altitude-example"]),
        // The MQTT / Home Assistant bridge: a client of the agent's socket
        // with its own process, so a broker can never touch the loop.
        .executable(name: "edge-mqtt", targets: ["edge-mqtt"]),
        .executable(name: "dive-logger", targets: ["dive-logger"]),
        // The modules that read outside input, as a library for the fuzz
        // targets in FuzzTesting/ (a separate package, so `swift build` and
        // `swift test` here never build or instrument them).
        .library(name: "EdgeMotionInputs",
                 targets: ["EdgeConfig", "EdgeProtocol", "EdgeService", "EdgeBus", "EdgeChipsCore", "EdgeChips", "EdgeSim",
                           "EdgeEngine", "EdgeRuntime", "EdgeAgentCLI", "EdgeHistory", "DiveLog"]),
    ],
    targets: [
        // --- C modules -------------------------------------------------------
        // libi2c (Debian libi2c-dev) + linux/i2c-dev.h. libi2c ships no
        // pkg-config file, so the module map links it by name.
        .systemLibrary(name: "CI2C", path: "Sources/CI2C"),
        // libgpiod 1.6 (Debian 12 / Raspberry Pi OS bookworm).
        .systemLibrary(name: "CGPIOD", path: "Sources/CGPIOD", pkgConfig: "libgpiod",
                       providers: [.apt(["libgpiod-dev"])]),
        // The system's SQLite (Debian libsqlite3-dev). Only EdgeSQLite imports it.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // libmosquitto 2.0 (Debian libmosquitto-dev): the MQTT client of edge-mqtt.
        .systemLibrary(name: "CMosquitto", path: "Sources/CMosquitto", pkgConfig: "libmosquitto",
                       providers: [.apt(["libmosquitto-dev"])]),
        // Small C shims for what Swift cannot call directly (variadic ioctl,
        // struct ucred, clock_nanosleep with TIMER_ABSTIME).
        .target(name: "CEdgeShims", path: "Sources/CEdgeShims"),
        // Heap-allocation counter (interposes malloc) for edge-bench only.
        .target(name: "CAllocCount", path: "Sources/CAllocCount"),

        // --- pure layers ----------------------------------------------------
        // The value types every layer shares, defined once: Vector3,
        // Quaternion, Matrix3, ReferenceFrame, Attitude, field accuracy,
        // standard gravity. Imports nothing of the package.
        .target(name: "EdgeValues", swiftSettings: forSpeed),
        // Pedometer, floors, activity recognition: pure, sample by sample, no I/O.
        .target(name: "EdgeActivity", dependencies: ["EdgeValues"], swiftSettings: forSpeed),
        // Attitude filter, calibration, altitude: no I/O.
        .target(name: "EdgeFusion", dependencies: ["EdgeValues"], swiftSettings: forSize),

        // The chips as data and pure functions: register maps, configuration
        // values and their register tables, variant tables, decoders and the
        // BMP280 compensation, register-dump parsing. Imports nothing but
        // EdgeValues: testable and reusable with no bus, no libi2c, no libgpiod.
        .target(name: "EdgeChipsCore", dependencies: ["EdgeValues"], swiftSettings: forSpeed),

        // Where the agent's files are, wherever a tool or app runs from: the
        // configuration lookup, data directories, board and scenario
        // references, the client's two keys of a configuration
        // (service.socket_path and socket_group), bounded file reads.
        // EdgeValues, FoundationEssentials and Glibc only: every layer may use it.
        .target(name: "EdgeLocations", dependencies: ["EdgeValues"], swiftSettings: forSize),

        // The one command-line reader of edge-agent, edge-mqtt and
        // dive-logger: options with values, flags, positionals, usage errors
        // (unknown option, with did-you-mean). Imports nothing.
        .target(name: "EdgeCommandLine", swiftSettings: forSize),

        // --- I/O layers -----------------------------------------------------
        // systemd and POSIX process plumbing every daemon shares (edge-agent,
        // edge-mqtt): sd_notify readiness, watchdog, reload, stopping. Glibc
        // only: imports no Foundation and no other module of the package.
        .target(name: "EdgeSystem", swiftSettings: forSize),
        // I2CBus protocol, clocks, scripted / recording / replaying / retrying
        // buses, the data-ready seam: no device files.
        .target(name: "EdgeBus", dependencies: ["EdgeValues", "EdgeLocations", "CEdgeShims"], swiftSettings: forSpeed),
        // The Linux implementations: /dev/i2c-N (libi2c), GPIO lines
        // (libgpiod 1.6), the per-bus lock.
        .target(name: "EdgeLinux", dependencies: ["EdgeBus", "CI2C", "CGPIOD", "CEdgeShims"], swiftSettings: forSpeed),
        // Chip drivers generic over I2CBus: probe, reset, configure, read
        // (re-exports EdgeChipsCore).
        .target(name: "EdgeChips", dependencies: ["EdgeBus", "EdgeChipsCore"], swiftSettings: forSpeed),
        // Register-accurate chip simulators and scenarios. Must NOT import
        // EdgeChips: the simulators transcribe the datasheets independently;
        // nor EdgeFusion: the truth model must not depend on the estimator.
        .target(name: "EdgeSim", dependencies: ["EdgeBus", "EdgeValues"], swiftSettings: forSpeed),
        // Client protocol: message and stream types, wire encoding (shared with
        // the CoreMotion library later).
        .target(name: "EdgeProtocol", dependencies: ["EdgeValues"], swiftSettings: forSpeed),
        // The one client of the agent's socket: connect, version check, typed
        // requests and samples, replies matched by id; the shared,
        // multiplexed, reconnecting client used by CoreMotion, watch, poll and
        // the benchmarks. Glibc sockets, no Foundation.
        .target(name: "EdgeClient", dependencies: ["EdgeProtocol", "EdgeLocations", "CEdgeShims"], swiftSettings: forSpeed),
        // The agent's services: Unix-socket server, entitlements, fan-out.
        .target(name: "EdgeService", dependencies: ["EdgeProtocol", "CEdgeShims"], swiftSettings: forSpeed),
        // The engine: sensor hub, fixed-rate loop, multi-rate scheduling,
        // fusion and altitude, faults; publishes to a SampleSink.
        .target(name: "EdgeEngine",
                dependencies: ["EdgeBus", "EdgeChips", "EdgeFusion", "EdgeActivity", "EdgeProtocol", "CEdgeShims"], swiftSettings: forSpeed),
        // Board profiles and configuration files (JSON5), validation.
        // Reading a JSON5 configuration file: the bounded read, the strict
        // decoding and the errors that name the file, line and key. Imports
        // nothing of the agent, so a client (the bridge, the dive logger)
        // reads its own file without linking the estimator or the chips.
        .target(name: "EdgeConfigFiles", dependencies: ["EdgeLocations"], swiftSettings: forSize),
        .target(name: "EdgeConfig", dependencies: ["EdgeConfigFiles", "EdgeLocations", "EdgeBus", "EdgeChipsCore", "EdgeFusion"],
                swiftSettings: forSize),
        // The one SQLite layer: a connection (open read-only or read-write,
        // mode of a new file, busy timeout, extended result codes), prepared
        // statements, binding, stepping, and one typed error keeping the
        // file, the call, SQLite's code, errno and what to do. The only
        // importer of CSQLite; imports nothing else of the package.
        .target(name: "EdgeSQLite", dependencies: ["CSQLite"], swiftSettings: forSize),
        // The fitness history: SQLite (WAL, synchronous=FULL), retention, range queries.
        .target(name: "EdgeHistory", dependencies: ["EdgeSQLite", "EdgeValues", "EdgeProtocol"], swiftSettings: forSize),
        // The agent as one value (AgentRuntime): board selection and
        // session, calibration loading, policy, server, history, hub, loop
        // and thread, with start, stop, reload and statistics. `run` is the
        // runtime plus signals, a status line and sd_notify; EmbeddedAgent
        // (the in-process agent) is the runtime on a private socket.
        .target(name: "EdgeRuntime",
                dependencies: ["EdgeBus", "EdgeLinux", "EdgeChips", "EdgeSim", "EdgeFusion", "EdgeConfig", "EdgeValues", "EdgeLocations",
                               "EdgeProtocol", "EdgeService", "EdgeEngine", "EdgeActivity", "EdgeHistory", "CEdgeShims"],
                swiftSettings: forSpeed),
        // The command-line tool's subcommands, as a library so tests can run them.
        .target(name: "EdgeAgentCLI",
                dependencies: ["EdgeRuntime", "EdgeBus", "EdgeLinux", "EdgeChips", "EdgeSim", "EdgeFusion", "EdgeConfig", "EdgeLocations",
                               "EdgeProtocol", "EdgeClient", "EdgeService", "EdgeSystem", "EdgeEngine", "EdgeActivity", "EdgeHistory",
                               "EdgeCommandLine", "CEdgeShims"], swiftSettings: forSize),
        .executableTarget(name: "edge-agent", dependencies: ["EdgeAgentCLI"], swiftSettings: forSize),
        // The MQTT bridge: topics, Home Assistant discovery, the bounded
        // queue between the agent's socket and the broker, libmosquitto
        // behind one session type, the bridge's configuration and commands.
        // Uses EdgeConfig's JSON5 loader and EdgeSystem's sd_notify; must NOT
        // import EdgeService (the agent's server), EdgeFusion or EdgeEngine.
        .target(name: "EdgeMQTT",
                dependencies: ["EdgeProtocol", "EdgeClient", "EdgeConfigFiles", "EdgeLocations", "EdgeValues", "EdgeSystem", "EdgeCommandLine", "CMosquitto", "CEdgeShims"],
                swiftSettings: forSize),
        .executableTarget(name: "edge-mqtt", dependencies: ["EdgeMQTT"], swiftSettings: forSize),
        // The dive logger: a client of the agent logging dives into SQLite,
        // with Subsurface/UDDF/CSV exports and an SVG plot.
        .target(name: "DiveLog", dependencies: ["EdgeSQLite", "EdgeProtocol", "EdgeClient", "EdgeCommandLine"]),
        .executableTarget(name: "dive-logger", dependencies: ["DiveLog"]),
        // Apple's Core Motion API for apps (full Foundation: OperationQueue,
        // NSObject, NSNumber), backed by the agent through EdgeClient. It
        // must not link the engine, the drivers, the simulators or SQLite
        // (LayeringTests): an app gets those only by adding
        // CoreMotionInProcessAgent.
        .target(name: "CoreMotion", dependencies: ["EdgeClient", "EdgeProtocol", "EdgeValues"]),
        // The in-process agent for Core Motion apps that opt in: an
        // EmbeddedAgent (EdgeRuntime) on a private socket when none answers.
        .target(name: "CoreMotionInProcessAgent", dependencies: ["CoreMotion", "EdgeRuntime"]),
        .executableTarget(name: "tilt-example", dependencies: ["CoreMotion", "CoreMotionInProcessAgent"], path: "Examples/tilt-example"),
        .executableTarget(name: "altitude-example", dependencies: ["CoreMotion", "CoreMotionInProcessAgent"], path: "Examples/altitude-example"),
        // Benchmarks that print figures (the tests run none of them; EdgeBenchTests
        // checks only pure, untimed parts such as the altitude-filter report).
        .executableTarget(name: "edge-bench",
                          dependencies: ["EdgeAgentCLI", "EdgeRuntime", "EdgeEngine", "EdgeSim", "EdgeFusion", "EdgeService",
                                         "EdgeProtocol", "EdgeClient", "EdgeBus", "EdgeChips", "EdgeConfig", "CAllocCount", "CoreMotion",
                                         "EdgeMQTT", "EdgeHistory"]),

        // --- tests ----------------------------------------------------------
        .testTarget(name: "EdgeBusTests", dependencies: ["EdgeBus", "EdgeLinux"]),
        // CoreMotion as app code uses it (public API only), in both language
        // modes: CoreMotionAppTestsSwift5 and CoreMotionSurfaceSwift5 are
        // symbolic links to the Swift 6 targets' directories, so the same
        // files compile twice. The Surface targets are compile-only: every
        // Apple signature the module provides, used as the SDK declares it.
        // Test support: `.ownThread`, a suite trait that runs each test on a
        // thread of its own, for tests that block while they wait on real
        // processes (Tests/TestThreads/OwnThread.swift says why).
        .target(name: "TestThreads", dependencies: ["EdgeValues"], path: "Tests/TestThreads"),
        // Test support in C: a seccomp filter that takes futex_waitv away
        // from a thread, for the ring reader's path before Linux 5.16.
        .target(name: "CTestShims", path: "Tests/CTestShims"),
        .target(name: "CoreMotionTestSupport", dependencies: ["CoreMotion", "CoreMotionInProcessAgent", "TestThreads"], path: "Tests/CoreMotionTestSupport"),
        .target(name: "CoreMotionSurface", dependencies: ["CoreMotion"], path: "Tests/CoreMotionSurface"),
        .target(name: "CoreMotionSurfaceSwift5", dependencies: ["CoreMotion"], path: "Tests/CoreMotionSurfaceSwift5",
                swiftSettings: [.swiftLanguageMode(.v5)]),
        .testTarget(name: "CoreMotionAppTests", dependencies: ["CoreMotion", "CoreMotionTestSupport", "CoreMotionSurface", "TestThreads"]),
        // The library's internal pure parts (@testable), on virtual time.
        .testTarget(name: "CoreMotionTests", dependencies: ["CoreMotion", "EdgeValues"]),
        // SensorRecorderAppTests runs once, in Swift 6 mode: it records for
        // about a minute against real agents, and what the language mode
        // changes (how app code calls the API) CoreMotionSurfaceSwift5
        // compiles.
        .testTarget(name: "CoreMotionAppTestsSwift5",
                    dependencies: ["CoreMotion", "CoreMotionTestSupport", "CoreMotionSurfaceSwift5", "TestThreads"],
                    exclude: ["SensorRecorderAppTests.swift"],
                    swiftSettings: [.swiftLanguageMode(.v5)]),
        // The pure chip layer alone: no bus module, no C libraries.
        .testTarget(name: "EdgeChipsCoreTests", dependencies: ["EdgeChipsCore"]),
        .testTarget(name: "EdgeChipsTests", dependencies: ["EdgeChips", "EdgeBus"]),
        .testTarget(name: "EdgeSimTests", dependencies: ["EdgeSim", "EdgeChips", "EdgeBus", "EdgeFusion"]),
        .testTarget(name: "EdgeFusionTests", dependencies: ["EdgeFusion"]),
        .testTarget(name: "EdgeActivityTests", dependencies: ["EdgeActivity"]),
        .testTarget(name: "EdgeHistoryTests", dependencies: ["EdgeHistory", "EdgeSQLite", "EdgeProtocol", "TestThreads"]),
        .testTarget(name: "EdgeConfigTests", dependencies: ["EdgeConfig", "TestThreads"]),
        .testTarget(name: "EdgeServiceTests", dependencies: ["EdgeService", "EdgeProtocol", "TestThreads"]),
        .testTarget(name: "EdgeSystemTests", dependencies: ["EdgeSystem"]),
        .testTarget(name: "EdgeClientTests", dependencies: ["EdgeClient", "EdgeService", "EdgeProtocol", "CEdgeShims", "TestThreads", "CTestShims"]),
        .testTarget(name: "EdgeEngineTests",
                    dependencies: ["EdgeEngine", "EdgeSim", "EdgeBus", "EdgeChips", "EdgeFusion", "EdgeProtocol", "EdgeHistory"]),
        .testTarget(name: "EdgeAgentCLITests", dependencies: ["EdgeAgentCLI", "EdgeRuntime", "EdgeLocations", "EdgeLinux", "EdgeSQLite", "EdgeCommandLine", "TestThreads"]),
        // The bridge's pure parts, and the bridge against a real mosquitto
        // broker and a real edge-agent on loopback.
        .testTarget(name: "EdgeMQTTTests", dependencies: ["EdgeMQTT", "EdgeProtocol", "EdgeConfig", "EdgeClient", "EdgeCommandLine", "EdgeService", "TestThreads"]),
        .testTarget(name: "DiveLogTests", dependencies: ["DiveLog", "EdgeAgentCLI", "EdgeRuntime", "EdgeProtocol", "TestThreads"]),
        .testTarget(name: "EdgeCommandLineTests", dependencies: ["EdgeCommandLine"]),
        // The module arrows (issue 17): reads Package.swift and every
        // Sources/<Module>'s import lines; links nothing of the package.
        .testTarget(name: "LayeringTests"),
        // The benchmarks' pure parts (e.g. the altitude-filter report), via @testable import.
        .testTarget(name: "EdgeBenchTests", dependencies: ["edge-bench"]),
    ],
    swiftLanguageModes: [.v6]
)
