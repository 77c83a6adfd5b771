import Testing
import Foundation
import EdgeFusion
import EdgeProtocol
import EdgeValues

/// The value types the wire and the maths share are one type each, so the
/// engine hands the filter's values to the protocol without a hand-written
/// mapping (which is where a swapped case hides), and the constants of the
/// units have one definition.
@Suite struct SingleDefinitionTests {
    @Test func wireAndFusionShareTheirValueTypes() {
        #expect(ObjectIdentifier(EdgeProtocol.Vector3.self) == ObjectIdentifier(EdgeFusion.Vector3.self))
        #expect(ObjectIdentifier(EdgeProtocol.ReferenceFrame.self) == ObjectIdentifier(EdgeFusion.ReferenceFrame.self))
        // The sample's field accuracy is the filter's accuracy type.
        let accuracy = EdgeFusion.CalibratedMagneticField(field: .zero, accuracy: .high).accuracy
        let sample = DeviceMotionSample(timestampNs: 0, attitude: .identity, gravity: .zero, userAcceleration: .zero,
                                        rotationRate: .zero, magneticFieldAccuracy: accuracy)
        #expect(sample.magneticFieldAccuracy.rawValue == 2)   // Apple's CMMagneticFieldCalibrationAccuracyHigh
    }

    /// Apple's raw values (CMMagneticFieldCalibrationAccuracy) and the frame
    /// names of CMAttitudeReferenceFrame, written here from Apple's docs.
    @Test func sharedEnumsCarryApplesValues() {
        #expect(MagneticFieldCalibrationAccuracy.allCases.map(\.rawValue) == [-1, 0, 1, 2])
        #expect(ReferenceFrame.allCases.map(\.rawValue) ==
                ["xArbitraryZVertical", "xArbitraryCorrectedZVertical", "xMagneticNorthZVertical", "xTrueNorthZVertical"])
        for f in ReferenceFrame.allCases { #expect("\(f.wireName)" == f.rawValue) }
    }

    /// Standard gravity is defined once (EdgeValues): no other source file
    /// binds the literal 9.80665 to a name.
    @Test func standardGravityIsDefinedOnce() throws {
        let sources = URL(fileURLWithPath: repositoryRoot).appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(atPath: sources.path)!.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        var definitions: [String] = []
        for f in files {
            let text = try String(contentsOf: sources.appendingPathComponent(f), encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains("9.80665") && (code.contains("let ") || code.contains("var ")) {
                    definitions.append("\(f):\(n + 1)")
                }
            }
        }
        #expect(definitions == ["EdgeValues/Units.swift:5"])
    }
}
