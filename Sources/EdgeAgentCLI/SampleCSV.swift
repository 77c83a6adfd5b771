#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeBus
import EdgeFusion
import EdgeLocations

/// One row of a sample CSV (``SampleCSV``): one instant of the sensor
/// stream. A nil group is a sensor that is absent (or had no new sample at
/// that instant) and is written as empty cells.
public struct SampleRow: Equatable, Sendable {
    /// `CLOCK_MONOTONIC` nanoseconds (capture time).
    public var timestampNs: UInt64
    /// Accelerometer, m/s², board frame (mountings applied): specific force,
    /// so +9.81 on Z when the board lies flat and still.
    public var accel: Vector3?
    /// Gyroscope, rad/s, board frame, right-handed (counter-clockwise positive).
    public var gyro: Vector3?
    /// Magnetometer, µT, board frame.
    public var mag: Vector3?
    /// Sensor-to-earth orientation (v_earth = q v_board q*), unit quaternion.
    public var orientation: Quaternion?

    public init(timestampNs: UInt64, accel: Vector3? = nil, gyro: Vector3? = nil, mag: Vector3? = nil,
                orientation: Quaternion? = nil) {
        self.timestampNs = timestampNs; self.accel = accel; self.gyro = gyro; self.mag = mag
        self.orientation = orientation
    }
}

/// The sample CSV: the column layout of the mock motion feed of Meta's
/// Wearables Device Access Toolkit, so recordings move between this agent,
/// that SDK's mocks and notebooks.
///
/// ```
/// timestampNs,accelX,accelY,accelZ,gyroX,gyroY,gyroZ,magX,magY,magZ,orientationW,orientationX,orientationY,orientationZ
/// 1000000000,0.012000,-0.034000,9.806650,0.000100,-0.000200,0.000000,21.500,-3.250,-40.125,1.000000,0.000000,0.000000,0.000000
/// 1010000000,0.011000,-0.035000,9.806000,0.000100,-0.000200,0.000000,,,,,,,
/// ```
///
/// * `timestampNs`: monotonic nanoseconds, a whole number, never decreasing.
/// * accel m/s², gyro rad/s, mag µT, orientation a sensor-to-earth unit
///   quaternion (w first). Board frame: X right, Y forward, Z up.
/// * Fixed decimals: accel 6, gyro 6, mag 3, orientation 6 (below every
///   chip's resolution). The reader takes any decimal notation.
/// * A sensor that is absent, or has no new sample on that row, has all its
///   cells empty; a group is all empty or all filled. A group holding a
///   non-finite value is written empty.
/// * Comma-separated, `\n` line ends (the reader also takes `\r\n` and a
///   UTF-8 byte-order mark), no quoting (no cell needs it).
public enum SampleCSV {
    /// The header line, exactly.
    public static let header = "timestampNs,accelX,accelY,accelZ,gyroX,gyroY,gyroZ,magX,magY,magZ,orientationW,orientationX,orientationY,orientationZ"
    /// The column names, in order.
    public static let columns: [String] = header.split(separator: ",").map(String.init)
    /// The header of the seconds layout (``SampleCSVFormat/seconds``), `simulate --csv` and `fuse`'s input.
    public static let secondsHeader = "t,gx,gy,gz,ax,ay,az,mx,my,mz"
    public static let secondsColumns: [String] = secondsHeader.split(separator: ",").map(String.init)

    /// Decimals written per group.
    public enum Decimals {
        public static let accel = 6
        public static let gyro = 6
        public static let mag = 3
        public static let orientation = 6
    }

    /// How far from 1 a quaternion's norm may be and still be read
    /// (notebooks write floats with few digits).
    public static let unitTolerance = 0.01

    /// One row as text, without a line end.
    public static func line(_ row: SampleRow) -> String {
        var b: [UInt8] = []
        b.reserveCapacity(160)
        append(row, to: &b)
        b.removeLast()
        return String(decoding: b, as: UTF8.self)
    }

    /// Appends one row and its `\n` to `buffer` (no allocation beyond the buffer's growth).
    public static func append(_ row: SampleRow, to buffer: inout [UInt8]) {
        appendUnsigned(row.timestampNs, to: &buffer)
        appendGroup(row.accel.map { [$0.x, $0.y, $0.z] }, Decimals.accel, 3, to: &buffer)
        appendGroup(row.gyro.map { [$0.x, $0.y, $0.z] }, Decimals.gyro, 3, to: &buffer)
        appendGroup(row.mag.map { [$0.x, $0.y, $0.z] }, Decimals.mag, 3, to: &buffer)
        appendGroup(row.orientation.map { [$0.w, $0.x, $0.y, $0.z] }, Decimals.orientation, 4, to: &buffer)
        buffer.append(0x0A)
    }

    private static func appendGroup(_ values: [Double]?, _ decimals: Int, _ count: Int, to b: inout [UInt8]) {
        guard let values, values.allSatisfy(\.isFinite) else {
            for _ in 0..<count { b.append(0x2C) }
            return
        }
        for v in values { b.append(0x2C); appendFixed(v, decimals, to: &b) }
    }

    static func appendUnsigned(_ v: UInt64, to b: inout [UInt8]) {
        let start = b.count
        var n = v
        repeat { b.append(0x30 &+ UInt8(truncatingIfNeeded: n % 10)); n /= 10 } while n > 0
        var i = start, j = b.count - 1
        while i < j { b.swapAt(i, j); i += 1; j -= 1 }
    }

    /// `v` with exactly `decimals` decimals, rounded half away from zero; "-" only when non-zero.
    static func appendFixed(_ v: Double, _ decimals: Int, to b: inout [UInt8]) {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(v) * scale).rounded()
        guard scaled < 1.8e19 else {                     // beyond UInt64: plain notation
            b.append(contentsOf: "\(v)".utf8)
            return
        }
        let units = UInt64(scaled)
        if v < 0 && units != 0 { b.append(0x2D) }
        var p: UInt64 = 1
        for _ in 0..<decimals { p *= 10 }
        appendUnsigned(units / p, to: &b)
        if decimals > 0 {
            b.append(0x2E)
            let frac = units % p
            var digits = p / 10
            while digits > 0 {
                b.append(0x30 &+ UInt8(truncatingIfNeeded: (frac / digits) % 10))
                digits /= 10
            }
        }
    }

    /// `ns` as seconds with 9 decimals, exactly (`5110000000` → `5.110000000`).
    public static func seconds(nanoseconds ns: UInt64) -> String {
        let frac = String(ns % 1_000_000_000)
        return "\(ns / 1_000_000_000)." + String(repeating: "0", count: 9 - frac.count) + frac
    }

    /// A whole file's rows (header first).
    public static func write(_ rows: [SampleRow]) -> String {
        var w = SampleCSVWriter()
        for r in rows { w.write(r) }
        return w.take()
    }

    /// Every row of a sample CSV held in `text`. `file` names it in errors.
    public static func parse(_ text: String, file: String = "(memory)") throws(SampleCSVError) -> [SampleRow] {
        var reader = SampleCSVReader(text: text, file: file)
        var rows: [SampleRow] = []
        while let r = try reader.next() { rows.append(r) }
        return rows
    }

    /// Every row of the sample CSV at `path`.
    public static func load(path: String) throws(SampleCSVError) -> [SampleRow] {
        try parse(try readFile(path), file: path)
    }

    /// The rows of the sample CSV at `path` the way a tool wants a recording
    /// that may have been cut short: when the file stops part-way through a
    /// row (every writer ends each row with `\n`, so a last line without
    /// one was cut by a power loss or a full disk), that row is left out and
    /// the cut is returned. A file that ends inside its header is an error.
    /// Either format (``SampleCSVFormat``) is read.
    public static func loadKeepingCompleteLines(path: String) throws(SampleCSVError) -> (rows: [SampleRow], format: SampleCSVFormat, cut: SampleCSVCut?) {
        var reader = SampleCSVReader(text: try readFile(path), file: path, keepingCompleteLines: true)
        var rows: [SampleRow] = []
        while let r = try reader.next() { rows.append(r) }
        return (rows, reader.format ?? .wearables, reader.cut)
    }

    static func readFile(_ path: String) throws(SampleCSVError) -> String {
        do {
            return String(decoding: try readWholeFile(path), as: UTF8.self)
        } catch {
            throw SampleCSVError(file: path, line: 0, kind: .cannotRead(errno: error.errno), message: error.message)
        }
    }
}

/// The two sample layouts the tools write, told apart by the header; every
/// tool that reads samples (`replay`, `fuse`) reads both.
public enum SampleCSVFormat: String, Sendable, CaseIterable, Equatable {
    /// `timestampNs,accelX,…,orientationZ` (``SampleCSV/header``): written by
    /// `record --csv`. Monotonic ns; orientation included.
    case wearables
    /// `t,gx,gy,gz,ax,ay,az,mx,my,mz` (or its first 7 columns): written by
    /// `simulate --csv`, `fuse`'s own input. `t` in seconds (any decimals);
    /// `mx,my,mz` empty, or all 0, when the magnetometer has no new sample.
    case seconds

    /// The header line as the tools write it.
    public var header: String {
        switch self {
        case .wearables: return SampleCSV.header
        case .seconds: return SampleCSV.secondsHeader
        }
    }

    /// The format a header line announces (cells trimmed of spaces), or nil.
    public static func detect(_ line: Substring) -> SampleCSVFormat? {
        let names = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: " ") }
        if names == SampleCSV.columns.map({ Substring($0) }) { return .wearables }
        let s = SampleCSV.secondsColumns.map { Substring($0) }
        if names == Array(s) || names == Array(s.prefix(7)) { return .seconds }
        return nil
    }

    /// What the error says when a header is neither.
    static func unknownHeaderMessage(_ line: Substring) -> String {
        var hint = ""
        if line.hasPrefix("t,qw,qx,qy,qz,roll_rad") { hint = " (this is the output of `edge-agent fuse`: fused attitude, not sensor samples)" }
        else if line.hasPrefix("t,qw,qx,qy,qz,altitude_m") { hint = " (this is a truth file from `simulate --truth`, not sensor samples)" }
        return "unknown header '\(line.prefix(200))'\(hint): a sample CSV starts with one of\n  \(SampleCSV.header)   (record --csv)\n  \(SampleCSV.secondsHeader)   (simulate --csv; mx,my,mz may be left out)"
    }
}

/// Where a sample CSV that was cut short ends.
public struct SampleCSVCut: Equatable, Sendable, CustomStringConvertible {
    public var file: String
    /// The line the file stops in the middle of.
    public var line: Int
    /// What is left of it (at most 60 characters).
    public var fragment: String
    /// Complete rows before it.
    public var rows: Int
    /// The last complete row's time (nil: none), monotonic ns.
    public var lastTimestampNs: UInt64?

    public var description: String {
        "\(file):\(line): the file is cut off in the middle of this row ('\(fragment)'), as a power loss or a full disk leaves it: "
            + "the \(rows) complete row\(rows == 1 ? "" : "s") before it are used"
            + (lastTimestampNs.map { ", so the recording ends at \(Double($0) / 1e9) s (\($0) ns)" } ?? "")
    }
}

/// Writes sample CSV text: the header, then one line per ``write(_:)``.
/// Buffered: call ``take()`` to hand the text so far to a file.
public struct SampleCSVWriter {
    private var buffer: [UInt8] = []

    /// - Parameter header: start with the header line (false to continue a file).
    public init(header: Bool = true) {
        buffer.reserveCapacity(1 << 12)
        if header { buffer.append(contentsOf: SampleCSV.header.utf8); buffer.append(0x0A) }
    }

    public mutating func write(_ row: SampleRow) { SampleCSV.append(row, to: &buffer) }

    /// Bytes waiting to be taken.
    public var bufferedByteCount: Int { buffer.count }

    /// Returns the text written since the last call and empties the buffer (keeping its capacity).
    public mutating func take() -> String {
        defer { buffer.removeAll(keepingCapacity: true) }
        return String(decoding: buffer, as: UTF8.self)
    }
}

/// A sample CSV that cannot be read: file, line, column, what was wrong.
public struct SampleCSVError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        case cannotRead(errno: Int32)
        /// The first line is neither format's header (``SampleCSVFormat``).
        case badHeader
        /// The file ends part-way through its header line.
        case cutOff
        /// A row without the 14 cells.
        case wrongCellCount(found: Int)
        /// `timestampNs` is empty or not a whole number.
        case badTimestamp
        /// A row earlier than the one before it.
        case timestampWentBackwards(previous: UInt64)
        /// A cell that is not a finite number.
        case badNumber
        /// Some cells of a sensor's group are filled and some empty.
        case partialGroup
        /// The orientation's norm is not 1 (within ``SampleCSV/unitTolerance``).
        case notUnitQuaternion
    }
    public var file: String
    /// 1-based line (0: the file as a whole).
    public var line: Int
    /// The column at fault, when one is.
    public var column: String?
    public var kind: Kind
    public var message: String

    public init(file: String, line: Int, column: String? = nil, kind: Kind, message: String) {
        self.file = file; self.line = line; self.column = column; self.kind = kind; self.message = message
    }

    public var description: String {
        (line > 0 ? "\(file):\(line): " : "\(file): ") + (column.map { "column \($0): " } ?? "") + message
    }
}

/// Reads a sample CSV row by row, validating as it goes. The header says
/// which layout follows (``SampleCSVFormat``); rows of either come back as
/// ``SampleRow``s (seconds become nanoseconds, rounded).
public struct SampleCSVReader {
    public let file: String
    private let lines: [Substring]
    /// Whether the text's last line has a line end.
    private let lastLineEnded: Bool
    private let keepingCompleteLines: Bool
    private var index = 0
    private var previous: UInt64?
    private var rowsRead = 0
    /// The layout, once the header is read.
    public private(set) var format: SampleCSVFormat?
    /// Set when `keepingCompleteLines` left out a row the file stops in the middle of.
    public private(set) var cut: SampleCSVCut?

    /// - Parameter keepingCompleteLines: a last line without a line end is
    ///   a row cut off by a power loss: leave it out and say so in ``cut``
    ///   (otherwise it is read, and an error if it cannot be).
    public init(text: String, file: String = "(memory)", keepingCompleteLines: Bool = false) {
        self.file = file
        self.keepingCompleteLines = keepingCompleteLines
        var t = Substring(text)
        if t.hasPrefix("\u{FEFF}") { t = t.dropFirst() }
        lastLineEnded = t.isEmpty || t.hasSuffix("\n") || t.hasSuffix("\r\n")
        // "\r\n" is one Character in Swift: split on both line ends.
        lines = t.isEmpty ? [] : t.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
    }

    /// 1-based line of the row last returned.
    public var line: Int { index }

    /// The next row, or nil at the end.
    public mutating func next() throws(SampleCSVError) -> SampleRow? {
        while index < lines.count {
            var l = lines[index]
            index += 1
            if l.hasSuffix("\r") { l = l.dropLast() }
            let isCut = index == lines.count && !lastLineEnded && !l.isEmpty
            guard let format else {
                guard let f = SampleCSVFormat.detect(l) else {
                    if isCut, SampleCSVFormat.allCases.contains(where: { $0.header.hasPrefix(l) }) {
                        throw SampleCSVError(file: file, line: index, kind: .cutOff,
                                             message: "the file ends in the middle of its header line '\(l.prefix(200))': no rows were recorded")
                    }
                    throw SampleCSVError(file: file, line: index, kind: .badHeader, message: SampleCSVFormat.unknownHeaderMessage(l))
                }
                format = f
                continue
            }
            if l.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\0" }) { continue }
            if isCut && keepingCompleteLines {
                cut = SampleCSVCut(file: file, line: index, fragment: String(l.prefix(60)), rows: rowsRead, lastTimestampNs: previous)
                return nil
            }
            do {
                let r = try format == .wearables ? row(l) : secondsRow(l)
                rowsRead += 1
                return r
            } catch where isCut {
                throw SampleCSVError(file: file, line: index, column: error.column, kind: error.kind,
                                     message: error.message + " (the file ends in the middle of this row, without a line end: cut off by a power loss or a full disk?)")
            }
        }
        if format == nil {
            throw SampleCSVError(file: file, line: 0, kind: .badHeader,
                                 message: "empty file: a sample CSV starts with the header '\(SampleCSV.header)' or '\(SampleCSV.secondsHeader)'")
        }
        return nil
    }

    private func fail(_ column: String?, _ kind: SampleCSVError.Kind, _ message: String) -> SampleCSVError {
        SampleCSVError(file: file, line: index, column: column, kind: kind, message: message)
    }

    private mutating func row(_ l: Substring) throws(SampleCSVError) -> SampleRow {
        let cells = l.split(separator: ",", omittingEmptySubsequences: false)
        guard cells.count == SampleCSV.columns.count else {
            throw fail(nil, .wrongCellCount(found: cells.count),
                       "expected \(SampleCSV.columns.count) cells, found \(cells.count) in '\(l.prefix(200))'")
        }
        let ts = cells[0].trimmingCharacters(in: " ")
        guard !ts.isEmpty, let t = UInt64(ts) else {
            throw fail("timestampNs", .badTimestamp, "'\(ts)' is not whole monotonic nanoseconds")
        }
        try checkOrder(t, "timestampNs", "\(t)")
        let a = try group(cells, 1..<4, "accel", SampleCSV.columns), g = try group(cells, 4..<7, "gyro", SampleCSV.columns)
        let m = try group(cells, 7..<10, "mag", SampleCSV.columns)
        let q = try group(cells, 10..<14, "orientation", SampleCSV.columns)
        var orientation: Quaternion?
        if let q {
            let norm = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).squareRoot()
            guard abs(norm - 1) <= SampleCSV.unitTolerance else {
                throw fail("orientationW", .notUnitQuaternion,
                           "the orientation (w, x, y, z) has norm \(norm), not 1: expected a unit quaternion")
            }
            orientation = Quaternion(w: q[0], x: q[1], y: q[2], z: q[3])
        }
        return SampleRow(timestampNs: t, accel: a.map { Vector3($0[0], $0[1], $0[2]) },
                         gyro: g.map { Vector3($0[0], $0[1], $0[2]) }, mag: m.map { Vector3($0[0], $0[1], $0[2]) },
                         orientation: orientation)
    }

    /// `t,gx,gy,gz,ax,ay,az[,mx,my,mz]`: t in seconds; gyro and accel on every
    /// row; mag all three or none (all 0: none, as `fuse` reads it).
    private mutating func secondsRow(_ l: Substring) throws(SampleCSVError) -> SampleRow {
        let cells = l.split(separator: ",", omittingEmptySubsequences: false)
        let names = SampleCSV.secondsColumns
        guard cells.count == 7 || cells.count == 10 else {
            throw fail(nil, .wrongCellCount(found: cells.count), "expected 10 cells (or 7 without the magnetometer), found \(cells.count) in '\(l.prefix(200))'")
        }
        let ts = cells[0].trimmingCharacters(in: " ")
        guard let seconds = Double(ts), seconds.isFinite, seconds >= 0, seconds < 1.8e10 else {
            throw fail("t", .badTimestamp, "'\(ts)' is not a time in seconds (a number ≥ 0)")
        }
        let t = UInt64((seconds * 1e9).rounded())
        try checkOrder(t, "t", String(ts))
        guard let g = try group(cells, 1..<4, "gyro", names) else { throw fail("gx", .partialGroup, "empty: gx, gy, gz are needed on every row") }
        guard let a = try group(cells, 4..<7, "accel", names) else { throw fail("ax", .partialGroup, "empty: ax, ay, az are needed on every row") }
        var mag: Vector3?
        if cells.count == 10, let m = try group(cells, 7..<10, "mag", names), !(m[0] == 0 && m[1] == 0 && m[2] == 0) {
            mag = Vector3(m[0], m[1], m[2])
        }
        return SampleRow(timestampNs: t, accel: Vector3(a[0], a[1], a[2]), gyro: Vector3(g[0], g[1], g[2]), mag: mag)
    }

    private mutating func checkOrder(_ t: UInt64, _ column: String, _ text: String) throws(SampleCSVError) {
        if let p = previous, t < p {
            throw fail(column, .timestampWentBackwards(previous: p),
                       "\(text) is before the previous row's \(column == "t" ? "\(Double(p) / 1e9)" : "\(p)"): timestamps never decrease")
        }
        previous = t
    }

    private func group(_ cells: [Substring], _ range: Range<Int>, _ name: String, _ columns: [String]) throws(SampleCSVError) -> [Double]? {
        let g = range.map { cells[$0].trimmingCharacters(in: " ") }
        if g.allSatisfy(\.isEmpty) { return nil }
        if let e = g.firstIndex(where: \.isEmpty) {
            throw fail(columns[range.lowerBound + e], .partialGroup,
                       "empty while other \(name) cells are filled: a sensor's cells are all empty (absent) or all filled")
        }
        var out: [Double] = []
        for (i, s) in g.enumerated() {
            guard let v = Double(s), v.isFinite else {
                throw fail(columns[range.lowerBound + i], .badNumber, "'\(s)' is not a finite number")
            }
            out.append(v)
        }
        return out
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var s = self
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return s
    }
}
