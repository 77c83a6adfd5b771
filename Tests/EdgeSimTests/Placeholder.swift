import Testing
@testable import EdgeSim
