import Testing
@testable import EdgeFusion
