// JSON5 diagnostics: where exactly is a config file or board profile wrong?
//
// Foundation's `JSONDecoder` (with `allowsJSON5 = true`) reports a syntax error
// as "The given data was not valid JSON." with no position, and a type error
// with only a coding path. This file adds what the user needs on top:
//
//   * `findJSON5SyntaxError(in:)` — a validating scanner that returns the line
//     and column of the first offending character, with a message that says
//     what was expected and what was found;
//   * `locateJSON5KeyPath(_:in:)` — where the value at a coding path begins,
//     so a `DecodingError` can be pointed at a line;
//   * `describeJSON5Location(line:column:in:)` — the source line plus a caret;
//   * `findJSON5DuplicateMember(in:)` — a member name repeated in one object;
//   * `describeJSON5Value(at:in:)` — what a value is, in words ("a string").
//
// Pure Swift over the UTF-8 bytes of the text: no Foundation. Every scan is a
// single forward pass with an explicit stack (no recursion, so arbitrarily
// deep input cannot overflow the call stack); line/column are computed only
// once, for the position that is reported.
//
// Dialects. The JSON5 specification (https://spec.json5.org) and Foundation's
// JSON5 reader (as shipped with Swift 6.3) disagree on a few details. The
// project decodes with Foundation, so by default (`.foundation`) we flag
// everything Foundation rejects, with a message saying that the construct is
// valid JSON5 but not accepted by the decoder. `.specification` follows the
// spec. The differences:
//
//   | construct                                   | spec | Foundation |
//   |---------------------------------------------|------|------------|
//   | U+00A0, U+2028, U+2029, other Zs whitespace | yes  | no         |
//   | U+FEFF (BOM) other than at the very start   | yes  | no         |
//   | U+2028/U+2029 ending a `//` comment         | yes  | no (*)     |
//   | escapes `\v`, `\0`, `\q` (identity escapes) | yes  | no         |
//   | NUL via `\x00` / `\u0000`                   | yes  | no         |
//   | lone surrogate `\uD800`                     | yes  | no         |
//   | `\` + U+2028/U+2029 line continuation       | yes  | no         |
//   | raw control characters (tab...) in strings  | yes  | no         |
//   | `\xHH` escapes in unquoted member names     | no   | yes        |
//   | a name starting with an escaped digit or `\` | no   | yes        |
//   | more than 512 nested arrays/objects         | yes  | no         |
//   | `0e1` ... `0e9` (unsigned, one digit)       | yes  | no (bug)   |
//
//   (*) Foundation keeps skipping the comment until LF or CR.
//
// Member names follow ECMAScript 5.1 (which JSON5 cites): letters by general
// category (Lu Ll Lt Lm Lo Nl), then also Mn Mc Nd Pc, ZWNJ, ZWJ, '$', '_'.
//
// Not checked by `findJSON5SyntaxError`, because they are not syntax: number
// range (`1e400` overflows a `Double`; the loader reports it at its key path)
// and duplicate member names (allowed; Foundation keeps the first, JavaScript
// the last). `findJSON5DuplicateMember` finds the latter: the configuration
// loader rejects them. Foundation validates numbers and escapes lazily, so it
// never notices a bad value under a duplicate name it ignores
// (`{a: 1, a: 1x}`); we report it anyway.

// MARK: - Public API

/// Which flavour of JSON5 to accept. See the table at the top of this file.
public enum JSON5Dialect: Equatable, Sendable {
    /// Exactly what Foundation's `JSONDecoder` (`allowsJSON5 = true`, Swift 6.3)
    /// accepts. The default: the project decodes with it.
    case foundation
    /// The JSON5 1.0.0 specification.
    case specification
}

/// A syntax error in a JSON5 document, at the first offending character (or at
/// the end of the input when the document stops too early).
public struct JSON5SyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    /// 1-based line. Lines end at LF, CR or CR LF.
    public var line: Int
    /// 1-based column, counted in characters (grapheme clusters); a tab is one.
    public var column: Int
    /// What was expected and what was found, e.g.
    /// "expected ',' or '}' after a member value, found 'y'".
    public var message: String

    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    /// "line:column: message", the shape compilers use after a file name.
    public var description: String { "\(line):\(column): \(message)" }
}

/// One step of a coding path: an object member or an array element.
public enum JSON5PathComponent: Equatable, Sendable {
    case key(String)
    case index(Int)

    /// Converts a key from a `DecodingError` coding path. Foundation names
    /// array positions with keys whose `intValue` is the index and whose
    /// `stringValue` is "Index N"; every other key is an object member.
    public init(_ codingKey: any CodingKey) {
        if let index = codingKey.intValue, codingKey.stringValue == "Index \(index)" {
            self = .index(index)
        } else {
            self = .key(codingKey.stringValue)
        }
    }
}

/// Validates `text` as a JSON5 document and returns the first syntax error,
/// or nil when the document is valid.
public func findJSON5SyntaxError(in text: String,
                                 dialect: JSON5Dialect = .foundation) -> JSON5SyntaxError? {
    let bytes = Array(text.utf8)
    var scanner = JSON5Scanner(bytes: bytes, dialect: dialect)
    do {
        try scanner.scanDocument()
        return nil
    } catch {
        let (line, column) = lineAndColumn(ofOffset: error.offset, in: bytes)
        return JSON5SyntaxError(line: line, column: column, message: error.message)
    }
}

/// A member name that occurs twice in one object. JSON5 (like JSON) leaves
/// the meaning open — Foundation keeps the first, JavaScript the last — so a
/// configuration must not depend on it.
public struct JSON5DuplicateMember: Error, Equatable, Sendable {
    /// The member name (decoded: `"a"`, `'a'`, `a` and `\u0061` are the same name).
    public var name: String
    /// Path of the repeated member, ending in `.key(name)`.
    public var path: [JSON5PathComponent]
    /// Where the second occurrence's name starts (1-based).
    public var line: Int
    public var column: Int
    /// Where the first occurrence's name starts (1-based).
    public var firstLine: Int
    public var firstColumn: Int
}

/// The first member name that is repeated within one object of `text`, or
/// nil when there is none (or the document has a syntax error: check
/// ``findJSON5SyntaxError(in:dialect:)`` first).
public func findJSON5DuplicateMember(in text: String,
                                     dialect: JSON5Dialect = .foundation) -> JSON5DuplicateMember? {
    let bytes = Array(text.utf8)
    var scanner = JSON5Scanner(bytes: bytes, dialect: dialect)
    scanner.rejectsDuplicateMembers = true
    do {
        try scanner.scanDocument()
        return nil
    } catch {
        guard let d = error.duplicate else { return nil }
        let second = lineAndColumn(ofOffset: error.offset, in: bytes)
        let first = lineAndColumn(ofOffset: d.firstOffset, in: bytes)
        return JSON5DuplicateMember(name: d.name, path: d.path, line: second.line, column: second.column,
                                    firstLine: first.line, firstColumn: first.column)
    }
}

/// What the value at `path` is, in words for a message: `a string "fast"`,
/// `the number 1.5`, `NaN`, `true`, `null`, `an object {…}`, `a list […]`.
/// Nil when the path does not exist.
public func describeJSON5Value(at path: [JSON5PathComponent], in text: String,
                               dialect: JSON5Dialect = .foundation) -> String? {
    var scanner = JSON5Scanner(bytes: Array(text.utf8), dialect: dialect)
    guard (try? scanner.locate(path)) != nil else { return nil }
    return scanner.describeValueHere()
}

/// Where the value at `path` begins (its first character: a quote, a bracket,
/// a digit...). An empty path is the top-level value. Returns nil when the
/// path does not exist or the document is not valid up to that value.
///
/// For `DecodingError.keyNotFound`, pass the error context's coding path (the
/// parent object) to point at the object that lacks the key. When a member
/// name occurs twice, the first one is found (it is the one Foundation keeps).
/// Unquoted names match both as written and with their `\u` escapes decoded.
public func locateJSON5KeyPath(_ path: [JSON5PathComponent], in text: String,
                               dialect: JSON5Dialect = .foundation) -> (line: Int, column: Int)? {
    let bytes = Array(text.utf8)
    var scanner = JSON5Scanner(bytes: bytes, dialect: dialect)
    guard let offset = try? scanner.locate(path) else { return nil }
    return lineAndColumn(ofOffset: offset, in: bytes)
}

/// The line `line` of `text` followed by a caret line pointing at `column`,
/// the way compilers show a diagnostic:
///
///     { x: 1 y: 2 }
///            ^
///
/// Tabs before the column are copied into the caret line so the caret stays
/// aligned in a terminal. A column past the end of the line puts the caret just
/// after the last character. Returns "" when the text has no such line.
public func describeJSON5Location(line: Int, column: Int, in text: String) -> String {
    let bytes = Array(text.utf8)
    guard line >= 1, let range = byteRange(ofLine: line, in: bytes) else { return "" }
    let lineText = String(decoding: bytes[range], as: UTF8.self)
    var caret = ""
    for character in lineText.prefix(max(column - 1, 0)) {
        caret.append(character == "\t" ? "\t" : " ")
    }
    caret.append("^")
    return lineText + "\n" + caret
}

// MARK: - Positions

/// 1-based line and column (in characters) of a UTF-8 byte offset. A leading
/// byte-order mark is not counted as a column.
func lineAndColumn(ofOffset offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
    let offset = min(max(offset, 0), bytes.count)
    var line = 1
    var lineStart = bytes.starts(with: utf8BOM) && offset >= 3 ? 3 : 0
    var index = lineStart
    while index < offset {
        let byte = bytes[index]
        // CR LF is one line break: the CR is skipped, the LF counts.
        if byte == .lf || (byte == .cr && (index + 1 >= bytes.count || bytes[index + 1] != .lf)) {
            line += 1
            lineStart = index + 1
        }
        index += 1
    }
    let column = String(decoding: bytes[lineStart..<offset], as: UTF8.self).count + 1
    return (line, column)
}

/// Byte range of line `line` (1-based) without its line break.
private func byteRange(ofLine line: Int, in bytes: [UInt8]) -> Range<Int>? {
    var current = 1
    var start = bytes.starts(with: utf8BOM) ? 3 : 0
    var index = start
    while index < bytes.count {
        let byte = bytes[index]
        if byte == .lf || byte == .cr {
            if current == line { return start..<index }
            if byte == .cr, index + 1 < bytes.count, bytes[index + 1] == .lf { index += 1 }
            current += 1
            start = index + 1
        }
        index += 1
    }
    return current == line ? start..<bytes.count : nil
}

private let utf8BOM: [UInt8] = [0xEF, 0xBB, 0xBF]

// MARK: - Scanner

/// A failure inside the scanner: byte offset plus message. Converted to a
/// line and column only at the API boundary.
struct JSON5ScanFailure: Error {
    var offset: Int
    var message: String
    /// Set when the failure is a repeated member name (only when the scanner
    /// tracks member names): where the first one is, and the path of the
    /// repeated member.
    var duplicate: (firstOffset: Int, name: String, path: [JSON5PathComponent])? = nil
}

/// Foundation's JSON5 reader refuses documents nested deeper than this.
private let foundationMaximumDepth = 512

struct JSON5Scanner {
    let bytes: [UInt8]
    let dialect: JSON5Dialect
    /// Current byte offset.
    var position = 0
    /// Reject a member name that occurs twice in one object (and keep the
    /// path of the value being scanned for the message).
    var rejectsDuplicateMembers = false

    init(bytes: [UInt8], dialect: JSON5Dialect) {
        self.bytes = bytes
        self.dialect = dialect
    }

    private var atEnd: Bool { position >= bytes.count }
    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    // MARK: Document level

    /// A whole document: optional BOM, one value, nothing but trivia after it.
    mutating func scanDocument() throws(JSON5ScanFailure) {
        skipLeadingBOM()
        try skipTrivia()
        if atEnd {
            throw failure("unexpected end of input, expected a value (the document is empty)")
        }
        let valueStart = position
        try scanValue()
        try skipTrivia()
        if !atEnd {
            throw failure("unexpected \(found()) after the end of the top-level value "
                          + "(which started at \(place(valueStart))); only whitespace and comments may follow it")
        }
    }

    /// Byte offset where the value at `path` starts.
    mutating func locate(_ path: [JSON5PathComponent]) throws(JSON5ScanFailure) -> Int {
        skipLeadingBOM()
        try skipTrivia()
        for component in path {
            switch component {
            case .key(let wanted):
                guard current == .openBrace else { throw failure("not an object") }
                position += 1
                try skipTrivia()
                while true {
                    if current == .closeBrace { throw failure("no member '\(wanted)'") }
                    let name = try scanMemberName(collecting: true)
                    try skipTrivia()
                    guard current == .colon else { throw failure("expected ':'") }
                    position += 1
                    try skipTrivia()
                    if name.matches(wanted) { break }
                    try scanValue()
                    try skipCommaInContainer(closer: .closeBrace)
                }
            case .index(let wanted):
                guard current == .openBracket else { throw failure("not an array") }
                position += 1
                try skipTrivia()
                var index = 0
                while true {
                    if current == .closeBracket { throw failure("no element \(wanted)") }
                    if index == wanted { break }
                    try scanValue()
                    try skipCommaInContainer(closer: .closeBracket)
                    index += 1
                }
            }
        }
        guard !atEnd else { throw failure("no value") }
        return position
    }

    /// After a skipped member or element: ',' (then trivia) or the closer,
    /// which is left in place for the caller to see.
    private mutating func skipCommaInContainer(closer: UInt8) throws(JSON5ScanFailure) {
        try skipTrivia()
        if current == .comma {
            position += 1
            try skipTrivia()
        } else if current != closer {
            throw failure("expected ',' or '\(Character(Unicode.Scalar(closer)))'")
        }
    }

    private mutating func skipLeadingBOM() {
        // Foundation strips one leading byte-order mark; so does the spec.
        if position == 0, bytes.starts(with: utf8BOM) { position = 3 }
    }

    // MARK: Values

    /// An open array or object while scanning a value.
    private struct Frame {
        var isObject: Bool
        /// Offset of the '{' or '['.
        var open: Int
        /// With `rejectsDuplicateMembers`: the member names seen so far
        /// (decoded) and the offset of each, and where in the container the
        /// scan is (current member name or element index).
        var names: [String: Int] = [:]
        var member: String = ""
        var index = 0

        var closerByte: UInt8 { isObject ? .closeBrace : .closeBracket }
        var closer: Character { isObject ? "}" : "]" }
        var noun: String { isObject ? "object" : "array" }
    }

    /// What the state machine in `scanValue` expects next.
    private enum Expectation {
        /// A value. `memberName` is the byte range of the member name it
        /// belongs to, if any (for messages); `closerAllowed` is true right
        /// after '[' or ',' inside an array.
        case value(memberName: Range<Int>?, closerAllowed: Bool)
        /// A member name (or '}'), right after '{' or ','.
        case memberName(afterComma: Bool)
        /// A value just ended: ',' or the closer of the innermost container.
        case afterValue
    }

    /// Validates one complete value starting at `position` (trivia already
    /// skipped) and leaves `position` just after it.
    mutating func scanValue() throws(JSON5ScanFailure) {
        var stack: [Frame] = []
        var expectation = Expectation.value(memberName: nil, closerAllowed: false)

        while true {
            switch expectation {
            case .value(let memberName, let closerAllowed):
                try skipTrivia()
                guard let byte = current else {
                    if let frame = stack.last {
                        throw failure("unexpected end of input, expected a value, then '\(frame.closer)' "
                                      + "to close the \(frame.noun) opened at \(place(frame.open))")
                    }
                    throw failure("unexpected end of input, expected a value")
                }
                switch byte {
                case .openBrace, .openBracket:
                    if dialect == .foundation, stack.count >= foundationMaximumDepth {
                        throw failure("arrays and objects are nested more than \(foundationMaximumDepth) deep, "
                                      + "which Foundation's JSONDecoder does not accept")
                    }
                    let frame = Frame(isObject: byte == .openBrace, open: position)
                    stack.append(frame)
                    position += 1
                    try skipTrivia()
                    if current == frame.closerByte {
                        position += 1
                        stack.removeLast()
                        expectation = .afterValue
                    } else if frame.isObject {
                        expectation = .memberName(afterComma: false)
                    } else {
                        expectation = .value(memberName: nil, closerAllowed: true)
                    }
                    continue
                case .doubleQuote, .singleQuote:
                    _ = try scanString(collecting: false)
                case .plus, .minus, .dot, .digit0 ... .digit9:
                    try scanNumber()
                default:
                    if isWordByte(byte) {
                        try scanLiteralWord()
                    } else {
                        var expected = "a value"
                        if closerAllowed { expected += " or ']'" }
                        if let memberName { expected += " for member '\(text(memberName))'" }
                        throw failure("expected \(expected), found \(found())")
                    }
                }
                expectation = .afterValue

            case .memberName(let afterComma):
                // Trivia has been skipped; '}' after '{' or ',' was handled by the caller.
                guard let byte = current else {
                    let frame = stack[stack.count - 1]
                    throw failure("unexpected end of input, expected a member name or '}' "
                                  + "to close the object opened at \(place(frame.open))")
                }
                if byte == .closeBrace {
                    position += 1
                    stack.removeLast()
                    expectation = .afterValue
                    continue
                }
                if byte >= .digit0 && byte <= .digit9 {
                    throw failure("expected a member name, found \(found()) "
                                  + "(an unquoted name cannot start with a digit; put it in quotes)")
                }
                let nameStart = position
                guard byte == .doubleQuote || byte == .singleQuote || startsIdentifier(at: position) else {
                    throw failure("expected a member name or '}'\(afterComma ? " after ','" : ""), found \(found())")
                }
                let scannedName = try scanMemberName(collecting: rejectsDuplicateMembers)
                let nameRange = nameStart..<position
                if rejectsDuplicateMembers {
                    let top = stack.count - 1
                    if let first = stack[top].names[scannedName.decoded] {
                        var path = containerPath(stack.dropLast())
                        path.append(.key(scannedName.decoded))
                        throw JSON5ScanFailure(
                            offset: nameStart,
                            message: "duplicate member '\(scannedName.decoded)' (first at \(place(first)))",
                            duplicate: (first, scannedName.decoded, path))
                    }
                    stack[top].names[scannedName.decoded] = nameStart
                    stack[top].member = scannedName.decoded
                }
                try skipTrivia()
                guard current == .colon else {
                    let name = bytes[nameStart] == .doubleQuote || bytes[nameStart] == .singleQuote
                        ? text(nameRange) : "'\(text(nameRange))'"
                    var message = "expected ':' after member name \(name), found \(found())"
                    // "{a-b: 1}": the name probably goes on with a character
                    // that unquoted names cannot contain.
                    if let byte = current, position == nameRange.upperBound, bytes[nameStart] != .doubleQuote,
                       bytes[nameStart] != .singleQuote, !isStructural(byte), byte > .space,
                       byte != .doubleQuote, byte != .singleQuote, byte != .slash {
                        message += " (a name with characters other than letters, digits, '_' and '$' must be quoted)"
                    }
                    throw failure(message)
                }
                position += 1
                expectation = .value(memberName: nameRange, closerAllowed: false)

            case .afterValue:
                guard let frame = stack.last else { return }
                try skipTrivia()
                guard let byte = current else {
                    throw failure("unexpected end of input, expected '\(frame.closer)' "
                                  + "to close the \(frame.noun) opened at \(place(frame.open))")
                }
                if byte == .comma {
                    position += 1
                    if !frame.isObject { stack[stack.count - 1].index += 1 }
                    try skipTrivia()
                    if current == frame.closerByte {           // trailing comma
                        position += 1
                        stack.removeLast()
                        expectation = .afterValue
                    } else if frame.isObject {
                        expectation = .memberName(afterComma: true)
                    } else {
                        expectation = .value(memberName: nil, closerAllowed: true)
                    }
                } else if byte == frame.closerByte {
                    position += 1
                    stack.removeLast()
                } else {
                    let what = frame.isObject ? "a member value" : "an array element"
                    var message = "expected ',' or '\(frame.closer)' after \(what), found \(found())"
                    if byte == .closeBrace || byte == .closeBracket {
                        message += " (the \(frame.noun) opened at \(place(frame.open)) is still open)"
                    }
                    throw failure(message)
                }
            }
        }
    }

    /// Describes the value at `position` (see ``describeJSON5Value(at:in:dialect:)``).
    mutating func describeValueHere() -> String? {
        guard let byte = current else { return nil }
        let start = position
        switch byte {
        case .openBrace: return "an object {…}"
        case .openBracket: return "a list […]"
        case .doubleQuote, .singleQuote:
            guard let value = try? scanString(collecting: true) else { return "a string" }
            let shown = value.count > 40 ? String(value.prefix(40)) + "…" : value
            return "a string \"\(shown)\""
        default:
            var scanned = (try? scanNumber()) != nil
            if !scanned {
                position = start
                scanned = (try? scanLiteralWord()) != nil
            }
            if scanned {
                let literal = text(start..<position)
                switch literal {
                case "true", "false", "null": return literal
                case "NaN", "+NaN", "-NaN", "Infinity", "+Infinity", "-Infinity": return literal
                default: return "the number \(literal)"
                }
            }
            return nil
        }
    }

    /// The path of the value being scanned inside the containers `frames`
    /// (outermost first), for messages about a member of the innermost one.
    private func containerPath(_ frames: ArraySlice<Frame>) -> [JSON5PathComponent] {
        frames.map { $0.isObject ? .key($0.member) : .index($0.index) }
    }

    // MARK: Literals and numbers

    /// `true`, `false`, `null`, `Infinity`, `NaN`; anything else that looks
    /// like a word is an error at its first character.
    private mutating func scanLiteralWord() throws(JSON5ScanFailure) {
        let start = position
        let word = scanWord()
        switch word {
        case "true", "false", "null", "Infinity", "NaN":
            return
        default:
            position = start
            let shown = word.count > 40 ? String(word.prefix(40)) + "…" : word
            let hint: String
            if ["true", "false", "null", "infinity", "nan"].contains(word.lowercased()) {
                hint = "JSON5 literals are case-sensitive: true, false, null, Infinity, NaN"
            } else {
                hint = "strings must be quoted"
            }
            throw failure("expected a value, found '\(shown)' (\(hint))")
        }
    }

    /// The run of identifier characters at `position` (stops at escapes).
    private mutating func scanWord() -> String {
        let start = position
        while position < bytes.count {
            let (scalar, length) = decodeScalar(at: position)
            guard scalar != "\\", isIdentifierPart(scalar) else { break }
            position += length
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// Number: [+-]? ( Infinity | NaN | 0x hex+ | decimal ), decimal being
    /// digits with optional fraction (either side of '.' may be empty, not
    /// both) and optional exponent. No leading zeros.
    private mutating func scanNumber() throws(JSON5ScanFailure) {
        let start = position
        var signed = false
        if current == .plus || current == .minus {
            signed = true
            position += 1
        }
        let sign = signed ? "'\(Character(Unicode.Scalar(bytes[start])))'" : ""

        if let byte = current, isWordByte(byte) {
            // Only Infinity and NaN may follow a sign as words.
            let wordStart = position
            let word = scanWord()
            guard word == "Infinity" || word == "NaN" else {
                position = wordStart
                throw failure("expected a number after \(sign), found '\(word)'")
            }
        } else if current == .digit0, let next = peek(1), next == .lowerX || next == .upperX {
            position += 2
            guard let byte = current, byte.isHexDigit else {
                throw failure("expected a hexadecimal digit after '0\(Character(Unicode.Scalar(next)))', found \(found())")
            }
            while let byte = current, byte.isHexDigit { position += 1 }
        } else {
            let integerStart = position
            while let byte = current, byte.isDigit { position += 1 }
            let integerDigits = position - integerStart
            if integerDigits > 1, bytes[integerStart] == .digit0 {
                position = integerStart + 1
                throw failure("a number cannot have a leading zero: found \(found()) after '0' "
                              + "(write hexadecimal as 0x…)")
            }
            var fractionDigits = 0
            if current == .dot {
                position += 1
                let fractionStart = position
                while let byte = current, byte.isDigit { position += 1 }
                fractionDigits = position - fractionStart
                if integerDigits == 0, fractionDigits == 0 {
                    throw failure("expected a digit after '.', found \(found())")
                }
            } else if integerDigits == 0 {
                throw failure("expected a number after \(sign), found \(found())")
            }
            if current == .lowerE || current == .upperE {
                position += 1
                if current == .plus || current == .minus { position += 1 }
                guard let byte = current, byte.isDigit else {
                    throw failure("expected a digit in the exponent, found \(found())")
                }
                while let byte = current, byte.isDigit { position += 1 }
            }
            // Foundation (Swift 6.3) rejects exactly "0e1" ... "0e9" (unsigned,
            // one exponent digit) although "0e0", "-0e1" and "0e10" pass.
            if dialect == .foundation, !signed, position - start == 3, bytes[start] == .digit0,
               bytes[start + 1] == .lowerE || bytes[start + 1] == .upperE, bytes[start + 2] != .digit0 {
                throw failure(at: start, "Foundation's JSONDecoder rejects '\(text(start..<position))' "
                              + "although it is valid JSON5; write 0 or 0.0")
            }
        }

        // ECMAScript: no identifier character or digit may follow a number.
        if position < bytes.count {
            let (scalar, _) = decodeScalar(at: position)
            if scalar == "." || scalar == "\\" || isIdentifierPart(scalar) {
                throw failure("unexpected \(found()) in the number that starts at \(place(start))")
            }
        }
    }

    // MARK: Member names

    /// A member name as written (`raw`) and as decoded (`decoded`).
    struct MemberName {
        var raw: String
        var decoded: String
        func matches(_ key: String) -> Bool { decoded == key || raw == key }
    }

    /// A quoted string or an unquoted identifier name at `position`.
    private mutating func scanMemberName(collecting: Bool) throws(JSON5ScanFailure) -> MemberName {
        if current == .doubleQuote || current == .singleQuote {
            let decoded = try scanString(collecting: collecting)
            return MemberName(raw: decoded, decoded: decoded)
        }
        guard startsIdentifier(at: position) else {
            throw failure("expected a member name, found \(found())")
        }
        let start = position
        var decoded = String.UnicodeScalarView()
        var first = true
        while position < bytes.count {
            let (scalar, length) = decodeScalar(at: position)
            if scalar == "\\" {
                let escapeStart = position
                let escaped = try scanIdentifierEscape()
                // Foundation accepts any name character after a backslash, even
                // in first position, and counts '\' itself as one; the spec
                // wants an IdentifierStart first and IdentifierParts after.
                let allowed = dialect == .foundation
                    ? isIdentifierPart(escaped) || escaped == "\\"
                    : first ? isIdentifierStart(escaped) : isIdentifierPart(escaped)
                guard allowed else {
                    throw failure(at: escapeStart, "the escape '\(text(escapeStart..<position))' stands for a "
                                  + "character that is not allowed \(first ? "to start" : "in") an unquoted member name")
                }
                if collecting { decoded.append(escaped) }
            } else if first ? isIdentifierStart(scalar) : isIdentifierPart(scalar) {
                if collecting { decoded.append(scalar) }
                position += length
            } else {
                break
            }
            first = false
        }
        let raw = collecting ? String(decoding: bytes[start..<position], as: UTF8.self) : ""
        return MemberName(raw: raw, decoded: String(decoded))
    }

    /// `\uHHHH` (both dialects) or `\xHH` (Foundation only) inside an unquoted
    /// name; `position` is at the backslash.
    private mutating func scanIdentifierEscape() throws(JSON5ScanFailure) -> Unicode.Scalar {
        let start = position
        position += 1
        switch current ?? 0 {
        case .lowerU:
            position += 1
            let value = try scanHexDigits(4, after: "\\u")
            guard let scalar = Unicode.Scalar(value), value != 0 else {
                throw failure(at: start, "'\(text(start..<position))' is not a character allowed in a member name")
            }
            return scalar
        case .lowerX where dialect == .foundation:
            position += 1
            let value = try scanHexDigits(2, after: "\\x")
            guard value != 0 else {
                throw failure(at: start, "'\\x00' is not a character allowed in a member name")
            }
            return Unicode.Scalar(UInt8(value))
        default:
            position = start
            let accepted = dialect == .foundation ? "'\\u' and '\\x'" : "'\\u'"
            throw failure("unexpected '\\' in a member name (only \(accepted) escapes are allowed there)")
        }
    }

    // MARK: Strings

    /// A single- or double-quoted string at `position`. Returns its decoded
    /// value when `collecting` (member names), "" otherwise.
    private mutating func scanString(collecting: Bool) throws(JSON5ScanFailure) -> String {
        let start = position
        let quote = bytes[position]
        let quoteName = quote == .doubleQuote ? "a double quote" : "a single quote"
        position += 1
        var value: [UInt8] = []
        var chunkStart = position
        func endOfInput(_ scanner: JSON5Scanner) -> JSON5ScanFailure {
            scanner.failure(at: scanner.bytes.count, "unexpected end of input inside the string that starts at "
                            + "\(scanner.place(start)); close it with \(quoteName)")
        }

        while true {
            guard let byte = current else { throw endOfInput(self) }
            switch byte {
            case quote:
                if collecting { value.append(contentsOf: bytes[chunkStart..<position]) }
                position += 1
                return collecting ? String(decoding: value, as: UTF8.self) : ""
            case .backslash:
                if collecting { value.append(contentsOf: bytes[chunkStart..<position]) }
                guard position + 1 < bytes.count else {
                    position = bytes.count
                    throw endOfInput(self)
                }
                try scanEscape(into: &value, collecting: collecting)
                chunkStart = position
            case .lf, .cr:
                throw failure("unterminated string: line break inside the string that starts at \(place(start)) "
                              + "(close it with \(quoteName), or put '\\' before the line break to continue it)")
            case ..<UInt8.space where dialect == .foundation:
                throw failure("\(found()) must be escaped inside a string (Foundation's JSONDecoder rejects "
                              + "raw control characters although JSON5 allows them)")
            default:
                position += 1
            }
        }
    }

    /// One escape sequence; `position` is at the backslash, which is followed
    /// by at least one byte.
    private mutating func scanEscape(into value: inout [UInt8], collecting: Bool) throws(JSON5ScanFailure) {
        let start = position
        position += 1
        let byte = bytes[position]
        var decoded: Unicode.Scalar?
        let foundationOnly = "is valid JSON5 but Foundation's JSONDecoder rejects it"

        switch byte {
        case .doubleQuote, .singleQuote, .backslash, .slash:
            decoded = Unicode.Scalar(byte)
            position += 1
        case .lowerB: decoded = "\u{08}"; position += 1
        case .lowerF: decoded = "\u{0C}"; position += 1
        case .lowerN: decoded = "\n"; position += 1
        case .lowerR: decoded = "\r"; position += 1
        case .lowerT: decoded = "\t"; position += 1
        case .lowerV:
            if dialect == .foundation {
                throw failure(at: start, "the escape '\\v' \(foundationOnly); write '\\u000B'")
            }
            decoded = "\u{0B}"
            position += 1
        case .digit0 ... .digit9:
            if byte == .digit0, dialect == .specification, !(peek(1)?.isDigit ?? false) {
                decoded = "\0"
                position += 1
            } else if byte == .digit0 && dialect == .foundation {
                throw failure(at: start, "the escape '\\0' \(foundationOnly) (it rejects NUL characters)")
            } else if byte == .digit0 {
                throw failure(at: start, "the escape '\\0' must not be followed by a digit "
                              + "(JSON5 has no octal escapes; use '\\u' with four hexadecimal digits)")
            } else {
                throw failure(at: start, "invalid escape '\\\(Character(Unicode.Scalar(byte)))' "
                              + "(JSON5 has no octal escapes; use '\\u' with four hexadecimal digits)")
            }
        case .lowerX:
            position += 1
            let code = try scanHexDigits(2, after: "\\x")
            if code == 0, dialect == .foundation {
                throw failure(at: start, "the escape '\\x00' \(foundationOnly) (it rejects NUL characters)")
            }
            decoded = Unicode.Scalar(UInt8(code))
        case .lowerU:
            position += 1
            decoded = try scanUnicodeEscapeValue(escapeStart: start)
        case .lf:                                   // line continuation
            position += 1
            // Foundation keeps the line break in the value; the spec drops it.
            if dialect == .foundation { decoded = "\n" }
        case .cr:
            position += 1
            let crlf = current == .lf
            if crlf { position += 1 }
            if dialect == .foundation && collecting { value.append(contentsOf: crlf ? [.cr, .lf] : [.cr]) }
        default:
            let (scalar, length) = decodeScalar(at: position)
            if dialect == .foundation {
                let shown = scalar == "\u{2028}" || scalar == "\u{2029}" || scalar.value < 0x20
                    ? "'\\' followed by \(describe(scalar))" : "the escape '\\\(scalar)'"
                throw failure(at: start, "\(shown) \(foundationOnly) (it accepts only \\\" \\' \\\\ \\/ \\b \\f \\n "
                              + "\\r \\t, \\xHH, \\uHHHH and '\\' before a line break)")
            }
            position += length
            // Spec: a backslash before U+2028/U+2029 is a line continuation;
            // before anything else (but a digit, 'x' or 'u') it is the character itself.
            if scalar != "\u{2028}" && scalar != "\u{2029}" { decoded = scalar }
        }

        if collecting, let decoded { value.append(contentsOf: String(decoded).utf8) }
    }

    /// The four hex digits after `\u` (at `position`), plus a following low
    /// surrogate escape when the first is a high surrogate. Lone surrogates are
    /// an error for Foundation and U+FFFD for the spec (Swift strings cannot
    /// hold them).
    private mutating func scanUnicodeEscapeValue(escapeStart: Int) throws(JSON5ScanFailure) -> Unicode.Scalar {
        let value = try scanHexDigits(4, after: "\\u")
        if value == 0, dialect == .foundation {
            throw failure(at: escapeStart, "the escape '\\u0000' is valid JSON5 but Foundation's JSONDecoder "
                          + "rejects it (it rejects NUL characters)")
        }
        if let scalar = Unicode.Scalar(value) { return scalar }
        // A surrogate.
        if (0xD800...0xDBFF).contains(value), peek(0) == .backslash, peek(1) == .lowerU {
            let save = position
            position += 2
            if let low = try? scanHexDigits(4, after: "\\u"), (0xDC00...0xDFFF).contains(low) {
                return Unicode.Scalar(0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00))!
            }
            position = save
        }
        if dialect == .foundation {
            let kind = value < 0xDC00 ? "high surrogate not followed by a '\\uDC00'…'\\uDFFF' escape"
                                      : "low surrogate without a high surrogate before it"
            throw failure(at: escapeStart, "'\(text(escapeStart..<position))' is a lone \(kind) "
                          + "(valid JSON5, but Foundation's JSONDecoder rejects it)")
        }
        return "\u{FFFD}"
    }

    /// `count` hexadecimal digits at `position`, as a number.
    private mutating func scanHexDigits(_ count: Int, after prefix: String) throws(JSON5ScanFailure) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard let byte = current, byte.isHexDigit else {
                let what = count == 2 ? "two" : "four"
                throw failure("expected \(what) hexadecimal digits after '\(prefix)', found \(found())")
            }
            value = value << 4 | UInt32(byte.hexValue)
            position += 1
        }
        return value
    }

    // MARK: Whitespace and comments

    /// Skips whitespace and comments. Fails on an unterminated block comment,
    /// and (Foundation dialect) on whitespace that Foundation does not accept.
    mutating func skipTrivia() throws(JSON5ScanFailure) {
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case .space, .tab, .lf, .cr, .verticalTab, .formFeed:
                position += 1
            case .slash:
                switch peek(1) ?? 0 {
                case .slash:
                    position += 2
                    skipLineComment()
                case .asterisk:
                    let start = position
                    position += 2
                    guard let close = indexOfBlockCommentEnd() else {
                        position = bytes.count
                        throw failure("unexpected end of input inside the block comment that starts at "
                                      + "\(place(start)); close it with '*/'")
                    }
                    position = close
                default:
                    return
                }
            case 0x80...:
                let (scalar, length) = decodeScalar(at: position)
                guard isUnicodeWhitespace(scalar) else { return }
                if dialect == .foundation {
                    throw failure("found \(describe(scalar)): it is whitespace in JSON5, but Foundation's "
                                  + "JSONDecoder does not accept it; use an ordinary space or line break")
                }
                position += length
            default:
                return
            }
        }
    }

    /// From after `//` to the line break (which is left for the caller).
    private mutating func skipLineComment() {
        while position < bytes.count {
            let byte = bytes[position]
            if byte == .lf || byte == .cr { return }
            // U+2028 / U+2029 (E2 80 A8 / E2 80 A9) end a comment in the spec only.
            if dialect == .specification, byte == 0xE2, peek(1) == 0x80, peek(2) == 0xA8 || peek(2) == 0xA9 {
                return
            }
            position += 1
        }
    }

    /// Offset just after the `*/` that closes the comment whose body starts at
    /// `position`, or nil.
    private func indexOfBlockCommentEnd() -> Int? {
        var index = position
        while index + 1 < bytes.count {
            if bytes[index] == .asterisk && bytes[index + 1] == .slash { return index + 2 }
            index += 1
        }
        return nil
    }

    // MARK: Characters

    private func peek(_ offset: Int) -> UInt8? {
        let index = position + offset
        return index < bytes.count ? bytes[index] : nil
    }

    /// The scalar at byte `index` and its UTF-8 length. The bytes come from a
    /// `String`, so they are valid UTF-8.
    private func decodeScalar(at index: Int) -> (Unicode.Scalar, Int) {
        let lead = bytes[index]
        if lead < 0x80 { return (Unicode.Scalar(lead), 1) }
        let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
        var value = UInt32(lead) & (0xFF >> (length + 1))
        for offset in 1..<length where index + offset < bytes.count {
            value = value << 6 | UInt32(bytes[index + offset] & 0x3F)
        }
        return (Unicode.Scalar(value) ?? "\u{FFFD}", length)
    }

    /// A byte that may begin a literal word (ASCII letter, '_', '$') or any
    /// non-ASCII byte (checked more closely by `scanWord`).
    private func isWordByte(_ byte: UInt8) -> Bool {
        byte.isASCIILetter || byte == .underscore || byte == .dollar
            || (byte >= 0x80 && isIdentifierPart(decodeScalar(at: position).0))
    }

    private func startsIdentifier(at index: Int) -> Bool {
        let (scalar, _) = decodeScalar(at: index)
        return scalar == "\\" || isIdentifierStart(scalar)
    }

    /// ECMAScript 5.1 IdentifierStart without escapes (§7.6, which JSON5
    /// refers to): ASCII letters, '$', '_', and the general categories Lu, Ll,
    /// Lt, Lm, Lo, Nl. Foundation uses the same categories.
    private func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            return UInt8(scalar.value).isASCIILetter || scalar == "_" || scalar == "$"
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .letterNumber:
            return true
        default:
            return false
        }
    }

    /// ECMAScript 5.1 IdentifierPart without escapes: adds digits, the
    /// categories Mn, Mc, Nd, Pc, and ZWNJ / ZWJ.
    private func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        if isIdentifierStart(scalar) { return true }
        if scalar.isASCII { return UInt8(scalar.value).isDigit }
        if scalar == "\u{200C}" || scalar == "\u{200D}" { return true }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .decimalNumber, .connectorPunctuation:
            return true
        default:
            return false
        }
    }

    /// Non-ASCII JSON5 whitespace: Zs, U+FEFF, U+2028, U+2029.
    private func isUnicodeWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\u{FEFF}" || scalar == "\u{2028}" || scalar == "\u{2029}"
            || scalar.properties.generalCategory == .spaceSeparator
    }

    private func isStructural(_ byte: UInt8) -> Bool {
        [.openBrace, .closeBrace, .openBracket, .closeBracket, .comma, .colon].contains(byte)
    }

    // MARK: Messages

    /// What is at `position`, for "found ..." in messages.
    private func found() -> String {
        guard position < bytes.count else { return "end of input" }
        return describe(decodeScalar(at: position).0)
    }

    private func describe(_ scalar: Unicode.Scalar) -> String {
        let names: [UInt32: String] = [
            0x09: "tab", 0x0A: "line feed", 0x0D: "carriage return", 0x00: "NUL",
            0xA0: "no-break space", 0xFEFF: "zero width no-break space / byte-order mark",
            0x2028: "line separator", 0x2029: "paragraph separator", 0x3000: "ideographic space",
        ]
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        if let name = names[scalar.value] { return "\(code) (\(name))" }
        if scalar.value < 0x20 || scalar.value == 0x7F { return "\(code) (control character)" }
        if isUnicodeWhitespace(scalar) { return "\(code) (space)" }
        if !scalar.isASCII && scalar.properties.generalCategory == .format { return code }
        return "'\(scalar)'"
    }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    /// "line L column C" of a byte offset.
    private func place(_ offset: Int) -> String {
        let (line, column) = lineAndColumn(ofOffset: offset, in: bytes)
        return "line \(line) column \(column)"
    }

    private func failure(_ message: String) -> JSON5ScanFailure {
        JSON5ScanFailure(offset: position, message: message)
    }

    private func failure(at offset: Int, _ message: String) -> JSON5ScanFailure {
        JSON5ScanFailure(offset: offset, message: message)
    }
}

// MARK: - Byte constants

private extension UInt8 {
    static let tab: UInt8 = 0x09, lf: UInt8 = 0x0A, verticalTab: UInt8 = 0x0B, formFeed: UInt8 = 0x0C
    static let cr: UInt8 = 0x0D, space: UInt8 = 0x20
    static let doubleQuote = UInt8(ascii: "\""), singleQuote = UInt8(ascii: "'")
    static let dollar = UInt8(ascii: "$"), asterisk = UInt8(ascii: "*"), plus = UInt8(ascii: "+")
    static let comma = UInt8(ascii: ","), minus = UInt8(ascii: "-"), dot = UInt8(ascii: ".")
    static let slash = UInt8(ascii: "/"), colon = UInt8(ascii: ":"), backslash = UInt8(ascii: "\\")
    static let underscore = UInt8(ascii: "_")
    static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
    static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    static let digit0 = UInt8(ascii: "0"), digit9 = UInt8(ascii: "9")
    static let lowerB = UInt8(ascii: "b"), lowerE = UInt8(ascii: "e"), upperE = UInt8(ascii: "E")
    static let lowerF = UInt8(ascii: "f"), lowerN = UInt8(ascii: "n"), lowerR = UInt8(ascii: "r")
    static let lowerT = UInt8(ascii: "t"), lowerU = UInt8(ascii: "u"), lowerV = UInt8(ascii: "v")
    static let lowerX = UInt8(ascii: "x"), upperX = UInt8(ascii: "X")

    var isDigit: Bool { self >= .digit0 && self <= .digit9 }
    var isASCIILetter: Bool { (self | 0x20) >= UInt8(ascii: "a") && (self | 0x20) <= UInt8(ascii: "z") }
    var isHexDigit: Bool { isDigit || ((self | 0x20) >= UInt8(ascii: "a") && (self | 0x20) <= UInt8(ascii: "f")) }
    var hexValue: UInt8 { isDigit ? self - .digit0 : (self | 0x20) - UInt8(ascii: "a") + 10 }
}
