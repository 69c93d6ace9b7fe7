public import Foundation

/// The DDS Security governance and permissions documents of a realm (OMG DDS Security 1.1, as
/// Cyclone DDS 0.10 reads them).
public enum SecurityDocuments {
    /// One device's grant: its certificate subject and the policy rules of its user.
    public struct Grant: Sendable {
        public var name: String
        public var subject: String
        public var rules: [QeoPolicy.Rule]
        /// The end of this grant when it is earlier than the document's (an enrolled device's
        /// permissions lease).
        public var notAfter: Date?

        public init(name: String, subject: String, rules: [QeoPolicy.Rule], notAfter: Date? = nil) {
            self.name = name
            self.subject = subject
            self.rules = rules
            self.notAfter = notAfter
        }
    }

    /// Governance for `domain`: only authenticated realm members join, discovery, liveliness and
    /// every topic's data and metadata are encrypted, and reading and writing are checked
    /// against each participant's permissions.
    public static func governance(domain: UInt32) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
        xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
          <domain_access_rules>
            <domain_rule>
              <domains><id>\(domain)</id></domains>
              <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
              <enable_join_access_control>true</enable_join_access_control>
              <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
              <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
              <rtps_protection_kind>NONE</rtps_protection_kind>
              <topic_access_rules>
                <topic_rule>
                  <topic_expression>*</topic_expression>
                  <enable_discovery_protection>true</enable_discovery_protection>
                  <enable_liveliness_protection>true</enable_liveliness_protection>
                  <enable_read_access_control>true</enable_read_access_control>
                  <enable_write_access_control>true</enable_write_access_control>
                  <metadata_protection_kind>ENCRYPT</metadata_protection_kind>
                  <data_protection_kind>ENCRYPT</data_protection_kind>
                </topic_rule>
              </topic_access_rules>
            </domain_rule>
          </domain_access_rules>
        </dds>

        """
    }

    /// Permissions for every device of the realm on `domain`, valid from `notBefore` to
    /// `notAfter`. Each policy rule becomes an allow or deny rule per direction, most specific
    /// first (the first matching rule decides); anything else is denied.
    public static func permissions(domain: UInt32, grants: [Grant], notBefore: Date, notAfter: Date) -> String {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime]
        var text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
            xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
              <permissions>

            """
        for grant in grants {
            text += """
                    <grant name="\(escaped(grant.name))">
                      <subject_name>\(escaped(grant.subject))</subject_name>
                      <validity>
                        <not_before>\(format.string(from: notBefore))</not_before>
                        <not_after>\(format.string(from: min(grant.notAfter ?? notAfter, notAfter)))</not_after>
                      </validity>

                """
            for rule in grant.rules {
                let topic = escaped(rule.ddsTopicExpression)
                // Allowing rules first: Cyclone lets a participant create a topic when the first
                // rule naming it, in either direction, allows.
                let directions = [("publish", rule.write), ("subscribe", rule.read)]
                for (direction, allowed) in directions.filter(\.1) + directions.filter({ !$0.1 }) {
                    let kind = allowed ? "allow_rule" : "deny_rule"
                    text += """
                              <\(kind)>
                                <domains><id>\(domain)</id></domains>
                                <\(direction)><topics><topic>\(topic)</topic></topics></\(direction)>
                              </\(kind)>

                        """
                }
            }
            text += """
                      <default>DENY</default>
                    </grant>

                """
        }
        text += """
              </permissions>
            </dds>

            """
        return text
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
