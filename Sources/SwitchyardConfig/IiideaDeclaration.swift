public import SwitchyardCore

/// An iiidea from YAML `iiideas:`: a trigger port (with an optional condition), a service
/// piece and an action port, run as one chain.
public struct IiideaDeclaration: Sendable {
    /// The iiidea's id (unique).
    public var id: String
    /// Where it was declared.
    public var location: SourceLocation
    /// A human title.
    public var title: String?
    /// The source port whose envelopes start runs.
    public var trigger: Located<PortReference>
    /// The trigger's condition.
    public var when: Located<String>?
    /// The service piece: `pass`, `template`, `map`, `delay`, `http`, or `instance.port` of a
    /// plugin's service port.
    public var piece: Located<String>
    /// The service piece's preferences.
    public var servicePreferences: ConfigNode?
    /// The sink port that acts.
    public var action: Located<PortReference>
    /// The action's preferences (templates over the service output).
    public var actionPreferences: ConfigNode?
    /// A source port whose envelopes naming this iiidea (`body.notification_id`) run it
    /// remotely.
    public var remote: Located<PortReference>?
    /// Whether it is enabled before anyone enables or disables it.
    public var enabledByDefault: Bool
    /// Where it comes from: a route file, or the store (obtained from a template).
    public var origin: IiideaOrigin = .routeFile
    /// Whether preferences from the store replace the route file's.
    public var hasPreferenceOverride = false
    /// The user or device it belongs to (`owner:`): the admin API filters by it, and a remote
    /// run must name it.
    public var owner: String?

    /// Whether `text` can be an owner: 1 to 128 letters, digits, `.`, `_`, `:`, `@` or `-` —
    /// nothing a condition or a header could misread.
    public static func isOwner(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || [0x2E, 0x5F, 0x3A, 0x40, 0x2D].contains(byte)
            }
    }
}

/// Where an iiidea is declared.
public enum IiideaOrigin: Sendable, Equatable {
    /// Written in a route file: read-only for the console, but its preferences may be overridden.
    case routeFile
    /// Obtained from the template with this id and kept in the router's store.
    case obtained(template: String)
}

/// An entry of `iiidea_templates:`: an iiidea a person obtains from the store with their own
/// preferences (the template's are the defaults).
public struct IiideaTemplate: Sendable {
    /// The iiidea it makes; its id is the template's id.
    public var declaration: IiideaDeclaration
    /// What it does, for the store page.
    public var description: String?
    /// Words the store's search also matches.
    public var tags: [String]

    /// The template's id.
    public var id: String { declaration.id }

    /// Creates a template.
    public init(declaration: IiideaDeclaration, description: String?, tags: [String]) {
        self.declaration = declaration
        self.description = description
        self.tags = tags
    }

    /// Whether every word of `query` is in its id, title, description or tags (case-insensitive).
    public func matches(_ query: String) -> Bool {
        let text = ([id, declaration.title ?? "", description ?? ""] + tags).joined(separator: " ").lowercased()
        return query.lowercased().split(whereSeparator: \.isWhitespace).allSatisfy { text.contains($0) }
    }
}

extension IiideaDeclaration {
    /// The route that carries the chain: from the trigger (or the remote port) to the action,
    /// with the trigger's condition and the service's `map`, so routes' type checks apply.
    public func route(remote: Bool, map: ConfigNode?, when condition: Located<String>?, script: ScriptDeclaration? = nil)
        -> RouteDeclaration
    {
        RouteDeclaration(
            name: remote ? "iiidea \(id) (remote)" : "iiidea \(id)", location: location, from: remote ? (self.remote ?? trigger) : trigger,
            to: [action], when: condition, map: map, template: nil, outputType: nil, contentType: nil,
            queueSize: ConfigLoader.defaultQueueSize, onFull: .block, allowLoops: false, script: script)
    }
}
