#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

import EdgeCommandLine
import EdgeConfig
import EdgeRuntime

/// Keeps the tools from writing over what they read: `fuse --output IN.csv`
/// used to truncate its own input and exit 0.
///
/// Files are compared by identity, not by spelling: two paths name the same
/// file when they reach the same device and inode (a symlink, a hard link,
/// `./x` and `x`), and a file that does not exist yet is compared by its
/// resolved path (its directory through `realpath`, plus its name). Only
/// regular files take part: `/dev/null`, `/dev/stdout`, pipes and `-` may
/// appear any number of times.
enum OutputFiles {
    /// A file a command reads or writes: the option or argument that names
    /// it (`--input`, `SCENARIO`, "the configuration") and its path.
    struct Named {
        var role: String
        var path: String
        init(_ role: String, _ path: String) { self.role = role; self.path = path }
    }

    /// What a path refers to, for comparison.
    enum Identity: Equatable {
        /// An existing regular file.
        case inode(device: UInt64, inode: UInt64)
        /// A file that does not exist yet: its resolved absolute path.
        case future(String)
    }

    /// Throws ``UsageError`` (exit status 2) when an output names the same
    /// file as an input or as another output. Nil paths and `-` are skipped.
    static func refuseOverlaps(outputs: [Named?], inputs: [Named?]) throws {
        let outs = outputs.compactMap { $0 }.filter { $0.path != "-" && !$0.path.isEmpty }
        let ins = inputs.compactMap { $0 }.filter { $0.path != "-" && !$0.path.isEmpty }
        let outIDs = outs.map { identity(of: $0.path) }
        for (i, out) in outs.enumerated() {
            guard let id = outIDs[i] else { continue }
            for input in ins where identity(of: input.path) == id {
                throw UsageError("\(out.role) \(out.path) is the same file as \(input.role) \(input.path)\(how(id, out.path, input.path)): "
                    + "writing it would destroy what is being read. Choose another \(out.role == "FILE" ? "file" : "output")")
            }
            for j in 0..<i where outIDs[j] == id {
                throw UsageError("\(out.role) \(out.path) and \(outs[j].role) \(outs[j].path) name the same file\(how(id, out.path, outs[j].path)): "
                    + "one would overwrite the other. Give each output its own file")
            }
        }
    }

    static func how(_ id: Identity, _ a: String, _ b: String) -> String {
        guard a != b else { return "" }
        switch id {
        case .inode: return " (the same device and inode)"
        case .future(let p): return " (both resolve to \(p))"
        }
    }

    /// nil for paths that are not regular files (devices, pipes, directories)
    /// and for paths whose directory cannot be resolved.
    static func identity(of path: String) -> Identity? {
        var st = stat()
        if stat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFREG else { return nil }
            return .inode(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        }
        // Not there yet: a dangling symlink will be created at its target.
        var target = path
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        for _ in 0..<8 {
            let n = readlink(target, &buf, buf.count - 1)
            guard n > 0 else { break }
            buf[n] = 0
            let link = String(nulTerminated: buf)
            target = link.hasPrefix("/") ? link : directory(of: target) + "/" + link
        }
        let name = target.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? target
        guard let dir = realpath(directory(of: target), nil) else { return .future(lexicallyAbsolute(target)) }
        defer { free(dir) }
        let d = String(cString: dir)
        return .future((d == "/" ? "" : d) + "/" + name)
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let d = String(path[..<slash])
        return d.isEmpty ? "/" : d
    }

    /// `path` made absolute against the working directory, `.` and `..` removed.
    static func lexicallyAbsolute(_ path: String) -> String {
        var full = path
        if !path.hasPrefix("/") {
            var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            if getcwd(&buf, buf.count) != nil { full = String(nulTerminated: buf) + "/" + path }
        }
        var parts: [Substring] = []
        for p in full.split(separator: "/") {
            if p == "." { continue }
            if p == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(p)
        }
        return "/" + parts.joined(separator: "/")
    }
}

extension BoardSession.Selection {
    /// The files a tool reads through `--board`/`--config`: the board profile,
    /// the configuration and, for a simulated board, its scenario.
    var inputFiles: [OutputFiles.Named?] {
        [profilePath.map { .init("the board profile", $0) }, configPath.map { .init("the configuration", $0) },
         profilePath.flatMap { SimulatedBoardFactory.scenarioPath(profile: profile, profilePath: $0) }
            .map { .init("the board's scenario", $0) }]
    }
}
