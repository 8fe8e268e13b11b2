/// The most `verify` and `issue` accept of each kind of input, so that no input, however crafted, costs
/// more time or memory than its budget (docs/verify.md, "Budgets"; `make bench` measures the largest
/// accepted input of each kind). Each limit is checked before the cost it bounds is paid: a file's size
/// before it is read, a PNG's width × height before its pixels are decoded, a record's length while it is
/// read.
public enum InputBudget {
    /// A file read whole when no smaller budget applies: 64 MiB.
    public static let defaultFileBytes = 64 << 20
    /// A `.smart-health-card` file, a file of one compact JWS or of `shc:/` QR text, a `jwks.json`: 1 MiB.
    /// A card meant for a QR code is under 2 KB; a file-only card with a long history is a few hundred KB.
    public static let cardFileBytes = 1 << 20
    /// Credentials (JWS) in one `.smart-health-card` file: 64.
    public static let credentialsPerFile = 64
    /// Payload bytes (once inflated) checked in one `.smart-health-card` file: 16 MiB. Each payload may
    /// inflate to `RawInflate.maxOutput` (4 MiB); once a file's payloads reach this, its other credentials
    /// are not checked, so one file costs at most 20 MiB of JSON to parse and validate.
    public static let payloadBytesPerFile = 16 << 20
    /// A PNG file: 32 MiB (a 24-bit photo of a printed QR code is a few MB).
    public static let imageFileBytes = 32 << 20
    /// A PNG's width × height: 67,108,864 pixels (8192 × 8192), checked from its header before any pixel
    /// is decoded. The largest QR image `issue` writes, version 22 at 64 pixels per module, is 7232 × 7232.
    /// Decoding costs one byte a pixel (64 MiB at most) plus what zbar needs to scan it.
    public static let imagePixels = 1 << 26
    /// A revocation list `crl/<kid>.json`: 16 MiB (about a million rids).
    public static let crlFileBytes = 16 << 20
    /// A PEM key file, a PKCS#11 PIN file, a revocation secret file: 64 KiB.
    public static let secretFileBytes = 64 << 10
    /// An X.509 chain (`--x5c`): 1 MiB.
    public static let certificateChainBytes = 1 << 20
    /// A template (`--template`): 1 MiB.
    public static let templateBytes = 1 << 20
    /// One line of an `issue` report read back (`revoke --report`): 1 MiB (a line is a few hundred bytes).
    public static let reportLineBytes = 1 << 20
    /// A `.json` input (one FHIR Bundle), or one line of an `.ndjson` input: 16 MiB, four times the
    /// largest payload a card can carry, for Bundles that still hold narratives and ids.
    public static let bundleBytes = 16 << 20
    /// Records in one `.ndjson` input: 10 million (its lines are read one at a time).
    public static let bundleRecordsPerFile = 10_000_000
    /// One CSV record (all its fields): 1 MiB.
    public static let csvRecordBytes = 1 << 20
    /// Data rows in one CSV input: 100 million (indexed at about 12 bytes a row: 1.2 GB).
    public static let csvRows = 100_000_000
    /// Rows of one patient in a CSV input: 10,000 (a row is a dose or a test); a patient with more is
    /// rejected without its rows being read.
    public static let csvRowsPerPatient = 10_000
    /// Input a batch holds read but not yet reported, in bytes of the input files: 32 MiB (and at least
    /// one record, whatever its size). Parsed, that is a few hundred MB at most.
    public static let inFlightBytes = 32 << 20

    /// `1 MiB`, `64 KiB`, `512 bytes`.
    public static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 20 { return "\(bytes / 104_858 / 10).\(bytes / 104_858 % 10) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}

/// The budgets one verifier, issuer or batch run applies (defaults: `InputBudget`, documented in
/// docs/verify.md, "Budgets"). A program that serves many callers passes its own: smaller for an upload
/// endpoint, larger for a registry's overnight run. Sizes are in bytes; counts in records, rows or pixels.
public struct InputLimits: Sendable, Equatable {
    /// A `.smart-health-card` file, a JWS or `shc:/` text file, a `jwks.json`.
    public var cardFileBytes = InputBudget.cardFileBytes
    /// Credentials (JWS) checked in one `.smart-health-card` file.
    public var credentialsPerFile = InputBudget.credentialsPerFile
    /// Payload bytes (inflated) checked in one `.smart-health-card` file.
    public var payloadBytesPerFile = InputBudget.payloadBytesPerFile
    /// A QR image file.
    public var imageFileBytes = InputBudget.imageFileBytes
    /// A QR image's width × height, checked from its header before any pixel is decoded.
    public var imagePixels = InputBudget.imagePixels
    /// A revocation list.
    public var crlFileBytes = InputBudget.crlFileBytes
    /// A `.json` input, or one line of an `.ndjson` input.
    public var bundleBytes = InputBudget.bundleBytes
    /// Records in one `.ndjson` input.
    public var bundleRecordsPerFile = InputBudget.bundleRecordsPerFile
    /// One CSV record (all its fields).
    public var csvRecordBytes = InputBudget.csvRecordBytes
    /// Data rows in one CSV input.
    public var csvRows = InputBudget.csvRows
    /// Rows of one patient in a CSV input.
    public var csvRowsPerPatient = InputBudget.csvRowsPerPatient
    /// Input a batch holds read but not yet reported, in bytes of the input files (and at least one record).
    public var inFlightBytes = InputBudget.inFlightBytes

    /// The documented defaults (`InputBudget`).
    public init() {}

    /// The documented defaults.
    public static let standard = InputLimits()
}
