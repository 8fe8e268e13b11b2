// swift-tools-version:6.0
// An example client of the healthcards library: verifies SMART Health Cards held in memory with the Verify
// layer alone (HealthCardsVerify, over HealthCardsCore), so it links libcrypto and zlib and none of the QR,
// PNG or PDF libraries. Run it from the repository root: swift run --package-path Examples/verify-bytes
import PackageDescription

let package = Package(
    name: "verify-bytes",
    dependencies: [.package(name: "healthcards", path: "../..")],
    targets: [
        // `name: "healthcards"` above lets the products be named by package whatever the clone's folder is called.
        .executableTarget(
            name: "verify-bytes",
            dependencies: [
                .product(name: "HealthCardsVerify", package: "healthcards"),
                .product(name: "HealthCardsCore", package: "healthcards"),
            ])
    ]
)
