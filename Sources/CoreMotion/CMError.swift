/// The error domain of every error Core Motion hands to a handler.
public let CMErrorDomain: String = "CMErrorDomain"

/// Core Motion's error codes, as the SDK imports the C enum: a struct with a
/// `rawValue`, and one global constant per code (`CMErrorNotEntitled`...).
/// An error's `code` in ``CMErrorDomain`` is `Int(rawValue)`.
public struct CMError: Equatable, Hashable, RawRepresentable, Sendable {
    public var rawValue: UInt32
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public init(rawValue: UInt32) { self.rawValue = rawValue }
}

public var CMErrorNULL: CMError { CMError(100) }
public var CMErrorDeviceRequiresMovement: CMError { CMError(101) }
public var CMErrorTrueNorthNotAvailable: CMError { CMError(102) }
public var CMErrorUnknown: CMError { CMError(103) }
public var CMErrorMotionActivityNotAvailable: CMError { CMError(104) }
public var CMErrorMotionActivityNotAuthorized: CMError { CMError(105) }
public var CMErrorMotionActivityNotEntitled: CMError { CMError(106) }
public var CMErrorInvalidParameter: CMError { CMError(107) }
public var CMErrorInvalidAction: CMError { CMError(108) }
public var CMErrorNotAvailable: CMError { CMError(109) }
public var CMErrorNotEntitled: CMError { CMError(110) }
public var CMErrorNotAuthorized: CMError { CMError(111) }
public var CMErrorNilData: CMError { CMError(112) }
public var CMErrorSize: CMError { CMError(113) }

// Apple's CMError has only `rawValue` and its two initialisers
// (developer.apple.com/documentation/coremotion/cmerror): the codes are the
// global constants above, and nothing else is added to Apple's type.

extension NSError {
    /// An error of ``CMErrorDomain`` whose description says what happened
    /// and what to do.
    static func coreMotion(_ code: CMError, _ description: String) -> NSError {
        NSError(domain: CMErrorDomain, code: Int(code.rawValue), userInfo: [NSLocalizedDescriptionKey: description])
    }
}

extension NSError {
    /// This error as Apple's pedometer and activity APIs give it: Apple
    /// reports motion-activity failures with their own codes
    /// (developer.apple.com/documentation/coremotion/cmerrormotionactivitynotauthorized):
    /// the agent's `fitness` entitlement not held (authorization `.denied`)
    /// is `CMErrorMotionActivityNotAuthorized` (105); no agent or no device
    /// feeding the stream is `CMErrorMotionActivityNotAvailable` (104).
    /// Other errors pass unchanged; the description stays.
    var asMotionActivityError: NSError {
        guard domain == CMErrorDomain else { return self }
        let code: CMError
        switch self.code {
        case Int(CMErrorNotEntitled.rawValue), Int(CMErrorNotAuthorized.rawValue): code = CMErrorMotionActivityNotAuthorized
        case Int(CMErrorNotAvailable.rawValue): code = CMErrorMotionActivityNotAvailable
        default: return self
        }
        return NSError(domain: CMErrorDomain, code: Int(code.rawValue), userInfo: userInfo)
    }
}
