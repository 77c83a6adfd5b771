import Testing
@testable import EdgeAgentCLI
