import Foundation
public import SwitchyardCore
public import SwitchyardScript

/// A route's `script:` (or an iiidea `script` piece's preferences) as written.
public struct ScriptDeclaration: Sendable, Hashable {
    /// Where `script:` is written.
    public var location: SourceLocation
    /// The Lua text and the place its lines are mapped to.
    public var source: ScriptSource
    /// `state: persistent`: the `state` table is kept in the router's store across restarts.
    public var persistentState = false
    /// `limits:`, over the defaults.
    public var limits: ScriptLimits = .standard
}

extension ScriptDeclaration {
    static let keys = RouteFileSchema.names(RouteFileSchema.scriptKeys)
    static let limitKeys = RouteFileSchema.names(RouteFileSchema.scriptLimitKeys)

    /// The largest script file read.
    static let maximumFileSize = 1024 * 1024

    /// Reads `script:` — Lua text inline, or `{ source | file, state, limits }` — of a file
    /// `file`; nil (with diagnostics) when it is malformed. The text is compiled later, by the
    /// graph validator.
    public static func read(_ node: ConfigNode, file: String, diagnostics: inout [Diagnostic]) -> ScriptDeclaration? {
        if let text = node.string, node.members == nil {
            return ScriptDeclaration(location: node.location, source: inlineSource(text, node: node, file: file))
        }
        guard let members = node.members else {
            diagnostics.append(
                Diagnostic(
                    "'script' must be Lua text (a block string such as 'script: |') or a mapping such as { file: scripts/x.lua }",
                    at: node.location))
            return nil
        }
        let before = diagnostics.count
        for member in members where !keys.contains(member.key) {
            diagnostics.append(
                Diagnostic(
                    "unknown key '\(member.key)' in script (expected one of: \(keys.joined(separator: ", ")))", at: member.keyLocation
                ))
        }
        var source: ScriptSource?
        switch (node["source"], node["file"]) {
        case (let text?, nil):
            if let value = text.string {
                source = inlineSource(value, node: text, file: file)
            } else {
                diagnostics.append(Diagnostic("script.source must be Lua text", at: text.location))
            }
        case (nil, let path?):
            source = fileSource(path, routeFile: file, diagnostics: &diagnostics)
        case (_?, _?):
            diagnostics.append(Diagnostic("a script has either 'source' or 'file', not both", at: node.location))
        case (nil, nil):
            diagnostics.append(
                Diagnostic("a script needs 'source: |' (Lua text) or 'file: PATH' (relative to the route file)", at: node.location))
        }
        var declaration = ScriptDeclaration(location: node.location, source: source ?? ScriptSource(text: "", file: file))
        if let state = node["state"] {
            switch state.string {
            case "memory": declaration.persistentState = false
            case "persistent": declaration.persistentState = true
            default:
                diagnostics.append(
                    Diagnostic(
                        "script.state must be 'memory' (the default: kept while the router runs) or 'persistent' (kept in the store across restarts)",
                        at: state.location))
            }
        }
        if let limits = node["limits"] {
            declaration.limits = scriptLimits(limits, diagnostics: &diagnostics)
        }
        return diagnostics.count == before && source != nil ? declaration : nil
    }

    private static func inlineSource(_ text: String, node: ConfigNode, file: String) -> ScriptSource {
        // A block scalar's location is already where its text starts (see YAMLReader).
        ScriptSource(text: text, file: file, firstLine: node.location.line, column: node.location.column)
    }

    private static func fileSource(_ node: ConfigNode, routeFile: String, diagnostics: inout [Diagnostic]) -> ScriptSource? {
        guard let path = node.string, !path.isEmpty else {
            diagnostics.append(Diagnostic("script.file must be a path to a Lua file", at: node.location))
            return nil
        }
        let resolved = path.hasPrefix("/") ? path : (URL(fileURLWithPath: routeFile).deletingLastPathComponent().path + "/" + path)
        // Only a regular file: a FIFO or a device would block the loader.
        var info = stat()
        guard stat(resolved, &info) == 0 else {
            diagnostics.append(Diagnostic("cannot read the script '\(resolved)': \(String(cString: strerror(errno)))", at: node.location))
            return nil
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            diagnostics.append(Diagnostic("the script '\(resolved)' is not a regular file", at: node.location))
            return nil
        }
        guard info.st_size <= maximumFileSize else {
            diagnostics.append(
                Diagnostic("the script '\(resolved)' is larger than \(maximumFileSize / 1024) KiB", at: node.location))
            return nil
        }
        do {
            return ScriptSource(text: try ConfigLoader.readText(resolved), file: resolved)
        } catch {
            diagnostics.append(Diagnostic(error.message, at: node.location))
            return nil
        }
    }

    private static func scriptLimits(_ node: ConfigNode, diagnostics: inout [Diagnostic]) -> ScriptLimits {
        var limits = ScriptLimits.standard
        guard let members = node.members else {
            diagnostics.append(
                Diagnostic("script.limits must be a mapping such as { memory: 32MiB, instructions: 5000000 }", at: node.location))
            return limits
        }
        for member in members {
            let value = member.value
            func count(_ range: ClosedRange<Int>) -> Int? {
                if case .scalar(.int(let number)) = value.kind, range.contains(number) { return number }
                diagnostics.append(
                    Diagnostic(
                        "script.limits.\(member.key) must be an integer from \(range.lowerBound) to \(range.upperBound)", at: value.location
                    ))
                return nil
            }
            func size(_ range: ClosedRange<Int>) -> Int? {
                if let bytes = ByteSizeText.bytes(value.json), range.contains(bytes) { return bytes }
                diagnostics.append(
                    Diagnostic(
                        "script.limits.\(member.key) must be a size from \(range.lowerBound / 1024) KiB to \(range.upperBound / (1024 * 1024)) MiB, such as 16MiB",
                        at: value.location))
                return nil
            }
            switch member.key {
            case "memory": limits.memory = size(256 * 1024...1024 * 1024 * 1024) ?? limits.memory
            case "instructions": limits.instructions = count(1000...10_000_000_000) ?? limits.instructions
            case "string_length": limits.stringLength = size(1024...256 * 1024 * 1024) ?? limits.stringLength
            case "pattern_steps": limits.patternSteps = count(1000...100_000_000_000) ?? limits.patternSteps
            case "outputs": limits.outputs = count(1...100_000) ?? limits.outputs
            default:
                diagnostics.append(
                    Diagnostic(
                        "unknown key '\(member.key)' in script.limits (expected one of: \(limitKeys.joined(separator: ", ")))",
                        at: member.keyLocation))
            }
        }
        return limits
    }
}
