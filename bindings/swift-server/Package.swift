// swift-tools-version:6.1
import PackageDescription

// Sheaf's products for Swift servers, in a package of their own so that the root package (the
// core, its libcurl transport and the C library) keeps no dependencies: a swift-log bridge, swift-
// metrics counters and timers, and an `AsyncTransport` over AsyncHTTPClient.
let package = Package(
    name: "sheaf-swift-server",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        // Sheaf's log records as swift-log entries with metadata.
        .library(name: "SheafLogging", targets: ["SheafLogging"]),
        // Counters, timers and a window gauge through swift-metrics, fed from Sheaf's hooks.
        .library(name: "SheafMetrics", targets: ["SheafMetrics"]),
        // An AsyncTransport over AsyncHTTPClient's HTTPClient.
        .library(name: "SheafAsyncHTTPClient", targets: ["SheafAsyncHTTPClient"]),
    ],
    dependencies: [
        // The root package (its `Sheaf` product), named so that the identity does not depend on
        // the folder the repository is cloned into.
        .package(name: "sheaf", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // AsyncHTTPClient's own dependencies, named for the errors the transport maps.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        .target(name: "SheafLogging", dependencies: [
            .product(name: "Sheaf", package: "sheaf"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "SheafMetrics", dependencies: [
            .product(name: "Sheaf", package: "sheaf"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        .target(name: "SheafAsyncHTTPClient", dependencies: [
            .product(name: "Sheaf", package: "sheaf"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
        ]),
        // bench/swift_server.py's driver: P1 through fetchAll over AsyncHTTPClient against
        // AsyncHTTPClient alone with a task group.
        .executableTarget(name: "sheaf-server-bench", dependencies: [
            "SheafAsyncHTTPClient",
            .product(name: "Sheaf", package: "sheaf"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ], path: "bench"),
        .testTarget(name: "SheafServerTests", dependencies: [
            "SheafLogging", "SheafMetrics", "SheafAsyncHTTPClient",
            .product(name: "Sheaf", package: "sheaf"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ]),
    ]
)
