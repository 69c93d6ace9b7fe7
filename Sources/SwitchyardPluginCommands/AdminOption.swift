public import ArgumentParser
public import SwitchyardAdminClient
public import SwitchyardPluginKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `--admin HOST:PORT` for a plugin command that asks a running router, as `switchyard`'s own
/// admin commands take it: loopback port 9180 by default, the bearer token from
/// `SWITCHYARD_ADMIN_TOKEN`.
public struct AdminOption: ParsableArguments {
    /// The running router's admin address.
    @Option(help: "The running router's admin address.")
    public var admin: String = "127.0.0.1:9180"

    /// The admin bearer token, when not from the environment.
    @Option(help: "The admin bearer token (default: SWITCHYARD_ADMIN_TOKEN, which unlike a command line other users cannot see).")
    public var token: String?

    /// Creates the option with its default.
    public init() {}

    /// The client for `admin`; an address that does not parse is written to `io` and ends the
    /// command with status 1.
    public func client(io: CommandIO) throws -> AdminClient {
        do {
            let variable = getenv(AdminClient.tokenVariable).map { String(cString: $0) }
            return try AdminClient(
                address: admin,
                token: AdminClient.token(option: token, environment: variable.map { [AdminClient.tokenVariable: $0] } ?? [:]))
        } catch {
            io.writeError("error: \(error)\n")
            throw ExitCode(1)
        }
    }
}
