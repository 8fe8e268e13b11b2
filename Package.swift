// swift-tools-version:6.0
// healthcards: a SMART Health Cards issuer toolkit. Only the toolchain and Debian C libraries are used.
import PackageDescription

let package = Package(
    name: "healthcards",
    products: [
        .library(name: "HealthCards", targets: ["HealthCards"]),
        .executable(name: "healthcards", targets: ["healthcards"]),
        .executable(name: "healthcards-bench", targets: ["healthcards-bench"]),
    ],
    targets: [
        // C libraries from Debian, reached through system-library targets (module map + shim header).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        // zbar decodes QR symbols back from images, so `verify` reads a QR with a decoder independent of our encoder.
        .systemLibrary(name: "CZbar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        // libpng's error path is setjmp/longjmp, which must stay inside C: a small C target owns it.
        .target(name: "CPNG", linkerSettings: [.linkedLibrary("png16")]),
        // Printable cards (PDF): Cairo draws the pages, Pango lays out text in any script, librsvg draws SVG logos.
        .systemLibrary(name: "CCairo", pkgConfig: "cairo", providers: [.apt(["libcairo2-dev"])]),
        .systemLibrary(name: "CPango", pkgConfig: "pangocairo", providers: [.apt(["libpango1.0-dev"])]),
        .systemLibrary(name: "CRsvg", pkgConfig: "librsvg-2.0", providers: [.apt(["librsvg2-dev"])]),
        .target(
            name: "HealthCards",
            dependencies: ["COpenSSL", "CZlib", "CQRencode", "CPNG", "CZbar", "CCairo", "CPango", "CRsvg"]
        ),
        .executableTarget(name: "healthcards", dependencies: ["HealthCards"]),
        // `make bench`: the pipeline measured stage by stage and end to end on synthetic data.
        .executableTarget(name: "healthcards-bench", dependencies: ["HealthCards"]),
        .testTarget(name: "HealthCardsTests", dependencies: ["HealthCards"]),
    ]
)
