import EdgeProtocol

/// Whether a subscribed stream still delivers: the stall watchdog of the
/// agent's long-running clients, the MQTT bridge (docs/mqtt.md, "Stalls")
/// and the dive logger (docs/submersion.md). Pure: the caller passes CLOCK_MONOTONIC ns of
/// each sample's **arrival** (never its capture time: a hung agent sends
/// nothing, so there is no capture time to look at) and of each check.
///
/// A periodic stream whose last sample arrived more than
/// ``Settings/thresholdNs(intervalNs:)`` ago is *stalled*; its next sample
/// *resumes* it. Streams sent only on a change (pedometer, pedometerEvent,
/// activity: protocol.md, "Fitness streams") can be silent for hours and
/// are not watched. A stream is watched from its first sample on a
/// connection (before that it is `waiting`, and not `online` either).
public enum StreamLiveness {
    public struct Settings: Sendable, Equatable {
        /// Stalled after this many subscription intervals without a sample…
        public var intervals: UInt64 = 3
        /// …and never sooner than this, ns (2 s): the agent's delivery
        /// batching (20 ms by default), a device re-initialised by the
        /// agent, a loaded machine's scheduling are all well below it.
        public var minimumNs: UInt64 = 2_000_000_000
        /// The agent connection silent this long (no event at all) is
        /// probed with a `devices` request, ns (3 s): the way to tell a hung
        /// agent when only streams sent on change are subscribed.
        public var probeAfterNs: UInt64 = 3_000_000_000
        /// A probe unanswered this long: the agent is unresponsive, ns (3 s;
        /// the feed gives the request 2 s).
        public var answerWithinNs: UInt64 = 3_000_000_000
        public init(intervals: UInt64 = 3, minimumNs: UInt64 = 2_000_000_000,
                    probeAfterNs: UInt64 = 3_000_000_000, answerWithinNs: UInt64 = 3_000_000_000) {
            self.intervals = intervals; self.minimumNs = minimumNs
            self.probeAfterNs = probeAfterNs; self.answerWithinNs = answerWithinNs
        }

        /// The silence after which a stream subscribed every `intervalNs`
        /// is stalled: max(3 × interval, 2 s).
        public func thresholdNs(intervalNs: UInt64) -> UInt64 {
            let (product, overflow) = intervals.multipliedReportingOverflow(by: intervalNs)
            return max(overflow ? UInt64.max : product, minimumNs)
        }
    }

    public struct State: Sendable, Equatable {
        /// Arrival of the last sample on this connection; nil: none yet (not watched).
        public var lastArrivalNs: UInt64?
        /// Set while stalled: the arrival of the last sample before the silence.
        public var stalledSinceNs: UInt64?
        public init() {}
        public var isStalled: Bool { stalledSinceNs != nil }
    }

    public enum Change: Sendable, Equatable {
        /// No sample since `sinceNs` (the last arrival), for `silentNs`.
        case stalled(sinceNs: UInt64, silentNs: UInt64)
        /// A sample again after `silentNs` without one.
        case resumed(silentNs: UInt64)
    }

    /// A sample arrived at `nowNs`.
    public static func sample(_ s: inout State, nowNs: UInt64) -> Change? {
        defer { s.lastArrivalNs = nowNs }
        guard let since = s.stalledSinceNs else { return nil }
        s.stalledSinceNs = nil
        return .resumed(silentNs: nowNs &- min(nowNs, since))
    }

    /// A check at `nowNs`: `.stalled` once, when the silence first exceeds `thresholdNs`.
    public static func check(_ s: inout State, thresholdNs: UInt64, nowNs: UInt64) -> Change? {
        guard let last = s.lastArrivalNs, s.stalledSinceNs == nil, nowNs > last, nowNs - last > thresholdNs else { return nil }
        s.stalledSinceNs = last
        return .stalled(sinceNs: last, silentNs: nowNs - last)
    }

    /// The connection ended or began again: not watched until the next sample.
    public static func reset(_ s: inout State) { s = State() }

    /// The agent connection as a whole: when it last said anything, and
    /// whether a probe sent into its silence went unanswered.
    public struct Agent: Sendable, Equatable {
        /// Arrival of the last event on this connection; nil: not connected.
        public var lastHeardNs: UInt64?
        /// A probe is out since then (nil: none).
        public var probeSentNs: UInt64?
        /// A probe went unanswered: the agent is hung.
        public var unresponsive = false
        public init() {}
    }

    public enum AgentAction: Sendable, Equatable {
        /// Send a probe (a `devices` request) now.
        case probe
        /// The probe went unanswered: from now on unresponsive.
        case unresponsive(silentNs: UInt64)
    }

    /// Anything from the agent arrived: it is alive. Returns whether it had
    /// been unresponsive.
    public static func heard(_ a: inout Agent, nowNs: UInt64) -> Bool {
        let was = a.unresponsive
        a.lastHeardNs = nowNs
        a.probeSentNs = nil
        a.unresponsive = false
        return was
    }

    /// The agent side of a watchdog turn: a probe after `probeAfterNs` of
    /// silence (and again `probeAfterNs` after each verdict while
    /// unresponsive), and
    /// unresponsive when one goes unanswered for `answerWithinNs`.
    public static func check(_ a: inout Agent, _ settings: Settings, nowNs: UInt64) -> AgentAction? {
        guard let heard = a.lastHeardNs, nowNs > heard else { return nil }
        if let sent = a.probeSentNs {
            if !a.unresponsive, nowNs - min(nowNs, sent) > settings.answerWithinNs {
                a.unresponsive = true
                a.probeSentNs = nowNs   // the next probe `probeAfterNs` from now
                return .unresponsive(silentNs: nowNs - heard)
            }
            if a.unresponsive, nowNs - min(nowNs, sent) > settings.probeAfterNs {
                a.probeSentNs = nowNs
                return .probe
            }
            return nil
        }
        guard nowNs - heard > settings.probeAfterNs else { return nil }
        a.probeSentNs = nowNs
        return .probe
    }

    /// Whether silence means a stall: the streams sent on every change are
    /// never watched.
    public static func isPeriodic(_ stream: StreamName) -> Bool {
        switch stream {
        case .pedometer, .pedometerEvent, .activity, .accessoryConnection: return false
        default: return true
        }
    }
}
