/// Collects magnetometer samples while the board turns, measures how much of
/// the sphere of directions they cover, and fits a ``MagnetometerCalibration``
/// (the ellipsoid fit in `EllipsoidFit.swift`) once the coverage is enough.
///
/// Coverage: each sample's direction from the current centre estimate (the
/// mid-range of the per-axis minima and maxima) falls into the nearest of 26
/// direction bins — the faces, edges and corners of a cube: ±X, ±X±Y, ±X±Y±Z
/// and so on. `coverage` is the fraction of bins seen. When the centre moves
/// by more than a tenth of the radius (early on, while the extremes still
/// grow) every kept sample is binned again. Nothing counts until the
/// samples span `minimumRadius`, and a sample closer to the centre than half
/// the radius has no meaningful direction and counts for no bin.
///
/// Samples closer than `minimumSpacing` to the last kept one are dropped, so
/// holding still does not flood the fit with one orientation.
///
/// Pure: no I/O, no clock. Keeps the samples it fits (reserved up to
/// `maximumSamples` at init; a calibration tool, not the real-time loop).
public struct MagnetometerCalibrator: Sendable {
    public struct Settings: Equatable, Sendable {
        /// Fraction of the 26 direction bins needed (0.9: 24 of 26).
        public var requiredCoverage: Double
        /// Fewest kept samples for a fit.
        public var minimumSamples: Int
        /// Samples kept at most (later ones are dropped).
        public var maximumSamples: Int
        /// A sample within this distance (µT) of the last kept one is dropped.
        public var minimumSpacing: Double
        /// Directions count only once the samples span at least this
        /// half-range on some axis, µT (the Earth's field is 25–65 µT: less
        /// means the board has hardly turned and the centre is a guess).
        public var minimumRadius: Double

        public init(requiredCoverage: Double = 0.9, minimumSamples: Int = 100, maximumSamples: Int = 20_000,
                    minimumSpacing: Double = 0.5, minimumRadius: Double = 10) {
            self.requiredCoverage = requiredCoverage; self.minimumSamples = minimumSamples
            self.maximumSamples = maximumSamples; self.minimumSpacing = minimumSpacing
            self.minimumRadius = minimumRadius
        }
    }

    public struct State: Equatable, Sendable {
        public var samples: [Vector3] = []
        public var minimum = Vector3(repeating: .infinity)
        public var maximum = Vector3(repeating: -.infinity)
        /// Bit k set: direction bin k seen (relative to `binCentre`).
        public var bins: UInt32 = 0
        public var binCentre = Vector3.zero
        public init() {}
    }

    /// The 26 bin directions (unit vectors).
    public static let binDirections: [Vector3] = {
        var d: [Vector3] = []
        for x in -1...1 { for y in -1...1 { for z in -1...1 where x != 0 || y != 0 || z != 0 {
            d.append(Vector3(Double(x), Double(y), Double(z)).normalized)
        } } }
        return d
    }()

    public let settings: Settings
    public var state: State

    public init(settings: Settings = Settings(), state: State = State()) {
        self.settings = settings; self.state = state
        if self.state.samples.capacity < settings.maximumSamples { self.state.samples.reserveCapacity(settings.maximumSamples) }
    }

    /// One raw field sample, µT (chip frame).
    public mutating func update(field: Vector3) {
        guard field.x.isFinite, field.y.isFinite, field.z.isFinite else { return }
        if let last = state.samples.last, (field - last).norm < settings.minimumSpacing { return }
        guard state.samples.count < settings.maximumSamples else { return }
        state.samples.append(field)
        state.minimum = state.minimum.replacing(with: field, where: field .< state.minimum)
        state.maximum = state.maximum.replacing(with: field, where: field .> state.maximum)
        let centre = self.centre, r = radius
        guard r >= settings.minimumRadius else { state.bins = 0; return }
        if state.bins == 0 || (centre - state.binCentre).norm > 0.1 * r {
            state.binCentre = centre
            state.bins = 0
            for s in state.samples { state.bins |= Self.binMask(s - centre, radius: r) }
        } else {
            state.bins |= Self.binMask(field - state.binCentre, radius: r)
        }
    }

    /// Mid-range of the samples, µT: the hard-iron estimate before the fit.
    public var centre: Vector3 {
        state.samples.isEmpty ? .zero : (state.minimum + state.maximum) / 2
    }
    /// Half the largest per-axis range, µT (the field strength estimate before the fit).
    public var radius: Double {
        state.samples.isEmpty ? 0 : ((state.maximum - state.minimum) / 2).maxComponent
    }

    /// The bin a direction falls in (its bit); none for a sample within
    /// half the radius of the centre (its direction is not meaningful).
    static func binMask(_ d: Vector3, radius: Double) -> UInt32 {
        guard d.norm > 0.5 * radius, d.norm > 0 else { return 0 }
        var best = 0, bestDot = -Double.infinity
        for (k, b) in binDirections.enumerated() {
            let p = b.dot(d)
            if p > bestDot { bestDot = p; best = k }
        }
        return 1 << UInt32(best)
    }

    /// Direction bins seen, 0…26.
    public var binsSeen: Int { state.bins.nonzeroBitCount }
    /// Fraction of the 26 direction bins seen, 0…1.
    public var coverage: Double { Double(binsSeen) / 26 }
    /// Directions not yet seen (unit vectors, chip frame): where the field
    /// has not yet pointed, relative to the chip.
    public var missingDirections: [Vector3] {
        Self.binDirections.enumerated().filter { state.bins & (1 << UInt32($0.offset)) == 0 }.map(\.element)
    }
    /// 0…1 towards `requiredCoverage` (what a progress bar shows).
    public var progress: Double { min(1, coverage / settings.requiredCoverage) }
    public var isComplete: Bool {
        coverage >= settings.requiredCoverage - 1e-9 && state.samples.count >= settings.minimumSamples
    }

    /// The fit, or why there is none yet.
    public func result() throws(MagnetometerCalibrationError) -> MagnetometerCalibration {
        guard coverage >= settings.requiredCoverage - 1e-9 else {
            throw .notEnoughCoverage(binsSeen: binsSeen, needed: Int((settings.requiredCoverage * 26).rounded(.up)))
        }
        guard state.samples.count >= settings.minimumSamples else {
            throw .fit(.tooFewSamples(got: state.samples.count, needed: settings.minimumSamples))
        }
        do {
            return try MagnetometerCalibration.fit(state.samples)
        } catch {
            throw .fit(error)
        }
    }
}

/// Why a magnetometer calibration was refused.
public enum MagnetometerCalibrationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The field has not pointed in enough directions relative to the chip.
    case notEnoughCoverage(binsSeen: Int, needed: Int)
    /// The ellipsoid fit failed.
    case fit(EllipsoidFitError)

    public var description: String {
        switch self {
        case let .notEnoughCoverage(seen, needed):
            "magnetometer calibration: only \(seen) of 26 directions seen, need \(needed) "
                + "(turn the board slowly through all orientations, upside down too)"
        case .fit(let e): "magnetometer calibration: \(e)"
        }
    }
}

extension MagnetometerCalibration {
    /// Good: the calibrated samples lie on a sphere within 2 % RMS and the
    /// field is the Earth's (25–65 µT); a strong soft-iron correction
    /// (axis ratio beyond 1.3) or a larger residual means steel or a magnet
    /// close to the sensor, or turning too fast.
    public var verdict: CalibrationVerdict {
        var v = CalibrationVerdict()
        if residual > 0.05 {
            v.note(.poor, "the calibrated field varies by \(decimals(residual * 100, 1)) % RMS: a magnet or steel nearby, or turned too fast")
        } else if residual > 0.02 {
            v.note(.acceptable, "the calibrated field varies by \(decimals(residual * 100, 1)) % RMS")
        }
        if fieldStrength > 0, !(25...65).contains(fieldStrength) {
            v.note(.acceptable, "field strength \(decimals(fieldStrength, 1)) µT is not the Earth's (25–65 µT): steel or a magnet nearby?")
        }
        let e = symmetricEigen(softIron).values
        let ratio = e.max() / max(e.min(), 1e-12)
        if ratio > 1.3 {
            v.note(.acceptable, "strong soft-iron correction (axis ratio \(decimals(ratio, 2))): steel close to the sensor?")
        }
        return v
    }
}
