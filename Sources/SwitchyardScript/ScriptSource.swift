import Foundation
public import SwitchyardCore

/// The Lua text of a script and where it was written, so that every message about it names
/// the route file's line (or the script file's).
public struct ScriptSource: Sendable, Hashable {
    /// The Lua source.
    public var text: String
    /// The file messages name: the route file for an inline script, else the script file.
    public var file: String
    /// The line of `file` that holds the script's first line.
    public var firstLine: Int
    /// The column the script's lines start at in `file` (1 for a script file).
    public var column: Int

    /// Creates a source.
    public init(text: String, file: String, firstLine: Int = 1, column: Int = 1) {
        self.text = text
        self.file = file
        self.firstLine = firstLine
        self.column = column
    }

    /// Where line `line` of the script is written. Lua puts an error at the end of the text
    /// (`<eof>`) on the line after a final newline: that is the script's last line.
    public func location(ofLine line: Int) -> SourceLocation {
        let lines = max(text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0), 1)
        return SourceLocation(file: file, line: firstLine + min(max(line, 1), lines) - 1, column: column)
    }

    /// `message` with Lua's `FILE:LINE:` prefixes (the script's own lines) rewritten to the
    /// lines of ``file``: what the user reads names the place in the file they edit.
    public func mapped(_ message: String) -> String {
        let prefix = file + ":"
        guard firstLine != 1 else { return message }
        var result = ""
        var rest = Substring(message)
        while let range = rest.range(of: prefix) {
            result += rest[..<range.lowerBound] + prefix
            rest = rest[range.upperBound...]
            let digits = rest.prefix(while: \.isASCII).prefix(while: \.isNumber)
            if let line = Int(digits), rest.dropFirst(digits.count).first == ":" {
                result += String(firstLine + line - 1)
                rest = rest.dropFirst(digits.count)
            }
        }
        return result + rest
    }

    /// `(line, message)` of a message of the form `FILE:LINE: message`; nil otherwise.
    func split(_ message: String) -> (line: Int, text: String)? {
        let prefix = file + ":"
        guard message.hasPrefix(prefix) else { return nil }
        let rest = message.dropFirst(prefix.count)
        let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
        guard let line = Int(digits) else { return nil }
        var text = rest.dropFirst(digits.count)
        if text.first == ":" { text = text.dropFirst() }
        return (line, String(text.drop(while: { $0 == " " })))
    }
}
