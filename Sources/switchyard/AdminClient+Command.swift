import ArgumentParser
import SwitchyardAdmin
import SwitchyardAdminClient

extension AdminClient {
    /// The client a command talks to `admin` with, its bearer token from
    /// SWITCHYARD_ADMIN_TOKEN; an address that does not parse is printed and ends the command
    /// with status 1.
    static func command(_ admin: String, timeout: Duration) throws(ExitCode) -> AdminClient {
        do {
            var client = try AdminClient(address: admin, token: ProcessEnvironment.current["SWITCHYARD_ADMIN_TOKEN"])
            client.timeout = timeout
            return client
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
    }
}
