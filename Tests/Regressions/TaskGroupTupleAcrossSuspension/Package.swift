// swift-tools-version: 6.2
import PackageDescription

// A reduction of a Swift 6.3 optimizer miscompile (swiftlang/swift#91911) that crashed release
// builds of `linkstr post`: a task-group child returning a tuple, one element written before a
// `try await` and the rest after it, inside do/catch, with the awaited call in another module.
// At -O the element written first is lost. It is its own package so that it builds in release in
// seconds; scripts/test.sh builds and runs it in its release pass.
let package = Package(
    name: "TaskGroupTupleAcrossSuspension",
    platforms: [.macOS(.v15)],
    targets: [
        // The awaited call must live in another module: in one module the optimizer inlines it.
        .target(name: "Relay"),
        .executableTarget(name: "Reproduction", dependencies: ["Relay"]),
    ],
    swiftLanguageModes: [.v6]
)
