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
        .library(name: "PushGateway", targets: ["PushGateway"]),
        .executable(name: "linkstr", targets: ["LinkstrCLI"]),
        .executable(name: "linkstr-push", targets: ["LinkstrPush"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
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
        .target(
            name: "PushGateway",
            dependencies: [
                "NostrProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "LinkstrPush",
            dependencies: [
                "PushGateway",
                "NostrProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
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
            name: "PushGatewayTests",
            dependencies: [
                "PushGateway",
                "NostrProtocol",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
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
