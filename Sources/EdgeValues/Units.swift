/// Standard acceleration of gravity, m/s² per g: 9.80665 exactly (3rd CGPM,
/// 1901; ISO 80000-3). Core Motion reports acceleration in g of this size.
/// The one definition for drivers, simulators, fusion and the CoreMotion
/// library.
public let standardGravity = 9.80665
