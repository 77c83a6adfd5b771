#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import EdgeLocations

/// A configuration or board-profile file that could not be used: which file,
/// which key path, what was expected, and for syntax errors the line and column.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case unreadable, syntax, invalidValue, missingKey, wrongType, notFound, duplicateKey
        /// A FIFO, a device, a directory… where a file was expected (``ConfigLoader/maximumFileBytes``).
        case notARegularFile
        /// Larger than ``ConfigLoader/maximumFileBytes``.
        case tooLarge
    }
    public var kind: Kind
    public var file: String
    /// Dotted key path, e.g. `chips[1].address` (empty for the whole file).
    public var keyPath: String
    public var message: String
    public var line: Int?
    public var column: Int?
    /// The offending line with a caret under the column, when known.
    public var excerpt: String?

    public init(kind: Kind, file: String, keyPath: String = "", message: String,
                line: Int? = nil, column: Int? = nil, excerpt: String? = nil) {
        self.kind = kind; self.file = file; self.keyPath = keyPath; self.message = message
        self.line = line; self.column = column; self.excerpt = excerpt
    }

    /// An error about the value at `location` (see ``ConfigSource``).
    public init(kind: Kind, at location: ConfigLocation, message: String) {
        self.init(kind: kind, file: location.file, keyPath: location.keyPath, message: message,
                  line: location.line, column: location.column, excerpt: location.excerpt)
    }

    public var description: String {
        var s = file
        if let l = line { s += ":\(l)" + (column.map { ":\($0)" } ?? "") }
        s += ": "
        switch kind {
        case .syntax: s += "syntax error: "
        case .unreadable, .notFound: break
        default: if !keyPath.isEmpty { s += "\(keyPath): " }
        }
        s += message
        if let e = excerpt { s += "\n" + e }
        return s
    }
}

/// Where a value was written: file, key path, line and column, and the line
/// with a caret (for errors found after decoding, such as an unknown user).
public struct ConfigLocation: Sendable, Equatable {
    public var file: String
    /// Dotted key path, e.g. `clients[1].user`.
    public var keyPath: String
    public var line: Int?
    public var column: Int?
    public var excerpt: String?
    public init(file: String, keyPath: String, line: Int? = nil, column: Int? = nil, excerpt: String? = nil) {
        self.file = file; self.keyPath = keyPath; self.line = line; self.column = column; self.excerpt = excerpt
    }
}

/// The text a configuration was decoded from, so that values can be pointed
/// at after decoding.
public struct ConfigSource: Sendable {
    public var file: String
    public var text: String
    public init(file: String, text: String) { self.file = file; self.text = text }

    /// Where the value at `path` starts (line and column nil when the text
    /// does not hold it, e.g. a default).
    public func location(of path: [JSON5PathComponent]) -> ConfigLocation {
        let at = locateJSON5KeyPath(path, in: text)
        return ConfigLocation(file: file, keyPath: ConfigLoader.render(path), line: at?.line, column: at?.column,
                              excerpt: at.map { describeJSON5Location(line: $0.line, column: $0.column, in: text) })
    }
}

/// A decoded configuration that keeps the locations of some of its values
/// (``ConfigLoader`` calls it after decoding).
package protocol ConfigSourceAttaching {
    mutating func attachSource(_ source: ConfigSource)
}

/// Reads JSON5 files (Foundation's `JSONDecoder` with `allowsJSON5`) and turns
/// every failure into a ``ConfigError`` with position.
public enum ConfigLoader {
    /// The largest configuration-like file read: 1 MiB. Configurations,
    /// board profiles, calibration files, scenarios and the bridge's
    /// configuration are a few kilobytes; the bound keeps a mistaken path
    /// (`/dev/zero`, a log file) from filling memory.
    public static let maximumFileBytes = 1 << 20

    /// Decodes `T` from the JSON5 file at `path`: a regular file of at most
    /// `limit` bytes (``readRegularFile(_:limit:)``: a FIFO never blocks,
    /// `/dev/zero` is never read).
    public static func load<T: Decodable>(_ type: T.Type, from path: String,
                                          limit: Int = maximumFileBytes) throws(ConfigError) -> T {
        try decode(type, from: try readText(path, limit: limit), file: path)
    }

    /// The UTF-8 text of the configuration-like file at `path`, read with
    /// ``readRegularFile(_:limit:)``; every failure a ``ConfigError`` naming
    /// the file, what is wrong and what to do.
    public static func readText(_ path: String, limit: Int = maximumFileBytes) throws(ConfigError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, limit: limit)
        } catch {
            switch error.kind {
            case .failed("open", ENOENT):
                throw ConfigError(kind: .notFound, file: path, message: "no such file")
            case .failed:
                throw ConfigError(kind: .unreadable, file: path, message: "\(error.reason); check the path and its permissions")
            case .notARegularFile:
                throw ConfigError(kind: .notARegularFile, file: path, message: error.reason)
            case .tooLarge:
                throw ConfigError(kind: .tooLarge, file: path, message: error.reason)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(kind: .unreadable, file: path, message: "the file is not UTF-8 text")
        }
        return text
    }

    /// Decodes `T` from JSON5 `text`; `file` names it in errors.
    public static func decode<T: Decodable>(_ type: T.Type, from text: String, file: String) throws(ConfigError) -> T {
        // Scan first: besides giving syntax errors a position, this keeps
        // text away from the decoder that crashes it (Foundation in Swift 6.3
        // traps on a number ending in an exponent sign such as `1e+`).
        if let syntax = findJSON5SyntaxError(in: text) {
            throw ConfigError(kind: .syntax, file: file, message: syntax.message,
                              line: syntax.line, column: syntax.column,
                              excerpt: describeJSON5Location(line: syntax.line, column: syntax.column, in: text))
        }
        // Foundation would silently keep the first of two equal keys.
        if let d = findJSON5DuplicateMember(in: text) {
            throw ConfigError(kind: .duplicateKey, file: file, keyPath: render(d.path),
                              message: "the key '\(d.name)' is set twice in the same object; the first is at line \(d.firstLine) column \(d.firstColumn). Remove one of them",
                              line: d.line, column: d.column,
                              excerpt: describeJSON5Location(line: d.line, column: d.column, in: text))
        }
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        var value: T
        do {
            // A trailing newline: FoundationEssentials' JSON5 scanner was seen
            // (by the config fuzz target) to trap, heap-dependently, validating a
            // number that ends the buffer right after a comment; a value never
            // ends the buffer now. Positions are taken from `text`, unchanged.
            value = try decoder.decode(PathTracked<T>.self, from: Data((text + "\n").utf8)).value
        } catch let error as DecodingError {
            throw describe(error, text: text, file: file)
        } catch let error as any CustomStringConvertible {
            throw ConfigError(kind: .invalidValue, file: file, message: error.description)
        } catch {
            throw ConfigError(kind: .invalidValue, file: file, message: "the file could not be decoded")
        }
        if var attaching = value as? any ConfigSourceAttaching {
            attaching.attachSource(ConfigSource(file: file, text: text))
            if let v = attaching as? T { value = v }
        }
        return value
    }

    static func describe(_ error: DecodingError, text: String, file: String) -> ConfigError {
        func located(_ kind: ConfigError.Kind, _ path: [any CodingKey], _ message: String) -> ConfigError {
            let comps = path.map(component)
            var where_ = locateJSON5KeyPath(comps, in: text)
            // Not in the text (a default, or an error about a missing key):
            // point at the nearest enclosing value that is.
            var parent = comps
            while where_ == nil, !parent.isEmpty {
                parent.removeLast()
                where_ = locateJSON5KeyPath(parent, in: text)
            }
            return ConfigError(kind: kind, file: file, keyPath: render(path), message: message,
                               line: where_?.line, column: where_?.column,
                               excerpt: where_.map { describeJSON5Location(line: $0.line, column: $0.column, in: text) })
        }
        func found(_ path: [any CodingKey]) -> String {
            describeJSON5Value(at: path.map(component), in: text) ?? "something else"
        }
        switch error {
        case .dataCorrupted(let ctx):
            if ctx.codingPath.isEmpty, let syntax = findJSON5SyntaxError(in: text) {
                return ConfigError(kind: .syntax, file: file, message: syntax.message,
                                   line: syntax.line, column: syntax.column,
                                   excerpt: describeJSON5Location(line: syntax.line, column: syntax.column, in: text))
            }
            if ctx.codingPath.isEmpty, ctx.underlyingError != nil || ctx.debugDescription.hasPrefix("The given data") {
                // Foundation's own path-less failure (``PathTrackingDecoder``
                // pins the ones it knows of).
                return ConfigError(kind: .invalidValue, file: file,
                                   message: "a value could not be read (a number too large, or not whole where a whole number is expected?)")
            }
            return located(.invalidValue, ctx.codingPath, ctx.debugDescription)
        case .keyNotFound(let key, let ctx):
            return located(.missingKey, ctx.codingPath + [key], "missing required key '\(key.stringValue)'")
        case .typeMismatch(let type, let ctx):
            let got = found(ctx.codingPath)
            var message = "expected \(describeType(type)), got \(got)"
            if got.hasPrefix("a string \""), isNumberType(type),
               Double(got.dropFirst(10).dropLast()) != nil {
                message += "; write the number without quotes"
            } else if got.hasPrefix("a string \""), type is Bool.Type {
                message += "; write true or false without quotes"
            }
            return located(.wrongType, ctx.codingPath, message)
        case .valueNotFound(let type, let ctx):
            return located(.wrongType, ctx.codingPath, "expected \(describeType(type)), got null")
        @unknown default:
            return ConfigError(kind: .invalidValue, file: file, message: "the file could not be decoded")
        }
    }

    static func isNumberType(_ t: Any.Type) -> Bool {
        t is any BinaryInteger.Type || t is any BinaryFloatingPoint.Type
    }

    /// The kind of value a Swift type stands for, in the words of a config file.
    static func describeType(_ t: Any.Type) -> String {
        func whole<I: FixedWidthInteger>(_: I.Type) -> String {
            "a whole number from \(I.min) to \(I.max)"
        }
        switch t {
        case is Int.Type, is Int64.Type: return "a whole number"
        case is Int8.Type: return whole(Int8.self)
        case is Int16.Type: return whole(Int16.self)
        case is Int32.Type: return whole(Int32.self)
        case is UInt8.Type: return whole(UInt8.self)
        case is UInt16.Type: return whole(UInt16.self)
        case is UInt32.Type: return whole(UInt32.self)
        case is UInt64.Type, is UInt.Type: return whole(UInt64.self)
        case is Double.Type, is Float.Type: return "a number"
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        default:
            let n = String(describing: t)
            if n.hasPrefix("Array") || n.hasPrefix("[") { return "a list [...]" }
            if n.hasPrefix("Dictionary") || n.hasPrefix("KeyedDecodingContainer") { return "an object {...}" }
            return "a different kind of value"
        }
    }

    static func component(_ key: any CodingKey) -> JSON5PathComponent {
        if let i = key.intValue { return .index(i) }
        if key.stringValue.hasPrefix("Index "), let i = Int(key.stringValue.dropFirst(6)) { return .index(i) }
        return .key(key.stringValue)
    }

    /// `chips[1].address`
    public static func render(_ path: [any CodingKey]) -> String {
        render(path.map(component))
    }

    /// `chips[1].address`
    public static func render(_ path: [JSON5PathComponent]) -> String {
        var s = ""
        for c in path {
            switch c {
            case .index(let i): s += "[\(i)]"
            case .key(let name): s += s.isEmpty ? name : "." + name
            }
        }
        return s
    }
}
