import ArgumentParser
import SwitchyardAdmin
import SwitchyardCore

/// `switchyard iiidea list|enable ID|disable ID|runs [ID]`: acts on a running router through its
/// admin port (`run --admin`). Enabling and disabling is stored in the router's database and
/// survives restarts.
struct Iiideas: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iiidea",
        abstract: "List, enable or disable the iiideas of a running router, and show their runs (through its admin port).",
        subcommands: [List.self, Enable.self, Disable.self, Runs.self]
    )

    struct AdminOptions: ParsableArguments {
        @Option(help: "The router's admin address (its run --admin).")
        var admin: String = "127.0.0.1:9180"

        @Flag(help: "Print the API's JSON instead of columns.")
        var json = false

        /// Calls the admin API (GET or POST); the bearer token comes from SWITCHYARD_ADMIN_TOKEN.
        /// AdminClient speaks plain HTTP over a socket, so this command pulls in no TLS library.
        func call(_ method: String, _ path: String) throws -> JSONValue {
            let answer: AdminClient.Answer
            do {
                var client = try AdminClient(address: admin, token: ProcessEnvironment.current["SWITCHYARD_ADMIN_TOKEN"])
                client.timeout = .seconds(15)
                answer = try method == "POST" ? client.post(path) : client.get(path)
            } catch {
                printError("error: \(error) — is the router running with --admin?")
                throw ExitCode(1)
            }
            let body = (try? JSONValue(parsing: answer.body)) ?? .null
            guard (200..<300).contains(answer.status) else {
                printError("error: \(body["error"]?.stringValue ?? "the admin port answered \(answer.status)")")
                throw ExitCode(1)
            }
            return body
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One line per iiidea: id, enabled, trigger, service, action, title.")

        @OptionGroup var options: AdminOptions

        func run() throws {
            let list = try options.call("GET", "/v1/iiideas")
            guard !options.json else { return print(list.serialized()) }
            for entry in list.arrayValue ?? [] {
                let state =
                    entry["enabled"]?.boolValue != true
                    ? "disabled" : entry["inactive_reason"]?.stringValue.map { "inactive (\($0))" } ?? "enabled"
                let columns = [
                    entry["id"]?.stringValue ?? "", state,
                    entry["trigger"]?.stringValue ?? "", entry["service"]?.stringValue ?? "", entry["action"]?.stringValue ?? "",
                    entry["title"]?.stringValue ?? "",
                ]
                print(columns.joined(separator: "\t"))
            }
        }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable an iiidea: its trigger starts runs again.")
        @OptionGroup var options: AdminOptions
        @Argument(help: "The iiidea's id.") var id: String

        func run() throws {
            let answer = try options.call("POST", "/v1/iiideas/\(pathSegment(id))/enable")
            if let reason = answer["inactive_reason"]?.stringValue {
                print("enabled \(id), but inactive: \(reason)")
            } else {
                print("enabled \(id)")
            }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable an iiidea: its trigger starts no runs.")
        @OptionGroup var options: AdminOptions
        @Argument(help: "The iiidea's id.") var id: String

        func run() throws {
            _ = try options.call("POST", "/v1/iiideas/\(pathSegment(id))/disable")
            print("disabled \(id)")
        }
    }

    struct Runs: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Recent runs, newest first: run id, iiidea, start, the piece that ended it, ok or the error.")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Only this iiidea's runs.") var id: String?
        @Option(help: "How many runs.") var limit = 20

        func run() throws {
            let runs = try options.call("GET", id.map { "/v1/iiideas/\(pathSegment($0))/runs?limit=\(limit)" } ?? "/v1/runs?limit=\(limit)")
            guard !options.json else { return print(runs.serialized()) }
            for run in runs.arrayValue ?? [] {
                let outcome = run["error"]?.stringValue.map { "error: " + $0 } ?? (run["ended_piece"] == nil ? "running" : "ok")
                let columns = [
                    run["run_id"]?.stringValue ?? "", run["iiidea"]?.stringValue ?? "", run["started_at"]?.stringValue ?? "",
                    run["ended_piece"]?.stringValue ?? "-", outcome,
                ]
                print(columns.joined(separator: "\t"))
            }
        }
    }
}

/// `text` as one URL path segment: everything but RFC 3986's unreserved characters is
/// percent-encoded, so an id with a slash, a space or a line break stays one segment of one
/// request line.
func pathSegment(_ text: String) -> String {
    var encoded = ""
    for byte in text.utf8 {
        let scalar = Unicode.Scalar(byte)
        if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~".unicodeScalars.contains(scalar) {
            encoded.unicodeScalars.append(scalar)
        } else {
            encoded += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
        }
    }
    return encoded
}
