import Foundation
import QeoEnrollment
import QeoQDM
import QeoRealm
import SwitchyardPluginKit

/// Checks a qeo instance's iiidea pieces against its realm's policy: an action on `write`
/// needs the right to write each topic the port writes, a trigger on `events`, `changes` or
/// `states` the right to read each topic it reads.
///
/// Cyclone checks the permissions only when the participant creates its readers and writers,
/// at start (a denied topic stops the instance then): a policy narrowed since is what the
/// pieces are held to now. A refused piece is asked again when the instance restarts, on any
/// reload, or when the iiidea is enabled again.
struct QeoPieces: Sendable {
    /// The instance's member (realm, user), credentials and topics.
    let configuration: QeoConfiguration
    let context: PluginContext

    /// The right a piece needs on its topics.
    enum Right: String, Sendable {
        /// A trigger: the port emits what the instance reads.
        case read
        /// An action: the port writes what it is given.
        case write
    }

    /// The right `port` needs and the topics it carries; nil for a port that uses no topic as
    /// the instance's member (`wakes` comes from the realm's feed, not from a reader).
    func needs(of port: String) -> (right: Right, topics: [QDMStruct])? {
        switch port {
        case QeoPlugin.writePort: (right: Right.write, topics: configuration.write)
        case QeoPlugin.eventsPort: (right: Right.read, topics: configuration.read.filter { $0.behavior == .event })
        case QeoPlugin.changesPort, QeoPlugin.statesPort: (right: Right.read, topics: configuration.read.filter { $0.behavior == .state })
        default: nil
        }
    }

    /// Accepts piece `port` of `iiidea`, or throws why the realm's policy does not let the
    /// member use it.
    func enable(port: String, iiidea: String) throws {
        // An open domain, no topic, or a realm whose directory is elsewhere (an enrolled
        // device): nothing to check beyond what Cyclone checked when the instance joined.
        guard let needs = needs(of: port), !needs.topics.isEmpty, let realm = Self.realmDirectory(of: configuration) else { return }
        let file = URL(fileURLWithPath: realm).appendingPathComponent("policy").path
        let reason: String?
        do {
            let authority = try RealmAuthority(directory: realm)
            let policy = try QeoPolicy(parsing: try authority.policyText(), file: file)
            let name = authority.registry.users.first { $0.id == configuration.user }?.name
            reason = Self.refusal(
                policy: policy, realm: configuration.realm, user: configuration.user, name: name, right: needs.right,
                topics: needs.topics.map(\.name))
        } catch {
            // Not proof that the piece cannot work: the participant joined with its permissions.
            context.log(.warning, "qeo: cannot read the realm's policy to check piece \(port) of iiidea \(iiidea): \(error)")
            return
        }
        if let reason { throw PluginError(reason) }
    }

    /// The realm directory whose policy governs the instance's member: `enroll.realm` when the
    /// instance serves its realm, else the realm directory around the credentials
    /// (`switchyard qeo realm add-device` writes them to `REALM/devices/DID`), whichever is
    /// this member's realm. Nil on an open domain, or when neither is (an enrolled device).
    static func realmDirectory(of configuration: QeoConfiguration) -> String? {
        guard let credentials = configuration.credentials else { return nil }
        let around = URL(fileURLWithPath: credentials).deletingLastPathComponent().deletingLastPathComponent().path
        return [configuration.enroll?.realm, around].compactMap { $0 }.first { directory in
            (try? RealmAuthority(directory: directory))?.registry.realm == configuration.realm
        }
    }

    /// Why a device of `user` (called `name` in the realm) may not use `topics` with `right`
    /// under `policy`, naming the first it may not; nil when it may use them all. Every topic
    /// of the port counts: the port carries any of them, and a participant cannot create an
    /// endpoint its permissions deny.
    static func refusal(
        policy: QeoPolicy, realm: UInt64, user: UInt64, name: String?, right: Right, topics: [String]
    ) -> String? {
        let id = "uid:\(QeoIdentifier.hex(user))"
        let member = name.map { "'\($0)' (\(id))" } ?? "'\(id)'"
        for topic in topics {
            let rights = policy.rights(realm: realm, user: user, topic: topic)
            guard !(right == .read ? rights.read : rights.write) else { continue }
            let granted = [rights.read ? "read" : nil, rights.write ? "write" : nil].compactMap { $0 }
            let grants = granted.isEmpty ? "nothing" : granted.joined(separator: " and ")
            return "realm member \(member) may not \(right.rawValue) topic '\(topic)' (its policy grants: \(grants))"
        }
        return nil
    }
}
