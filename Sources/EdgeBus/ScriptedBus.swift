/// A bus that plays a script of expected transactions, for transaction-exact
/// driver tests (embedded-hal-mock's style): each transfer must match the
/// next expectation (address, bytes written, number of bytes read) and gets
/// the scripted reply or error. ``verify()`` reports unconsumed expectations.
public final class ScriptedI2CBus: I2CBus, @unchecked Sendable {
    public struct Transaction: Equatable, Sendable, CustomStringConvertible {
        public var address: UInt8
        public var write: [UInt8]
        /// Bytes returned for the read phase; its count is the expected read length.
        public var reply: [UInt8]
        /// If set, the transfer fails with this error kind/errno instead.
        public var error: I2CError.Kind?
        public var errno: Int32

        public static func write(_ address: UInt8, _ bytes: [UInt8]) -> Transaction {
            Transaction(address: address, write: bytes, reply: [], error: nil, errno: 0)
        }
        public static func read(_ address: UInt8, register: UInt8, reply: [UInt8]) -> Transaction {
            Transaction(address: address, write: [register], reply: reply, error: nil, errno: 0)
        }
        public static func writeRead(_ address: UInt8, _ bytes: [UInt8], reply: [UInt8]) -> Transaction {
            Transaction(address: address, write: bytes, reply: reply, error: nil, errno: 0)
        }
        /// A transfer that fails; `readCount` is the expected read length.
        public static func fail(_ address: UInt8, _ bytes: [UInt8], readCount: Int = 0,
                                errno: Int32) -> Transaction {
            Transaction(address: address, write: bytes, reply: [UInt8](repeating: 0, count: readCount),
                        error: I2CError.kind(forErrno: errno), errno: errno)
        }
        public var description: String {
            let w = write.map { hex($0) }.joined(separator: " ")
            return "\(hex(address)): write [\(w)] read \(reply.count)" + (error.map { " -> \($0)" } ?? "")
        }
    }

    /// A mismatch between what the driver did and what the script expected.
    public struct Mismatch: Equatable, Sendable, CustomStringConvertible {
        public var index: Int
        public var expected: Transaction?
        public var actual: String
        public var description: String {
            "transaction #\(index): expected \(expected.map { "\($0)" } ?? "nothing"), got \(actual)"
        }
    }

    public let name: String
    public private(set) var script: [Transaction]
    public private(set) var position = 0
    public private(set) var mismatches: [Mismatch] = []

    public init(name: String = "scripted", _ script: [Transaction]) {
        self.name = name
        self.script = script
    }

    public func append(_ more: [Transaction]) { script.append(contentsOf: more) }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                         read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        let w = Array(write)
        let actual = Transaction(address: address, write: w, reply: [UInt8](repeating: 0, count: read.count),
                                 error: nil, errno: 0)
        guard position < script.count else {
            mismatches.append(Mismatch(index: position, expected: nil, actual: actual.description))
            throw I2CError(kind: .io, errno: 0, bus: name, address: address, register: w.first,
                           operation: "unscripted transfer")
        }
        let e = script[position]
        position += 1
        if e.address != address || e.write != w || e.reply.count != read.count {
            mismatches.append(Mismatch(index: position - 1, expected: e, actual: actual.description))
            throw I2CError(kind: .io, errno: 0, bus: name, address: address, register: w.first,
                           operation: "unexpected transfer")
        }
        if let kind = e.error {
            throw I2CError(kind: kind, errno: e.errno, bus: name, address: address,
                           register: w.first, operation: read.count > 0 ? "read \(read.count) bytes" : "write")
        }
        for i in 0..<read.count { read[i] = e.reply[i] }
    }

    /// Empty when every expectation was met and consumed.
    public func verify() -> [String] {
        var problems = mismatches.map(\.description)
        if position < script.count {
            problems.append("\(script.count - position) expected transaction(s) not performed, next: \(script[position])")
        }
        return problems
    }
}
