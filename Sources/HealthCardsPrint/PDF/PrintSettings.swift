import HealthCardsCore
import HealthCardsQR

/// A paper size for printed cards.
public enum Paper: String, Sendable, CaseIterable {
    /// ISO A4, 210 × 297 mm.
    case a4
    /// US Letter, 8.5 × 11 in (215.9 × 279.4 mm).
    case letter

    /// Width and height in millimetres.
    public var millimetres: (width: Double, height: Double) {
        switch self {
        case .a4: return (210, 297)
        case .letter: return (215.9, 279.4)
        }
    }

    /// The countries whose glibc locales print on US Letter (`LC_PAPER` height 279 mm): the United
    /// States, Canada, Mexico, the Philippines, Chile, Colombia, Venezuela, Costa Rica, Guatemala,
    /// Nicaragua, Panama, El Salvador, the Dominican Republic and Puerto Rico.
    static let letterTerritories: Set<String> = [
        "US", "CA", "MX", "PH", "CL", "CO", "VE", "CR", "GT", "NI", "PA", "SV", "DO", "PR",
    ]

    /// The paper of the locale: the territory of the first of `LC_ALL`, `LC_PAPER`, `LANG` that is set
    /// (`en_US.UTF-8` → US → Letter); A4 for any other territory, and when none is set or it names no
    /// territory (`C`, `POSIX`, `C.UTF-8`).
    /// - Parameter environment: the variables to read (the process's environment by default).
    public static func fromLocale(_ environment: [String: String]) -> Paper {
        guard
            let locale = ["LC_ALL", "LC_PAPER", "LANG"].lazy.compactMap({ environment[$0] }).first(where: {
                !$0.isEmpty
            })
        else {
            return .a4
        }
        // language[_TERRITORY][.codeset][@modifier]
        let base = locale.split(separator: ".", maxSplits: 1).first.map(String.init) ?? locale
        let noModifier = base.split(separator: "@", maxSplits: 1).first.map(String.init) ?? base
        let parts = noModifier.split(separator: "_")
        guard parts.count == 2 else { return .a4 }
        return letterTerritories.contains(String(parts[1]).uppercased()) ? .letter : .a4
    }
}

/// An issuer's logo for the top of printed cards: PNG or SVG bytes, checked when made. Each
/// `CardPrinter` decodes its own copy (Cairo image surfaces and librsvg handles are not shared
/// between threads).
public struct Logo: Sendable {
    public enum Format: Sendable { case png, svg }
    public let format: Format
    public let bytes: [UInt8]
    /// Where it came from, for messages.
    public let source: String

    /// The largest logo file accepted, in bytes (a logo is a few kilobytes).
    public static let maxBytes = 4 << 20

    /// Reads a logo from bytes: PNG by its signature; SVG when it starts as XML does (`<`, after a byte order mark
    /// or white space; or gzip-compressed, `.svgz`).
    /// - Throws: `HealthCardError(.pdf)` when it is neither (saying what it looks like instead, never quoting
    ///   it), is larger than `maxBytes`, or cannot be decoded or (an SVG) drawn (with the decoder's message).
    public init(bytes: [UInt8], source: String) throws {
        guard bytes.count <= Self.maxBytes else {
            throw HealthCardError(
                .pdf, "\(source) is \(bytes.count) bytes; a logo may be at most \(Self.maxBytes) bytes")
        }
        self.bytes = bytes
        self.source = source
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
            format = .png
        } else if let found = Self.notSVG(bytes) {
            throw HealthCardError(
                .pdf, "\(source) is not a logo image: it is \(found); expected an SVG file (XML, starting with <svg or "
                    + "<?xml) or a PNG file")
        } else {
            format = .svg
        }
        if case .svg(let image) = try decoded() {
            // Drawn once now: librsvg finds some faults only when it draws (over 500,000 referenced
            // elements, say), and found at the first card's PDF they stopped a run that had already
            // written QR images. Now such a logo is refused before anything is written.
            let canvas = try Canvas(width: 100, height: 100)
            try image.draw(on: canvas, x: 0, y: 0, width: 100, height: 100)
            _ = try canvas.finish()
        }
    }

    /// What `bytes` are when they cannot be an SVG (nor a PNG, checked before): nil when they may be one.
    static func notSVG(_ bytes: [UInt8]) -> String? {
        func starts(_ signature: [UInt8]) -> Bool { bytes.starts(with: signature) }
        // gzip (an .svgz) and UTF-16 byte order marks: librsvg and libxml read those.
        if starts([0x1F, 0x8B]) || starts([0xFF, 0xFE]) || starts([0xFE, 0xFF]) { return nil }
        let text = UTF8BOM.strip(bytes).drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        if text.first == UInt8(ascii: "<") { return nil }
        if bytes.isEmpty { return "an empty file" }
        if text.isEmpty { return "a file of white space only" }
        if starts([0xFF, 0xD8, 0xFF]) { return "a JPEG image (convert it to PNG)" }
        if starts(Array("GIF8".utf8)) { return "a GIF image (convert it to PNG)" }
        if starts(Array("RIFF".utf8)) && bytes.count >= 12 && Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return "a WebP image (convert it to PNG)"
        }
        if starts(Array("%PDF-".utf8)) { return "a PDF document" }
        if starts([0x50, 0x4B, 0x03, 0x04]) { return "a ZIP archive" }
        let head = bytes.prefix(4096)
        let controls = head.filter { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }.count
        if head.contains(0) || controls * 20 > head.count { return "binary data of an unknown kind" }
        return "text that is not XML (it does not start with '<')"
    }

    /// Decodes the logo for one thread.
    func decoded() throws -> DecodedLogo {
        switch format {
        case .png: return .png(try RasterImage(png: bytes, source: source))
        case .svg: return .svg(try SVGImage(svg: bytes, source: source))
        }
    }
}

/// A logo decoded for drawing.
enum DecodedLogo {
    case png(RasterImage)
    case svg(SVGImage)

    var aspectRatio: Double {
        switch self {
        case .png(let image): return Double(image.width) / Double(image.height)
        case .svg(let image): return image.aspectRatio
        }
    }
}

/// How cards are printed: the same for every card of a run.
public struct PrintSettings: Sendable {
    public var paper: Paper
    /// The issuer's name as people know it ("County Health Department"); nil prints the host of `iss`.
    public var issuerName: String?
    /// Print each dose's lot number (off for privacy: `--no-lot`).
    public var showLot: Bool
    /// Print who gave each dose or ran each test (off for privacy: `--no-performer`).
    public var showPerformer: Bool
    public var logo: Logo?
    /// The date printed on the page and used for `HumanName.period`, `YYYY-MM-DD` (e.g. `Clock.todayUTC(now)`,
    /// `now` in seconds since 1970): given, never read from the system clock.
    public var today: String

    public init(
        paper: Paper = .a4, issuerName: String? = nil, showLot: Bool = true, showPerformer: Bool = true,
        logo: Logo? = nil, today: String
    ) {
        self.paper = paper
        self.issuerName = issuerName
        self.showLot = showLot
        self.showPerformer = showPerformer
        self.logo = logo
        self.today = today
    }

    /// The longest issuer name printed, in characters: 100. The name is in the header, the notes and the wallet
    /// card; `--issuer-name` is refused over it, and a longer host from a card's `iss` is cut with "…".
    public static let maxIssuerNameCharacters = 100

    /// The name printed for the issuer: `issuerName`, else the host of `iss`; at most
    /// `maxIssuerNameCharacters` (cut with "…"), so no name runs off the page.
    func issuerDisplayName(_ iss: String) -> String {
        var name: String
        if let issuerName, !issuerName.isEmpty {
            name = issuerName
        } else {
            var host = iss.hasPrefix("https://") ? String(iss.dropFirst(8)) : iss
            if let slash = host.firstIndex(of: "/") { host = String(host[..<slash]) }
            name = host.isEmpty ? "the issuer" : host
        }
        if name.count > Self.maxIssuerNameCharacters { name = String(name.prefix(Self.maxIssuerNameCharacters - 1)) + "…" }
        return name
    }
}
