// swift-tools-version:6.1
import PackageDescription

/// Routing benchmarks for Switchyard: a package of its own so that the benchmark harness and
/// its malloc interposer never become dependencies of the router itself.
///
/// Run with `swift package benchmark` from this directory (see README.md).
let package = Package(
    name: "SwitchyardBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "switchyard", path: ".."),
        // libbenchsource.so and libbenchsink.so: see BenchPlugins/Package.swift for why they
        // live in a package of their own.
        .package(name: "BenchPlugins", path: "BenchPlugins"),
        // Only the malloc interposer: the default jemalloc/runtime-interposer traits are not
        // available here.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
        // Read directly for the per-batch allocation metric (the harness links it anyway).
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.5.0"),
        // swift-log and Hummingbird from the router's one shared library, so that no binary holds
        // two copies of a module (see ../Dependencies/Package.swift).
        .package(name: "Dependencies", path: "../Dependencies"),
    ],
    targets: [
        .executableTarget(
            name: "RoutingBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SwitchyardRuntime", package: "switchyard"),
                .product(name: "SwitchyardSpool", package: "switchyard"),
                .product(name: "SwitchyardABI", package: "switchyard"),
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "benchsource", package: "BenchPlugins"),
                .product(name: "benchsink", package: "BenchPlugins"),
            ],
            path: "Benchmarks/RoutingBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        // The baseline of push-webhook/run.sh: the webhook's request handling without the router.
        // In Tools/, not Benchmarks/: the benchmark plugin runs every executable target under
        // Benchmarks/ as a benchmark, and this one serves until it is killed.
        .executableTarget(
            name: "BareWebhook",
            dependencies: [
                .product(name: "SwitchyardDependencies", package: "Dependencies"),
                .product(name: "PushMessage", package: "switchyard"),
            ],
            path: "Tools/BareWebhook"
        ),
    ]
)
