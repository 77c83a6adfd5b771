// The `CoreMotion` module: Apple's Core Motion API for apps on Linux, backed
// by the edge-agent daemon (or, when none answers, an agent inside the
// process). Names, signatures, units and sign conventions are Apple's
// (iOS 17 / watchOS 10 SDK); where Apple does not say, the behaviour is
// chosen and documented in CoreMotion.docc ("Behaviour where Apple is
// silent").
//
// Apple's module re-exports Foundation: a file that imports only CoreMotion
// uses OperationQueue, TimeInterval, NSObject and NSNumber.
@_exported import Foundation
