// swift-tools-version:6.0
// An example client of the healthcards library: issues a SMART Health Card from a FHIR Bundle held in memory
// with Core's in-memory issuer (a PKCS#8 key, a fixed clock), verifies it with the Verify layer, and shows the
// error value a Bundle the rules refuse gives. Public API only; no file is written. Run it from the repository
// root: swift run --package-path Examples/issue-in-memory
import PackageDescription

let package = Package(
    name: "issue-in-memory",
    dependencies: [.package(name: "healthcards", path: "../..")],
    targets: [
        // `name: "healthcards"` above lets the products be named by package whatever the clone's folder is called.
        .executableTarget(
            name: "issue-in-memory",
            dependencies: [
                .product(name: "HealthCardsCore", package: "healthcards"),
                .product(name: "HealthCardsVerify", package: "healthcards"),
            ])
    ]
)
