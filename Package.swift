// swift-tools-version: 6.2
import PackageDescription

// Layers, each importing only what is below it (docs/architecture.md tables the imports):
//   executables (thin @main)
//   PushGateway, LinkstrCore, APNsSandbox, LoadSupport   (gateway, client core, sandbox)
//   NostrRelay                                           (relay client)
//   GatewayWire, LinkstrWire, WebPush                    (parsers of outside input, message crypto; no I/O)
//   NostrProtocol                                        (pure, no I/O)  over CSecp256k1
// scripts/test.sh (and so CI) sets LINKSTR_STRICT=1: warnings in our own targets are errors there.
// MemberImportVisibility makes each file import the modules whose members it uses, and
// scripts/lint_imports.py (run by scripts/test.sh) holds each target's dependencies below to
// exactly those imports.
let strict = Context.environment["LINKSTR_STRICT"] == "1"
let strictSwift: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("InternalImportsByDefault"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ] + (strict ? [.treatAllWarnings(as: .error)] : [])

let package = Package(
    name: "linkstr",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "NostrProtocol", targets: ["NostrProtocol"]),
        .library(name: "GatewayWire", targets: ["GatewayWire"]),
        .library(name: "LinkstrWire", targets: ["LinkstrWire"]),
        .library(name: "WebPush", targets: ["WebPush"]),
        .library(name: "PushGateway", targets: ["PushGateway"]),
        .library(name: "APNsSandbox", targets: ["APNsSandbox"]),
        .library(name: "NostrRelay", targets: ["NostrRelay"]),
        .library(name: "LinkstrCore", targets: ["LinkstrCore"]),
        .executable(name: "linkstr", targets: ["LinkstrCLI"]),
        .executable(name: "linkstr-push", targets: ["LinkstrPush"]),
        .executable(name: "apns-sandbox", targets: ["APNsSandboxCommand"]),
        .executable(name: "linkstr-load", targets: ["LinkstrLoad"]),
        .executable(name: "push-load", targets: ["PushLoad"]),
        .executable(name: "send-path-counts", targets: ["SendPathCounts"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSecp256k1",
            pkgConfig: "libsecp256k1",
            providers: [.apt(["libsecp256k1-dev"]), .brew(["secp256k1"])]
        ),
        // glibc's allocator settings, for the gateway's executable (`MallocTuning`).
        .systemLibrary(name: "CMallocTuning"),
        .target(
            name: "NostrProtocol",
            dependencies: [
                "CSecp256k1",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        // Transport: one WebSocket connection per relay, kept up (reconnect, AUTH, OK tracking).
        .target(
            name: "NostrRelay",
            dependencies: [
                "NostrProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // The gateway's HTTP contract as values: request bodies parsed and validated, no I/O (so the
        // fuzz targets build it without the server stack).
        .target(
            name: "GatewayWire",
            dependencies: ["NostrProtocol", "WebPush"],
            swiftSettings: strictSwift
        ),
        // Web Push's message layer: RFC 8291 encryption (and the receiving side, for the sandbox)
        // and RFC 8292 VAPID, on swift-crypto. No I/O.
        .target(
            name: "WebPush",
            dependencies: [
                "NostrProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        // linkstr's wire format as values: payloads, rumors, fan-out, opening a wrap. No I/O.
        .target(
            name: "LinkstrWire",
            dependencies: ["NostrProtocol"],
            swiftSettings: strictSwift
        ),
        // The shared client library: linkstr's session, post and reaction logic, its store, its
        // relays and its push registrar, which an app embeds and the CLI runs on.
        .target(
            name: "LinkstrCore",
            dependencies: [
                "LinkstrWire",
                "NostrProtocol",
                "NostrRelay",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        .target(
            name: "PushGateway",
            dependencies: [
                "GatewayWire",
                "WebPush",
                "NostrProtocol",
                "NostrRelay",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strictSwift
        ),
        // Local stand-ins for the push services (APNs, FCM, Web Push) on one port: HTTP/2 over TLS, their
        // credential checks, scripted failures, a record of every delivery.
        .target(
            name: "APNsSandbox",
            dependencies: [
                "NostrProtocol",
                "WebPush",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "APNsSandboxCommand",
            dependencies: [
                "APNsSandbox",
                "NostrProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift
        ),
        // The APNs send path on its own, for instruction counts (scripts/bench-send-instructions.sh).
        .executableTarget(
            name: "SendPathCounts",
            dependencies: ["GatewayWire", "NostrProtocol", "PushGateway", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "LinkstrPush",
            dependencies: [
                "CMallocTuning",
                "PushGateway",
                "NostrProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strictSwift
        ),
        // What the two load generators share: signed requests and the sandbox's own endpoints.
        .target(
            name: "LoadSupport",
            dependencies: [
                "NostrProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSwift
        ),
        // Load generator for the gateway benchmark (scripts/bench-gateway.sh).
        .executableTarget(
            name: "LinkstrLoad",
            dependencies: [
                "NostrProtocol",
                "LoadSupport",
                "LinkstrCore",
                "LinkstrWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSwift
        ),
        // End-to-end load on a running local system (scripts/load/).
        .executableTarget(
            name: "PushLoad",
            dependencies: [
                "NostrProtocol",
                "LoadSupport",
                "NostrRelay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "LinkstrCLI",
            dependencies: [
                "NostrProtocol",
                "LinkstrCore",
                "NostrRelay",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "WebPushTests",
            dependencies: [
                "WebPush",
                "NostrProtocol",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "NostrProtocolTests",
            dependencies: [
                "NostrProtocol",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "PushGatewayTests",
            dependencies: [
                "PushGateway",
                "GatewayWire",
                "LinkstrCore",
                "NostrRelay",
                "TestSupport",
                "APNsSandbox",
                "NostrProtocol",
                "PushLoad",
                "WebPush",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSwift
        ),
        // Test fixtures shared by the test targets: child processes, a real relay, and a
        // scriptable hostile one (SwiftNIO's WebSocket server).
        .target(
            name: "TestSupport",
            dependencies: [
                "NostrProtocol",
                "NostrRelay",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/Support",
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "NostrRelayTests",
            dependencies: [
                "TestSupport",
                "APNsSandbox",
                "NostrRelay",
                "NostrProtocol",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "LinkstrCoreTests",
            dependencies: [
                "LinkstrCore",
                "LinkstrWire",
                "NostrProtocol",
                "NostrRelay",
                "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "NostrInteropTests",
            dependencies: ["NostrProtocol", "TestSupport"],
            swiftSettings: strictSwift
        ),
    ],
    swiftLanguageModes: [.v6]
)
