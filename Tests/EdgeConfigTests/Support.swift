import Testing
import Foundation
@testable import EdgeConfig

/// Decodes `text` as `T` and returns the error, or nil when it loads.
func configError<T: Decodable>(_ type: T.Type, _ text: String, file: String = "t.json5") -> ConfigError? {
    do {
        _ = try ConfigLoader.decode(type, from: text, file: file)
        return nil
    } catch {
        return error
    }
}

/// Words that only a Swift programmer would write: none of them may reach a
/// user in a configuration error.
let swiftOnlyWords = ["Expected to decode", "Swift", "Dictionary<", "Array<", "CodingKeys", "The given data",
                      ".Type", "Optional(", "debugDescription", "DecodingError", "typeMismatch", "dataCorrupted",
                      "valueNotFound", "keyNotFound", "Index ", "nil", "UInt", "Int32", "Double", "codingPath"]

/// Records an issue for every Swift-only word in `message`.
func expectNoSwiftText(_ message: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for word in swiftOnlyWords where message.contains(word) {
        Issue.record("\(what): the message shows '\(word)': \(message)", sourceLocation: sourceLocation)
    }
}

/// The 1-based line of the first line of `text` that contains `marker`.
func lineOf(_ marker: String, in text: String) -> Int? {
    text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains(marker) }.map { $0 + 1 }
}
