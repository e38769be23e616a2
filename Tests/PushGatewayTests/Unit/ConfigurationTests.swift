import Crypto
import GatewayWire
import Logging
import PushGateway
import Testing

@Suite struct ConfigurationTests {
    static let base = ["DATABASE_URL": "postgres://u:p%40ss@db.local:6543/push", "APNS_DISABLE": "1"]

    @Test func defaultsAndDisabledAPNs() throws {
        let configuration = try GatewayConfiguration.fromEnvironment(Self.base)
        #expect(configuration.listenHost == "0.0.0.0" && configuration.listenPort == 8787)
        #expect(configuration.database == DatabaseURL(host: "db.local", port: 6543, username: "u", password: "p@ss", database: "push"))
        #expect(configuration.database.redacted == "postgres://u:***@db.local:6543/push")
        #expect(configuration.authMaxSkewSeconds == 300)
        #expect(configuration.shutdownTimeoutSeconds == 25)
        #expect(configuration.apns.disabled)
        #expect(configuration.logFormat == .text)
        #expect(configuration.apns.transport == .nio)
        #expect(!configuration.watch.enabled)
    }

    @Test func everyKeyIsRead() throws {
        var env = Self.base
        env["LISTEN_ADDR"] = "127.0.0.1:9000"
        env["PUBLIC_URL"] = "https://push.example.com/"
        env["LOG_LEVEL"] = "debug"
        env["LOG_FORMAT"] = "json"
        env["AUTH_MAX_SKEW_SECONDS"] = "60"
        env["ADMIN_TOKEN"] = "a-long-admin-token"
        env["APNS_TOPIC"] = "app.linkstr"
        env["APNS_SANDBOX_URL"] = "https://127.0.0.1:2197/"
        env["APNS_TRANSPORT"] = "async-http-client"
        env["RELAYS"] = "wss://relay.example, WSS://Relay.Example:443/,ws://127.0.0.1:7000/"
        env["WATCH_ALLOW_PRIVATE_RELAYS"] = "1"
        env["INDEXER_RELAYS"] = "wss://Purplepag.es/"
        env["WATCH_MAX_RELAYS"] = "50"
        env["WATCH_MAX_RELAYS_PER_USER"] = "3"
        env["SHUTDOWN_TIMEOUT_SECONDS"] = "9"
        let configuration = try GatewayConfiguration.fromEnvironment(env)
        #expect(configuration.shutdownTimeoutSeconds == 9)
        #expect(configuration.apns.transport == .asyncHTTPClient)
        #expect(configuration.watch.relays == ["wss://relay.example", "ws://127.0.0.1:7000"], "normalised, each relay once")
        #expect(configuration.watch.allowPrivateRelays)
        #expect(configuration.watch.indexerRelays == ["wss://purplepag.es"])
        #expect(configuration.watch.maxRelays == 50 && configuration.watch.maxRelaysPerUser == 3)
        let strict = try GatewayConfiguration.fromEnvironment(["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1"])
        #expect(strict.watch.allowPrivateRelays == false)
        #expect(strict.watch.maxRelays == 500 && strict.watch.maxRelaysPerUser == 5)
        let indexedByRelays = try GatewayConfiguration.fromEnvironment([
            "DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "RELAYS": "wss://relay.example",
        ])
        #expect(indexedByRelays.watch.indexerRelays == ["wss://relay.example"], "INDEXER_RELAYS defaults to RELAYS")
        #expect(configuration.listenHost == "127.0.0.1" && configuration.listenPort == 9000)
        #expect(configuration.publicURL == "https://push.example.com")
        #expect(configuration.logLevel == .debug && configuration.logFormat == .json)
        #expect(configuration.authMaxSkewSeconds == 60 && configuration.adminToken == "a-long-admin-token")
        #expect(configuration.apns.defaultTopic == "app.linkstr")
        #expect(configuration.apns.sandboxURL == "https://127.0.0.1:2197")
        #expect(configuration.apns.productionURL == APNsConfiguration.appleProductionURL)
    }

    @Test(arguments: [
        ([:], "DATABASE_URL"),
        (["DATABASE_URL": "mysql://x@y/z", "APNS_DISABLE": "1"], "DATABASE_URL"),
        (["DATABASE_URL": "postgres://x@y:99999/z", "APNS_DISABLE": "1"], "DATABASE_URL"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "LISTEN_ADDR": "8787"], "LISTEN_ADDR"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "LOG_FORMAT": "xml"], "LOG_FORMAT"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "LOG_LEVEL": "loud"], "LOG_LEVEL"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "AUTH_MAX_SKEW_SECONDS": "-5"], "AUTH_MAX_SKEW_SECONDS"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "PUBLIC_URL": "push.example.com"], "PUBLIC_URL"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "SHUTDOWN_TIMEOUT_SECONDS": "0"], "SHUTDOWN_TIMEOUT_SECONDS"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "SHUTDOWN_TIMEOUT_SECONDS": "soon"], "SHUTDOWN_TIMEOUT_SECONDS"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "SHUTDOWN_TIMEOUT_SECONDS": "3601"], "SHUTDOWN_TIMEOUT_SECONDS"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "APNS_TRANSPORT": "carrier-pigeon"], "APNS_TRANSPORT"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "RELAYS": "http://relay.example"], "RELAYS"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "INDEXER_RELAYS": "wss://"], "INDEXER_RELAYS"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "WATCH_MAX_RELAYS": "0"], "WATCH_MAX_RELAYS"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "WATCH_MAX_RELAYS_PER_USER": "21"], "WATCH_MAX_RELAYS_PER_USER"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_DISABLE": "1", "ADMIN_TOKEN": "CHANGE-ME"], "ADMIN_TOKEN"),
        (["DATABASE_URL": "postgres://x@y/z"], "APNS_TOPIC"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_TOPIC": "a"], "APNS_KEY_ID"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_TOPIC": "a", "APNS_KEY_ID": "K"], "APNS_TEAM_ID"),
        (["DATABASE_URL": "postgres://x@y/z", "APNS_TOPIC": "a", "APNS_KEY_ID": "K", "APNS_TEAM_ID": "T"], "APNS_KEY_P8"),
        (
            ["DATABASE_URL": "postgres://x@y/z", "APNS_TOPIC": "a", "APNS_KEY_ID": "K", "APNS_TEAM_ID": "T", "APNS_KEY_P8": "junk"],
            "APNS_KEY_P8"
        ),
        (
            [
                "DATABASE_URL": "postgres://x@y/z", "APNS_TOPIC": "a", "APNS_KEY_ID": "K", "APNS_TEAM_ID": "T",
                "APNS_KEY_P8_PATH": "/nonexistent.p8",
            ], "APNS_KEY_P8_PATH"
        ),
    ])
    func missingOrBadSettingNamesTheKey(env: [String: String], key: String) {
        #expect {
            try GatewayConfiguration.fromEnvironment(env)
        } throws: { error in
            (error as? ConfigurationError)?.key == key
        }
    }

    @Test func validAPNsKeyIsAccepted() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        var env = ["DATABASE_URL": "postgres://x@y/z", "APNS_TOPIC": "a", "APNS_KEY_ID": "K", "APNS_TEAM_ID": "T"]
        env["APNS_KEY_P8"] = pem
        let configuration = try GatewayConfiguration.fromEnvironment(env)
        #expect(configuration.apns.apps.count == 1 && configuration.apns.apps[0].keyID == "K" && !configuration.apns.disabled)
    }

    @Test func databaseURLForms() throws {
        #expect(try DatabaseURL(parsing: "postgresql://a@h/d").port == 5432)
        #expect(
            try DatabaseURL(parsing: "postgres://a:b@[::1]:5433/d?sslmode=require")
                == DatabaseURL(host: "::1", port: 5433, username: "a", password: "b", database: "d", tls: .require))
        #expect(throws: ConfigurationError.self) { try DatabaseURL(parsing: "postgres://h/d") }
        #expect(throws: ConfigurationError.self) { try DatabaseURL(parsing: "postgres://a@h/d?sslmode=maybe") }
    }
}

@Suite struct RequestParsingTests {
    @Test func registerNormalises() throws {
        let token = String(repeating: "AB", count: 32)
        let parsed = try RegisterDeviceRequest.parse(Array(#"{"device_token":" \#(token) ","apns_environment":"SANDBOX"}"#.utf8))
        #expect(parsed == RegisterDeviceRequest(deviceToken: token.lowercased(), environment: .sandbox, topic: nil, relayWatch: false))
    }

    @Test func pushCleansRecipients() throws {
        let key = String(repeating: "a", count: 64)
        let body =
            #"{"notification_type":"new_emoji_reaction","event_id":" e ","conversation_id":"c","recipient_pubkeys":["\#(key.uppercased())","","\#(key)"],"emoji":"🔥","post_id":"p"}"#
        let parsed = try PushRequest.parse(Array(body.utf8))
        #expect(parsed.recipients == [key])
        #expect(parsed.eventID == "e" && parsed.emoji == "🔥" && parsed.postID == "p")
        let post = try PushRequest.parse(
            Array(
                #"{"notification_type":"new_post","event_id":"e","conversation_id":"c","recipient_pubkeys":["\#(key)"],"emoji":"x","post_id":"p"}"#
                    .utf8))
        #expect(post.emoji == nil && post.postID == nil, "post_id and emoji only travel with reactions")
    }

    @Test func archiveDedupesAndScopes() throws {
        let parsed = try ArchiveStateRequest.parse(
            Array(#"{"archived_conversation_ids":["b","a","b"," "],"known_conversation_ids":["a","b","c","a"]}"#.utf8))
        #expect(parsed.archived == ["b", "a"])
        #expect(parsed.known == ["a", "b", "c"])
    }

    @Test func redactedTokenNeverShowsTheWholeToken() {
        let token = String(repeating: "ab", count: 32)
        #expect(DeviceToken.redacted(token).count < 10)
        #expect(!DeviceToken.redacted(token).contains(token.prefix(20)))
    }
}
