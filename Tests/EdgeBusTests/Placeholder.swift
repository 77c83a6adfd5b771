import Testing
@testable import EdgeBus
