/// The types of a set of Qeo Data Model files: structs and enums by their full dotted names
/// (`org.qeo.sample.simplechat.ChatMessage`), as Qeo names them in topics and envelopes.
public struct QDMModel: Sendable, Equatable {
    /// Structs by full name.
    public var structs: [String: QDMStruct]
    /// Enums by full name.
    public var enums: [String: QDMEnum]

    /// A model with these types.
    public init(structs: [String: QDMStruct] = [:], enums: [String: QDMEnum] = [:]) {
        self.structs = structs
        self.enums = enums
    }

    /// The structs that are topics (`behavior="event"` or `"state"`), sorted by name.
    public var topics: [QDMStruct] { structs.values.filter { $0.behavior != nil }.sorted { $0.name < $1.name } }
}

/// Where a definition is: a file and a 1-based line.
public struct QDMLocation: Sendable, Equatable, CustomStringConvertible {
    /// The file's path as given.
    public var file: String
    /// The line of the element's start tag.
    public var line: Int

    /// A location.
    public init(file: String, line: Int) {
        self.file = file
        self.line = line
    }

    public var description: String { "\(file):\(line)" }
}

/// A `<struct>`.
public struct QDMStruct: Sendable, Equatable {
    /// How a topic of this type behaves (Qeo's two kinds); nil for a type only used inside others.
    public enum Behavior: String, Sendable, Equatable {
        /// Events: reliable, volatile, keep-all.
        case event
        /// State: reliable, transient-local, keep-last 1, keyed instances.
        case state
    }

    /// The full dotted name.
    public var name: String
    public var behavior: Behavior?
    public var members: [QDMMember]
    public var location: QDMLocation

    /// A struct.
    public init(name: String, behavior: Behavior?, members: [QDMMember], location: QDMLocation) {
        self.name = name
        self.behavior = behavior
        self.members = members
        self.location = location
    }

    /// The key members, in declaration order.
    public var keys: [QDMMember] { members.filter(\.isKey) }

    /// The DDS type name: the full name with `::` (`org::qeo::sample::simplechat::ChatMessage`).
    public var ddsTypeName: String { name.split(separator: ".").joined(separator: "::") }

    /// The DDS topic name: the full name with `/`, since Cyclone DDS refuses `.` in topic names.
    public var ddsTopicName: String { name.split(separator: ".").joined(separator: "/") }
}

/// A `<member>` of a struct.
public struct QDMMember: Sendable, Equatable {
    /// The member's type, resolved.
    public indirect enum Kind: Sendable, Equatable {
        case boolean, byte, int16, int32, int64, float32, string
        /// Another struct, by full name.
        case structure(String)
        /// An enum, by full name.
        case enumeration(String)
        /// `sequenceMaxLength="-1"`: an unbounded sequence of the element kind.
        case sequence(Kind)
    }

    public var name: String
    public var kind: Kind
    /// `key="true"`.
    public var isKey: Bool
    public var location: QDMLocation

    /// A member.
    public init(name: String, kind: Kind, isKey: Bool, location: QDMLocation) {
        self.name = name
        self.kind = kind
        self.isKey = isKey
        self.location = location
    }
}

/// An `<enum>`: its enumerators are the values 0, 1, 2… in order.
public struct QDMEnum: Sendable, Equatable {
    /// The full dotted name.
    public var name: String
    public var enumerators: [String]
    public var location: QDMLocation

    /// An enum.
    public init(name: String, enumerators: [String], location: QDMLocation) {
        self.name = name
        self.enumerators = enumerators
        self.location = location
    }
}

/// Why QDM files cannot be used, with the file and line.
public struct QDMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where, when known.
    public var location: QDMLocation?
    /// What is wrong.
    public var reason: String

    /// An error.
    public init(_ reason: String, at location: QDMLocation?) {
        self.reason = reason
        self.location = location
    }

    public var description: String { location.map { "\($0): \(reason)" } ?? reason }
}
