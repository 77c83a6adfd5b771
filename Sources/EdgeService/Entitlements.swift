#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol

/// One grant of the configuration's `clients:` section: exactly one subject
/// (user name, group name, uid or gid) and the entitlements it receives.
///
/// ```json5
/// clients: [
///   { user: "pi", entitlements: ["motion", "altitude"] },
///   { group: "divers", entitlements: ["submersion.full"] },
///   { uid: 1001, entitlements: ["motion"] },
/// ]
/// ```
public struct EntitlementGrant: Codable, Sendable, Hashable {
    public var user: String?
    public var group: String?
    public var uid: UInt32?
    public var gid: UInt32?
    public var entitlements: [Entitlement]

    public init(user: String? = nil, group: String? = nil, uid: UInt32? = nil, gid: UInt32? = nil,
                entitlements: [Entitlement]) {
        self.user = user; self.group = group; self.uid = uid; self.gid = gid
        self.entitlements = entitlements
    }
}

/// Who a client is: its peer credentials (SO_PEERCRED) and the supplementary
/// groups of its uid's user, looked up once when it connects.
public struct ClientIdentity: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    /// Primary gid of the connecting process.
    public var gid: UInt32
    /// Supplementary groups of the uid's user (from the group database).
    public var groups: [UInt32]
    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid; self.uid = uid; self.gid = gid; self.groups = groups
    }
}

/// The entitlement policy: numeric grants per uid and per gid. A client holds
/// the union of the grants of its uid, its primary gid and its user's
/// supplementary groups. Nobody holds anything not granted — not even root.
public struct EntitlementPolicy: Sendable, Hashable {
    public var byUID: [UInt32: Set<Entitlement>]
    public var byGID: [UInt32: Set<Entitlement>]

    public init(byUID: [UInt32: Set<Entitlement>] = [:], byGID: [UInt32: Set<Entitlement>] = [:]) {
        self.byUID = byUID; self.byGID = byGID
    }

    /// The built-in default: the user running the agent gets motion and
    /// altitude, nobody else anything.
    public static func defaultPolicy(agentUID: UInt32 = getuid()) -> EntitlementPolicy {
        EntitlementPolicy(byUID: [agentUID: [.motion, .altitude]])
    }

    /// Resolves configured grants; user and group names through the system
    /// databases (getpwnam_r / getgrnam_r). Throws on an unknown name, so a
    /// typo in the configuration fails at start-up instead of silently
    /// denying data.
    public static func resolving(_ grants: [EntitlementGrant]) throws(ServiceError) -> EntitlementPolicy {
        var policy = EntitlementPolicy()
        for g in grants {
            let subjects = [g.user != nil, g.group != nil, g.uid != nil, g.gid != nil].filter { $0 }.count
            guard subjects == 1 else {
                throw .invalidGrant("each grant names exactly one of user, group, uid, gid (got \(subjects))")
            }
            let set = Set(g.entitlements)
            if let u = g.user {
                guard let uid = SystemDatabase.uid(named: u) else { throw .unknownUser(u) }
                policy.byUID[uid, default: []].formUnion(set)
            } else if let n = g.group {
                guard let gid = SystemDatabase.gid(named: n) else { throw .unknownGroup(n) }
                policy.byGID[gid, default: []].formUnion(set)
            } else if let uid = g.uid {
                policy.byUID[uid, default: []].formUnion(set)
            } else if let gid = g.gid {
                policy.byGID[gid, default: []].formUnion(set)
            }
        }
        return policy
    }

    /// Whether any grant is per group (then supplementary groups matter).
    public var hasGroupGrants: Bool { !byGID.isEmpty }

    /// Entitlements held by a client.
    public func entitlements(for id: ClientIdentity) -> Set<Entitlement> {
        var result = byUID[id.uid] ?? []
        if let s = byGID[id.gid] { result.formUnion(s) }
        for g in id.groups { if let s = byGID[g] { result.formUnion(s) } }
        return result
    }
}

/// Lookups in the passwd and group databases (reentrant variants).
enum SystemDatabase {
    static func uid(named name: String) -> UInt32? {
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        let r = getpwnam_r(name, &pw, &buffer, buffer.count, &result)
        guard r == 0, result != nil else { return nil }
        return pw.pw_uid
    }

    /// A group name, or a decimal gid.
    static func gid(named name: String) -> UInt32? {
        if let n = UInt32(name) { return n }
        var gr = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16384)
        let r = getgrnam_r(name, &gr, &buffer, buffer.count, &result)
        guard r == 0, result != nil else { return nil }
        return gr.gr_gid
    }

    /// Supplementary groups of the user owning `uid` (empty if unknown).
    static func groups(ofUID uid: UInt32) -> [UInt32] {
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &pw, &buffer, buffer.count, &result) == 0, result != nil,
              let namePtr = pw.pw_name else { return [] }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(namePtr, pw.pw_gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(namePtr, pw.pw_gid, &groups, &count) >= 0 else { return [] }
        }
        return Array(groups.prefix(Int(count)))
    }
}
