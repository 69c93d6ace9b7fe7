import Foundation

/// The files of a realm directory: where each lives and how it is written — owner-only,
/// documents whole or not at all, a key in a file that was private before it held anything.
/// Separate from ``RealmAuthority``, which decides what the realm's members and documents are,
/// so that everything that writes into the realm (its codes too) keeps its files the same way.
struct RealmFiles: Sendable {
    /// The realm directory.
    let directory: URL

    /// Where a device's credentials live (`devices/<did>/`).
    func deviceDirectory(_ device: RealmRegistry.Device) -> URL {
        directory.appendingPathComponent("devices").appendingPathComponent(QeoIdentifier.hex(device.id), isDirectory: true)
    }

    /// The text of the file `name` in the realm directory.
    func read(_ name: String) throws(RealmError) -> String {
        try Self.read(directory.appendingPathComponent(name))
    }

    /// The text of `file`, which may be in a device directory.
    static func read(_ file: URL) throws(RealmError) -> String {
        do {
            return try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw RealmError("reading \(file.path): \(error.localizedDescription)")
        }
    }

    /// Writes `text` to `file`, making its directory (owner-only); `isPrivate` for a key.
    static func write(_ text: String, to file: URL, private isPrivate: Bool = false) throws(RealmError) {
        do {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if isPrivate {
                // Created 0600 before the key is in it, so it is never readable by others.
                guard FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                    throw RealmError("cannot create \(file.path)")
                }
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
                try Data(text.utf8).write(to: file)
            } else {
                // Whole or not at all: a reader never sees half a document. Not secret, but
                // the realm's state all the same: its owner's only.
                try Data(text.utf8).write(to: file, options: .atomic)
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
            }
        } catch let error as RealmError {
            throw error
        } catch {
            throw RealmError("writing \(file.path): \(error.localizedDescription)")
        }
    }
}
