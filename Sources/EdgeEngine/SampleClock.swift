/// Capture times for IMU samples read from the FIFO in batches.
///
/// The FIFO holds no timestamps: the driver stamps the newest record with
/// the time it read the count and steps back one nominal period per older
/// record, so every batch inherits the jitter of the loop's wake-up, and
/// the chip's clock error (PS-MPU-6000A-00 rev 3.4 §6.4: ±1 % with the PLL)
/// shows as a jump between batches. This follows the chip's sample clock
/// instead - a phase-locked loop on the read times: each batch continues
/// the previous one by `n` estimated periods, the estimate is pulled a
/// little toward the read, and the period a little toward the measured
/// rate (within ±3 % of nominal). Consecutive stamps are then always
/// between 0.9 and 1.1 periods apart - no sample lost to a repeated stamp
/// when the chip's clock drifts against the loop's, no doubled gap - and
/// the read jitter is divided several times. A jump of
/// more than two periods either way (samples lost to an overflow, a reset,
/// a stall) starts over from the read time.
///
/// Pure: no I/O, no clock; one value per IMU.
struct SampleClock: Sendable, Equatable {
    struct Settings: Sendable, Equatable {
        /// How much of the read's difference from the prediction moves the
        /// newest stamp (unitless).
        var followGain = 0.05
        /// How much of it moves the period estimate (unitless, per sample).
        var periodGain = 0.002
        /// The period stays within this fraction of nominal.
        var periodSpan = 0.03
    }
    var settings = Settings()
    /// Newest stamp given, ns (nil: start over).
    private(set) var newest: Double?
    /// Estimated sample period, ns.
    private(set) var period: Double = 0

    /// Forget the history (the IMU was reset, reconfigured, woken).
    mutating func restart() { newest = nil }

    /// Stamps for a batch of `n` samples whose newest the driver stamped at
    /// `readAt`: the newest sample's capture time and the period between
    /// samples, ns.
    mutating func stamp(count n: Int, readAt: UInt64, nominalPeriod: UInt64) -> (newest: UInt64, period: Double) {
        let nominal = Double(nominalPeriod), read = Double(readAt)
        if period == 0 || abs(period - nominal) > nominal * settings.periodSpan * 1.01 { period = nominal }
        guard n > 0 else { return (readAt, period) }
        guard let last = newest else {
            newest = read
            return (readAt, period)
        }
        let predicted = last + Double(n) * period
        let error = read - predicted
        if abs(error) > 2 * period {
            newest = read
            period = nominal
            return (readAt, period)
        }
        period += settings.periodGain * error / Double(n)
        period = min(max(period, nominal * (1 - settings.periodSpan)), nominal * (1 + settings.periodSpan))
        let next = predicted + settings.followGain * error
        newest = next
        return (UInt64(next.rounded()), period)
    }
}
