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

// The SDK has only the global constants; guides and issue 9 write
// `CMError.notEntitled` too, so the members exist as well (the same values).
extension CMError {
    public static var notEntitled: CMError { CMErrorNotEntitled }
    public static var notAuthorized: CMError { CMErrorNotAuthorized }
    public static var notAvailable: CMError { CMErrorNotAvailable }
    public static var trueNorthNotAvailable: CMError { CMErrorTrueNorthNotAvailable }
    public static var motionActivityNotAuthorized: CMError { CMErrorMotionActivityNotAuthorized }
    public static var motionActivityNotAvailable: CMError { CMErrorMotionActivityNotAvailable }
    public static var motionActivityNotEntitled: CMError { CMErrorMotionActivityNotEntitled }
    public static var deviceRequiresMovement: CMError { CMErrorDeviceRequiresMovement }
    public static var invalidParameter: CMError { CMErrorInvalidParameter }
    public static var invalidAction: CMError { CMErrorInvalidAction }
    public static var unknown: CMError { CMErrorUnknown }
    public static var nilData: CMError { CMErrorNilData }
    public static var size: CMError { CMErrorSize }
}

extension NSError {
    /// An error of ``CMErrorDomain`` whose description says what happened
    /// and what to do.
    static func coreMotion(_ code: CMError, _ description: String) -> NSError {
        NSError(domain: CMErrorDomain, code: Int(code.rawValue), userInfo: [NSLocalizedDescriptionKey: description])
    }
}
