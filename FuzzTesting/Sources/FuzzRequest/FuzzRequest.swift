// Fuzz target (b): the client protocol's line parsers (EdgeProtocol).
//
// The input is what a client writes to the agent's socket. Split on '\n' as
// the service loop frames it (lines longer than the agent's 4096-byte limit
// are cut off there and never parsed); each non-blank line goes through
// `Request.decode(line:)` (and so `JSONValue.parse`), and the reply the
// agent would send is built with `MessageEncoder` as `ServiceLoop` does.
// Each line also goes through `ServerMessage.decode(line:)`, the client
// side's reader of the agent's lines.
//
// The same lines then go to a real agent service with the agent's fitness
// history attached (LiveService.swift).
//
// A thrown `DecodeError` is the right answer to bad input. Findings are
// traps, sanitizer reports, hangs, huge allocations, and these invariants:
//   * the reply is one line that `ServerMessage.decode` reads back, with the
//     request's id echoed exactly and, for an error, the same code;
//   * a decoded request, encoded with `Request.encode(into:)`, decodes to
//     the same request.
import EdgeProtocol
import FuzzSupport

/// ServiceConfiguration's default `maxLineBytes`.
private let maxLineBytes = 4096

/// One input (libFuzzer's LLVMFuzzerTestOneInput); returns 0, findings trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzBytes(data, size)
    var sendable: [ArraySlice<UInt8>] = []
    for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
    where line.count <= maxLineBytes {
        checkRequest(line)
        _ = try? ServerMessage.decode(line: line)
        sendable.append(line)
    }
    LiveService.shared.exchange(sendable)
    return 0
}

private func checkRequest(_ line: ArraySlice<UInt8>) {
    if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }   // the agent ignores blank lines
    var w = JSONWriter()
    let request: Request
    do {
        request = try Request.decode(line: line)
    } catch {
        MessageEncoder.error(error.code, message: error.message, stream: error.stream, id: error.id, into: &w)
        guard case .error(let code, _, _, _, let id) = readBack(w, "the error reply") else {
            invariantBroken("the error reply is not an error: \(text(w))")
        }
        if code != error.code { invariantBroken("the error reply's code is \(String(describing: code)), not \(error.code): \(text(w))") }
        if id != error.id { invariantBroken("the error reply echoes id \(String(describing: id)), not \(String(describing: error.id)): \(text(w))") }
        return
    }

    // The reply ServiceLoop.handle sends (with empty lists and fixed counters).
    switch request.kind {
    case .devices: MessageEncoder.devices([], id: request.id, into: &w)
    case .streams: MessageEncoder.streams([], id: request.id, into: &w)
    case .subscribe(let s, let ns): MessageEncoder.subscribed(s, intervalS: Double(ns) / 1e9, id: request.id, into: &w)
    case .unsubscribe(let s): MessageEncoder.unsubscribed(s, id: request.id, into: &w)
    case .poll(let s): MessageEncoder.error(.noSample, message: "no sample yet", stream: s, id: request.id, into: &w)
    case .stats: MessageEncoder.stats(queued: 0, delivered: 1, dropped: 2, queueCapacity: 256, id: request.id, into: &w)
    case .ping: MessageEncoder.pong(timestampNs: 123_456_789, id: request.id, into: &w)
    case .history(.pedometer, _, _):
        MessageEncoder.history(.pedometer(.init(steps: 1, distanceMeters: 0.5, floorsAscended: 0, floorsDescended: 0, activeSeconds: 2)),
                               id: request.id, into: &w)
    case .history(_, let from, _):
        MessageEncoder.history(.activities([.init(startS: Double(from) / 1e9, flags: .walking, confidence: .medium)], nextFromNs: from),
                               id: request.id, into: &w)
    case .record(let d):
        let start: Int64 = 1_733_000_000_000_000_000
        MessageEncoder.recording(RecordingWindow(uid: 1000, startUnixNs: start, endUnixNs: start + Int64(d * 1e9)),
                                 id: request.id, into: &w)
    case .recorded(let from, let to):
        MessageEncoder.recorded(RecordedPage(samples: [RecordedAccelerometerSample(identifier: 1, unixNs: from,
                                                                                   acceleration: .init(0, 0, -9.80665))],
                                             nextFromNs: from < to ? to : nil),
                                id: request.id, into: &w)
    }
    let echoed: RequestID?
    switch readBack(w, "the reply to \(request)") {
    case .devices(_, let id), .streams(_, let id), .subscribed(_, _, let id), .unsubscribed(_, let id),
         .error(_, _, _, _, let id), .stats(_, _, _, _, let id), .pong(_, let id), .history(_, let id),
         .recording(_, let id), .recorded(_, let id):
        echoed = id
    default:
        invariantBroken("the reply to \(request) is another kind of message: \(text(w))")
    }
    if echoed != request.id {
        invariantBroken("the reply echoes id \(String(describing: echoed)), not \(String(describing: request.id)): \(text(w))")
    }

    // The client library's encoder gives back the same request.
    var e = JSONWriter()
    request.encode(into: &e)
    let again: Request
    do {
        again = try Request.decode(line: e.bytes.dropLast())   // without the newline
    } catch {
        invariantBroken("\(request) encodes to \(text(e)), which does not decode: \(error.message)")
    }
    if again != request { invariantBroken("\(request) encodes to \(text(e)), which decodes to \(again)") }
}

/// The one line `w` holds, decoded by the client side.
private func readBack(_ w: JSONWriter, _ what: String) -> ServerMessage {
    let b = w.bytes
    guard b.last == UInt8(ascii: "\n"), b.dropLast().firstIndex(of: UInt8(ascii: "\n")) == nil else {
        invariantBroken("\(what) is not exactly one line: \(text(w))")
    }
    do {
        return try ServerMessage.decode(line: b.dropLast())
    } catch {
        invariantBroken("\(what) does not decode (\(error.reason)): \(text(w))")
    }
}

private func text(_ w: JSONWriter) -> String { String(decoding: w.bytes, as: UTF8.self) }
