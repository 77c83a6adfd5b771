// CPU time and memory of a process from /proc (Linux).
#if canImport(Glibc)
import Glibc
#endif

enum ProcFS {
    /// CPU time of every thread of `pid`, ns: the sum of the first field of
    /// /proc/PID/task/*/schedstat (on-CPU time, ns resolution).
    static func schedCPUNanoseconds(_ pid: pid_t) -> UInt64? {
        guard let d = opendir("/proc/\(pid)/task") else { return nil }
        defer { closedir(d) }
        var total: UInt64 = 0
        var any = false
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
            guard let _ = Int(name) else { continue }
            if let text = readTextFile("/proc/\(pid)/task/\(name)/schedstat"),
               let first = text.split(separator: " ").first, let ns = UInt64(first) {
                total += ns; any = true
            }
        }
        return any ? total : nil
    }

    /// utime + stime of the whole process, seconds (/proc/PID/stat fields 14
    /// and 15, clock ticks).
    static func statCPUSeconds(_ pid: pid_t) -> Double? {
        guard let text = readTextFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name: state is field 3.
        let rest = text[text.index(after: close)...].split(separator: " ")
        guard rest.count > 13, let u = Double(rest[11]), let s = Double(rest[12]) else { return nil }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A key of /proc/PID/status in kB (VmRSS, VmHWM, RssAnon, RssFile, Threads...).
    static func status(_ pid: pid_t) -> [String: Int] { parseStatus(readTextFile("/proc/\(pid)/status")) }

    static func parseStatus(_ text: String?) -> [String: Int] {
        guard let text else { return [:] }
        var out: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = String(line[..<colon])
            let value = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
            if let v = value { out[key] = v }
        }
        return out
    }

    /// Per-thread CPU time, ns, keyed by thread id.
    static func threadCPUNanoseconds(_ pid: pid_t) -> [Int: UInt64] {
        guard let d = opendir("/proc/\(pid)/task") else { return [:] }
        defer { closedir(d) }
        var out: [Int: UInt64] = [:]
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
            guard let tid = Int(name) else { continue }
            if let text = readTextFile("/proc/\(pid)/task/\(name)/schedstat"),
               let first = text.split(separator: " ").first, let ns = UInt64(first) { out[tid] = ns }
        }
        return out
    }

    /// The thread of `pid` that has used the most CPU (a fixed-rate loop's
    /// thread; in the agent the service thread wakes as often, so counting
    /// wake-ups would not tell them apart).
    static func busiestThread(_ pid: pid_t) -> Int? {
        threadCPUNanoseconds(pid).max { $0.value < $1.value }?.key
    }

    static func status(_ pid: pid_t, task: Int) -> [String: Int] {
        parseStatus(readTextFile("/proc/\(pid)/task/\(task)/status"))
    }

    /// A thread's timer slack, ns (/proc/TID/timerslack_ns).
    static func timerSlack(_ tid: Int) -> Int? {
        readTextFile("/proc/\(tid)/timerslack_ns").flatMap { Int($0.split(separator: "\n").first ?? "") }
    }

    /// Sets a thread's timer slack (needs CAP_SYS_NICE for another process).
    static func setTimerSlack(_ tid: Int, nanoseconds: Int) -> Bool {
        (try? writeTextFile("/proc/\(tid)/timerslack_ns", "\(nanoseconds)\n")) != nil
    }
}
