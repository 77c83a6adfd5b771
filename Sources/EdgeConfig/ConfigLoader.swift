#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A configuration or board-profile file that could not be used: which file,
/// which key path, what was expected, and for syntax errors the line and column.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable { case unreadable, syntax, invalidValue, missingKey, wrongType, notFound }
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

/// Reads JSON5 files (Foundation's `JSONDecoder` with `allowsJSON5`) and turns
/// every failure into a ``ConfigError`` with position.
public enum ConfigLoader {
    /// Decodes `T` from the JSON5 file at `path`.
    public static func load<T: Decodable>(_ type: T.Type, from path: String) throws(ConfigError) -> T {
        let text: String
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            guard let s = String(data: data, encoding: .utf8) else {
                throw ConfigError(kind: .unreadable, file: path, message: "the file is not UTF-8 text")
            }
            text = s
        } catch let e as ConfigError {
            throw e
        } catch {
            let exists = FileManager.default.fileExists(atPath: path)
            throw ConfigError(kind: exists ? .unreadable : .notFound, file: path,
                              message: exists ? "cannot read the file (\(error))" : "no such file")
        }
        return try decode(type, from: text, file: path)
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
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        do {
            return try decoder.decode(T.self, from: Data(text.utf8))
        } catch let error as DecodingError {
            throw describe(error, text: text, file: file)
        } catch {
            throw ConfigError(kind: .invalidValue, file: file, message: "\(error)")
        }
    }

    static func describe(_ error: DecodingError, text: String, file: String) -> ConfigError {
        func located(_ kind: ConfigError.Kind, _ path: [any CodingKey], _ message: String,
                     locateParent: Bool = false) -> ConfigError {
            let comps = path.map(component)
            var where_ = locateJSON5KeyPath(comps, in: text)
            if where_ == nil || locateParent, !comps.isEmpty {
                where_ = locateJSON5KeyPath(Array(comps.dropLast(locateParent ? 0 : 1)), in: text) ?? where_
            }
            return ConfigError(kind: kind, file: file, keyPath: render(path), message: message,
                               line: where_?.line, column: where_?.column,
                               excerpt: where_.map { describeJSON5Location(line: $0.line, column: $0.column, in: text) })
        }
        switch error {
        case .dataCorrupted(let ctx):
            if ctx.codingPath.isEmpty, let syntax = findJSON5SyntaxError(in: text) {
                return ConfigError(kind: .syntax, file: file, message: syntax.message,
                                   line: syntax.line, column: syntax.column,
                                   excerpt: describeJSON5Location(line: syntax.line, column: syntax.column, in: text))
            }
            return located(.invalidValue, ctx.codingPath, ctx.debugDescription)
        case .keyNotFound(let key, let ctx):
            return located(.missingKey, ctx.codingPath + [key],
                           "missing required key '\(key.stringValue)'", locateParent: false)
        case .typeMismatch(let type, let ctx):
            return located(.wrongType, ctx.codingPath, "expected \(describeType(type)); \(ctx.debugDescription)")
        case .valueNotFound(let type, let ctx):
            return located(.wrongType, ctx.codingPath, "expected \(describeType(type)), found null")
        @unknown default:
            return ConfigError(kind: .invalidValue, file: file, message: "\(error)")
        }
    }

    static func describeType(_ t: Any.Type) -> String {
        switch t {
        case is Int.Type, is UInt8.Type, is UInt64.Type, is Int32.Type: return "a whole number"
        case is Double.Type, is Float.Type: return "a number"
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        default:
            let n = String(describing: t)
            if n.hasPrefix("Array") { return "a list [...]" }
            if n.hasPrefix("Dictionary") { return "an object {...}" }
            return "a value of type \(n)"
        }
    }

    static func component(_ key: any CodingKey) -> JSON5PathComponent {
        if let i = key.intValue { return .index(i) }
        if key.stringValue.hasPrefix("Index "), let i = Int(key.stringValue.dropFirst(6)) { return .index(i) }
        return .key(key.stringValue)
    }

    /// `chips[1].address`
    public static func render(_ path: [any CodingKey]) -> String {
        var s = ""
        for k in path {
            switch component(k) {
            case .index(let i): s += "[\(i)]"
            case .key(let name): s += s.isEmpty ? name : "." + name
            }
        }
        return s
    }
}
