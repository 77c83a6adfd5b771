import Testing
@testable import EdgeConfig
