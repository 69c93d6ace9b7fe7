import PushTokens
import SwitchyardCore
import SwitchyardPluginKit

/// What an iiidea gives the `send` port as its action (`action.preferences`, rendered over the
/// service's output): whom the message goes to, when the message itself names nobody. The
/// port's preference schema is derived from this type.
struct PushSendPreferences: PluginConfiguration {
    static let descriptions = [
        "/user": "Send to every token this user registered (may insert the service's output, as {{body.user}})",
        "/device": "Send to every token this device registered",
        "/token": "Send to this one FCM registration token",
        "/topic": "Send to this FCM topic",
    ]

    var user: String?
    var device: String?
    var token: String?
    var topic: String?

    init() {}

    /// The target members to add to a message that names none.
    var target: [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        for (name, value) in [("user", user), ("device", device), ("token", token), ("topic", topic)] {
            if let value, !value.isEmpty { fields[name] = .string(value) }
        }
        return fields
    }

    /// Why an action with these preferences cannot be sent now, or nil: a user or device named
    /// as written (not a template filled in per run) that has no token, or no registry to look
    /// one up in.
    func refusal(registry: (any PushTokenLookup)?) -> String? {
        let named = [("user", user), ("device", device)].compactMap { name, value in
            value.flatMap { $0.contains("{{") || $0.isEmpty ? nil : (name, $0) }
        }
        guard !named.isEmpty else { return nil }
        guard let registry else { return "sending to a \(named[0].0) needs a token registry (registry:)" }
        for (kind, value) in named where !registry.hasTokens(device: kind == "device" ? value : nil, user: kind == "user" ? value : nil) {
            return "no FCM token is registered for \(kind) \(value); it is asked again when one registers"
        }
        return nil
    }
}

/// Whether the registry knows a token for a device or user (the registry, or a test's stand-in).
protocol PushTokenLookup: Sendable {
    func hasTokens(device: String?, user: String?) -> Bool
}

extension PushTokenRegistry: PushTokenLookup {
    func hasTokens(device: String?, user: String?) -> Bool {
        ((try? records(device: device, user: user, limit: 1)) ?? []).isEmpty == false
    }
}
