// swift-tools-version:6.1
import PackageDescription

/// Every third-party library of the router and its first-party plugins, in ONE shared object
/// (libSwitchyardDependencies.so), so a process holds one copy of each: one SwiftNIO, one
/// NIOSingletons event-loop group, one BoringSSL. The router links it and installs it beside
/// itself; the plugins link it and find the router's copy already loaded (same SONAME).
/// Third-party plugins built elsewhere keep their own copies: only the C ABI crosses.
/// `SWITCHYARD_WITHOUT_OTLP=1` leaves swift-otel (the OTLP exporter) out, for a build with
/// `--sanitize=thread` over everything, where Swift 6.3 refuses two files of swift-otel 1.6
/// ("sending 'logger' risks causing data races", raised only with -sanitize=thread). The router
/// then records no spans (`switchyard run` says so if the route files ask for tracing).
/// scripts/sanitize does not need it: it instruments the root package only (see its Package.swift).
let withOTLP = Context.environment["SWITCHYARD_WITHOUT_OTLP"] == nil

/// How the one library is linked, for what ld.so reads and keeps resident at every start (issue 37,
/// "a lighter process"; figures in Benchmarks/RESULTS.md):
/// - `-Bsymbolic`: the library's references to its own symbols bind inside it when it is linked,
///   not by name at load (with the version script below, 6,858 of its 27,349 by-name
///   relocations; the rest name the Swift runtime, Foundation and the system libraries);
/// - the version script `exports.map`: it exports only the modules the project imports, about
///   half of the 59,000 names;
/// - lld's `-z pack-relative-relocs` (DT_RELR, read by glibc ≥ 2.36, Debian 12's): its 63,000
///   relative relocations take 16 KB instead of 1.5 MB, which ld.so reads in full.
/// SwiftPM does not notice a change to this manifest in an existing build directory (the
/// root's build plan is kept): remove `.build/debug.yaml` (or `release.yaml`) after editing it.
let libraryLinkerFlags = [
    "-use-ld=lld", "-Xlinker", "-Bsymbolic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--version-script=\(Context.packageDirectory)/exports.map",
]

let package = Package(
    name: "switchyard-dependencies",
    products: [.library(name: "SwitchyardDependencies", type: .dynamic, targets: ["SwitchyardDependencies"])],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.20.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "4.0.0"..<"5.0.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
    ]
        // Tracing (issue 23): only the OTLP/HTTP exporter; the OTLPGRPC trait would build gRPC and HTTP/2 for nothing.
        + (withOTLP ? [.package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"])] : []),
    targets: [
        .target(
            name: "SwitchyardDependencies",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOCore", package: "swift-nio"),
                // EmbeddedChannel, for the plugins' unit tests. Already in the library (AsyncHTTPClient's
                // NIO links it): named so the tests import it from here, not from a copy of their own.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ] + (withOTLP ? [.product(name: "OTel", package: "swift-otel")] : []),
            linkerSettings: [.unsafeFlags(libraryLinkerFlags)]
        )
    ]
)
