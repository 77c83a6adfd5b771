import EdgeBus

extension HMC5883LConfiguration: MagnetometerSettings {
    public var outputRateHz: Double { outputRate.hertz }
    public func idle() -> HMC5883LConfiguration { var c = self; c.mode = .idle; return c }
    public var summary: String {
        "at \(plainNumber(outputRate.hertz)) Hz, ±\(plainNumber(gain.rangeGauss)) G, \(averaging.samples)-sample averaging"
    }
}

extension HMC5883L: MagnetometerDriver {
    public static var chipKind: ChipKind { .hmc5883l }
    @inlinable
    public mutating func readField() throws(DriverError) -> MagneticFieldReading { try read() }
}
