import CMosquitto
#if canImport(Glibc)
import Glibc
#endif

/// A libmosquitto return code (`enum mosq_err_t`) as an Int32, the type
/// its functions return.
@inline(__always) func code(_ e: mosq_err_t) -> Int32 { Int32(truncatingIfNeeded: e.rawValue) }

/// What went wrong between the bridge and the broker, with what to do.
/// Never carries the password.
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A libmosquitto set-up call failed (`call` and its return code).
        case setup(call: String, rc: Int32)
        /// The TCP connection could not be made (errno, DNS), or broke.
        case connect(rc: Int32, errno: Int32)
        /// TLS failed: the broker's certificate, the CA file, the client certificate.
        case tls(detail: String)
        /// The broker answered CONNACK with a refusal: `reason` is the MQTT 5
        /// reason code or the MQTT 3.1.1 return code.
        case refused(reason: Int32, protocolVersion: MQTTProtocolVersion)
        /// No CONNACK within the connect timeout.
        case timedOut(seconds: Double)
        /// The connection ended; rc is libmosquitto's (keepalive, lost).
        case lost(rc: Int32)
    }
    public var kind: Kind
    /// `host:port`.
    public var broker: String

    public init(_ kind: Kind, broker: String) { self.kind = kind; self.broker = broker }

    /// Whether the broker refused our credentials or our right to connect
    /// (retrying without a configuration change will not help).
    public var isAuthorization: Bool {
        if case .refused(let r, let v) = kind {
            return v == .v5 ? (r == 0x86 || r == 0x87 || r == 0x8A) : (r == 4 || r == 5)
        }
        return false
    }

    public var description: String {
        switch kind {
        case .setup(let call, let rc):
            return "\(call) failed: \(String(cString: mosquitto_strerror(rc))) (libmosquitto \(rc))"
        case .connect(let rc, let e):
            var s = "cannot connect to the broker at \(broker): "
            if rc == code(MOSQ_ERR_ERRNO) && e != 0 {
                s += "\(String(cString: strerror(e))) (errno \(e))"
            } else {
                s += String(cString: mosquitto_strerror(rc))
            }
            if e == ECONNREFUSED { s += "; is the broker running, and listening on this port? (broker.host, broker.port)" }
            else if rc == code(MOSQ_ERR_EAI) || rc == code(MOSQ_ERR_LOOKUP) { s += "; check broker.host" }
            return s
        case .tls(let detail):
            return "TLS with the broker at \(broker) failed: \(detail); check broker.tls.ca_file (the CA that signed the broker's certificate) and that broker.host is a name in that certificate"
        case .refused(let r, let v):
            let text: String
            if v == .v5 {
                text = String(cString: mosquitto_reason_string(r)) + " (MQTT 5 reason code 0x\(String(r, radix: 16)))"
            } else {
                text = String(cString: mosquitto_connack_string(r)) + " (MQTT 3.1.1 CONNACK code \(r))"
            }
            var advice = ""
            if isAuthorization {
                advice = "; check broker.username and the password in broker.password_file, and that the broker grants this user"
            } else if (v == .v5 && r == 0x84) || (v == .v311 && r == 1) {
                advice = "; this broker does not speak MQTT \(v.rawValue): set broker.protocol to \(v == .v5 ? "\"3.1.1\"" : "\"5\"")"
            } else if (v == .v5 && r == 0x85) || (v == .v311 && r == 2) {
                advice = "; set broker.client_id to one the broker accepts"
            }
            return "the broker at \(broker) refused the connection: \(text)\(advice)"
        case .timedOut(let s):
            return "the broker at \(broker) did not accept the connection within \(s) s (no CONNACK); is it a MQTT broker, and is TLS (broker.tls) set as the port expects?"
        case .lost(let rc):
            if rc == code(MOSQ_ERR_KEEPALIVE) {
                return "the broker at \(broker) stopped answering (no reply to keepalive pings)"
            }
            return "the connection to the broker at \(broker) was lost: \(String(cString: mosquitto_strerror(rc)))"
        }
    }
}
