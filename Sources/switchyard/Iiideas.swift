import ArgumentParser
import SwitchyardAdmin
import SwitchyardAdminClient
import SwitchyardCore

/// `switchyard iiidea list|enable ID|disable ID|runs [ID]` and the store's
/// `templates [QUERY]|obtain TEMPLATE|delete ID|preferences ID|run ID`: acts on a running router
/// through its admin port (`run --admin`). Switches, obtained iiideas and chosen preferences
/// are stored in the router's database and survive restarts.
struct Iiideas: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iiidea",
        abstract:
            "List, enable, disable, obtain, delete or run the iiideas of a running router, choose their preferences, and show their runs (through its admin port).",
        subcommands: [
            List.self, Enable.self, Disable.self, Runs.self, Templates.self, Obtain.self, Delete.self, Preferences.self, RunNow.self,
        ]
    )

    struct AdminOptions: ParsableArguments {
        @OptionGroup var connection: AdminConnection

        @Flag(help: "Print the API's JSON instead of columns.")
        var json = false

        /// Calls the admin API (`GET`, `POST`, `PUT`, `DELETE`, with `body` as JSON when given);
        /// the bearer token comes from SWITCHYARD_ADMIN_TOKEN. A refusal prints the API's error
        /// and the problem of each field (`action.level: ...`), then exits 1. AdminClient speaks
        /// plain HTTP over a socket, so this command pulls in no TLS library.
        func call(_ method: String, _ path: String, body: JSONValue? = nil) throws -> JSONValue {
            let answer: AdminClient.Answer
            do {
                let client = try connection.client(timeout: .seconds(15))
                answer = try client.request(method, path, json: body?.serializedBytes())
            } catch {
                printError("error: \(error) — is the router running with --admin?")
                throw ExitCode(1)
            }
            let reply = (try? JSONValue(parsing: answer.body)) ?? .null
            guard (200..<300).contains(answer.status) else {
                printError("error: \(reply["error"]?.stringValue ?? "the admin port answered \(answer.status)")")
                for (field, problem) in (reply["fields"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                    printError("  \(field): \(problem.stringValue ?? problem.serialized())")
                }
                throw ExitCode(1)
            }
            return reply
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One line per iiidea: id, enabled, trigger, service, action, title.")

        @OptionGroup var options: AdminOptions

        @Option(help: "Only the iiideas of this owner (a user or device id).")
        var owner: String?

        func run() throws {
            let list = try options.call("GET", "/v1/iiideas" + (owner.map { "?owner=" + pathSegment($0) } ?? ""))
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
        @Option(help: "Only runs that ended so: succeeded, failed or running.") var outcome: String?

        func validate() throws {
            if let outcome, !["succeeded", "failed", "running"].contains(outcome) {
                throw ValidationError("--outcome must be succeeded, failed or running")
            }
        }

        func run() throws {
            let query = "?limit=\(limit)" + (outcome.map { "&outcome=\($0)" } ?? "")
            let runs = try options.call("GET", id.map { "/v1/iiideas/\(pathSegment($0))/runs" + query } ?? "/v1/runs" + query)
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

extension Iiideas {
    struct Templates: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The store's templates (iiidea_templates in the route files): id, tags, title, description.")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Only templates with every word of this in their id, title, description or tags.") var query: String?

        func run() throws {
            let path = "/v1/iiidea-templates" + (query.map { $0.isEmpty ? "" : "?q=" + pathSegment($0) } ?? "")
            let list = try options.call("GET", path)
            guard !options.json else { return print(list.serialized()) }
            for template in list.arrayValue ?? [] {
                let columns = [
                    template["id"]?.stringValue ?? "",
                    (template["tags"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ","),
                    template["title"]?.stringValue ?? "", template["description"]?.stringValue ?? "",
                ]
                print(columns.joined(separator: "\t"))
            }
        }
    }

    struct Obtain: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an iiidea from a template, with the template's preferences changed by --set; it runs at once.")
        @OptionGroup var options: AdminOptions
        @Argument(help: "The template's id.") var template: String
        @Option(help: "The new iiidea's id (default: the template's, then -2, -3…).") var id: String?
        @Option(help: "Its title (default: the template's).") var title: String?
        @OptionGroup var preferences: PreferenceSettings

        func run() throws {
            let settings = try preferences.parsed()
            let templates = try options.call("GET", "/v1/iiidea-templates")
            guard let found = templates.arrayValue?.first(where: { $0["id"]?.stringValue == template }) else {
                printError("error: no iiidea template '\(template)'")
                throw ExitCode(1)
            }
            var body: [String: JSONValue] = ["template": .string(template)]
            if let id { body["id"] = .string(id) }
            if let title { body["title"] = .string(title) }
            let chosen = settings.applied(to: found["preferences"] ?? .null)
            body["preferences"] = .object(
                ["service": chosen.service ?? .null, "action": chosen.action ?? .null].filter { $0.value != .null })
            let answer = try options.call("POST", "/v1/iiideas", body: .object(body))
            guard !options.json else { return print(answer.serialized()) }
            let obtained = answer["id"]?.stringValue ?? id ?? template
            if let reason = answer["inactive_reason"]?.stringValue {
                print("obtained \(obtained), but inactive: \(reason)")
            } else {
                print("obtained \(obtained)")
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an iiidea obtained from the store (not one of the route files).")
        @OptionGroup var options: AdminOptions
        @Argument(help: "The iiidea's id.") var id: String

        func run() throws {
            _ = try options.call("DELETE", "/v1/iiideas/\(pathSegment(id))")
            print("deleted \(id)")
        }
    }

    struct Preferences: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an iiidea's preferences, change some with --set, or (--reset) take a route-file iiidea's from its file again.")
        @OptionGroup var options: AdminOptions
        @Argument(help: "The iiidea's id.") var id: String
        @OptionGroup var preferences: PreferenceSettings
        @Flag(help: "Drop the preferences chosen for a route-file iiidea: its file's apply again.") var reset = false

        func validate() throws {
            if reset, !preferences.settings.isEmpty { throw ValidationError("--reset takes no --set") }
        }

        func run() throws {
            let path = "/v1/iiideas/\(pathSegment(id))"
            if reset {
                _ = try options.call("DELETE", path + "/preferences")
                return print("reset the preferences of \(id)")
            }
            let settings = try preferences.parsed()
            let current = try options.call("GET", path)
            guard !settings.isEmpty else {
                let shown: JSONValue =
                    options.json ? current : ["preferences": current["preferences"] ?? .null, "schemas": current["schemas"] ?? .null]
                return print(shown.serialized())
            }
            let chosen = settings.applied(to: current["preferences"] ?? .null)
            var body: [String: JSONValue] = [:]
            if settings.touches("service") { body["service"] = chosen.service }
            if settings.touches("action") { body["action"] = chosen.action }
            let answer = try options.call("PUT", path + "/preferences", body: .object(body))
            guard !options.json else { return print(answer.serialized()) }
            print("set the preferences of \(id)")
        }
    }

    struct RunNow: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run", abstract: "Run an iiidea once now with --input as the trigger's output (its condition is skipped).")
        @OptionGroup var options: AdminOptions
        @Argument(help: "The iiidea's id.") var id: String
        @Option(help: "The trigger's output, a JSON value (default {}).") var input: String?

        func validate() throws {
            if let input, (try? JSONValue(parsing: input)) == nil {
                throw ValidationError("--input must be JSON, such as '{\"count\": 1}'")
            }
        }

        func run() throws {
            let value = try input.map { try JSONValue(parsing: $0) } ?? .object([:])
            let answer = try options.call("POST", "/v1/iiideas/\(pathSegment(id))/run", body: ["input": value])
            guard !options.json else { return print(answer.serialized()) }
            print("started \(id): trigger envelope \(answer["trigger_envelope_id"]?.stringValue ?? "?")")
        }
    }

    /// `--set service.KEY=VALUE` and `--set action.KEY=VALUE`, the preferences a command changes.
    struct PreferenceSettings: ParsableArguments {
        @Option(
            name: .customLong("set"),
            help: ArgumentHelp(
                "A preference: service.KEY=VALUE or action.KEY=VALUE; VALUE is read as JSON when it is JSON, else as text; null removes KEY. Repeatable.",
                valueName: "piece.key=value"))
        var settings: [String] = []

        /// One parsed `--set`.
        struct Setting {
            var piece: String
            var key: String
            var value: JSONValue
        }

        /// The settings in order, checked.
        func parsed() throws -> [Setting] {
            try settings.map { text in
                guard let equals = text.firstIndex(of: "="), let dot = text[..<equals].firstIndex(of: ".") else {
                    throw ValidationError("--set '\(text)': expected service.KEY=VALUE or action.KEY=VALUE")
                }
                let piece = String(text[..<dot])
                let key = String(text[text.index(after: dot)..<equals])
                guard ["service", "action"].contains(piece), !key.isEmpty else {
                    throw ValidationError("--set '\(text)': expected service.KEY=VALUE or action.KEY=VALUE")
                }
                let raw = String(text[text.index(after: equals)...])
                return Setting(piece: piece, key: key, value: (try? JSONValue(parsing: raw)) ?? .string(raw))
            }
        }
    }
}

extension [Iiideas.PreferenceSettings.Setting] {
    /// Whether a setting is for `piece`.
    func touches(_ piece: String) -> Bool { contains { $0.piece == piece } }

    /// `preferences` (`{"service": …, "action": …}`, either may be null) with these settings
    /// made (a null value removes its key); nil for a piece no setting touches: it is not sent,
    /// so it keeps its own (the template's, the route file's — values from the environment
    /// among them, which the API shows masked and never takes back).
    func applied(to preferences: JSONValue) -> (service: JSONValue?, action: JSONValue?) {
        func piece(_ name: String) -> JSONValue? {
            guard touches(name) else { return nil }
            let current = preferences[name].flatMap { $0 == .null ? nil : $0 }
            var object = current?.objectValue ?? [:]
            for setting in self where setting.piece == name {
                if setting.value == .null { object.removeValue(forKey: setting.key) } else { object[setting.key] = setting.value }
            }
            return .object(object)
        }
        return (piece("service"), piece("action"))
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
