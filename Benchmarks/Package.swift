// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so the main build and `swift test` never compile
// package-benchmark. Run: `cd Benchmarks && swift package benchmark` (or scripts/bench.sh).
// A path dependency's identity is its folder's name, which differs between clones
// (`main`, `linkstr`, a CI checkout): derive it instead of hard-coding it.
let rootIdentity = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "linkstr").lowercased()

let package = Package(
    name: "linkstr-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        // Direct access to libsecp256k1 for the "library's own rate" baseline.
        .systemLibrary(name: "CSecp256k1Baseline", path: "CSecp256k1Baseline", pkgConfig: "libsecp256k1"),
        .executableTarget(
            name: "NostrBenchmarks",
            dependencies: [
                "CSecp256k1Baseline",
                .product(name: "NostrProtocol", package: rootIdentity),
                .product(name: "WebPush", package: rootIdentity),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "NostrBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "InstructionCounts",
            dependencies: ["CSecp256k1Baseline", .product(name: "NostrProtocol", package: rootIdentity)],
            path: "InstructionCounts"
        ),
    ],
    swiftLanguageModes: [.v6]
)
