#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

enum FixturesCommand {
    static let help = """
        Usage: healthcards fixtures --issuer URL [--key KEY] --out DIR [--now SECONDS] [--seed N]

        Writes a catalogue of test cards for verifier developers, signed for your issuer (with your key, or one derived from the seed):
          DIR/valid/         cards a verifier must accept: COVID-19 vaccinations (1 and 3 doses), MMR, a lab
                             result, a file with two JWS, a card with vc.rid (not revoked), a card with exp,
                             the largest single-QR card, a chunked card, a card whose key has an x5c chain;
                             each as .smart-health-card, .jws, .qr.txt and .png
          DIR/invalid/       one file per fault, each broken in one way by the issuing pipeline with one stage
                             replaced (DER signature, wrong kid, zlib payload, nbf in milliseconds, revoked,
                             each minimization and IG fault, each QR fault, file faults, bad key sets, ...)
          DIR/site/          the issuer's .well-known/jwks.json and CRLs, as `healthcards site --issuer` lays out
          DIR/manifest.json  every file: form, what is broken, the `healthcards verify` verdict and codes,
                             whether a verifier must reject it or it is an issuer's non-conformance a verifier
                             may accept (conformance), the reference validator's error names, and whether the
                             independent checker can judge it
        Reproducible: without --key (the issuer key is then derived from --seed and --issuer, a test key
        anyone can derive again), or with a public test key (the demo key, the spec's example keys), the same
        --issuer, --now and --seed give the same bytes (signatures use deterministic RFC 6979 nonces; names,
        lots and dates come from the seed; times from --now). With a key of your own the cards are signed with
        OpenSSL's random nonces, since the RFC 6979 code is not constant-time: two runs then differ in their
        signatures only. Every verdict holds at --now: verify with
        `healthcards verify --now <now> --jwks DIR/site FILE`.
        DIR must be new, empty, or an earlier catalogue (replaced whole), and not inside a published site.
        See docs/fixtures.md.
        The catalogue is synthetic test material: never publish DIR/site as a real issuer's site.

        Options:
          --issuer URL       iss of the cards: https, no trailing '/' (an example host for the demo key)
          --key KEY          the issuer's signing key, a PKCS#8 or SEC 1 PEM file (mode 0600); an HSM key
                             (pkcs11:) is refused. Without it, a key derived from --seed and --issuer signs
          --out DIR          the catalogue folder
          --now SECONDS      the time the verdicts hold at, integer seconds since 1970 (default: now); card
                             times are counted back from it
          --seed N           picks the synthetic people and the derived test keys (default 1)
          -h, --help         show this help

        Exit status: 0 written; 2 usage or configuration error, or the catalogue could not be written;
        130/143 stopped by SIGINT/SIGTERM (nothing written, DIR as it was; the temporary folder beside it is
        removed, and one a killed run left is removed by the next run).
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["issuer", "key", "out", "now", "seed"], flagNames: [], command: "fixtures")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        guard parsed.positionals.isEmpty else {
            throw HealthCardError(
                .configuration,
                "`healthcards fixtures` takes no arguments besides its options, found \(Quote.text(parsed.positionals[0])); "
                    + "see `healthcards fixtures --help`")
        }
        let issuer = try parsed.required("issuer", command: "fixtures")
        try Payload.validateIssuer(issuer)
        let keyPath = parsed.value("key")
        let out = try parsed.required("out", command: "fixtures")
        try IssuerSite.refuseHealthDataInside(
            out, option: "--out",
            what: "the catalogue holds valid cards of synthetic people signed with your key for your issuer (anyone "
                + "could present them) and a key set carrying a private key (keyset-private-key)")
        var now = Clock.nowSeconds()
        if let text = parsed.value("now") { now = try TimeOption.parse("now", text, example: now) }
        guard now >= FixtureCatalogue.earliestNow else {
            throw HealthCardError(
                .configuration,
                "--now \(now) (\(Clock.describe(now))) is too early: the catalogue's dates reach 800 days before it, and "
                    + "its nbf-milliseconds card (nbf × 1000) reads as milliseconds only from --now "
                    + "\(FixtureCatalogue.earliestNow) (\(Clock.describe(FixtureCatalogue.earliestNow))); give a later "
                    + "time, e.g. \(Clock.nowSeconds())")
        }
        guard now <= TimeOption.lastSecond - 4_000 * 86_400 else {
            throw HealthCardError(
                .configuration,
                "--now \(now) is too late: the catalogue's times reach ten years after it (exp-future, "
                    + "the x5c certificates), past the year 9999")
        }
        var seed: UInt64 = 1
        if let text = parsed.value("seed") {
            guard let value = UInt64(text) else {
                throw HealthCardError(.configuration, "--seed \(Quote.text(text)) is not a whole number from 0 to \(UInt64.max)")
            }
            seed = value
        }
        if let keyPath, keyPath.count >= 7, keyPath.prefix(7).lowercased() == "pkcs11:" {
            throw HealthCardError(
                .key,
                "--key \(keyPath.prefix(7))… is a key in a PKCS#11 token, which never hands out its private "
                    + "scalar; a reproducible catalogue needs deterministic RFC 6979 signatures, which derive each nonce from it. "
                    + "Make the catalogue with a PEM key file (a test key: `healthcards keygen --out test-issuer.pem`)")
        }
        var options: FixtureCatalogue.Options
        let checkAdvice = "`healthcards verify --now <now> --jwks <keySets>... <files>`"
        if let keyPath {
            let key = try KeySource.privateKey(keyPath)
            try DemoKey.check(kids: [key.publicKey.kid], issuer: issuer, command: "fixtures")
            options = FixtureCatalogue.Options(issuer: issuer, key: key, now: now, seed: seed, checkAdvice: checkAdvice)
        } else {
            options = try FixtureCatalogue.Options.derived(issuer: issuer, now: now, seed: seed, checkAdvice: checkAdvice)
        }
        let started = Clock.monotonicSeconds()
        Signals.install()
        defer { Signals.restore() }
        let manifest: FixtureManifest
        switch try FixtureFolder.write(options, to: out, stop: Signals.stop) {
        case .written(let written):
            manifest = written
        case .stopped(let signal):
            printError("stopped by signal \(signal): no catalogue was written (\(out) is as it was); run the same command again")
            return signal == SIGTERM ? .terminated : .interrupted
        }
        let elapsed = Clock.monotonicSeconds() - started
        let milliseconds = elapsed.isFinite ? Int(min(max(elapsed * 1000, 0), 1e9)) : 0
        let valid = manifest.entries.filter { !$0.invalid }.count
        let files = manifest.entries.reduce(0) { $0 + $1.files.count }
        printError(
            "wrote the catalogue to \(out) in \(milliseconds) ms: \(files) card, QR and key set files in "
                + "\(manifest.entries.count) manifest entries (\(valid) valid, \(manifest.entries.count - valid) invalid), "
                + "the issuer's site and \(FixtureManifest.fileName); verdicts hold at --now \(now) "
                + "(\(Clock.describe(now))), seed \(seed)")
        return .ok
    }
}
