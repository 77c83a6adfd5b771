// Tests for JSON5Diagnostics.swift.
//
// Every document here is also given to Foundation's JSONDecoder (allowsJSON5)
// where that is safe: a document our scanner accepts must decode, one it
// rejects must fail to decode. That keeps the scanner honest against the
// decoder the project really uses.

import Foundation
import Testing
@testable import EdgeConfig

// MARK: - Foundation cross-check

/// Decodes any JSON5 value, touching every number and string so that
/// Foundation's lazily validated parts (numbers, escapes) are checked too.
private indirect enum AnyJSON5: Decodable {
    case null, bool(Bool), number(Double), string(String), array([AnyJSON5]), object([String: AnyJSON5])

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var values: [AnyJSON5] = []
            while !array.isAtEnd { values.append(try array.decode(AnyJSON5.self)) }
            self = .array(values)
        } else if let object = try? decoder.container(keyedBy: Key.self) {
            var values: [String: AnyJSON5] = [:]
            for key in object.allKeys { values[key.stringValue] = try object.decode(AnyJSON5.self, forKey: key) }
            self = .object(values)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let value = try? single.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? single.decode(Double.self) {
                self = .number(value)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }
}

private func foundationAccepts(_ text: String) -> Bool {
    let decoder = JSONDecoder()
    decoder.allowsJSON5 = true
    return (try? decoder.decode(AnyJSON5.self, from: Data(text.utf8))) != nil
}

// MARK: - Invalid documents

struct InvalidCase: Sendable, CustomTestStringConvertible {
    var text: String
    var line: Int
    var column: Int
    /// The whole message when `exact`, otherwise a part of it.
    var message: String
    var exact = false
    /// False for the few inputs that crash Foundation instead of failing.
    var crossCheck = true

    var testDescription: String { text.debugDescription }
}

private func invalid(_ text: String, _ line: Int, _ column: Int, _ message: String, exact: Bool = false,
                     crossCheck: Bool = true) -> InvalidCase {
    InvalidCase(text: text, line: line, column: column, message: message, exact: exact, crossCheck: crossCheck)
}

private let invalidCases: [InvalidCase] = [
    // Structure.
    invalid("{\n  x: 1\n  y: 2\n}", 3, 3, "expected ',' or '}' after a member value, found 'y'", exact: true),
    invalid("[1 2]", 1, 4, "expected ',' or ']' after an array element, found '2'", exact: true),
    invalid("{ name \"imu\" }", 1, 8, "expected ':' after member name 'name', found '\"'", exact: true),
    invalid("{\"a\" 1}", 1, 6, "expected ':' after member name \"a\", found '1'", exact: true),
    invalid("{a-b: 1}", 1, 3, "must be quoted"),
    invalid("}", 1, 1, "expected a value, found '}'", exact: true),
    invalid("{a: 1} x", 1, 8, "unexpected 'x' after the end of the top-level value"),
    invalid("{a:1}}", 1, 6, "unexpected '}' after the end of the top-level value (which started at line 1 column 1)"),
    invalid("[1] [2]", 1, 5, "after the end of the top-level value"),
    invalid("", 1, 1, "unexpected end of input, expected a value (the document is empty)", exact: true),
    invalid("  // nothing here\n", 2, 1, "the document is empty"),
    invalid("/* only a comment */", 1, 21, "the document is empty"),
    invalid("{\n  a: 1", 2, 7,
            "unexpected end of input, expected '}' to close the object opened at line 1 column 1", exact: true),
    invalid("{\n  a: 1,\n", 3, 1, "expected a member name or '}' to close the object opened at line 1 column 1"),
    invalid("{a:", 1, 4, "expected a value, then '}' to close the object opened at line 1 column 1"),
    invalid("[", 1, 2, "to close the array opened at line 1 column 1"),
    invalid("{a: [1, 2}", 1, 10,
            "expected ',' or ']' after an array element, found '}' (the array opened at line 1 column 5 is still open)",
            exact: true),
    invalid("{a:1]", 1, 5, "(the object opened at line 1 column 1 is still open)"),
    invalid("[1}", 1, 3, "expected ',' or ']'"),
    invalid("[1,,2]", 1, 4, "expected a value or ']', found ','", exact: true),
    invalid("[,]", 1, 2, "expected a value or ']', found ','", exact: true),
    invalid("{,}", 1, 2, "expected a member name or '}', found ','", exact: true),
    invalid("{a: 1,, b: 2}", 1, 7, "expected a member name or '}' after ',', found ','", exact: true),
    invalid("{a:}", 1, 4, "expected a value for member 'a', found '}'", exact: true),
    invalid("{1a: 1}", 1, 2, "an unquoted name cannot start with a digit"),
    invalid("{:1}", 1, 2, "expected a member name or '}', found ':'"),
    invalid("[1, /x]", 1, 5, "expected a value or ']', found '/'"),
    invalid("{a: 1 / 2}", 1, 7, "found '/'"),
    invalid("{\r\n  a: 1,\r\n  b 2\r\n}", 3, 5, "expected ':' after member name 'b', found '2'"),
    invalid("{\n\ta: 1,\n\tb 2\n}", 3, 4, "found '2'"),
    // Columns count characters, not bytes.
    invalid("{ \"é\": 1 \"ü\": 2 }", 1, 10, "found '\"'"),
    invalid("{ \"👍🏽\": 1 x }", 1, 10, "found 'x'"),
    // Literals.
    invalid("[tru]", 1, 2, "expected a value, found 'tru' (strings must be quoted)", exact: true),
    invalid("[truex]", 1, 2, "found 'truex'"),
    invalid("[True]", 1, 2, "JSON5 literals are case-sensitive"),
    invalid("{mode: fast}", 1, 8, "expected a value, found 'fast' (strings must be quoted)", exact: true),
    invalid("[undefined]", 1, 2, "found 'undefined'"),
    // Numbers.
    invalid("{a: 0x}", 1, 7, "expected a hexadecimal digit after '0x', found '}'", exact: true),
    invalid("[0xG]", 1, 4, "expected a hexadecimal digit after '0x', found 'G'"),
    invalid("[01]", 1, 3, "a number cannot have a leading zero"),
    invalid("[-00.5]", 1, 4, "leading zero"),
    invalid("[1e]", 1, 4, "expected a digit in the exponent, found ']'", exact: true),
    // Foundation crashes (precondition failure) on "1e+" instead of throwing.
    invalid("[1e+]", 1, 5, "expected a digit in the exponent", crossCheck: false),
    invalid("[.]", 1, 3, "expected a digit after '.', found ']'", exact: true),
    invalid("[.e1]", 1, 3, "expected a digit after '.'"),
    invalid("[-]", 1, 3, "expected a number after '-', found ']'", exact: true),
    invalid("[+-1]", 1, 3, "expected a number after '+', found '-'"),
    invalid("[-Infinityx]", 1, 3, "expected a number after '-', found 'Infinityx'"),
    invalid("[1x]", 1, 3, "unexpected 'x' in the number that starts at line 1 column 2", exact: true),
    invalid("[0x1.5]", 1, 5, "unexpected '.' in the number"),
    invalid("[1.2.3]", 1, 5, "unexpected '.' in the number"),
    invalid("[NaNx]", 1, 2, "found 'NaNx'"),
    // Strings.
    invalid("{a: \"abc", 1, 9, "unexpected end of input inside the string that starts at line 1 column 5"),
    invalid("{a: 'abc\n}", 1, 9, "unterminated string: line break inside the string that starts at line 1 column 5"),
    invalid("\"abc", 1, 5, "inside the string that starts at line 1 column 1; close it with a double quote"),
    invalid("['abc\\", 1, 7, "unexpected end of input inside the string"),
    invalid("{a: \"x\\qy\"}", 1, 7, "the escape '\\q' is valid JSON5 but Foundation's JSONDecoder rejects it"),
    invalid("['\\1']", 1, 3, "invalid escape '\\1'"),
    invalid("['\\01']", 1, 3, "'\\0'"),
    invalid("['a\\x4']", 1, 7, "expected two hexadecimal digits after '\\x', found '''", exact: true),
    invalid("[\"\\u12\"]", 1, 7, "expected four hexadecimal digits after '\\u', found '\"'", exact: true),
    invalid("[\"\\uzzzz\"]", 1, 5, "expected four hexadecimal digits"),
    // Block comments.
    invalid("{a: 1 /* note\n}", 2, 2,
            "unexpected end of input inside the block comment that starts at line 1 column 7; close it with '*/'",
            exact: true),
    invalid("/* x", 1, 5, "block comment that starts at line 1 column 1"),
    invalid("[1] /*/", 1, 8, "block comment that starts at line 1 column 5"),
    invalid("[1]/", 1, 4, "unexpected '/' after the end of the top-level value"),
    // Member names.
    invalid("{\\u0020: 1}", 1, 2, "stands for a character that is not allowed to start an unquoted member name"),
    invalid("{a\\u0020: 1}", 1, 3, "not allowed in an unquoted member name"),
    invalid("{\\q: 1}", 1, 2, "unexpected '\\' in a member name"),
    invalid("{😀: 1}", 1, 2, "expected a member name or '}', found '😀'"),
    // What JSON5 allows but Foundation's JSONDecoder does not (default dialect).
    invalid("{\u{A0}a: 1}", 1, 2, "found U+00A0 (no-break space): it is whitespace in JSON5"),
    invalid("[1,\u{FEFF}2]", 1, 4, "U+FEFF"),
    invalid("[1,\u{2028}2]", 1, 4, "U+2028 (line separator)"),
    invalid("[\u{3000}1]", 1, 2, "U+3000"),
    invalid("['\\v']", 1, 3, "the escape '\\v' is valid JSON5 but Foundation's JSONDecoder rejects it"),
    invalid("['\\0']", 1, 3, "the escape '\\0'"),
    invalid("['\\u0000']", 1, 3, "NUL"),
    invalid("['\\x00']", 1, 3, "NUL"),
    invalid("['\\uD800']", 1, 3, "lone high surrogate"),
    invalid("['\\uDE00\\uD83D']", 1, 3, "lone low surrogate"),
    invalid("['a\\\u{2028}b']", 1, 4, "'\\' followed by U+2028"),
    invalid("[\"a\tb\"]", 1, 4, "U+0009 (tab) must be escaped inside a string"),
    invalid("{\"a\": \"x\u{1}\"}", 1, 9, "U+0001 (control character)"),
    invalid("[0e1]", 1, 2, "Foundation's JSONDecoder rejects '0e1'"),
    invalid(String(repeating: "[", count: 513) + String(repeating: "]", count: 513), 1, 513, "more than 512 deep"),
]

@Test("invalid documents: exact line, column and message", arguments: invalidCases)
func invalidDocument(_ testCase: InvalidCase) {
    let error = findJSON5SyntaxError(in: testCase.text)
    #expect(error?.line == testCase.line)
    #expect(error?.column == testCase.column)
    if testCase.exact {
        #expect(error?.message == testCase.message)
    } else {
        #expect(error?.message.contains(testCase.message) == true, "message: \(error?.message ?? "nil")")
    }
    if testCase.crossCheck {
        #expect(!foundationAccepts(testCase.text), "JSONDecoder accepts what the scanner rejects")
    }
}

// MARK: - Valid documents

private let boardProfile = """
    // Board profile: Raspberry Pi Zero 2 W with an MPU-6050 and a BMP280.
    {
      name: 'pi-zero-2w',
      "bus": "/dev/i2c-1",
      /* Chips on the bus, in probe order. */
      chips: [
        { kind: "mpu6050", address: 0x68, rate: 200., },   // IMU
        {
          kind: 'bmp280',
          address: 0X76,
          seaLevel: +1013.25,
          offsets: [ -.5, 0.25e1, 1e-3, 12E+2, ],
        },
      ],
      mounting: {
        roll: 0, pitch: -0, yaw: NaN,
        limit: Infinity, floor: -Infinity,
      },
      notes: 'first line \\
    second line',
      escapes: "tab\\there \\"quoted\\" \\u00e9 \\uD83D\\uDE00 \\x41 \\/ \\\\",
      $meta_1: { _: null, ok: true, off: false },
    }
    """

private let validDocuments: [String] = [
    boardProfile,
    "{}", "[]", "null", "true", "false", "0", "-0", "42", "'s'", "\"\"", "''",
    "  [ ]  // trailing comment",
    "/* leading */ {a: 1}",
    "\u{FEFF}{a: 1}",
    "\u{FEFF} [1]",
    "\n\n{a: 1}\n\n",
    "{a: 1 /*x*/ , b: 2 // x\n}",
    "{a /*c*/ : /*d*/ 1}",
    "[1/**/,/**/2/***/]",
    "[1 // c\r, 2]",
    "{\u{0B}a:\u{0C}1}",
    "{$_a1: 1, _: 2, $: 3, A: 4, F1: 5, G: 6}",
    "{true: 1, null: 2, Infinity: 3, NaN: 4}",
    "{é: 1, π: 2, a\u{301}: 3, а: 4, 한: 5, Ⅰ: 6, a\u{200C}b: 7, a‿b: 8, a٠: 9}",
    "{\\u0061b: 1, a\\u0062: 2}",
    "{'a b': 1, \"\": 2, 'q\"': 3, \"s'\": 4}",
    "[Infinity, -Infinity, +Infinity, NaN, -NaN, +NaN]",
    "[0x1F, 0XaB, -0x10, +0x0, 0xffffffff]",
    "[.5, 5., -.5, +.5, 0.5, 0., -0., 1.e5, .5e1, 1E5, 0e0, 0e10, 0e01, -0e1, 0.0e1, 0.e1]",
    "[1e5, 1e-5, 5e+2, 1.5e+3, -1.5E-3]",
    "['it\\'s', \"say \\\"hi\\\"\", '\\\\', '\\/', '\\b\\f\\n\\r\\t', \"\\'\", '\\\"']",
    "['\\u00e9\\u2028\\uD83D\\uDE00', '\\x41\\x7e', '\\u0041\\u0042']",
    "['line1\\\nline2', 'a\\\r\nb', 'a\\\rb']",
    "[\"\u{2028}raw separators\u{2029}\"]",
    "[\"\u{7F}\"]",
    "[1,]", "{a: 1,}", "{a: [1, {b: []},],}",
    "{a: 1, b: 2, a: 3}",
    "{a:{b:{c:[[[]]]}}}",
    String(repeating: "[", count: 512) + String(repeating: "]", count: 512),
    // Foundation-only leniency (see the dialect table in JSON5Diagnostics.swift).
    "[1] // a comment with a line separator\u{2028}that Foundation does not end",
    "{\\x41: 1}",
    "{\\u0031: 1}",
    "{a\\u005c: 1, \\u005cb: 2}",
]

@Test("valid documents: no error, and JSONDecoder agrees", arguments: validDocuments)
func validDocument(_ text: String) {
    #expect(findJSON5SyntaxError(in: text) == nil)
    #expect(foundationAccepts(text), "JSONDecoder rejects what the scanner accepts")
}

// MARK: - Agreement with Foundation on damaged documents

/// Documents for the damage tests. No signed exponents: Foundation crashes on
/// "1e+" / "1e-" rather than failing.
private let damageCorpus: [String] = [
    "{name: 'imu', address: 0x68, rates: [100, 200.5, .5], on: true, off: null}",
    "// c\n{\"a\": [1, {b: 'x\\ty'}], c: -Infinity, /* d */ e: NaN,}",
    "[\"\\u00e9\", '\\x41', 'a\\\nb', 1e5, 0.5E2, []]",
]

@Test("every prefix of a valid document: the scanner and JSONDecoder agree", arguments: damageCorpus)
func prefixesAgreeWithFoundation(_ document: String) {
    for length in 0..<document.count {
        let text = String(document.prefix(length))
        #expect((findJSON5SyntaxError(in: text) == nil) == foundationAccepts(text), "prefix \(text.debugDescription)")
    }
}

@Test("removing any one character: the scanner and JSONDecoder agree", arguments: damageCorpus)
func deletionsAgreeWithFoundation(_ document: String) {
    let characters = Array(document)
    for index in characters.indices {
        var damaged = characters
        damaged.remove(at: index)
        let text = String(damaged)
        #expect((findJSON5SyntaxError(in: text) == nil) == foundationAccepts(text), "damaged \(text.debugDescription)")
    }
}

@Test("replacing any one character with a troublemaker: the scanner and JSONDecoder agree",
      arguments: damageCorpus)
func replacementsAgreeWithFoundation(_ document: String) {
    let characters = Array(document)
    let troublemakers: [Character] = ["}", "]", ",", ":", "'", "\"", "\\", "/", "x", "0", " ", "\n", "\u{A0}"]
    for index in characters.indices {
        for replacement in troublemakers where replacement != characters[index] {
            var damaged = characters
            damaged[index] = replacement
            let text = String(damaged)
            #expect((findJSON5SyntaxError(in: text) == nil) == foundationAccepts(text),
                    "damaged \(text.debugDescription)")
        }
    }
}

// MARK: - Dialects

/// Valid JSON5 that Foundation's JSONDecoder rejects.
private let specOnlyDocuments: [String] = [
    "{\u{A0}a: 1}", "[1,\u{2028}2\u{2029}]", "[\u{3000}1\u{2003}]", "[1,\u{FEFF}2]",
    "['\\v']", "['\\0']", "['\\0x']", "['\\q\\a\\!']", "['\\u0000']", "['\\x00']",
    "['\\uD800']", "['\\uDE00\\uD83D']", "['a\\\u{2028}b']", "[\"a\tb\"]", "[0e1]", "[0E5]",
    String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
]

@Test("the specification dialect accepts what only Foundation rejects", arguments: specOnlyDocuments)
func specificationOnly(_ text: String) {
    #expect(findJSON5SyntaxError(in: text, dialect: .specification) == nil)
    #expect(findJSON5SyntaxError(in: text, dialect: .foundation) != nil)
    // Pins the divergence: if Foundation starts accepting this, the
    // .foundation dialect should follow.
    #expect(!foundationAccepts(text))
}

@Test("the specification dialect rejects Foundation's leniencies")
func specificationStricter() {
    let lineSeparatorComment = findJSON5SyntaxError(in: "[1] // c\u{2028}x", dialect: .specification)
    #expect(lineSeparatorComment?.line == 1)
    #expect(lineSeparatorComment?.column == 10)
    #expect(lineSeparatorComment?.message.contains("after the end of the top-level value") == true)

    let hexEscapeInName = findJSON5SyntaxError(in: "{\\x41: 1}", dialect: .specification)
    #expect(hexEscapeInName?.column == 2)
    #expect(hexEscapeInName?.message == "unexpected '\\' in a member name (only '\\u' escapes are allowed there)")

    let digitEscapeFirst = findJSON5SyntaxError(in: "{\\u0031: 1}", dialect: .specification)
    #expect(digitEscapeFirst?.column == 2)

    let octal = findJSON5SyntaxError(in: "['\\01']", dialect: .specification)
    #expect(octal?.column == 3)
    #expect(octal?.message.contains("must not be followed by a digit") == true)

    // ECMAScript 5.1 identifiers go by general category: U+00B7 (Po) is not
    // part of a name in either dialect, although it has Unicode's ID_Continue.
    for dialect in [JSON5Dialect.foundation, .specification] {
        #expect(findJSON5SyntaxError(in: "{·a: 1}", dialect: dialect)?.column == 2)
        #expect(findJSON5SyntaxError(in: "{a·: 1}", dialect: dialect)?.column == 3)
    }
}

// MARK: - Scale

@Test("large and deep documents are scanned in linear time without recursion")
func scale() {
    let elements = Array(repeating: "{id: 12345, name: 'sensor', v: [1.5, -2, 0x10]}", count: 50_000)
    let big = "[\n" + elements.joined(separator: ",\n") + "\n]"
    #expect(findJSON5SyntaxError(in: big) == nil)
    let broken = big.dropLast(2) + "\n}"
    let error = findJSON5SyntaxError(in: String(broken))
    #expect(error?.line == 50_002)
    #expect(error?.column == 1)

    let longString = "'" + String(repeating: "abcdefgh", count: 200_000) + "'"
    #expect(findJSON5SyntaxError(in: longString) == nil)

    let depth = 200_000
    let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    #expect(findJSON5SyntaxError(in: deep, dialect: .specification) == nil)
    #expect(findJSON5SyntaxError(in: String(deep.dropLast()), dialect: .specification)?.column == 2 * depth)
}

// MARK: - Key paths

private let keyPathDocument = """
    // board profile
    {
      name: 'pi-zero',
      chips: [
        { kind: "mpu6050", address: 0x68 },   // IMU
        {
          kind: 'bmp280',
          /* barometer */ address: "0x76",
        },
      ],
      "quoted key": { inner: [10, 20, [30, 40]] },
      'with\\nescape': 1, a\\u0062: 2, b: 3, b: 4,
    }
    """

@Test("key paths locate values in nested objects and arrays with comments")
func keyPaths() {
    func at(_ path: [JSON5PathComponent]) -> [Int]? {
        locateJSON5KeyPath(path, in: keyPathDocument).map { [$0.line, $0.column] }
    }
    #expect(at([]) == [2, 1])
    #expect(at([.key("name")]) == [3, 9])
    #expect(at([.key("chips")]) == [4, 10])
    #expect(at([.key("chips"), .index(0)]) == [5, 5])
    #expect(at([.key("chips"), .index(0), .key("address")]) == [5, 33])
    #expect(at([.key("chips"), .index(1)]) == [6, 5])
    #expect(at([.key("chips"), .index(1), .key("address")]) == [8, 32])
    #expect(at([.key("quoted key"), .key("inner"), .index(2), .index(1)]) == [11, 40])
    #expect(at([.key("with\nescape")]) == [12, 19])
    #expect(at([.key("ab")]) == [12, 31])       // unquoted name with an escape, decoded
    #expect(at([.key("a\\u0062")]) == [12, 31]) // ... or as Foundation reports it
    #expect(at([.key("b")]) == [12, 37])        // the first of two, as Foundation decodes

    #expect(at([.key("missing")]) == nil)
    #expect(at([.key("chips"), .index(2)]) == nil)
    #expect(at([.key("name"), .key("x")]) == nil)
    #expect(at([.index(0)]) == nil)
    #expect(locateJSON5KeyPath([.key("a")], in: "{a: 1 b: 2}") != nil)  // before the error: fine
    #expect(locateJSON5KeyPath([.key("b")], in: "{a: 1 b: 2}") == nil)
}

private struct Board: Decodable {
    struct Chip: Decodable {
        var kind: String
        var address: Int
    }
    var name: String
    var chips: [Chip]
}

@Test("DecodingError coding paths from JSONDecoder lead to the right line")
func decodingErrorsAreLocated() throws {
    let decoder = JSONDecoder()
    decoder.allowsJSON5 = true

    // typeMismatch: chips[1].address is a string.
    do {
        _ = try decoder.decode(Board.self, from: Data(keyPathDocument.utf8))
        Issue.record("expected a type mismatch")
    } catch DecodingError.typeMismatch(_, let context) {
        let path = context.codingPath.map(JSON5PathComponent.init)
        #expect(path == [.key("chips"), .index(1), .key("address")])
        let location = locateJSON5KeyPath(path, in: keyPathDocument)
        #expect(location?.line == 8)
        #expect(location?.column == 32)
    }

    // keyNotFound: the second chip has no address; the parent object is located.
    let missing = "{\n  name: 'x',\n  chips: [\n    {kind: 'a', address: 1},\n    {kind: 'b'},\n  ],\n}"
    do {
        _ = try decoder.decode(Board.self, from: Data(missing.utf8))
        Issue.record("expected a missing key")
    } catch DecodingError.keyNotFound(let key, let context) {
        #expect(key.stringValue == "address")
        let location = locateJSON5KeyPath(context.codingPath.map(JSON5PathComponent.init), in: missing)
        #expect(location?.line == 5)
        #expect(location?.column == 5)
    }
}

// MARK: - Describing a location

@Test("the offending line with a caret under the column")
func describeLocation() {
    #expect(describeJSON5Location(line: 3, column: 3, in: "{\n  x: 1\n  y: 2\n}") == "  y: 2\n  ^")
    #expect(describeJSON5Location(line: 2, column: 4, in: "{\n\tb 2\n}") == "\tb 2\n\t  ^")
    #expect(describeJSON5Location(line: 1, column: 10, in: "abc") == "abc\n   ^")
    #expect(describeJSON5Location(line: 1, column: 1, in: "") == "\n^")
    #expect(describeJSON5Location(line: 2, column: 2, in: "a\r\nbc\r\n") == "bc\n ^")
    #expect(describeJSON5Location(line: 2, column: 1, in: "{\n") == "\n^")
    #expect(describeJSON5Location(line: 1, column: 4, in: "é🙂 x") == "é🙂 x\n   ^")
    #expect(describeJSON5Location(line: 1, column: 2, in: "\u{FEFF}[x]") == "[x]\n ^")
    #expect(describeJSON5Location(line: 5, column: 1, in: "a\nb") == "")
    #expect(describeJSON5Location(line: 0, column: 1, in: "a") == "")

    let text = "{\n  address: 0x\n}"
    let error = findJSON5SyntaxError(in: text)
    #expect(error?.description == "2:14: expected a hexadecimal digit after '0x', found U+000A (line feed)")
    #expect(describeJSON5Location(line: 2, column: 14, in: text) == "  address: 0x\n             ^")
}
