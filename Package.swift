// swift-tools-version:6.0
// healthcards: a SMART Health Cards issuer toolkit. Only the toolchain and Debian C libraries are used.
//
// The library comes in layers (docs/library.md), each a product that depends only on those above it, so a
// program links only the C libraries of what it calls:
//   HealthCardsCore      JSON, Base64URL, JWS/JWK, payload, FHIR, minimization, validation, findings,
//                        in-memory issuing, keys, JWE and link payloads        (libcrypto, zlib)
//   HealthCardsVerify    checks on bytes: card files, JWS, shc:/ texts, key sets and CRLs, links
//   HealthCardsQR        QR symbols and PNG images                             (+ libqrencode, libpng)
//   HealthCardsQRReading reading QR images (PNG, JPEG) and checking symbols    (+ libjpeg, zbar, zxing-cpp)
//   HealthCardsPrint     printable cards (PDF), on Core and QR                 (+ Cairo, Pango, librsvg)
//   HealthCardsSite      the issuer's site, revocation, templates and input    (Core's and Verify's only)
//   HealthCardsIssuing   batch runs, static SMART Health Links, files (all of the above)
//   HealthCardsFixtures  the catalogue of valid and broken test cards
//   HealthCardsServer    the SMART Health Link server: link store (SQLite, PostgreSQL), manifest protocol,
//                        $health-cards-issue over imported cards, access tokens, HTTP front
//                                                      (+ libmicrohttpd, SQLite, libpq; no QR or PDF libraries)
// Each product has an example under Examples/, a target of this package (`swift build` builds them), whose
// `ldd` scripts/examples-test.sh checks against the table of docs/library.md ("Examples").
import PackageDescription

let package = Package(
    name: "healthcards",
    products: [
        .library(name: "HealthCardsCore", targets: ["HealthCardsCore"]),
        .library(name: "HealthCardsVerify", targets: ["HealthCardsVerify"]),
        .library(name: "HealthCardsQR", targets: ["HealthCardsQR"]),
        .library(name: "HealthCardsQRReading", targets: ["HealthCardsQRReading"]),
        .library(name: "HealthCardsPrint", targets: ["HealthCardsPrint"]),
        .library(name: "HealthCardsSite", targets: ["HealthCardsSite"]),
        .library(name: "HealthCardsIssuing", targets: ["HealthCardsIssuing"]),
        .library(name: "HealthCardsFixtures", targets: ["HealthCardsFixtures"]),
        .library(name: "HealthCardsServer", targets: ["HealthCardsServer"]),
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
        // setrlimit and prctl (variadic) to keep key material out of core dumps; a header only.
        .systemLibrary(name: "CProcess"),
        // libpng's error path is setjmp/longjmp, which must stay inside C: a small C target owns it.
        .target(name: "CPNG", linkerSettings: [.linkedLibrary("png16")]),
        // Photographs of QR codes come as JPEG: libjpeg (Debian libjpeg62-turbo) longjmps on errors too, so a
        // small C target owns that, the header-size check and the memory and scan limits.
        .target(name: "CJPEG", linkerSettings: [.linkedLibrary("jpeg")]),
        // zxing-cpp (Debian libzxing-dev), the second QR decoder, tried where zbar finds nothing: a C++ library,
        // reached through a small C shim compiled as C++ that catches every exception.
        .target(
            name: "CZXing", cxxSettings: [.define("ZX_USE_UTF8", to: "1")], linkerSettings: [.linkedLibrary("ZXing")]),
        // Printable cards (PDF): Cairo draws the pages, Pango lays out text in any script, librsvg draws SVG logos.
        .systemLibrary(name: "CCairo", pkgConfig: "cairo", providers: [.apt(["libcairo2-dev"])]),
        .systemLibrary(name: "CPango", pkgConfig: "pangocairo", providers: [.apt(["libpango1.0-dev"])]),
        .systemLibrary(name: "CRsvg", pkgConfig: "librsvg-2.0", providers: [.apt(["librsvg2-dev"])]),
        // The link server: libmicrohttpd's variadic start and info calls and its va_list logger go through a small
        // C target; SQLite (the embedded default store) and libpq (PostgreSQL, shared by several instances).
        .target(name: "CMicroHTTPD", linkerSettings: [.linkedLibrary("microhttpd")]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        .target(name: "HealthCardsCore", dependencies: ["COpenSSL", "CZlib", "CProcess"]),
        .target(name: "HealthCardsVerify", dependencies: ["HealthCardsCore"]),
        // Making QR symbols and PNG images (libqrencode, libpng); reading them back is HealthCardsQRReading.
        .target(name: "HealthCardsQR", dependencies: ["HealthCardsCore", "CQRencode", "CPNG"]),
        // Reading QR images people send (PNG, JPEG) and checking their symbols: zbar, zxing-cpp, libjpeg.
        .target(
            name: "HealthCardsQRReading",
            dependencies: ["HealthCardsCore", "HealthCardsVerify", "HealthCardsQR", "CPNG", "CJPEG", "CZbar", "CZXing"]),
        .target(name: "HealthCardsPrint", dependencies: ["HealthCardsCore", "HealthCardsQR", "CCairo", "CPango", "CRsvg"]),
        // The issuer's site, revocation, templates and input: Core and Verify only (libcrypto, zlib).
        .target(name: "HealthCardsSite", dependencies: ["HealthCardsCore", "HealthCardsVerify"]),
        .target(
            name: "HealthCardsIssuing",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsSite", "HealthCardsQR", "HealthCardsQRReading",
                "HealthCardsPrint",
            ]),
        .target(
            name: "HealthCardsFixtures",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsPrint",
                "HealthCardsSite", "HealthCardsIssuing",
            ]),
        .target(
            name: "HealthCardsServer",
            dependencies: ["HealthCardsCore", "HealthCardsVerify", "CMicroHTTPD", "CSQLite", "CPostgres"]),
        .executableTarget(
            name: "healthcards",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsPrint",
                "HealthCardsSite", "HealthCardsIssuing", "HealthCardsFixtures", "HealthCardsServer",
            ]),
        // `make bench`: the pipeline measured stage by stage and end to end on synthetic data.
        .executableTarget(
            name: "healthcards-bench",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsPrint",
                "HealthCardsSite", "HealthCardsIssuing", "HealthCardsFixtures", "HealthCardsServer",
            ]),
        // One example per product (Examples/NAME/main.swift, public API only, no `@testable`), each depending only
        // on its product and the layers below it that it calls: scripts/examples-test.sh runs each and checks that
        // it links none of the C libraries its product may not (the table in docs/library.md, "Examples").
        .executableTarget(
            name: "example-verify-bytes", dependencies: ["HealthCardsCore", "HealthCardsVerify"],
            path: "Examples/verify-bytes"),
        .executableTarget(
            name: "example-issue-in-memory", dependencies: ["HealthCardsCore", "HealthCardsVerify"],
            path: "Examples/issue-in-memory"),
        .executableTarget(
            name: "example-qr-png", dependencies: ["HealthCardsCore", "HealthCardsQR"], path: "Examples/qr-png"),
        .executableTarget(
            name: "example-qr-read-back",
            dependencies: ["HealthCardsCore", "HealthCardsVerify", "HealthCardsQR", "HealthCardsQRReading"],
            path: "Examples/qr-read-back"),
        .executableTarget(
            name: "example-print-pdf", dependencies: ["HealthCardsCore", "HealthCardsQR", "HealthCardsPrint"],
            path: "Examples/print-pdf"),
        .executableTarget(
            name: "example-site-revoke", dependencies: ["HealthCardsCore", "HealthCardsVerify", "HealthCardsSite"],
            path: "Examples/site-revoke"),
        .executableTarget(
            name: "example-issue-batch",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsSite", "HealthCardsPrint", "HealthCardsIssuing",
            ],
            path: "Examples/issue-batch"),
        .executableTarget(
            name: "example-fixture-catalogue",
            dependencies: ["HealthCardsCore", "HealthCardsVerify", "HealthCardsFixtures"],
            path: "Examples/fixture-catalogue"),
        .executableTarget(
            name: "example-link-server", dependencies: ["HealthCardsCore", "HealthCardsVerify", "HealthCardsServer"],
            path: "Examples/link-server"),
        // The public API as a client sees it: no `@testable`, only the Verify layer and Core.
        .testTarget(name: "HealthCardsPublicAPITests", dependencies: ["HealthCardsCore", "HealthCardsVerify"]),
        // One test target per product (as swift-nio has one per module), each depending on its product, the layers
        // below it that its tests call, and HealthCardsTestSupport (temporary folders, running `healthcards`, the
        // tests' Python and the independent checker, fixture paths; Core, Verify and Site only, no `@testable`).
        // HealthCardsCLITests holds the tests whose point is the `healthcards` program itself: exit codes,
        // output formats and files, `--help`, man pages, install. docs/testing.md has the table.
        .target(
            name: "HealthCardsTestSupport", dependencies: ["HealthCardsCore", "HealthCardsVerify", "HealthCardsSite"],
            path: "Tests/HealthCardsTestSupport"),
        .testTarget(name: "HealthCardsCoreTests", dependencies: ["HealthCardsCore", "HealthCardsTestSupport"]),
        .testTarget(
            name: "HealthCardsVerifyTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsTestSupport",
            ]),
        .testTarget(
            name: "HealthCardsQRTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsQR", "HealthCardsTestSupport",
            ]),
        .testTarget(
            name: "HealthCardsQRReadingTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsTestSupport",
            ]),
        .testTarget(
            name: "HealthCardsPrintTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsPrint", "HealthCardsTestSupport",
            ]),
        .testTarget(
            name: "HealthCardsSiteTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsSite", "HealthCardsTestSupport",
            ]),
        .testTarget(
            name: "HealthCardsIssuingTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsSite", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsPrint", "HealthCardsIssuing", "HealthCardsFixtures", "HealthCardsTestSupport",
            ], exclude: ["Fixtures"]),
        .testTarget(
            name: "HealthCardsFixturesTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsSite", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsPrint", "HealthCardsIssuing", "HealthCardsFixtures", "HealthCardsTestSupport",
            ]),
        .testTarget(
            name: "HealthCardsServerTests",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsServer", "HealthCardsTestSupport",
            ]),
        .testTarget(
            name: "HealthCardsCLITests",
            dependencies: [
                "HealthCardsCore", "HealthCardsVerify", "HealthCardsSite", "HealthCardsQR", "HealthCardsQRReading", "HealthCardsPrint", "HealthCardsIssuing", "HealthCardsFixtures", "HealthCardsServer", "HealthCardsTestSupport",
            ]),
    ],
    // zxing-cpp's headers need C++17 (the CZXing shim).
    cxxLanguageStandard: .cxx17
)
