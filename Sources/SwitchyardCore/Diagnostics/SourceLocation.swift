/// A place in a configuration file: what every configuration error names.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible, Comparable {
    /// The file path as the user gave it (or `<input>`).
    public var file: String
    /// Line, from 1.
    public var line: Int
    /// Column, from 1.
    public var column: Int

    /// Creates a location.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`.
    public var description: String { "\(file):\(line):\(column)" }

    /// The location `offset` characters further along the same line (for errors inside a
    /// scalar such as an expression).
    public func advanced(by offset: Int) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column + offset)
    }

    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.file, lhs.line, lhs.column) < (rhs.file, rhs.line, rhs.column)
    }
}

/// One problem found in configuration, with the place it was found.
public struct Diagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where; `nil` when the problem has no single place (a missing file, say).
    public var location: SourceLocation?
    /// What is wrong, naming the thing concerned.
    public var message: String

    /// Creates a diagnostic.
    public init(_ message: String, at location: SourceLocation?) {
        self.location = location
        self.message = message
    }

    /// The diagnostic with every occurrence of a secret in its message replaced by `***`.
    /// Values shorter than three characters are left alone: they cannot be told apart from
    /// ordinary text.
    public func redacting(_ secrets: Set<String>) -> Diagnostic {
        Diagnostic(Redaction.masking(secrets, in: message), at: location)
    }

    /// `file:line:column: error: message`, the form compilers use.
    public var description: String {
        if let location { return "\(location): error: \(message)" }
        return "error: \(message)"
    }
}

/// Several diagnostics at once: validation reports every problem it finds, not just the first.
public struct Diagnostics: Error, Sendable, CustomStringConvertible {
    /// The problems, sorted by place.
    public var items: [Diagnostic]

    /// Creates the error from problems.
    public init(_ items: [Diagnostic]) {
        // Problems without a place first, then by file, line and column.
        self.items = items.sorted { lhs, rhs in
            switch (lhs.location, rhs.location) {
            case (nil, nil): lhs.message < rhs.message
            case (nil, _): true
            case (_, nil): false
            case (let left?, let right?): left == right ? lhs.message < rhs.message : left < right
            }
        }
    }

    public var description: String { items.map(\.description).joined(separator: "\n") }
}
