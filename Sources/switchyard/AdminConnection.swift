import ArgumentParser
import SwitchyardAdmin
import SwitchyardAdminClient

/// `--admin HOST:PORT` and `--token T` for the commands that ask a running router (`tap`,
/// `top`, `iiidea`): the loopback admin port by default, the token from
/// SWITCHYARD_ADMIN_TOKEN unless given.
struct AdminConnection: ParsableArguments {
    @Option(help: "The router's admin address (its run --admin).")
    var admin: String = "127.0.0.1:9180"

    @Option(help: "The admin bearer token (default: SWITCHYARD_ADMIN_TOKEN, which unlike a command line other users cannot see).")
    var token: String?

    /// The client; an address that does not parse is printed and ends the command with status 1.
    func client(timeout: Duration) throws(ExitCode) -> AdminClient {
        do {
            var client = try AdminClient(address: admin, token: AdminClient.token(option: token, environment: ProcessEnvironment.current))
            client.timeout = timeout
            return client
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
    }
}
