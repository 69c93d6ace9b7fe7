// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// lld packs relative relocations (DT_RELR, which glibc reads since 2.36): ld.so reads a few
/// KB instead of 24 bytes per pointer at every start. The router and the plugins, like the
/// dependency library (Dependencies/Package.swift).
let packedRelocations = ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"]

/// A plugin binds its own symbols first (-Bsymbolic) and exports only its entry symbol (the
/// version script): a smaller dynamic symbol table, fewer pages touched when it is loaded, and
/// less code kept by --gc-sections (issue 20: 9 MB smaller, 7 MB less RSS). Its third-party
/// libraries are not in it: they are in libSwitchyardDependencies.so, which the router has loaded.
let pluginExports = Context.packageDirectory + "/Sources/SwitchyardABI/plugin.exports"
/// SwiftPM applies a target's linker settings to everything linking it, the test bundle too, which
/// holds the plugin modules without their entry targets: `--undefined-version` lets lld link it
/// with the version script naming an entry symbol it does not define (gold did not check).
let pluginLinkerSettings: [LinkerSetting] = [
    .unsafeFlags(
        ["-Xlinker", "-Bsymbolic", "-Xlinker", "--version-script=\(pluginExports)", "-Xlinker", "--undefined-version"]
            + packedRelocations)
]

let package = Package(
    name: "switchyard",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "switchyard", targets: ["switchyard"]),
        .library(name: "SwitchyardPluginKit", targets: ["SwitchyardPluginKit"]),
        .library(name: "SwitchyardPluginCommands", targets: ["SwitchyardPluginCommands"]),
        .library(name: "SwitchyardABI", targets: ["SwitchyardABI"]),
        .library(name: "SwitchyardRuntime", targets: ["SwitchyardRuntime"]),
        .library(name: "SwitchyardSpool", targets: ["SwitchyardSpool"]),
        // First-party plugins: each a shared object the router loads like any third-party one.
        .library(name: "core", type: .dynamic, targets: ["CorePlugin"]),
        .library(name: "mqtt", type: .dynamic, targets: ["MQTTPluginEntry", "MQTTPlugin"]),
        .library(name: "push", type: .dynamic, targets: ["PushPlugin"]),
        .library(name: "ble", type: .dynamic, targets: ["BLEPluginEntry", "BLEPlugin"]),
        .library(name: "sip", type: .dynamic, targets: ["SIPPluginEntry", "SIPPlugin"]),
        .library(name: "qeo", type: .dynamic, targets: ["QeoPlugin"]),
        // FCM message checks and webhook signatures, for the push benchmark's bare endpoint.
        .library(name: "PushMessage", targets: ["PushMessage"]),
        // The Swift example plugin of examples/swift-plugin.
        .library(name: "shout", type: .dynamic, targets: ["ShoutExample"]),
        // Sources and sinks for the delivery tests; never installed into Plugins/.
        .library(name: "testkit", type: .dynamic, targets: ["TestKitPlugin"]),
    ],
    dependencies: [
        // Every third-party library, linked once into libSwitchyardDependencies.so (Dependencies/Package.swift).
        .package(path: "Dependencies")
    ],
    targets: [
        // The C plugin ABI: a header and nothing else of substance.
        .target(name: "SwitchyardABI", exclude: ["plugin.exports"]),
        // Envelope, JSON values, schemas, type registry: no I/O, no dependencies.
        .target(name: "SwitchyardCore", swiftSettings: strict),
        // `when:` expressions and Mustache templates over envelopes.
        .target(
            name: "SwitchyardRouting",
            dependencies: ["SwitchyardCore", .product(name: "SwitchyardDependencies", package: "Dependencies")],
            swiftSettings: strict
        ),
        // YAML route files with source positions, `${VAR}` resolution.
        .target(
            name: "SwitchyardConfig",
            dependencies: [
                "SwitchyardCore", "SwitchyardStore", "SwitchyardScript", .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict
        ),
        // The SQLite C API, from Debian's libsqlite3-dev.
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // One SQLite connection and its statements: the spool's and the push token registry's.
        .target(name: "SwitchyardSQLite", dependencies: ["CSQLite"], swiftSettings: strict),
        // The durable spool and dead letters in SQLite.
        // The store interface every engine implements (plugin state, migrations, addresses).
        .target(name: "SwitchyardStore", dependencies: ["SwitchyardCore"], swiftSettings: strict),
        // The SQLite engine of the store (plugin state, iiideas, OAuth tokens) and the schema of
        // the file it shares with the spool.
        .target(
            name: "SwitchyardSQLiteStore", dependencies: ["SwitchyardSQLite", "SwitchyardCore", "SwitchyardStore"], swiftSettings: strict),
        .target(
            name: "SwitchyardSpool", dependencies: ["SwitchyardSQLite", "SwitchyardSQLiteStore", "SwitchyardCore", "SwitchyardStore"],
            swiftSettings: strict),
        // The PostgreSQL engine (postgres-nio): the store several routers share.
        .target(
            name: "SwitchyardPostgres",
            dependencies: ["SwitchyardStore", "SwitchyardCore", .product(name: "SwitchyardDependencies", package: "Dependencies")],
            swiftSettings: strict
        ),
        // Lua 5.4's C API, from Debian's liblua5.4-dev.
        .systemLibrary(name: "CLua", pkgConfig: "lua5.4", providers: [.apt(["liblua5.4-dev"])]),
        // The sandboxed Lua state of a script: budgets, the JSON bridge, the script library.
        // Every call into Lua is made here, in C, so no Swift frame lies between a lua_pcall and
        // the longjmp of a Lua error.
        .target(name: "CSwitchyardScript", dependencies: ["CLua"]),
        // Scripts over envelopes: compile, run, outputs as envelopes.
        .target(name: "SwitchyardScript", dependencies: ["CSwitchyardScript", "SwitchyardCore"], swiftSettings: strict),
        // The connection guard of every listener (slow clients, caps): plugins' servers, sip's TCP and TLS listeners, the admin port.
        .target(
            name: "SwitchyardConnectionGuard", dependencies: [.product(name: "SwitchyardDependencies", package: "Dependencies")],
            swiftSettings: strict),
        // Network errors in a person's words, for the router's http piece and the plugins.
        .target(
            name: "SwitchyardNetworkText", dependencies: [.product(name: "SwitchyardDependencies", package: "Dependencies")],
            swiftSettings: strict),
        // Plugin loading over the C ABI, validation, the router itself. It runs iiidea routes
        // through the `IiideaEngine` SwitchyardIiideas implements, and knows no iiidea beyond it.
        .target(
            name: "SwitchyardRuntime",
            dependencies: [
                "SwitchyardABI", "SwitchyardBridge", "SwitchyardCore", "SwitchyardRouting", "SwitchyardConfig", "SwitchyardSpool",
                "SwitchyardSQLite", "SwitchyardStore", "SwitchyardScript",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict
        ),
        // The iiideas: their switches, pieces, runs and run feed, the stored catalog, and their
        // way out to the web — the http piece's requests and the OAuth connections that sign
        // them (the only users of the HTTP client, and of crypto's sealing).
        .target(
            name: "SwitchyardIiideas",
            dependencies: [
                "SwitchyardRuntime", "SwitchyardABI", "SwitchyardConfig", "SwitchyardCore", "SwitchyardNetworkText", "SwitchyardRouting",
                "SwitchyardScript", "SwitchyardSpool", "SwitchyardStore",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict
        ),
        // `switchyard test`: route files run offline against stand-ins of their plugins.
        .target(
            name: "SwitchyardGraphTest",
            dependencies: [
                "SwitchyardRuntime", "SwitchyardIiideas", "SwitchyardABI", "SwitchyardBridge", "SwitchyardCore", "SwitchyardConfig",
                "SwitchyardRouting", "SwitchyardScript", "SwitchyardSpool",
            ],
            swiftSettings: strict
        ),
        // Envelope <-> C envelope conversion, shared by the router and the SDK.
        .target(name: "SwitchyardBridge", dependencies: ["SwitchyardABI", "SwitchyardCore"], swiftSettings: strict),
        // The Swift SDK for plugin authors: hides the C ABI.
        .target(
            name: "SwitchyardPluginKit",
            dependencies: ["SwitchyardABI", "SwitchyardBridge", "SwitchyardCore"],
            swiftSettings: strict
        ),
        // Plugin commands parsed with swift-argument-parser, for plugins that want it.
        // A plugin's HTTP server on Hummingbird: launch and graceful stop, connection limits, logs.
        .target(
            name: "SwitchyardPluginHTTP",
            dependencies: [
                "SwitchyardPluginKit", "SwitchyardConnectionGuard", .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SwitchyardPluginCommands",
            dependencies: [
                "SwitchyardPluginKit", "SwitchyardAdminClient", .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict
        ),
        // The admin port's client (plain HTTP/1.1 on a socket, no TLS library): `switchyard`'s
        // commands and plugin commands that ask a running router.
        .target(name: "SwitchyardAdminClient", dependencies: ["SwitchyardCore"], swiftSettings: strict),
        // The admin HTTP port: metrics, health, readiness, the JSON API the CLI uses.
        .target(
            name: "SwitchyardAdmin",
            dependencies: [
                "SwitchyardRuntime", "SwitchyardSpool", "SwitchyardStore", "SwitchyardCore", "SwitchyardAdminClient",
                "SwitchyardConnectionGuard", "SwitchyardIiideas",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict
        ),
        // The router executable. It links no target under Plugins/ (a test checks): plugin
        // commands come from the plugins at run time.
        .executableTarget(
            name: "switchyard",
            dependencies: [
                "SwitchyardRuntime", "SwitchyardIiideas", "SwitchyardGraphTest", "SwitchyardSpool", "SwitchyardSQLiteStore",
                "SwitchyardAdmin",
                "SwitchyardAdminClient", "SwitchyardPostgres",
                "SwitchyardStore", .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict,
            linkerSettings: [.unsafeFlags(packedRelocations)]
        ),
        .target(
            name: "CorePlugin",
            dependencies: ["SwitchyardPluginKit"],
            path: "Plugins/core",
            exclude: ["Tests"],
            swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        // MQTT 3.1.1 / 5 packets: encoding, decoding, topic matching. No I/O.
        .target(
            name: "MQTTCodec",
            dependencies: [.product(name: "SwitchyardDependencies", package: "Dependencies")],
            path: "Plugins/mqtt/Codec",
            swiftSettings: strict
        ),
        // The MQTT broker link: a SwiftNIO client per instance, exposed as a plugin.
        .target(
            name: "MQTTPlugin",
            dependencies: [
                "MQTTCodec", "SwitchyardPluginKit", "SwitchyardNetworkText",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            path: "Plugins/mqtt/Plugin",
            swiftSettings: strict
        ),
        // libmqtt.so's exported entry point, alone: MQTTPlugin then links into the test bundle
        // (every test target in one) beside SIPPlugin, and the linker settings of a plugin apply
        // to the shared object only.
        .target(
            name: "MQTTPluginEntry", dependencies: ["MQTTPlugin"], path: "Plugins/mqtt/Entry", swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        // FCM HTTP v1 message rules, FCM-shaped errors, signed-webhook checks. No I/O.
        .target(
            name: "PushMessage",
            dependencies: ["SwitchyardCore", .product(name: "SwitchyardDependencies", package: "Dependencies")],
            path: "Plugins/push/Message",
            swiftSettings: strict
        ),
        // The FCM token registry in SQLite, of the plugin and its `switchyard push tokens` command.
        .target(name: "PushTokens", dependencies: ["SwitchyardSQLite"], path: "Plugins/push/Tokens", swiftSettings: strict),
        // The push plugin: a Hummingbird webhook per instance, an FCM HTTP v1 sender.
        .target(
            name: "PushPlugin",
            dependencies: [
                "PushMessage", "PushTokens", "SwitchyardPluginKit", "SwitchyardPluginCommands", "SwitchyardPluginHTTP",
                "SwitchyardConnectionGuard",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            path: "Plugins/push/Plugin",
            swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        // sd-bus (Debian's libsystemd-dev): the D-Bus client of the ble plugin.
        .systemLibrary(name: "CSDBus", path: "Plugins/ble/CSDBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // D-Bus values and an sd-bus connection with its own loop thread. No BlueZ knowledge.
        .target(name: "SDBus", dependencies: ["CSDBus"], path: "Plugins/ble/DBus", swiftSettings: strict),
        // The ble plugin: a BlueZ client for Slate+-style boards.
        .target(
            name: "BLEPlugin",
            dependencies: ["SDBus", "SwitchyardPluginKit"],
            path: "Plugins/ble/Plugin",
            swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        // libble.so's exported entry point, alone (as MQTTPluginEntry).
        .target(
            name: "BLEPluginEntry", dependencies: ["BLEPlugin"], path: "Plugins/ble/Entry", swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        // SIP messages (RFC 3261): parser, serializer, stream framing. No I/O; fuzzed by its tests.
        .target(
            name: "SIPCodec", dependencies: [.product(name: "SwitchyardDependencies", package: "Dependencies")], path: "Plugins/sip/Codec",
            swiftSettings: strict
        ),
        // The sip plugin: a SwiftNIO user agent per instance (UDP, TCP, TLS).
        .target(
            name: "SIPPlugin",
            dependencies: [
                "SIPCodec", "SwitchyardPluginKit", "SwitchyardPluginCommands", "SwitchyardAdminClient", "SwitchyardConnectionGuard",
                "SwitchyardPluginHTTP",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            path: "Plugins/sip/Plugin",
            swiftSettings: strict
        ),
        // libsip.so's exported entry point, alone (as MQTTPluginEntry).
        .target(
            name: "SIPPluginEntry", dependencies: ["SIPPlugin"], path: "Plugins/sip/Entry", swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        // Qeo Data Model files: parsing, type resolution, JSON schemas and checks. No DDS.
        .target(name: "QeoQDM", dependencies: ["SwitchyardCore"], path: "Plugins/qeo/QDM", swiftSettings: strict),
        // Eclipse Cyclone DDS 0.10 (Debian's cyclonedds-dev): the C API of the qeo plugin.
        // (No pkgConfig: its cflags carry -D flags SwiftPM refuses; the headers are in /usr/include.)
        .systemLibrary(name: "CCycloneDDS", path: "Plugins/qeo/CCycloneDDS", providers: [.apt(["cyclonedds-dev"])]),
        // Qeo topics on Cyclone DDS: type programs built from QDM at run time, samples as JSON.
        .target(
            name: "QeoDDS", dependencies: ["CCycloneDDS", "QeoQDM", "SwitchyardCore"], path: "Plugins/qeo/DDS", swiftSettings: strict
        ),
        // The realm authority's cryptography on OpenSSL's libcrypto (keys, X.509, S/MIME).
        .target(name: "CRealmCrypto", path: "Plugins/qeo/CRealmCrypto", linkerSettings: [.linkedLibrary("crypto")]),
        // Qeo realms on DDS Security: policy files, governance/permissions, device credentials.
        .target(name: "QeoRealm", dependencies: ["CRealmCrypto"], path: "Plugins/qeo/Realm", swiftSettings: strict),
        // A realm's HTTPS endpoint: one-time-code enrollment, permission renewal (mutual TLS).
        .target(
            name: "QeoEnrollment",
            dependencies: [
                "QeoRealm", "SwitchyardPluginHTTP", "SwitchyardConnectionGuard", "SwitchyardPluginKit",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            path: "Plugins/qeo/Enrollment",
            swiftSettings: strict
        ),
        // Waking members' apps: the feed of watched state changes (SQLite) and who may read them.
        .target(
            name: "QeoWake",
            dependencies: ["QeoRealm", "SwitchyardSQLite", "SwitchyardPluginKit"],
            path: "Plugins/qeo/Wake",
            swiftSettings: strict
        ),
        // libqrencode (Debian's libqrencode-dev): the QR code `realm otc` prints.
        .systemLibrary(
            name: "CQRencode", path: "Plugins/qeo/CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]
        ),
        // The qeo plugin: one DDS participant per instance.
        .target(
            name: "QeoPlugin",
            dependencies: [
                "QeoDDS", "QeoQDM", "QeoRealm", "QeoEnrollment", "QeoWake", "CQRencode", "SwitchyardPluginKit", "SwitchyardPluginCommands",
                "SwitchyardPluginHTTP",
            ],
            path: "Plugins/qeo/Plugin",
            swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        .target(
            name: "ShoutExample",
            dependencies: ["SwitchyardPluginKit"],
            path: "examples/swift-plugin",
            exclude: ["README.md", "routes.yaml", "tests"],
            swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),
        .target(
            name: "TestKitPlugin",
            dependencies: ["SwitchyardPluginKit"],
            path: "Tests/Plugins/testkit",
            swiftSettings: strict,
            linkerSettings: pluginLinkerSettings
        ),

        .testTarget(name: "SwitchyardCoreTests", dependencies: ["SwitchyardCore"], swiftSettings: strict),
        .testTarget(name: "SwitchyardRoutingTests", dependencies: ["SwitchyardRouting"], swiftSettings: strict),
        .testTarget(name: "SwitchyardScriptTests", dependencies: ["SwitchyardScript", "SwitchyardCore"], swiftSettings: strict),
        .testTarget(name: "SwitchyardConfigTests", dependencies: ["SwitchyardConfig"], swiftSettings: strict),
        .testTarget(name: "SwitchyardRuntimeTests", dependencies: ["SwitchyardRuntime", "SwitchyardIiideas"], swiftSettings: strict),
        .testTarget(
            name: "SwitchyardIiideasTests",
            dependencies: [
                "SwitchyardIiideas", "SwitchyardRuntime", "SwitchyardConfig", "SwitchyardCore", "SwitchyardSpool", "SwitchyardStore",
            ],
            swiftSettings: strict),
        // Which module may import which (reads the sources; depends on nothing).
        .testTarget(name: "ArchitectureTests", swiftSettings: strict),
        .testTarget(name: "SwitchyardGraphTestTests", dependencies: ["SwitchyardGraphTest", "SwitchyardCore"], swiftSettings: strict),
        .testTarget(
            name: "SwitchyardPluginKitTests", dependencies: ["SwitchyardPluginKit", "SwitchyardCore", "PluginTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(name: "SwitchyardAdminTests", dependencies: ["SwitchyardAdmin", "SwitchyardCore"], swiftSettings: strict),
        .testTarget(
            name: "SwitchyardSpoolTests", dependencies: ["SwitchyardSpool", "SwitchyardStore", "SwitchyardCore"], swiftSettings: strict),
        // A seeded generator and byte mutations shared by the codec fuzz tests.
        .target(name: "FuzzingSupport", path: "Tests/FuzzingSupport", swiftSettings: strict),
        .testTarget(name: "MQTTCodecTests", dependencies: ["MQTTCodec", "FuzzingSupport"], swiftSettings: strict),
        .testTarget(name: "SIPCodecTests", dependencies: ["SIPCodec", "FuzzingSupport"], swiftSettings: strict),
        // A host for plugins under unit test: a C host table that records what an instance emits,
        // acknowledges, logs and counts, so a plugin runs without a router.
        .target(
            name: "PluginTestSupport", dependencies: ["SwitchyardPluginKit", "SwitchyardABI", "SwitchyardBridge", "SwitchyardCore"],
            path: "Tests/PluginTestSupport", swiftSettings: strict
        ),
        // The mqtt and sip plugins on EmbeddedChannels (NIOEmbedded): packet sequences, timers,
        // back-pressure and reconnects, with no broker or peer. Beside each plugin's sources.
        .testTarget(
            name: "CorePluginTests", dependencies: ["CorePlugin", "SwitchyardPluginKit", "SwitchyardCore"], path: "Plugins/core/Tests",
            swiftSettings: strict
        ),
        .testTarget(
            name: "MQTTPluginTests",
            dependencies: [
                "MQTTPlugin", "MQTTCodec", "PluginTestSupport", "SwitchyardPluginKit", "SwitchyardCore",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            path: "Plugins/mqtt/Tests", swiftSettings: strict
        ),
        .testTarget(
            name: "SIPPluginTests",
            dependencies: [
                "SIPPlugin", "SIPCodec", "PluginTestSupport", "SwitchyardPluginKit", "SwitchyardCore",
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            path: "Plugins/sip/Tests", swiftSettings: strict
        ),
        // The ble plugin's BlueZ model, fed signals and replies by hand (no bus).
        .testTarget(name: "BLEPluginTests", dependencies: ["BLEPlugin", "SDBus"], path: "Plugins/ble/Tests", swiftSettings: strict),
        .testTarget(name: "QeoQDMTests", dependencies: ["QeoQDM", "SwitchyardCore"], exclude: ["QDM"], swiftSettings: strict),
        .testTarget(
            name: "QeoDDSTests", dependencies: ["QeoDDS", "QeoQDM", "SwitchyardCore", "IntegrationSupport"], exclude: ["qeo_peer.py"],
            swiftSettings: strict
        ),
        .testTarget(name: "QeoRealmTests", dependencies: ["QeoRealm"], swiftSettings: strict),
        .testTarget(name: "QeoWakeTests", dependencies: ["QeoWake", "QeoEnrollment"], swiftSettings: strict),
        .testTarget(name: "PushMessageTests", dependencies: ["PushMessage", "SwitchyardCore"], swiftSettings: strict),
        // What the integration tests share: sandboxes, the router as a process, real peers
        // (Mosquitto, Kamailio, PostgreSQL, the Python doubles), sockets and HTTP by hand.
        .target(
            name: "IntegrationSupport",
            dependencies: [
                "SwitchyardPostgres", "SwitchyardSpool", .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            path: "Tests/IntegrationSupport",
            swiftSettings: strict
        ),
        // The plugin ABI end to end: plugins in C (v1 and v2), in Swift outside the package,
        // reloads. scripts/sanitize runs these under both sanitizers.
        .testTarget(name: "PluginABITests", dependencies: ["IntegrationSupport"], swiftSettings: strict),
        // The router end to end: CLI, admin port, delivery, reloads, shutdown, spool safety, logs,
        // tracing, scripts between peers. Support/ holds the Python and C doubles of every
        // integration target (IntegrationSupport and the suites find them there).
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["IntegrationSupport"],
            exclude: [
                "Support/fcm_endpoint.py", "Support/otlp_receiver.py", "Support/bluez_slate.py", "Support/oauth_provider.py",
                "Support/ABIv1",
                "Support/qeo_state_peer.c", "Support/ChatParticipant.idl",
            ],
            swiftSettings: strict
        ),
        // Each plugin through the router against its real peers: Mosquitto, Kamailio and SIPp,
        // Cyclone DDS peers, the FCM double, the BlueZ double.
        .testTarget(name: "MQTTIntegrationTests", dependencies: ["IntegrationSupport"], swiftSettings: strict),
        .testTarget(name: "SIPIntegrationTests", dependencies: ["IntegrationSupport"], swiftSettings: strict),
        .testTarget(name: "QeoIntegrationTests", dependencies: ["IntegrationSupport"], swiftSettings: strict),
        .testTarget(name: "PushIntegrationTests", dependencies: ["IntegrationSupport"], swiftSettings: strict),
        .testTarget(name: "BLEIntegrationTests", dependencies: ["IntegrationSupport", "SDBus"], swiftSettings: strict),
        // Iiideas through the router: the iiidea store and CLI, OAuth connections, the http piece.
        .testTarget(name: "IiideaIntegrationTests", dependencies: ["IntegrationSupport"], swiftSettings: strict),
        // The store on both engines (SQLite, PostgreSQL) and its migrations; several routers on
        // one store: scale-out, takeovers, partitions.
        .testTarget(
            name: "StoreIntegrationTests",
            dependencies: [
                "IntegrationSupport", "SwitchyardPostgres", "SwitchyardSpool", "SwitchyardSQLite", "SwitchyardSQLiteStore",
                "SwitchyardStore", .product(name: "SwitchyardDependencies", package: "Dependencies"),
            ],
            swiftSettings: strict
        ),
    ]
)

/// `SWITCHYARD_SANITIZE=address` or `thread` (set by scripts/sanitize): this package's own
/// targets, Swift and C, are compiled and linked with the sanitizer; the third-party libraries
/// in Dependencies are not. Their compile commands stay those of the debug build, so a sanitizer
/// build in the same scratch path reuses them and recompiles only this package (most of a
/// from-scratch build is the dependencies). What the sanitizer checks is our code, and every
/// call it makes into theirs; races and overflows wholly inside a dependency are out of scope.
///
/// Only what the sanitized suites build and load is in that build (half its time): the router
/// and its libraries, the plugins those suites run (core, mqtt, testkit, shout) and their test
/// targets. scripts/sanitize's suite list and `sanitizedTestTargets` go together.
if let sanitizer = Context.environment["SWITCHYARD_SANITIZE"] {
    let sanitizedTestTargets: Set<String> = ["SwitchyardRuntimeTests", "SwitchyardScriptTests", "SwitchyardSpoolTests", "PluginABITests"]
    let notLoaded: Set<String> = [
        "PushMessage", "PushTokens", "PushPlugin", "CSDBus", "SDBus", "BLEPlugin", "BLEPluginEntry", "SIPCodec", "SIPPlugin",
        "SIPPluginEntry", "QeoQDM",
        "CCycloneDDS", "QeoDDS", "CRealmCrypto", "QeoRealm", "QeoEnrollment", "QeoWake", "CQRencode", "QeoPlugin", "FuzzingSupport",
        "PluginTestSupport",
    ]
    package.targets.removeAll { ($0.type == .test && !sanitizedTestTargets.contains($0.name)) || notLoaded.contains($0.name) }
    package.products.removeAll { product in (product as? Product.Library)?.targets.contains(where: notLoaded.contains) ?? false }
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])]
        target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-fsanitize=\(sanitizer)"])]
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])]
    }
}
