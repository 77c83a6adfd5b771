import Testing
@testable import EdgeChips
