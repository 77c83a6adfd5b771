import Testing
@testable import EdgeService
