// swift-tools-version:6.1
import PackageDescription

/// Two minimal C plugins for the routing benchmarks, each its own shared object (a plugin
/// exports exactly one `switchyard_plugin_entry`, so two plugins need two libraries).
///
/// This is a package of its own, not targets of `Benchmarks/Package.swift`, because the
/// benchmark executable must depend on the *dynamic products* (only products of another
/// package can be depended on): that makes SwiftPM build `libbenchsource.so` and
/// `libbenchsink.so` next to the benchmark binary whenever `swift package benchmark` builds
/// it, so the benchmark can hand those files to the router's real `PluginLoader.load(file:)`.
let package = Package(
    name: "BenchPlugins",
    products: [
        .library(name: "benchsource", type: .dynamic, targets: ["CBenchSource"]),
        .library(name: "benchsink", type: .dynamic, targets: ["CBenchSink"]),
    ],
    dependencies: [
        .package(name: "switchyard", path: "../.."),
    ],
    targets: [
        // Header-only helpers both plugins share.
        .target(
            name: "CBenchCommon",
            dependencies: [.product(name: "SwitchyardABI", package: "switchyard")]
        ),
        .target(
            name: "CBenchSource",
            dependencies: ["CBenchCommon", .product(name: "SwitchyardABI", package: "switchyard")]
        ),
        .target(
            name: "CBenchSink",
            dependencies: ["CBenchCommon", .product(name: "SwitchyardABI", package: "switchyard")]
        ),
    ]
)
