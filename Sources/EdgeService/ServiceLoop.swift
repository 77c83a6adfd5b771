#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeValues
import CEdgeShims
import EdgeProtocol

/// One subscription of one client: its interval and where its grid is
/// (``Decimator``, the one rule the agent and EdgeClient share).
struct Subscription {
    var decimator: Decimator
    var intervalNs: UInt64 { decimator.intervalNs }
    /// The shared-memory ring the client reads this stream from (nil: lines).
    var ring: StreamRing?

    init(intervalNs: UInt64, ring: StreamRing? = nil) {
        decimator = Decimator(intervalNs: intervalNs); self.ring = ring
    }

    mutating func isDue(_ ts: UInt64) -> Bool { decimator.admit(ts) }
}

/// A connected client; owned by the service thread.
final class Client {
    let fd: Int32
    let counters: ClientCounters
    let entitlements: Set<Entitlement>
    var input: [UInt8] = []
    var queue: MessageQueue
    /// Bytes being written: whole lines taken from the queue.
    var staging: [UInt8] = []
    var stagingOffset = 0
    var stagedLines = 0
    var subscriptions: [Subscription?] = Array(repeating: nil, count: StreamName.count)
    /// Rings whose descriptors go out with the next bytes written (SCM_RIGHTS),
    /// in the order of the replies that offer them.
    var ringsToSend: [StreamRing] = []
    var floodWindowStart: UInt64 = 0
    var floodCount = 0
    /// Stop reading and close once the staging buffer is written (or at the deadline).
    var closingDeadline: UInt64?
    /// The peer shut down its sending side (EOF): no more requests, but it
    /// may still read (`socat`, `nc -U` after stdin ends).
    var readClosed = false
    var dead = false
    /// Counted against the connection limits (false for a refused client,
    /// which is only told why before it is closed).
    var admitted = false
    /// Bytes its queue may hold (``ServiceConfiguration/maxQueuedBytesPerClient``).
    let queuedBytesLimit: Int
    /// Its queue is over ``queuedBytesLimit`` with lines that may not be
    /// shed (replies and events it has not read): it is to be disconnected.
    var overByteBound = false

    init(fd: Int32, counters: ClientCounters, entitlements: Set<Entitlement>, queueCapacity: Int,
         queuedBytesLimit: Int = 1 << 20) {
        self.fd = fd
        self.counters = counters
        self.entitlements = entitlements
        self.queue = MessageQueue(capacity: queueCapacity)
        self.queuedBytesLimit = queuedBytesLimit
        staging.reserveCapacity(Self.stagingCapacity)
    }

    /// The staging buffer's usual capacity; one that grew past
    /// ``maximumStagingCapacity`` (a long reply) is given back once written.
    static let stagingCapacity = 16384
    static let maximumStagingCapacity = 65536

    var hasOutput: Bool { stagingOffset < staging.count || queue.count > 0 }

    /// Queues a line; `sample` lines are the ones a full queue sheds
    /// (``MessageQueue``).
    func enqueue(_ line: Line, sample: Bool = false) {
        if queue.push(line, sample: sample) { counters.addDropped(1) }
        while queue.bytes > queuedBytesLimit {
            guard queue.shedOldestSample() else { overByteBound = true; break }
            counters.addDropped(1)
        }
        counters.queued.store(queue.count, ordering: .relaxed)
    }

    func updateSubscriptionMask() {
        var m = 0
        for (i, s) in subscriptions.enumerated() where s != nil { m |= 1 << i }
        counters.subscriptionMask.store(m, ordering: .relaxed)
    }
}

/// The service thread: accepts clients, answers requests, drains the sample
/// ring, encodes each due sample once and fans the bytes out, writes
/// non-blocking. Nothing here can stall the loop thread: the only shared
/// state it touches on the hot path is the SPSC ring.
final class ServiceLoop: @unchecked Sendable {
    let core: ServiceCore
    let listener: ListeningSocket
    var config: ServiceConfiguration { core.configuration }
    var clients: [Client] = []
    var pollFDs: [pollfd] = []
    var writer = JSONWriter(capacity: 4096)
    var pool = LinePool()
    var latest: [Sample?] = Array(repeating: nil, count: StreamName.count)
    /// The shared-memory rings by ``ringSlot(_:full:)``: one per stream, two
    /// for the streams whose content depends on the submersion entitlement.
    var rings: [StreamRing?] = Array(repeating: nil, count: StreamName.count * 2)
    /// Rings written since they last woke their readers.
    var ringsWritten = false
    /// Clients that read each stream as lines (the rest read rings), so a
    /// stream only ring readers want costs no pass over the clients.
    var lineReaders = [Int](repeating: 0, count: StreamName.count)

    /// Counts ``lineReaders`` again (after any subscription changed).
    func countLineReaders() {
        for i in lineReaders.indices { lineReaders[i] = 0 }
        for c in clients where !c.dead {
            for (i, sub) in c.subscriptions.enumerated() where sub != nil && sub!.ring == nil { lineReaders[i] += 1 }
        }
    }
    /// The surface and the water, from the submersion samples, so that no
    /// pressure-bearing stream reveals a depth past a client's cap.
    var depthDisclosure = DepthDisclosure()
    var readBuffer = [UInt8](repeating: 0, count: 65536)
    var nextClientID = 1
    /// Admitted clients: in all, per uid, and those holding no entitlement.
    var admittedCount = 0
    var admittedByUID: [UInt32: Int] = [:]
    var admittedUnentitled = 0
    /// Demand raises per uid in the current window (see ``ServiceConfiguration/demandRaiseLimit``).
    var demandRaises: [UInt32: (windowStart: UInt64, count: Int)] = [:]
    /// Monotonic ns until which the listener is not polled (0: not paused).
    var acceptPausedUntil: UInt64 = 0
    var demandDirty = false
    /// Long lines (history pages) were made since memory was last given back
    /// to the kernel with none held after; when it was last given back
    /// (monotonic ns).
    var freedLongLines = false
    var lastTrimNs: UInt64 = 0

    /// Samples handled between write passes, so a burst cannot overfill queues
    /// before the kernel takes bytes.
    let drainChunk = 64
    /// Staging refill threshold, bytes.
    let stagingTarget = 16384
    /// Connections accepted per poll cycle. The rest wait in the listen
    /// backlog for the next cycle, so a connect storm cannot keep the
    /// thread accepting while the sample ring fills and clients wait.
    let acceptBurst = 16

    init(core: ServiceCore, listener: ListeningSocket) {
        self.core = core
        self.listener = listener
    }

    /// Held while clients' state is touched: by the service thread while it
    /// handles what poll reported, by the loop thread while it delivers inline.
    /// It guards the count of inline deliveries (`Locked` holds no empty value).
    let lock = Locked<UInt64>(0)

    /// On the loop thread: deliver what was published, if the service thread
    /// is not busy. True when everything was written (no wake-up needed).
    func deliverInline() -> Bool {
        lock.withLockIfAvailable { inlineDeliveries -> Bool in
            inlineDeliveries &+= 1
            deliverEvents()
            drainSamples()
            return !clients.contains { !$0.dead && $0.hasOutput }
        } ?? false
    }

    // MARK: main loop

    func run() {
        while !core.stopRequested.load(ordering: .acquiring) {
            let timeout = lock.withLock { _ in preparePoll() }
            do {
                _ = try Posix.poll(&pollFDs, timeoutMs: timeout)
            } catch {
                // EINVAL/ENOMEM: nothing sane to do but retry after a pause.
                var ts = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                nanosleep(&ts, nil)
                continue
            }
            if core.stopRequested.load(ordering: .acquiring) { break }
            lock.withLock { _ in handlePolled() }
        }
        lock.withLock { _ in shutdown() }
    }

    /// The descriptors to poll (wake pipe, listener, clients) and the timeout, ms.
    func preparePoll() -> Int32 {
        pollFDs.removeAll(keepingCapacity: true)
        pollFDs.append(pollfd(fd: core.wakeReadFD, events: Int16(POLLIN), revents: 0))
        // While out of descriptors (EMFILE), stop polling the listener for
        // a moment instead of spinning on a connection we cannot accept;
        // before the owner opens the door, not at all.
        let accepting = core.acceptingClients.load(ordering: .acquiring) && edge_monotonic_ns() >= acceptPausedUntil
        let acceptEvents = accepting ? Int16(POLLIN) : 0
        pollFDs.append(pollfd(fd: listener.fd, events: acceptEvents, revents: 0))
        var anyClosing = false
        for c in clients {
            var ev = Int16(0)
            if c.closingDeadline != nil { anyClosing = true } else if !c.readClosed { ev |= Int16(POLLIN) }
            if c.hasOutput { ev |= Int16(POLLOUT) }
            pollFDs.append(pollfd(fd: c.fd, events: ev, revents: 0))
        }
        return anyClosing || acceptPausedUntil != 0 ? 50 : config.idlePollTimeoutMs
    }

    func handlePolled() {
            if pollFDs[0].revents != 0 { drainWakePipe() }
            deliverEvents()
            drainSamples()
            // (a listener polled for nothing, the door still closed, is not accepted from)
            if pollFDs[1].events != 0 && pollFDs[1].revents != 0 { acceptClients() }

            // Client I/O (pollFDs[2...] are the clients present before accepting).
            let now = edge_monotonic_ns()
            let polled = pollFDs.count - 2
            for i in 0..<polled {
                let c = clients[i]
                let re = Int32(pollFDs[i + 2].revents)
                if c.dead { continue }
                if re & Int32(POLLIN | POLLHUP | POLLERR) != 0, c.closingDeadline == nil, !c.readClosed {
                    readRequests(c, now: now)
                }
                // POLLHUP on a Unix stream socket: the peer closed both
                // directions; nothing more can be delivered. (A client we still
                // read from learns this through read() returning 0 first.)
                if re & Int32(POLLHUP | POLLERR) != 0, c.readClosed || c.closingDeadline != nil { c.dead = true }
                if re & Int32(POLLOUT) != 0 { flush(c) }
                if let deadline = c.closingDeadline, !c.dead, !c.hasOutput || now >= deadline {
                    finishClosing(c)
                }
            }
            removeDeadClients()
            if demandDirty { publishDemand() }
            releaseFreedMemory()
    }

    /// After long replies were built and let go, gives the freed pages back
    /// to the kernel (malloc keeps them otherwise: 20 clients that asked for
    /// a week of history and went away left 2.58 GB resident). At most once
    /// a second, on this thread only, never on the loop thread.
    func releaseFreedMemory() {
        guard freedLongLines else { return }
        let now = edge_monotonic_ns()
        guard now &- lastTrimNs >= 1_000_000_000 else { return }
        lastTrimNs = now
        // Once more after the last long line is gone.
        freedLongLines = clients.contains {
            $0.queue.bytes > Client.maximumStagingCapacity || $0.staging.capacity > Client.maximumStagingCapacity
        }
        _ = edge_release_free_memory()
    }

    /// Consumes the wake-up bytes, then re-arms the wake flag. In this order
    /// no wake-up is lost: a publish that finds the flag set has pushed its
    /// sample before our exchange (which synchronizes with its exchange), so
    /// the ring drain that follows sees it; a publish after the exchange
    /// finds the flag clear and writes a new byte.
    func drainWakePipe() {
        readBuffer.withUnsafeMutableBytes { buf in
            while let n = try? Posix.read(core.wakeReadFD, buf), n > 0 {}
        }
        _ = core.wakePending.exchange(false, ordering: .acquiringAndReleasing)
    }

    // MARK: samples

    func drainSamples() {
        while true {
            let n = core.ring.drain(limit: drainChunk) { sample in distribute(sample) }
            if n == 0 { break }
            for c in clients where !c.dead && c.hasOutput { flush(c) }
        }
        if ringsWritten {
            ringsWritten = false
            for r in rings { r?.signal() }
        }
    }

    func distribute(_ sample: Sample) {
        let idx = sample.stream.index
        latest[idx] = sample
        let shallowCap = DepthDisclosure.maximumDepth(full: false)
        if case .submersion(let s) = sample { depthDisclosure.update(s) }
        if rings[2 * idx] != nil || rings[2 * idx + 1] != nil { publishToRings(sample, index: idx) }
        // Nobody reads the stream as lines: no pass over the clients.
        guard lineReaders[idx] > 0 else { return }
        switch sample {
        case .submersion:
            distributeSplit(sample)
            return
        case .altitude(let a) where depthDisclosure.isBeyond(pressure: a.pressure, maximumDepth: shallowCap):
            distributeSplit(sample)
            return
        case .absoluteAltitude(let a) where depthDisclosure.isBeyond(altitude: a.altitude, maximumDepth: shallowCap):
            distributeSplit(sample)
            return
        default: break
        }
        var encoded: Line?
        let ts = sample.timestampNs
        for c in clients where !c.dead && c.closingDeadline == nil {
            guard c.subscriptions[idx] != nil, c.subscriptions[idx]!.ring == nil, c.subscriptions[idx]!.isDue(ts) else { continue }
            if encoded == nil { encoded = encode(sample) }
            c.enqueue(encoded!, sample: true)
        }
    }

    /// A sample whose content depends on the submersion entitlement (the
    /// submersion stream; an altitude stream's deeper than 6 m under water)
    /// to `submersion.full` holders and to everyone else, capped for each
    /// (``visible(_:full:)``): at most two encodings.
    func distributeSplit(_ sample: Sample) {
        let idx = sample.stream.index
        var fullLine: Line?, shallowLine: Line?
        let ts = sample.timestampNs
        for c in clients where !c.dead && c.closingDeadline == nil {
            guard c.subscriptions[idx] != nil, c.subscriptions[idx]!.ring == nil, c.subscriptions[idx]!.isDue(ts) else { continue }
            if c.entitlements.contains(.submersionFull) {
                if fullLine == nil { fullLine = encode(visible(sample, full: true)) }
                c.enqueue(fullLine!, sample: true)
            } else {
                if shallowLine == nil { shallowLine = encode(visible(sample, full: false)) }
                c.enqueue(shallowLine!, sample: true)
            }
        }
    }

    /// Writes the sample into the stream's rings, each as its readers may
    /// see it.
    /// `idx` is the sample's ``StreamName/index``. A stream whose content
    /// does not depend on the entitlement has only its full ring, written
    /// with the sample as it is (no copy through ``visible(_:full:)``).
    func publishToRings(_ sample: Sample, index idx: Int) {
        if let r = rings[2 * idx + 1] {
            if Self.dependsOnSubmersionEntitlement(index: idx) { r.publish(visible(sample, full: true)) } else { r.publish(sample) }
        }
        if let r = rings[2 * idx] { r.publish(visible(sample, full: false)) }
        ringsWritten = true
    }

    /// Whether what a client sees of `stream` depends on `submersion.full`.
    static func dependsOnSubmersionEntitlement(_ stream: StreamName) -> Bool {
        dependsOnSubmersionEntitlement(index: stream.index)
    }
    /// The same, by ``StreamName/index`` (the one list of such streams).
    @inline(__always) static func dependsOnSubmersionEntitlement(index: Int) -> Bool {
        index == StreamName.submersion.index || index == StreamName.altitude.index || index == StreamName.absoluteAltitude.index
    }

    /// The ring `c` reads `stream` from (made if none exists yet), or nil
    /// when the kernel will not make one: then the stream comes as lines.
    func ring(_ stream: StreamName, for c: Client) -> StreamRing? {
        let full = !Self.dependsOnSubmersionEntitlement(stream) || c.entitlements.contains(.submersionFull)
        let slot = 2 * stream.index + (full ? 1 : 0)
        if let r = rings[slot] { return r }
        switch StreamRing.make(stream: stream, full: full) {
        case .success(let r):
            rings[slot] = r
            return r
        case .failure(let e):
            // Served as lines; the statistics count it and keep why
            // (memfd_create, ftruncate or mmap: EMFILE, ENOMEM).
            core.ringFailures.wrappingAdd(1, ordering: .relaxed)
            core.shared.withLock { $0.lastRingFailure = e.description }
            return nil
        }
    }

    /// `c` no longer reads its subscription's ring; the ring goes when no
    /// client does.
    func releaseRing(_ subscription: Subscription?) {
        guard let r = subscription?.ring else { return }
        r.readers -= 1
        if r.readers <= 0 {
            let slot = 2 * r.stream.index + (r.full ? 1 : 0)
            if rings[slot] === r { rings[slot] = nil }
        }
    }

    /// A stream's sample as a client holding `submersion.full` (`full`) or
    /// not may see it: the submersion stream capped at 6 m or 40 m
    /// (``SubmersionSample/capped(shallow:)``), the altitude streams'
    /// pressure withheld beyond the same depths (``DepthDisclosure``).
    func visible(_ sample: Sample, full: Bool) -> Sample {
        let cap = DepthDisclosure.maximumDepth(full: full)
        switch sample {
        case .submersion(let m): return .submersion(m.capped(shallow: !full))
        case .altitude(let a): return .altitude(depthDisclosure.capped(a, maximumDepth: cap))
        case .absoluteAltitude(let a): return .absoluteAltitude(depthDisclosure.capped(a, maximumDepth: cap))
        default: return sample
        }
    }

    func encode(_ sample: Sample) -> Line {
        writer.reset()
        let before = writer.nonFiniteCount
        MessageEncoder.sample(sample, into: &writer)
        if writer.nonFiniteCount != before {
            core.nonFiniteCount.wrappingAdd(writer.nonFiniteCount - before, ordering: .relaxed)
        }
        core.encodedCount.wrappingAdd(1, ordering: .relaxed)
        return currentLine()
    }

    /// The writer's bytes in a pooled line (the writer keeps its buffer).
    func currentLine() -> Line {
        writer.bytes.withUnsafeBufferPointer { pool.line($0) }
    }

    func deliverEvents() {
        let events = core.shared.withLock { s -> [ConnectionEvent] in
            if s.pendingEvents.isEmpty { return [] }
            defer { s.pendingEvents.removeAll() }
            return s.pendingEvents
        }
        for e in events {
            writer.reset()
            MessageEncoder.connection(e, into: &writer)
            let line = currentLine()
            for c in clients where !c.dead && c.closingDeadline == nil { c.enqueue(line) }
        }
        if !events.isEmpty { for c in clients where !c.dead { flush(c) } }
    }

    // MARK: accepting

    func acceptClients() {
        acceptPausedUntil = 0
        var budget = acceptBurst
        while budget > 0 {
            let fd = accept(listener.fd, nil, nil)
            if fd < 0 {
                let e = errno
                if e == EINTR || e == ECONNABORTED { continue }
                if e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM {
                    acceptPausedUntil = edge_monotonic_ns() &+ 100_000_000
                }
                return // EAGAIN: all accepted
            }
            budget -= 1
            do { try Posix.setNonBlockingCloseOnExec(fd) } catch { Posix.close(fd); continue }
            if let size = config.socketSendBufferBytes {
                var v = Int32(clamping: size)
                _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, socklen_t(MemoryLayout<Int32>.size))
            }
            guard let (pid, uid, gid) = core.peerCredentials(fd) else { Posix.close(fd); continue }
            let groups = core.policy.hasGroupGrants ? SystemDatabase.groups(ofUID: uid) : []
            let identity = ClientIdentity(pid: pid, uid: uid, gid: gid, groups: groups)
            let entitlements = core.policy.entitlements(for: identity)
            let counters = ClientCounters(id: nextClientID, identity: identity, totals: core.totals)
            nextClientID += 1
            core.acceptedCount.wrappingAdd(1, ordering: .relaxed)
            let client = Client(fd: fd, counters: counters, entitlements: entitlements,
                                queueCapacity: config.queueCapacity, queuedBytesLimit: config.maxQueuedBytesPerClient)
            writer.reset()
            MessageEncoder.version(agentVersion: config.agentVersion, uid: uid, gid: gid,
                                   entitlements: entitlements.sorted(), maxLineBytes: config.maxLineBytes,
                                   queueCapacity: config.queueCapacity, frame: config.agentFrame,
                                   declinationDeg: config.agentDeclinationDeg,
                                   recorder: core.recorderSource.withLock { $0 != nil }, into: &writer)
            client.enqueue(currentLine())
            clients.append(client)
            // The version line is always the first line; a refusal goes out
            // in the same write, so a client that has read the version line
            // has the refusal too (EdgeClient checks for it at connect).
            if let (code, message) = refusal(uid: uid, entitled: !entitlements.isEmpty) {
                core.refusedCount.wrappingAdd(1, ordering: .relaxed)
                terminate(client, code, message, now: edge_monotonic_ns(), keepingQueued: true)
            } else {
                flush(client)
                admit(client)
            }
        }
    }

    /// Why a new connection of `uid` is refused, or nil to admit it.
    /// Connections holding no entitlement have their own small budget, so
    /// they can never take the slots entitled clients need; then the agent's
    /// total; then each uid's share (a uid at its share while the agent is
    /// full is told the agent is full); then the reserve: a uid that holds
    /// its guaranteed connections already may not take the last
    /// ``ServiceConfiguration/reservedClientSlots``, which are kept for
    /// other users.
    func refusal(uid: UInt32, entitled: Bool) -> (ErrorCode, String)? {
        let unentitledLimit = config.effectiveMaxUnentitledClients
        if !entitled && admittedUnentitled >= unentitledLimit {
            return (.tooManyUnentitledClients,
                    "uid \(uid) holds no entitlement, and the agent serves at most \(unentitledLimit) connections that hold none; grant it one in the configuration's clients list")
        }
        if admittedCount >= config.maxClients {
            return (.tooManyClients, "the agent serves at most \(config.maxClients) clients")
        }
        let held = admittedByUID[uid, default: 0]
        let perUID = config.effectiveMaxClientsPerUID
        if held >= perUID {
            return (.tooManyClientsForUID, "uid \(uid) already holds \(perUID) connections, the most one uid may")
        }
        let reserved = config.effectiveReservedClientSlots
        if held >= config.guaranteedClientsPerUID, config.maxClients - admittedCount <= reserved {
            return (.tooManyClientsForUID,
                    "uid \(uid) already holds \(held) connections, and the agent's last \(reserved) slots are kept for users holding fewer than \(config.guaranteedClientsPerUID)")
        }
        return nil
    }

    func admit(_ c: Client) {
        c.admitted = true
        admittedCount += 1
        admittedByUID[c.counters.identity.uid, default: 0] += 1
        if c.entitlements.isEmpty { admittedUnentitled += 1 }
        core.shared.withLock { $0.clients.append(c.counters) }
    }

    /// Frees the client's place under the connection limits.
    func release(_ c: Client) {
        guard c.admitted else { return }
        c.admitted = false
        admittedCount -= 1
        let uid = c.counters.identity.uid
        if let n = admittedByUID[uid], n > 1 { admittedByUID[uid] = n - 1 } else { admittedByUID[uid] = nil }
        if c.entitlements.isEmpty { admittedUnentitled -= 1 }
    }

    // MARK: requests

    func readRequests(_ c: Client, now: UInt64) {
        while !c.dead && c.closingDeadline == nil {
            let n: Int?
            do {
                n = try readBuffer.withUnsafeMutableBytes { buf throws(PosixError) in try Posix.read(c.fd, buf) }
            } catch {
                c.dead = true
                return
            }
            guard let n else { return }                 // drained
            if n == 0 { c.readClosed = true; return }  // peer done sending; it may still read
            var start = 0
            for i in 0..<n where readBuffer[i] == UInt8(ascii: "\n") {
                c.input.append(contentsOf: readBuffer[start..<i])
                start = i + 1
                if !lineComplete(c, now: now) { return }
            }
            c.input.append(contentsOf: readBuffer[start..<n])
            if c.input.count > config.maxLineBytes {
                terminate(c, .tooLarge, "request line longer than \(config.maxLineBytes) bytes", now: now)
                return
            }
        }
    }

    /// Handles `c.input` as one line; false when the client is being cut off.
    func lineComplete(_ c: Client, now: UInt64) -> Bool {
        defer { c.input.removeAll(keepingCapacity: true) }
        if c.input.last == UInt8(ascii: "\r") { c.input.removeLast() }
        if c.input.count > config.maxLineBytes {
            terminate(c, .tooLarge, "request line longer than \(config.maxLineBytes) bytes", now: now)
            return false
        }
        if now &- c.floodWindowStart >= config.floodWindowNs {
            c.floodWindowStart = now
            c.floodCount = 0
        }
        c.floodCount += 1
        if c.floodCount > config.floodLimit {
            terminate(c, .flood, "more than \(config.floodLimit) requests per second", now: now)
            return false
        }
        if c.input.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return true } // blank line: ignored
        // Samples published before this request was sent go out before its
        // reply (clients and tests may use a ping as a barrier).
        drainSamples()
        do {
            let request = try Request.decode(line: c.input)
            handle(request, from: c, now: now)
        } catch {
            reply(c) { w in MessageEncoder.error(error.code, message: error.message, stream: error.stream,
                                                 id: error.id, into: &w) }
        }
        // A reply may have cut the client off (``enforceByteBounds(_:)``):
        // then the rest of what it sent is not read.
        return !c.dead && c.closingDeadline == nil
    }

    func reply(_ c: Client, _ body: (inout JSONWriter) -> Void) {
        writer.reset()
        body(&writer)
        c.enqueue(currentLine())
        // A long reply grew the writer: give that memory back.
        if writer.bytes.count > LinePool.maximumKeptCapacity { freedLongLines = true }   // an unpooled line
        if writer.bytes.capacity > Self.maximumWriterCapacity { writer = JSONWriter(capacity: 4096) }
        enforceByteBounds(c)
    }

    /// The writer's capacity kept between lines (samples and short replies
    /// need far less; a history page may need more, once).
    static let maximumWriterCapacity = 65536

    /// Disconnects `c` (`notReading`) when it holds more unread replies and
    /// events than one client may, or more than its share while all queues
    /// together are over ``ServiceConfiguration/maxQueuedBytesTotal``.
    /// (Samples never count against it: a full queue sheds them.)
    func enforceByteBounds(_ c: Client) {
        guard !c.dead, c.closingDeadline == nil else { return }
        if c.overByteBound {
            terminate(c, .notReading,
                      "more than \(config.maxQueuedBytesPerClient) bytes of replies not read: read the answers to your requests",
                      now: edge_monotonic_ns())
            return
        }
        let share = config.maxQueuedBytesTotal / max(1, config.maxClients)
        guard c.queue.bytes > share else { return }
        var total = 0
        for other in clients where !other.dead { total += other.queue.bytes }
        if total > config.maxQueuedBytesTotal {
            terminate(c, .notReading,
                      "the agent's clients hold more than \(config.maxQueuedBytesTotal) bytes not read, and this one more than its share (\(share) bytes): read the answers to your requests",
                      now: edge_monotonic_ns())
        }
    }

    func handle(_ request: Request, from c: Client, now: UInt64) {
        let id = request.id
        switch request.kind {
        case .devices:
            let devices = core.shared.withLock { $0.devices }
            reply(c) { MessageEncoder.devices(devices, id: id, into: &$0) }
        case .streams:
            let demand = core.shared.withLock { $0.demandNs }
            let list = StreamName.allCases.map {
                MessageEncoder.StreamStatus(stream: $0, entitled: $0.isPermitted(by: c.entitlements),
                                            subscribed: c.subscriptions[$0.index] != nil,
                                            demandIntervalS: demand[$0.index].map { Double($0) / 1e9 })
            }
            reply(c) { MessageEncoder.streams(list, id: id, into: &$0) }
        case .subscribe(let stream, let intervalNs):
            guard stream.isPermitted(by: c.entitlements) else {
                notEntitled(c, stream, id: id); return
            }
            if raisesDemand(stream, intervalNs), !spendDemandRaise(c.counters.identity.uid, now: now) {
                let window = Double(config.demandRaiseWindowNs) / 1e9
                let msg = "uid \(c.counters.identity.uid) has started or sped up streams \(config.demandRaiseLimit) times in \(window) s, the most one uid may; \(stream.rawValue) is unchanged, try again later"
                reply(c) { MessageEncoder.error(.tooManyDemandChanges, message: msg, stream: stream, id: id, into: &$0) }
                flush(c)
                return
            }
            let previous = c.subscriptions[stream.index]
            var ring: StreamRing?
            if request.ringLayout == SampleRingFormat.layoutID, stream.carriesSamples {
                ring = self.ring(stream, for: c)
                ring?.readers += 1
            }
            releaseRing(previous)
            c.subscriptions[stream.index] = Subscription(intervalNs: intervalNs, ring: ring)
            c.updateSubscriptionMask()
            countLineReaders()
            publishDemand() // before the reply: a client that sees "subscribed" sees the new demand
            if let ring {
                // The descriptor goes out with the next bytes written, so it
                // reaches the client no later than this reply.
                c.ringsToSend.append(ring)
                reply(c) { MessageEncoder.subscribed(stream, intervalS: Double(intervalNs) / 1e9, ring: .current(start: ring.written), id: id, into: &$0) }
            } else {
                reply(c) { MessageEncoder.subscribed(stream, intervalS: Double(intervalNs) / 1e9, id: id, into: &$0) }
            }
        case .unsubscribe(let stream):
            if c.subscriptions[stream.index] != nil {
                releaseRing(c.subscriptions[stream.index])
                c.subscriptions[stream.index] = nil
                c.updateSubscriptionMask()
                countLineReaders()
                publishDemand()
            }
            reply(c) { MessageEncoder.unsubscribed(stream, id: id, into: &$0) }
        case .poll(let stream):
            guard stream.isPermitted(by: c.entitlements) else {
                notEntitled(c, stream, id: id); return
            }
            if let s = latest[stream.index].map({ visible($0, full: c.entitlements.contains(.submersionFull)) }) {
                reply(c) { MessageEncoder.sample(s, id: id, into: &$0) }
            } else {
                let why = stream.carriesSamples ? "no sample of \(stream.rawValue) yet"
                                                : "\(stream.rawValue) carries connection events, not samples"
                reply(c) { MessageEncoder.error(.noSample, message: why, stream: stream, id: id, into: &$0) }
            }
        case .stats:
            let k = c.counters
            reply(c) {
                MessageEncoder.stats(queued: c.queue.count, delivered: k.delivered.load(ordering: .relaxed),
                                     dropped: k.dropped.load(ordering: .relaxed),
                                     queueCapacity: c.queue.capacity, id: id, into: &$0)
            }
        case .ping:
            reply(c) { MessageEncoder.pong(timestampNs: now, id: id, into: &$0) }
        case .history(let stream, let from, let to):
            // The history is the fitness streams' past: the same entitlement.
            guard stream.isPermitted(by: c.entitlements) else {
                notEntitled(c, stream, id: id); return
            }
            guard let source = core.historySource.withLock({ $0 }) else {
                let msg = "this agent keeps no fitness history: set fitness.enabled and fitness.history in its configuration"
                reply(c) { MessageEncoder.error(.noHistory, message: msg, stream: stream, id: id, into: &$0) }
                break
            }
            switch source.history(stream, fromNs: from, toNs: to, maxRows: Request.maxHistoryRows) {
            case .success(let h): reply(c) { MessageEncoder.history(h, id: id, into: &$0) }
            case .failure(let e): reply(c) { MessageEncoder.error(.noHistory, message: e.message, stream: stream, id: id, into: &$0) }
            }
        case .record, .recorded:
            handleRecorder(request, from: c)
        }
        flush(c)
    }

    /// Whether subscribing to `stream` at `intervalNs` would change what the
    /// engine must run: nobody subscribes to it yet, or the interval is
    /// faster than the fastest one anyone has. (Slowing down or stopping is
    /// never refused: a client must always be able to ask for less.)
    func raisesDemand(_ stream: StreamName, _ intervalNs: UInt64) -> Bool {
        var fastest: UInt64?
        for other in clients where !other.dead {
            if let s = other.subscriptions[stream.index] { fastest = min(fastest ?? .max, s.intervalNs) }
        }
        guard let fastest else { return true }
        return intervalNs < fastest
    }

    /// Takes one demand raise from `uid`'s budget; false when it is spent.
    func spendDemandRaise(_ uid: UInt32, now: UInt64) -> Bool {
        var entry = demandRaises[uid] ?? (windowStart: now, count: 0)
        if now &- entry.windowStart >= config.demandRaiseWindowNs { entry = (windowStart: now, count: 0) }
        guard entry.count < config.demandRaiseLimit else { return false }
        entry.count += 1
        demandRaises[uid] = entry
        return true
    }

    func notEntitled(_ c: Client, _ stream: StreamName, id: RequestID?) {
        let msg = "\(stream.rawValue) needs the \(stream.entitlementDescription) entitlement, which uid \(c.counters.identity.uid) does not hold"
        reply(c) { MessageEncoder.error(.notEntitled, message: msg, stream: stream, id: id, into: &$0) }
        flush(c)
    }

    // MARK: writing

    /// Writes as much as the socket takes; never blocks.
    func flush(_ c: Client) {
        while !c.dead {
            if c.stagingOffset == c.staging.count {
                if c.stagedLines > 0 {
                    c.counters.addDelivered(c.stagedLines)
                    c.stagedLines = 0
                }
                if c.staging.capacity > Client.maximumStagingCapacity {
                    c.staging = []
                    c.staging.reserveCapacity(Client.stagingCapacity)
                } else {
                    c.staging.removeAll(keepingCapacity: true)
                }
                c.stagingOffset = 0
                while c.staging.count < stagingTarget, let line = c.queue.popFirst() {
                    c.staging.append(contentsOf: line.bytes)
                    c.stagedLines += 1
                }
                c.counters.queued.store(c.queue.count, ordering: .relaxed)
                if c.staging.isEmpty { return }
            }
            let written: Int?
            do {
                if c.ringsToSend.isEmpty {
                    written = try c.staging.withUnsafeBytes { all throws(PosixError) in
                        try Posix.send(c.fd, UnsafeRawBufferPointer(rebasing: all[c.stagingOffset...]))
                    }
                } else {
                    let fds = c.ringsToSend.prefix(16).map(\.fd)
                    written = try c.staging.withUnsafeBytes { all throws(PosixError) in
                        try Posix.send(c.fd, UnsafeRawBufferPointer(rebasing: all[c.stagingOffset...]), passing: fds)
                    }
                    if written != nil { c.ringsToSend.removeFirst(fds.count) }
                }
            } catch {
                c.dead = true // EPIPE / ECONNRESET: the client went away
                return
            }
            guard let written else { return } // socket full: POLLOUT will call again
            c.stagingOffset += written
        }
    }

    /// Sends a final error and closes the connection (after the line is
    /// written, or at a short deadline if the client does not read).
    func terminate(_ c: Client, _ code: ErrorCode, _ message: String, now: UInt64, keepingQueued: Bool = false) {
        if !keepingQueued {
            let discarded = c.queue.removeAll()
            if discarded > 0 { c.counters.addDropped(discarded) }
        }
        c.overByteBound = false
        reply(c) { MessageEncoder.error(code, message: message, into: &$0) }
        c.closingDeadline = now &+ 1_000_000_000
        if c.subscriptions.contains(where: { $0 != nil }) {
            for i in c.subscriptions.indices { releaseRing(c.subscriptions[i]); c.subscriptions[i] = nil }
            c.updateSubscriptionMask()
            countLineReaders()
            demandDirty = true
        }
        c.ringsToSend.removeAll()
        flush(c)
        // Written already (the usual case): close now rather than on a later
        // poll cycle, so a stream of refused connections holds no descriptors
        // and no slot while it waits.
        if !c.dead && !c.hasOutput { finishClosing(c) }
    }

    func finishClosing(_ c: Client) {
        // Read what the client already sent, so closing does not reset the
        // connection before it has read our last line.
        readBuffer.withUnsafeMutableBytes { buf in
            var budget = 16
            while budget > 0, let n = try? Posix.read(c.fd, buf), n > 0 { budget -= 1 }
        }
        _ = Glibc.shutdown(c.fd, Int32(SHUT_RDWR))
        c.dead = true
    }

    func removeDeadClients() {
        guard clients.contains(where: { $0.dead }) else { return }
        var removedIDs: [Int] = []
        clients.removeAll { c in
            guard c.dead else { return false }
            if c.subscriptions.contains(where: { $0 != nil }) { demandDirty = true }
            for sub in c.subscriptions { releaseRing(sub) }
            c.ringsToSend.removeAll()
            release(c)
            Posix.close(c.fd)
            removedIDs.append(c.counters.id)
            return true
        }
        core.shared.withLock { s in s.clients.removeAll { removedIDs.contains($0.id) } }
        countLineReaders()
    }

    // MARK: demand

    func publishDemand() {
        demandDirty = false
        var demand: [UInt64?] = Array(repeating: nil, count: StreamName.count)
        for c in clients where !c.dead {
            for (i, s) in c.subscriptions.enumerated() {
                guard let s else { continue }
                demand[i] = min(demand[i] ?? .max, s.intervalNs)
            }
        }
        let callback = core.shared.withLock { s -> (@Sendable ([StreamName: Double]) -> Void)?? in
            guard s.demandNs != demand else { return nil }
            s.demandNs = demand
            return .some(s.onDemandChange)
        }
        guard let callback else { return }
        core.demandGeneration.wrappingAdd(1, ordering: .releasing)
        callback?(ServiceCore.demandDictionary(demand))
    }

    // MARK: shutdown

    func shutdown() {
        let reason = core.shared.withLock { $0.stopReason }
        // What the loop published before it stopped still goes out (within
        // the grace period), then the shutdown line, last.
        drainWakePipe()
        deliverEvents()
        drainSamples()
        // A server that never opened its door (an agent that failed to
        // start) accepts what waits in its backlog now, so those clients
        // read a version line and why it stops, not a reset.
        if !core.acceptingClients.load(ordering: .acquiring) {
            for _ in 0...(Int(ListeningSocket.backlog) / acceptBurst) { acceptClients() }
        }
        writer.reset()
        MessageEncoder.shutdown(reason: reason, into: &writer)
        let line = currentLine()
        for c in clients where !c.dead {
            c.enqueue(line)
            flush(c)
        }
        let deadline = edge_monotonic_ns() &+ config.shutdownGraceNs
        while true {
            let pending = clients.filter { !$0.dead && $0.hasOutput }
            let now = edge_monotonic_ns()
            if pending.isEmpty || now >= deadline { break }
            pollFDs = pending.map { pollfd(fd: $0.fd, events: Int16(POLLOUT), revents: 0) }
            let waitMs = Int32(max(1, (deadline - now) / 1_000_000))
            _ = try? Posix.poll(&pollFDs, timeoutMs: waitMs)
            for c in pending { flush(c) }
        }
        for c in clients {
            if !c.dead { finishClosing(c) }
            Posix.close(c.fd)
        }
        clients.removeAll()
        // Readers see their rings closed (and then the socket's end).
        for i in rings.indices { rings[i] = nil }
        core.shared.withLock { $0.clients.removeAll() }
        listener.closeAndUnlink()
    }
}
