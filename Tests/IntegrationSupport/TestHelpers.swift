import Foundation
import Testing

/// Compiles C into a shared object with the system `cc`, the way a third-party plugin author
/// would: only the ABI header on the include path.
enum CCompiler {
    /// The directory holding `switchyard_plugin.h`.
    static var abiIncludeDirectory: URL {
        BuildProducts.packageRoot.appendingPathComponent("Sources/SwitchyardABI/include", isDirectory: true)
    }

    /// `cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -O2 -I <abi> -o <output> <source>`, then
    /// `chmod 755 <output>`. Throws with the compiler's output when it fails.
    static func compilePlugin(_ source: URL, to output: URL, timeout: Duration = .seconds(60)) throws {
        let arguments = [
            "cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O2",
            "-I", abiIncludeDirectory.path, "-o", output.path, source.path,
        ]
        let result = try Tool.run("/usr/bin/env", arguments, timeout: timeout)
        guard result.status == 0 else {
            throw SandboxError("\(arguments.joined(separator: " ")) failed (\(result.status)):\n\(result.output)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: output.path)
    }

    /// Writes `code` to a `.c` file in the sandbox and compiles it into `plugins/<library>`.
    static func compilePlugin(code: String, named library: String, in sandbox: Sandbox) throws -> URL {
        let source = sandbox.root.appendingPathComponent(library + ".c")
        try code.write(to: source, atomically: true, encoding: .utf8)
        let output = sandbox.plugins.appendingPathComponent(library)
        try compilePlugin(source, to: output)
        return output
    }
}

/// The counters of one route as the router logs them on shutdown ("route totals").
struct RouteTotals: Equatable {
    var received: Int
    var filtered: Int
    var delivered: Int
    var droppedFull: Int
    var droppedLoop: Int

    /// Every `key=value` of the "route totals" line of `route` in a router log.
    static func fields(route: String, in log: String) -> [String: String]? {
        for line in log.split(separator: "\n") where line.contains("route totals") {
            var fields: [String: String] = [:]
            for token in line.split(separator: " ") {
                guard let equals = token.firstIndex(of: "=") else { continue }
                fields[String(token[..<equals])] = String(token[token.index(after: equals)...])
            }
            if fields["route"] == route { return fields }
        }
        return nil
    }

    /// The numeric counter `name` of the "route totals" line of `route`.
    static func counter(_ name: String, route: String, in log: String) -> Int? {
        fields(route: route, in: log)?[name].flatMap { Int($0) }
    }

    /// Finds the "route totals" line of `route` in a router log; nil when there is none.
    static func parse(route: String, in log: String) -> RouteTotals? {
        guard let fields = fields(route: route, in: log),
            let received = fields["received"].flatMap({ Int($0) }),
            let filtered = fields["filtered"].flatMap({ Int($0) }),
            let delivered = fields["delivered"].flatMap({ Int($0) }),
            let droppedFull = fields["dropped_full"].flatMap({ Int($0) }),
            let droppedLoop = fields["dropped_loop"].flatMap({ Int($0) })
        else { return nil }
        return RouteTotals(
            received: received, filtered: filtered, delivered: delivered, droppedFull: droppedFull, droppedLoop: droppedLoop)
    }
}

/// The 1-based line and column of the `occurrence`-th appearance of `needle` in `text`.
func position(of needle: String, in text: String, occurrence: Int = 1) -> (line: Int, column: Int)? {
    var seen = 0
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        var rest = line[...]
        while let range = rest.range(of: needle) {
            seen += 1
            if seen == occurrence { return (index + 1, line.distance(from: line.startIndex, to: range.lowerBound) + 1) }
            rest = rest[range.upperBound...]
        }
    }
    return nil
}
