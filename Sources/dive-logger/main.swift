// dive-logger: see DiveLoggerCommand.usage.
#if canImport(Glibc)
import Glibc
#endif
import DiveLog

var env: [String: String] = [:]
var p = environ
while let e = p.pointee {
    let s = String(cString: e)
    if let i = s.firstIndex(of: "=") { env[String(s[..<i])] = String(s[s.index(after: i)...]) }
    p += 1
}
func emit(_ fd: Int32, _ s: String) { _ = s.withCString { Glibc.write(fd, $0, strlen($0)) } }
let status = DiveLoggerCommand.run(Array(CommandLine.arguments.dropFirst()), environment: env,
                                   out: { emit(1, $0 + "\n") }, err: { emit(2, $0 + "\n") })
exit(status)
