// MosquittoSession's set-up failures: each is a typed error, and the
// half-made session is freed once. Before, a failed set-up destroyed the
// libmosquitto client in the initializer and again in deinit (a class whose
// initializer throws once its stored properties are set runs deinit): a
// double free, so `edge-mqtt run` or `check` with a CA file the service user
// cannot read died of SIGABRT instead of saying which file.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import EdgeMQTT

@Suite struct SessionSetupTests {
    private func setupError(_ tls: TLSSection) -> MQTTError? {
        var s = BrokerSettings(host: "127.0.0.1", port: 8883, clientID: "setup-test")
        s.tls = tls
        do {
            _ = try MosquittoSession(s, will: (topic: "edge/test/status", payload: "offline", qos: 1, retain: true))
            return nil
        } catch {
            return error
        }
    }

    @Test func aCAFileThatCannotBeReadSaysWhichAndWhy() throws {
        // Several times: a double free shows at the latest when the freed
        // block is handed out again.
        for _ in 0..<20 {
            let error = try #require(setupError(TLSSection(caFile: "/nonexistent/edge-ca.pem")))
            #expect(error.kind == .tls(detail: "broker.tls.ca_file /nonexistent/edge-ca.pem: No such file or directory (errno 2)"))
            #expect(error.broker == "127.0.0.1:8883")
        }
    }

    @Test func aKeyFileThatCannotBeReadSaysWhichAndWhy() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("session-setup-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cert = dir + "/client.pem"
        try "not a certificate\n".write(toFile: cert, atomically: true, encoding: .utf8)
        for _ in 0..<20 {
            let error = try #require(setupError(TLSSection(certFile: cert, keyFile: dir + "/missing-key.pem")))
            #expect(error.kind == .tls(detail: "broker.tls.key_file \(dir)/missing-key.pem: No such file or directory (errno 2)"))
        }
    }
}
