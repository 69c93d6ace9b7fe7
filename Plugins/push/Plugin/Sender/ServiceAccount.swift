import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// The fields of a Google service-account key file that the OAuth2 JWT flow needs.
struct ServiceAccount: Sendable {
    /// The audience Google documents for the assertion, and that Google's own auth library
    /// sends even when the key file's `token_uri` points elsewhere.
    static let googleTokenAudience = "https://oauth2.googleapis.com/token"
    /// The scope that allows sending with FCM HTTP v1.
    static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    var projectID: String?
    var clientEmail: String
    var privateKeyID: String?
    var privateKeyPEM: String
    var tokenURI: String

    /// Reads a key file; errors name the file and the missing field.
    init(file: String) throws {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw PluginError("fcm.service_account: cannot read '\(file)': \(error.localizedDescription)")
        }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: bytes)
        } catch {
            throw PluginError("fcm.service_account '\(file)': \(error)")
        }
        func field(_ name: String) throws -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else {
                throw PluginError("fcm.service_account '\(file)': no \"\(name)\" (is it a service-account key file?)")
            }
            return value
        }
        if let type = json["type"]?.stringValue, type != "service_account" {
            throw PluginError("fcm.service_account '\(file)': type is \"\(type)\", not \"service_account\"")
        }
        projectID = json["project_id"]?.stringValue
        clientEmail = try field("client_email")
        privateKeyID = json["private_key_id"]?.stringValue
        privateKeyPEM = try field("private_key")
        tokenURI = json["token_uri"]?.stringValue ?? Self.googleTokenAudience
    }
}
