// swift-tools-version: 6.2
import PackageDescription

// Layers, each importing only what is below it:
//   CSecp256k1 (Debian's libsecp256k1)  →  NostrProtocol (pure, no I/O)  →  executables.
// Later layers (relay client, client core, gateway) slot in between NostrProtocol and the executables.
// scripts/test.sh (and so CI) sets LINKSTR_STRICT=1: warnings in our own targets are errors there.
let strict = Context.environment["LINKSTR_STRICT"] == "1"
let strictSwift: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
] + (strict ? [.treatAllWarnings(as: .error)] : [])

let package = Package(
    name: "linkstr",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "NostrProtocol", targets: ["NostrProtocol"]),
        .executable(name: "linkstr", targets: ["LinkstrCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSecp256k1",
            pkgConfig: "libsecp256k1",
            providers: [.apt(["libsecp256k1-dev"]), .brew(["secp256k1"])]
        ),
        .target(
            name: "NostrProtocol",
            dependencies: [
                "CSecp256k1",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "LinkstrCLI",
            dependencies: [
                "NostrProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "NostrProtocolTests",
            dependencies: [
                "NostrProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "NostrInteropTests",
            dependencies: ["NostrProtocol"],
            swiftSettings: strictSwift
        ),
    ],
    swiftLanguageModes: [.v6]
)
