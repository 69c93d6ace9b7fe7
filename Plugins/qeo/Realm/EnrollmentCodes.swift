import Foundation

/// The one-time codes a realm has issued (`enrollment.json`, owner-only). A code is kept only as
/// its SHA-256: the file does not let anyone enroll.
struct EnrollmentCodes: Codable, Sendable {
    static let fileName = "enrollment.json"
    /// Issued codes are forgotten this long after they expired or were used.
    static let memory: TimeInterval = 7 * 86400

    var codes: [Entry] = []

    /// One issued code.
    struct Entry: Codable, Sendable {
        /// SHA-256 of the normalised code.
        var digest: String
        var user: UInt64
        var deviceName: String
        var issued: Date
        var expires: Date
        /// When it was exchanged, and for which device.
        var used: Date?
        var device: UInt64?
    }

    static func load(from directory: URL) throws(RealmError) -> EnrollmentCodes {
        let file = directory.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: file.path) else { return EnrollmentCodes() }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(EnrollmentCodes.self, from: Data(contentsOf: file))
        } catch {
            throw RealmError("\(file.path): not a list of enrollment codes (\(error))")
        }
    }

    func save(to directory: URL) throws(RealmError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let text: String
        do {
            text = String(decoding: try encoder.encode(self), as: UTF8.self)
        } catch {
            throw RealmError("encoding the enrollment codes: \(error)")
        }
        try RealmFiles.write(text, to: directory.appendingPathComponent(Self.fileName))
    }

    /// Drops codes that can no longer matter.
    mutating func forgetOld(now: Date) {
        codes.removeAll { max($0.expires, $0.used ?? $0.expires).addingTimeInterval(Self.memory) < now }
    }
}

/// A one-time enrollment code as people type it: 12 characters from an alphabet without 0/O
/// and 1/I (60 random bits), shown in groups of four.
public enum EnrollmentCode {
    static let alphabet = Array("23456789ABCDEFGHJKLMNPQRSTUVWXYZ")
    /// The longest text accepted as a code (before normalising).
    public static let maximumLength = 64

    /// A new random code, grouped: `K7QM-2XWD-9HCR`.
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let characters = (0..<12).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] }
        return stride(from: 0, to: 12, by: 4).map { String(characters[$0..<$0 + 4]) }.joined(separator: "-")
    }

    /// The code without separators and in upper case, or nil when it cannot be one.
    public static func normalised(_ text: String) -> String? {
        guard text.utf8.count <= maximumLength else { return nil }
        let kept = text.uppercased().filter { $0 != "-" && $0 != " " }
        guard kept.count == 12, kept.allSatisfy({ alphabet.contains($0) }) else { return nil }
        return kept
    }
}
