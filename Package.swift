// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "sheaf",
    // Synchronization's Atomic (request counters) and typed throws in async code set the floor.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        // The pure-Swift core and the libcurl transport, for Swift users.
        .library(name: "Sheaf", targets: ["Sheaf", "SheafCurl"]),
        // The C-ABI shared library (libsheaf.so). CMake builds it with -static-stdlib,
        // a version script exporting only sheaf_* and a SONAME.
        .library(name: "sheaf", type: .dynamic, targets: ["SheafCABI"]),
    ],
    targets: [
        .target(name: "Sheaf"),
        // libcurl's headers (libcurl4-openssl-dev); the library itself is loaded at run time.
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(name: "SheafCurl", dependencies: ["Sheaf", "CCurl"]),
        // include/sheaf.h imported as a module, so every @c @implementation is checked against it.
        .systemLibrary(name: "CSheafHeader"),
        .target(name: "SheafCABI", dependencies: ["Sheaf", "SheafCurl", "CSheafHeader"],
                exclude: ["exports.map"]),
        // The README's Swift quick start, compiled as written (SheafTests checks the two agree).
        .target(name: "SheafQuickStart", dependencies: ["Sheaf", "SheafCurl"], path: "Tests/QuickStart"),
        // bench/swift.py's driver: the async API against the blocking one and JSONDecoder alone.
        .executableTarget(name: "sheaf-swift-bench", dependencies: ["Sheaf", "SheafCurl"], path: "bench/swift"),
        .testTarget(name: "SheafTests", dependencies: ["Sheaf", "SheafCurl", "SheafQuickStart"]),
    ]
)
