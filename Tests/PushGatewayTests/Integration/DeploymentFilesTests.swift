import Foundation
import TestSupport
import Testing

/// What can be checked of the deployment files without a Docker engine or a cluster: the
/// manifests against the Kubernetes schema and each other (scripts/lint_deploy.py), and the
/// image's run-time packages against `ldd` of the built binaries.
@Suite struct DeploymentFilesTests {
    static let root = RustNostrPeer.repositoryRoot

    @Test func theManifestsComposeFileDockerfileAndUnitPassTheLinter() async throws {
        let (code, output) = try await ChildProcess.run(
            RustNostrPeer.python, [Self.root.appendingPathComponent("scripts/lint_deploy.py").path, Self.root.path])
        #expect(code == 0, "\(output)")
        #expect(output.contains("deployment files OK"))
    }

    @Test func theLinterCatchesBrokenFiles() async throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("lint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.createDirectory(at: copy.appendingPathComponent("docs"), withIntermediateDirectories: true)
        for item in ["docs/configuration.md", "docker", "deploy"] {
            try FileManager.default.copyItem(at: Self.root.appendingPathComponent(item), to: copy.appendingPathComponent(item))
        }
        func edit(_ path: String, _ from: String, _ to: String) throws {
            let url = copy.appendingPathComponent(path)
            let text = try String(contentsOf: url, encoding: .utf8)
            #expect(text.contains(from), "\(path) no longer contains \(from)")
            try text.replacingOccurrences(of: from, with: to).write(to: url, atomically: true, encoding: .utf8)
        }
        try edit("deploy/k8s/deployment.yaml", "path: /readyz", "path: /ready")
        try edit("deploy/k8s/service.yaml", "targetPort: http", "targetPort: [http]")
        try edit("deploy/k8s/configmap.yaml", "LOG_FORMAT: json", "LOG_FROMAT: json")
        try edit("docker/compose.yaml", "\"127.0.0.1:8787:8787\"", "\"8787:8787\"")
        try edit("docker/Dockerfile", "USER linkstr", "USER root")
        let (code, output) = try await ChildProcess.run(
            RustNostrPeer.python, [Self.root.appendingPathComponent("scripts/lint_deploy.py").path, copy.path])
        #expect(code == 1)
        for expected in [
            "readiness probe must be GET /readyz", "service.yaml", "LOG_FROMAT is not a documented setting",
            "gateway publishes 8787:8787 beyond loopback", "must run as a non-root USER",
        ] {
            #expect(output.contains(expected), "missing: \(expected)\n\(output)")
        }
    }

    /// docker/runtime-packages.txt must be what the built binaries load, package by package.
    @Test func theImagesRuntimePackagesMatchLddOfTheBinaries() async throws {
        let binaries = try ["linkstr-push", "apns-sandbox", "linkstr"].map { try ChildProcess.builtProduct($0) }
        // ldd and dpkg over three binaries: seconds alone, but a minute and more on two cores busy
        // with the rest of the suite.
        let (code, output) = try await ChildProcess.run(
            "/bin/bash", [Self.root.appendingPathComponent("docker/runtime-packages.sh").path] + binaries,
            timeout: .seconds(240))
        #expect(code == 0, "\(output)")
        let derived = output.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        let committed = try String(contentsOf: Self.root.appendingPathComponent("docker/runtime-packages.txt"), encoding: .utf8)
            .split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        #expect(derived == committed, "regenerate with docker/runtime-packages.sh and commit docker/runtime-packages.txt")
        #expect(committed.contains("libsecp256k1-1") && committed.contains("libsqlite3-0"))
    }
}
