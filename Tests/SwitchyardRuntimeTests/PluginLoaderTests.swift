import Foundation
import SwitchyardABI
import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

/// The error negotiating with `entry` throws, or `nil` when it succeeds.
private func negotiationError(_ entry: sy_entry_fn) -> PluginLoadError? {
    do throws(PluginLoadError) {
        _ = try PluginLoader.negotiate(entry: entry, path: "/plugins/libtest.so")
        return nil
    } catch {
        return error
    }
}

@Suite struct NegotiationTests {
    @Test func successfulNegotiation() throws {
        let plugin = try PluginLoader.negotiate(entry: fakeEntry, path: "/fake/libfake.so")
        #expect(plugin.abiVersion == 1)
        #expect(plugin.path == "/fake/libfake.so")
        #expect(plugin.manifest.name == "fake")
        #expect(plugin.manifest.version == "1.0.0")
        #expect(plugin.manifest.ports.map(\.name) == ["out", "in", "any", "opt", "either"])
        #expect(plugin.manifest.port(named: "opt")?.requires == "extra")
        #expect(plugin.manifest.types.keys.sorted() == ["t.A", "t.B"])
        #expect(plugin.manifestJSON["name"] == "fake")
        #expect(plugin.configSchema.properties.keys.sorted() == ["extra", "n"])
        #expect(plugin.configSchema.violations(of: ["n": "x"]).count == 1)
        #expect(plugin.table.api.deliver != nil)
        #expect(plugin.table.api.settled != nil)
    }

    @Test func hostOffersVersionsTwoAndOneWithFullTables() throws {
        _ = try PluginLoader.negotiate(entry: fakeEntry, path: "/fake/libfake.so")
        let offer = try #require(lastOffer.withLock { $0 })
        #expect(offer.versions == [2, 1])
        #expect(offer.offerSize == UInt32(MemoryLayout<sy_offer>.size))
        #expect(offer.hostTableSize == UInt32(MemoryLayout<sy_host_api_v1>.size))
        #expect(offer.hostFunctionsPresent)
        #expect(offer.capacity >= MemoryLayout<sy_plugin_api_v1>.size)
        #expect(PluginLoader.supportedVersions == [2, 1])
    }

    @Test func pluginRefuses() throws {
        let error = try #require(negotiationError { _, _, _ in 0 })
        #expect(error.reason.contains("ABI negotiation failed"))
        #expect(error.reason.contains("[2, 1]"))
        #expect(error.path == "/plugins/libtest.so")
        #expect(error.description.hasPrefix("refused plugin /plugins/libtest.so: "))
    }

    @Test func pluginChoosesAVersionNotOffered() throws {
        let error = try #require(
            negotiationError { _, table, _ in
                fillFakeTable(table, manifest: fakeManifest)
                return 7
            })
        #expect(error.reason.contains("ABI negotiation failed"))
        #expect(error.reason.contains("version 7"))
        #expect(error.reason.contains("not offered"))
    }

    @Test func missingMandatoryEntries() throws {
        let error = try #require(
            negotiationError { _, table, _ in
                fillFakeTable(table, manifest: fakeManifest)
                let api = table!.assumingMemoryBound(to: sy_plugin_api_v1.self)
                api.pointee.deliver = nil
                api.pointee.destroy = nil
                return 1
            })
        #expect(error.reason.contains("lacks mandatory entries: deliver, destroy"))
    }

    @Test func missingManifest() throws {
        let error = try #require(
            negotiationError { _, table, _ in
                fillFakeTable(table, manifest: sy_bytes(data: nil, length: 0))
                return 1
            })
        #expect(error.reason.contains("lacks mandatory entries: manifest"))
    }

    @Test func optionalEntriesMayBeAbsent() throws {
        let plugin = try PluginLoader.negotiate(
            entry: { _, table, _ in
                fillFakeTable(table, manifest: fakeManifest)
                let api = table!.assumingMemoryBound(to: sy_plugin_api_v1.self)
                api.pointee.quiesce = nil
                api.pointee.resume = nil
                api.pointee.settled = nil
                return 1
            },
            path: "/fake/libminimal.so"
        )
        #expect(plugin.manifest.name == "fake")
        #expect(plugin.table.api.settled == nil)
    }

    @Test func tableTooSmall() throws {
        let error = try #require(
            negotiationError { _, table, _ in
                fillFakeTable(table, manifest: fakeManifest)
                table!.assumingMemoryBound(to: sy_plugin_api_v1.self).pointee.struct_size = 8
                return 1
            })
        #expect(error.reason.contains("is 8 bytes"))
        #expect(error.reason.contains("expected at least \(MemoryLayout<sy_plugin_api_v1>.offset(of: \.piece_enable) ?? 0)"))
    }

    /// A plugin built against the header before the iiidea piece entries: its table ends after
    /// settled(). It loads, and whatever lies past its size is not taken for entries.
    @Test func aTableFromBeforeThePieceEntriesLoads() throws {
        let plugin = try PluginLoader.negotiate(
            entry: { _, table, _ in
                fillFakeTable(table, manifest: fakeManifest)
                let api = table!.assumingMemoryBound(to: sy_plugin_api_v1.self)
                api.pointee.struct_size = UInt32(MemoryLayout<sy_plugin_api_v1>.offset(of: \.piece_enable) ?? 0)
                // Bytes past the old size that an old plugin would never have written.
                api.pointee.piece_enable = { _, _, _, _, _ in 0 }
                api.pointee.piece_disable = { _, _, _ in }
                return 1
            },
            path: "/fake/libold.so"
        )
        #expect(plugin.manifest.name == "fake")
        #expect(plugin.table.api.settled != nil)
        #expect(plugin.table.api.piece_enable == nil)
        #expect(plugin.table.api.piece_disable == nil)
    }

    @Test func manifestThatIsNotJSON() throws {
        let error = try #require(
            negotiationError { _, table, _ in
                fillFakeTable(table, manifest: brokenManifest)
                return 1
            })
        #expect(error.reason.hasPrefix("invalid manifest"))
        #expect(error.reason.contains("not JSON"))
    }

    @Test func manifestWithoutPorts() throws {
        let error = try #require(
            negotiationError { _, table, _ in
                fillFakeTable(table, manifest: portlessManifest)
                return 1
            })
        #expect(error.reason == "invalid manifest: manifest field 'ports' must be an array")
    }

    @Test func manifestWithBadConfigSchema() throws {
        let error = try #require(
            negotiationError { _, table, _ in
                fillFakeTable(table, manifest: badConfigManifest)
                return 1
            })
        #expect(error.reason.hasPrefix("invalid manifest"))
        #expect(error.reason.contains("/type"))
    }
}

/// A fresh directory under the system temporary directory.
private func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "switchyard-unit-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    return path
}

private func chmod(_ path: String, _ mode: Int) throws {
    try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
}

@Suite struct FilePermissionTests {
    @Test(
        arguments: [
            (0o777, "directory is writable by every user (mode 777)"),
            (0o775, "directory is writable by its group (mode 775)"),
            (0o755, nil),
            (0o700, nil),
        ] as [(Int, String?)])
    func directoryModes(mode: Int, problem: String?) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try chmod(directory, mode)
        let found = PluginLoader.writableByOthers(directory, isDirectory: true)
        if let problem {
            #expect(found?.hasPrefix(problem) == true, "\(found ?? "nil")")
        } else {
            #expect(found == nil)
        }
    }

    @Test func fileModes() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/libx.so"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        try chmod(file, 0o666)
        #expect(PluginLoader.writableByOthers(file, isDirectory: false)?.hasPrefix("file is writable by every user (mode 666)") == true)
        try chmod(file, 0o664)
        #expect(PluginLoader.writableByOthers(file, isDirectory: false)?.hasPrefix("file is writable by its group (mode 664)") == true)
        try chmod(file, 0o644)
        #expect(PluginLoader.writableByOthers(file, isDirectory: false) == nil)
        #expect(PluginLoader.writableByOthers(file, isDirectory: true) == "not a directory")
        #expect(PluginLoader.writableByOthers(directory, isDirectory: false) == "not a regular file")
        #expect(PluginLoader.writableByOthers(directory + "/absent", isDirectory: false)?.hasPrefix("cannot stat") == true)
    }

    @Test func loadingANonexistentFile() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/libmissing.so"
        do {
            _ = try PluginLoader.load(file: path)
            Issue.record("loading a missing file must fail")
        } catch {
            #expect(error.path == path)
            #expect(error.reason.contains("cannot stat"))
            #expect(error.description.contains(path))
        }
    }

    @Test func loadingAFileThatIsNotELF() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/libjunk.so"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("this is not a shared object\n".utf8)))
        try chmod(path, 0o644)
        do {
            _ = try PluginLoader.load(file: path)
            Issue.record("loading a text file must fail")
        } catch {
            #expect(error.path == path)
            #expect(error.reason.hasPrefix("dlopen failed: "))
            #expect(error.reason.contains(path))
        }
    }

    @Test func loadingFromAGroupWritableDirectoryIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/libjunk.so"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        try chmod(path, 0o644)
        try chmod(directory, 0o770)
        do {
            _ = try PluginLoader.load(file: path)
            Issue.record("a group-writable directory must be refused")
        } catch {
            #expect(error.reason.hasPrefix("its directory \(directory): directory is writable by its group"))
        }
    }

    @Test func loadDirectoryReportsBadFilesAndSkipsOthers() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(
            FileManager.default.createFile(
                atPath: directory + "/libjunk.so", contents: Data("junk".utf8), attributes: [.posixPermissions: 0o644]))
        #expect(
            FileManager.default.createFile(
                atPath: directory + "/notes.txt", contents: Data("x".utf8), attributes: [.posixPermissions: 0o644]))
        #expect(
            FileManager.default.createFile(
                atPath: directory + "/other.so", contents: Data("x".utf8), attributes: [.posixPermissions: 0o644]))
        let (plugins, errors) = PluginLoader.loadDirectory(directory)
        #expect(plugins.isEmpty)
        #expect(errors.count == 1)
        #expect(errors.first?.path == directory + "/libjunk.so")
        try chmod(directory, 0o777)
        let (_, refused) = PluginLoader.loadDirectory(directory)
        #expect(refused.count == 1)
        #expect(refused.first?.reason.contains("writable by every user") == true)
    }

    @Test func pathsAreNormalised() {
        #expect(PluginLoader.normalize("/a/./b/../c//d/") == "/a/c/d")
        #expect(PluginLoader.absolutePath("/x/../y") == "/y")
        #expect(PluginLoader.absolutePath("rel/p").hasSuffix("/rel/p"))
        #expect(PluginLoader.absolutePath("rel/p").hasPrefix("/"))
    }
}
