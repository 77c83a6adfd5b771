import Testing
import EdgeFusion
@testable import EdgeAgentCLI
#if canImport(Glibc)
import Glibc
#endif

@Suite struct SampleCSVTests {
    @Test func theHeaderIsTheMockMotionFeedsLayout() {
        #expect(SampleCSV.header == "timestampNs,accelX,accelY,accelZ,gyroX,gyroY,gyroZ,magX,magY,magZ,orientationW,orientationX,orientationY,orientationZ")
        #expect(SampleCSV.columns.count == 14)
    }

    @Test func writesFixedDecimalsAndEmptyCellsForAbsentSensors() {
        let rows = [
            SampleRow(timestampNs: 1_000_000_000, accel: Vector3(0.012, -0.034, 9.80665),
                      gyro: Vector3(0.0001, -0.0002, 0), mag: Vector3(21.5, -3.25, -40.125),
                      orientation: Quaternion(w: 1, x: 0, y: 0, z: 0)),
            SampleRow(timestampNs: 1_010_000_000, accel: Vector3(-0.0000004, 1e-7, 156.9064),
                      gyro: Vector3(34.906585, -0.0000005, 0.0000005)),
            SampleRow(timestampNs: 1_020_000_000, mag: Vector3(.nan, 0, 0),
                      orientation: Quaternion(w: 0.7071067811865476, x: 0, y: 0, z: -0.7071067811865476)),
            SampleRow(timestampNs: 0),
        ]
        #expect(SampleCSV.write(rows) == """
        timestampNs,accelX,accelY,accelZ,gyroX,gyroY,gyroZ,magX,magY,magZ,orientationW,orientationX,orientationY,orientationZ
        1000000000,0.012000,-0.034000,9.806650,0.000100,-0.000200,0.000000,21.500,-3.250,-40.125,1.000000,0.000000,0.000000,0.000000
        1010000000,0.000000,0.000000,156.906400,34.906585,-0.000001,0.000001,,,,,,,
        1020000000,,,,,,,,,,0.707107,0.000000,0.000000,-0.707107
        0,,,,,,,,,,,,,

        """)
    }

    @Test func readsBackWhatItWrites() throws {
        let rows = (0..<50).map { i -> SampleRow in
            let x = Double(i)
            return SampleRow(timestampNs: 5_000_000_000 + UInt64(i) * 10_000_000,
                             accel: Vector3(0.25 * x, -0.125, 9.5),
                             gyro: i % 3 == 0 ? nil : Vector3(x / 1000, 0, -0.5),
                             mag: i % 5 == 0 ? Vector3(20, -x, 40.5) : nil,
                             orientation: i % 2 == 0 ? Quaternion(w: 0.6, x: 0, y: 0.8, z: 0) : nil)
        }
        let text = SampleCSV.write(rows)
        let back = try SampleCSV.parse(text, file: "rt.csv")
        #expect(back == rows)
        // Writing what was read gives the same bytes.
        #expect(SampleCSV.write(back) == text)
    }

    @Test func acceptsCRLFAByteOrderMarkTrailingBlankLinesAndOtherNotations() throws {
        let text = "\u{FEFF}" + SampleCSV.header + "\r\n"
            + "10,1e-3,2.5E1,-0,,,,,,,,,,\r\n"
            + "10, 1 ,2,3,,,,,,,0.99995,0,0,0\r\n\r\n\n"
        let rows = try SampleCSV.parse(text)
        #expect(rows.count == 2)
        #expect(rows[0].accel == Vector3(0.001, 25, 0))
        #expect(rows[1].accel == Vector3(1, 2, 3))
        #expect(rows[1].orientation?.w == 0.99995)
    }

    @Test(arguments: [
        ("timestamp,ax\n", 1, nil as String?, "unknown header 'timestamp,ax'"),
        ("", 0, nil, "empty file"),
        (SampleCSV.header + "\n1,2\n", 2, nil, "expected 14 cells, found 2"),
        (SampleCSV.header + "\n,1,2,3,,,,,,,,,,\n", 2, "timestampNs", "is not whole monotonic nanoseconds"),
        (SampleCSV.header + "\n1.5,1,2,3,,,,,,,,,,\n", 2, "timestampNs", "'1.5' is not whole"),
        (SampleCSV.header + "\n-1,,,,,,,,,,,,,\n", 2, "timestampNs", "'-1' is not whole"),
        (SampleCSV.header + "\n20,,,,,,,,,,,,,\n10,,,,,,,,,,,,,\n", 3, "timestampNs", "before the previous row's 20"),
        (SampleCSV.header + "\n1,1,,3,,,,,,,,,,\n", 2, "accelY", "all empty (absent) or all filled"),
        (SampleCSV.header + "\n1,,,,,,,1,2,,,,,\n", 2, "magZ", "other mag cells"),
        (SampleCSV.header + "\n1,,,,x,0,0,,,,,,,\n", 2, "gyroX", "'x' is not a finite number"),
        (SampleCSV.header + "\n1,,,,nan,0,0,,,,,,,\n", 2, "gyroX", "not a finite number"),
        (SampleCSV.header + "\n1,,,,,,,,,,0,0,0,0\n", 2, "orientationW", "norm 0.0, not 1"),
        (SampleCSV.header + "\n1,,,,,,,,,,0.1,0.2,0.3,0.4\n", 2, "orientationW", "unit quaternion"),
    ])
    func badFilesNameTheLineAndColumn(_ text: String, _ line: Int, _ column: String?, _ says: String) {
        let e = #expect(throws: SampleCSVError.self) { try SampleCSV.parse(text, file: "bad.csv") }
        #expect(e?.line == line, "\(e?.description ?? "")")
        #expect(e?.column == column, "\(e?.description ?? "")")
        #expect(e?.description.contains(says) == true, "\(e?.description ?? "")")
        let prefix = line > 0 ? "bad.csv:\(line): " : "bad.csv: "
        #expect(e?.description.hasPrefix(prefix + (column.map { "column \($0): " } ?? "")) == true)
    }

    @Test func theReaderStreamsAndKnowsItsLine() throws {
        var r = SampleCSVReader(text: SampleCSV.header + "\n1,,,,,,,,,,,,,\n\n3,,,,,,,,,,,,,\n", file: "s.csv")
        #expect(try r.next()?.timestampNs == 1)
        #expect(r.line == 2)
        #expect(try r.next()?.timestampNs == 3)
        #expect(r.line == 4)
        #expect(try r.next() == nil)
    }

    @Test func theWriterHandsOverItsBufferInPieces() {
        var w = SampleCSVWriter()
        w.write(SampleRow(timestampNs: 1))
        let first = w.take()
        #expect(first == SampleCSV.header + "\n1,,,,,,,,,,,,,\n")
        #expect(w.bufferedByteCount == 0)
        w.write(SampleRow(timestampNs: 2))
        #expect(w.take() == "2,,,,,,,,,,,,,\n")
        var continued = SampleCSVWriter(header: false)
        continued.write(SampleRow(timestampNs: 3))
        #expect(continued.take() == "3,,,,,,,,,,,,,\n")
        #expect(SampleCSV.line(SampleRow(timestampNs: 4)) == "4,,,,,,,,,,,,,")
    }

    @Test func loadsAFileAndReportsAMissingOne() throws {
        var template = Array("/tmp/edge-samplecsv-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(path) }
        let text = SampleCSV.write([SampleRow(timestampNs: 7, accel: Vector3(0, 0, 9.81))])
        _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
        #expect(try SampleCSV.load(path: path) == [SampleRow(timestampNs: 7, accel: Vector3(0, 0, 9.81))])
        let e = #expect(throws: SampleCSVError.self) { try SampleCSV.load(path: "/nonexistent/x.csv") }
        #expect(e?.kind == .cannotRead(errno: ENOENT))
    }

    /// docs/recordings.md's sample CSV example reads.
    @Test func documentationExampleReads() throws {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        let doc = try SampleCSV.readFile(parts.joined(separator: "/") + "/docs/recordings.md")
        let lines = doc.split(separator: "\n", omittingEmptySubsequences: false)
        let marker = try #require(lines.firstIndex(of: "<!-- example: sample-csv -->"))
        let open = try #require(lines[(marker + 1)...].firstIndex { $0.hasPrefix("```") })
        let close = try #require(lines[(open + 1)...].firstIndex { $0.hasPrefix("```") })
        let rows = try SampleCSV.parse(lines[(open + 1)..<close].joined(separator: "\n"), file: "docs/recordings.md")
        #expect(rows.count >= 3)
        #expect(rows.contains { $0.mag == nil } && rows.contains { $0.mag != nil })
        #expect(rows.contains { $0.orientation != nil })
    }
}
