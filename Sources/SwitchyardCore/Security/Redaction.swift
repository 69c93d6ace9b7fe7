import Synchronization

/// Removes secrets from text bound for a log line or an error message: the values that came
/// from the environment (`${VAR}`), passwords in URLs (`mqtt://user:PASSWORD@host`), bearer
/// tokens, and `password=`/`token=`/`secret=`-like query and key-value parameters.
public enum Redaction {
    /// What replaces a secret.
    public static let mask = "***"

    private static let known = Mutex<[String]>([])

    /// Adds values to redact from every line from now on (the route files' `${VAR}` values,
    /// the admin token). Values shorter than three characters are ignored: they cannot be told
    /// apart from ordinary text.
    public static func register(_ secrets: some Sequence<String>) {
        known.withLock { list in
            list = Array(Set(list).union(secrets.filter { $0.count >= 3 })).sorted { $0.count > $1.count }
        }
    }

    /// `text` with every registered secret and every secret-shaped part masked.
    public static func redact(_ text: String) -> String {
        redact(text, secrets: known.withLock { $0 })
    }

    /// `text` with every one of `secrets` of three characters or more masked, longest first
    /// (so a secret inside another is not half-masked); secret shapes are left as they are.
    public static func masking(_ secrets: some Collection<String>, in text: String) -> String {
        replacing(secrets.filter { $0.count >= 3 }.sorted { $0.count > $1.count }, in: text)
    }

    private static func replacing(_ sortedSecrets: [String], in text: String) -> String {
        var result = text
        for secret in sortedSecrets where result.contains(secret) {
            result = result.split(separator: secret, omittingEmptySubsequences: false).joined(separator: mask)
        }
        return result
    }

    /// `text` with `secrets` (longest first) and every secret-shaped part masked.
    public static func redact(_ text: String, secrets: [String]) -> String {
        let result = replacing(secrets, in: text)
        guard result.contains("://") || result.contains("=") || result.contains("earer ") || result.contains(":") else { return result }
        return maskShapes(in: result)
    }

    /// Whether a secret-like name at `nameStart` stands where a key does, not inside a path
    /// (`/etc/passwd: invalid ELF header`) or a sentence (`without a token: set admin.token`):
    /// a name right after `/`, `.` or `-` is part of a word or path; a `name:` after another
    /// word is prose (keys start a line or follow `{`, `,`, `(`, `[` or a quote). `name=value`
    /// counts wherever it stands outside a path.
    private static func isKeyPosition(_ characters: [Character], nameStart: Int, separator: Character) -> Bool {
        guard nameStart > 0 else { return true }
        if "/.-".contains(characters[nameStart - 1]) { return false }
        guard separator == ":" else { return true }
        var before = nameStart - 1
        while before >= 0, characters[before] == " " || characters[before] == "\t" || characters[before] == "\"" { before -= 1 }
        guard before >= 0 else { return true }
        return !(characters[before].isLetter || characters[before].isNumber)
    }

    private static let secretKeys = ["password", "passwd", "pass", "token", "secret", "api_key", "apikey", "private_key", "credentials"]

    /// One pass over the characters: URL user-info passwords, `Bearer X`, and `name=value`
    /// or `name: value` where the name is secret-like.
    private static func maskShapes(in text: String) -> String {
        let characters = Array(text)
        var output = ""
        output.reserveCapacity(characters.count)
        var index = 0
        func isValueEnd(_ character: Character) -> Bool {
            character == " " || character == "&" || character == "\"" || character == "'" || character == ","
                || character == ";" || character == "\n" || character == ")" || character == "]" || character == "}"
        }
        while index < characters.count {
            // scheme://user:password@host → scheme://user:***@host
            if characters[index] == ":", index + 2 < characters.count, characters[index + 1] == "/", characters[index + 2] == "/" {
                output += "://"
                index += 3
                var end = index
                while end < characters.count, characters[end] != "/", characters[end] != "@", !isValueEnd(characters[end]) { end += 1 }
                if end < characters.count, characters[end] == "@", let colon = characters[index..<end].firstIndex(of: ":") {
                    output += String(characters[index...colon]) + mask
                    index = end
                }
                continue
            }
            // Bearer TOKEN, Basic CREDENTIALS
            for scheme in ["Bearer ", "Basic "] where characters[index...].starts(with: scheme) {
                output += scheme + mask
                index += scheme.count
                while index < characters.count, !isValueEnd(characters[index]) { index += 1 }
                break
            }
            guard index < characters.count else { break }
            // name=value, "name": "value", name: value
            if characters[index] == "=" || characters[index] == ":" {
                var start = index
                while start > 0, characters[start - 1].isLetter || characters[start - 1] == "_" || characters[start - 1] == "\"" {
                    start -= 1
                }
                let name = String(characters[start..<index]).lowercased().filter { $0 != "\"" }
                if secretKeys.contains(where: { name == $0 || name.hasSuffix("_" + $0) }),
                    isKeyPosition(characters, nameStart: start, separator: characters[index])
                {
                    output.append(characters[index])
                    index += 1
                    while index < characters.count, characters[index] == " " || characters[index] == "\"" {
                        output.append(characters[index])
                        index += 1
                    }
                    var end = index
                    while end < characters.count, !isValueEnd(characters[end]) { end += 1 }
                    if end > index { output += mask }
                    index = end
                    continue
                }
            }
            output.append(characters[index])
            index += 1
        }
        return output
    }
}
