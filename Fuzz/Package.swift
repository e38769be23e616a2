// swift-tools-version: 6.2
import PackageDescription

// libFuzzer targets for every parser that reads bytes from outside (relays, HTTP clients, users).
// Kept in their own package so the main build and `swift test` never compile them with the
// sanitizers. Build and run them with scripts/fuzz.sh; Fuzz/README.md says how by hand.
// A path dependency's identity is its folder's name, which differs between clones
// (`main`, `linkstr`, a CI checkout): derive it instead of hard-coding it.
let rootIdentity = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "linkstr").lowercased()

let nostrProtocol = Target.Dependency.product(name: "NostrProtocol", package: rootIdentity)

/// One executable per target, its single file under Targets/<name>/. `fuzz-` keeps the
/// executables apart from the root package's products in a listing of the build folder.
func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: "fuzz-\(name)", dependencies: dependencies, path: "Targets/\(name)")
}

let package = Package(
    name: "linkstr-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        // Only for the NIP-44 target, which seals fuzzed plaintexts with a valid MAC itself.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        fuzzTarget("json", [nostrProtocol]),
        fuzzTarget("event", [nostrProtocol]),
        fuzzTarget("relay-message", [nostrProtocol]),
        fuzzTarget("nip19", [nostrProtocol]),
        fuzzTarget(
            "nip44",
            [
                nostrProtocol,
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        fuzzTarget("base64", [nostrProtocol]),
        fuzzTarget("nip98", [nostrProtocol]),
        fuzzTarget("linkstr-payload", [nostrProtocol, .product(name: "LinkstrWire", package: rootIdentity)]),
        fuzzTarget("gateway-requests", [nostrProtocol, .product(name: "GatewayWire", package: rootIdentity)]),
        fuzzTarget("relay-url", [nostrProtocol]),
    ],
    swiftLanguageModes: [.v6]
)
