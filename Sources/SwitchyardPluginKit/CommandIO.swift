#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a plugin command reads and writes: the descriptors `switchyard` hands over.
public struct CommandIO: Sendable {
    /// What the command calls itself in usage text: `switchyard qeo realm`.
    public let program: String
    /// Standard input.
    public let input: Int32
    /// Standard output.
    public let output: Int32
    /// Standard error.
    public let error: Int32

    /// Creates the descriptors of a command call.
    public init(program: String, input: Int32 = 0, output: Int32 = 1, error: Int32 = 2) {
        self.program = program
        self.input = input
        self.output = output
        self.error = error
    }

    /// `text` (a value a peer or an app chose) as one column of a command's output: control
    /// characters, tabs and newlines among them, become `?`, so a row stays a row and a terminal
    /// stays a terminal.
    public static func column(_ text: some StringProtocol) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
    }

    /// Writes `text` to standard output.
    public func write(_ text: String) { Self.write(text, to: output) }

    /// Writes `text` to standard error.
    public func writeError(_ text: String) { Self.write(text, to: error) }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { buffer in
                #if canImport(Glibc)
                    Glibc.write(descriptor, buffer.baseAddress, buffer.count)
                #elseif canImport(Musl)
                    Musl.write(descriptor, buffer.baseAddress, buffer.count)
                #else
                    Darwin.write(descriptor, buffer.baseAddress, buffer.count)
                #endif
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
