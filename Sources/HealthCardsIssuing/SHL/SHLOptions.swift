import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// What the links of a run carry besides the URL and key: label, `exp`, viewer prefix, QR image.
public struct SHLOptions: Sendable {
    public var label: SHLLabel
    /// The link's `exp` in seconds since 1970 (a staleness hint for receivers), or nil.
    public var exp: Int64?
    /// A viewer URL ending in `#` put in front of each link, or nil for bare `shlink:/` links.
    public var viewer: String?
    /// Write the link's QR image (`OUT/shl/<id>.png`).
    public var makeQR: Bool
    public var qrImage: QRImage
    /// Raw-DEFLATE the card before encrypting (`"zip":"DEF"`). Off by default: the card's JWS is already
    /// compressed, and every receiver can read an uncompressed file.
    public var deflate: Bool
    /// File names (`OutputNames.safe(id)`) whose withdrawn link is replaced by a new one (`--shl-renew ID`); for
    /// any other name a withdrawn link stays withdrawn and no new link is made.
    public var renew: Set<String> = []
    /// What each link's file holds (`--content`): the card file (default), the person's shared FHIR Bundle, or
    /// both where the mode allows (a `U` link holds one file: the card, `SHLContent.both`).
    public var content: SHLContent = .card
    /// Long-term link (flag `LU`, the IG's IPS example): the content may change, and a receiver may fetch it
    /// again; a later run re-encrypts the current content under the same key and file name with a fresh IV.
    public var longTerm = false
    /// Only update links already handed out (their files re-encrypted with the current content when it changed,
    /// same key and file name, fresh IV); never make a new link.
    public var updateOnly = false

    /// The link's flag: `U`, or `LU` for a long-term link (letters in alphabetical order).
    public var flag: String { longTerm ? "LU" : "U" }

    public init(
        label: SHLLabel = SHLLabel(), exp: Int64? = nil, viewer: String? = nil, makeQR: Bool = true,
        qrImage: QRImage = QRImage(), deflate: Bool = false
    ) {
        self.label = label
        self.exp = exp
        self.viewer = viewer
        self.makeQR = makeQR
        self.qrImage = qrImage
        self.deflate = deflate
    }

    /// Checks a `--viewer` URL: `https://` (or `http://localhost` for a local viewer), ending in `#`, with no
    /// other `#`, no spaces or control characters, at most 200 characters (the link's QR stays small).
    /// - Returns: the URL as given.
    /// - Throws: `HealthCardError(.configuration)` saying what is wrong.
    public static func checkViewer(_ viewer: String) throws(HealthCardError) -> String {
        let example = "e.g. https://viewer.example.org/#"
        guard viewer.hasPrefix("https://") || viewer.hasPrefix("http://localhost") else {
            throw HealthCardError(.configuration, "viewer \(viewer) is not an https URL; \(example)").about("viewer")
        }
        guard viewer.hasSuffix("#"), viewer.filter({ $0 == "#" }).count == 1 else {
            throw HealthCardError(
                .configuration,
                "viewer \(viewer) must end with '#' (and have no other '#'): the link goes in the fragment, which a "
                    + "browser never sends to the viewer's server; \(example)"
            ).about("viewer")
        }
        guard !viewer.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw HealthCardError(.configuration, "viewer has spaces or control characters; \(example)").about("viewer")
        }
        guard viewer.count <= 200 else {
            throw HealthCardError(
                .configuration, "viewer is \(viewer.count) characters; keep it under 200 so the link's QR stays small"
            ).about("viewer")
        }
        return viewer
    }
}

/// What a static link's file carries.
public enum SHLContent: String, Sendable, CaseIterable {
    /// The `.smart-health-card` file (`cty` `application/smart-health-card`): signed, so a receiver can verify
    /// who issued it.
    case card
    /// The person's shared FHIR Bundle (`SharedBundle`, `cty` `application/fhir+json`), as the Kill the Clipboard
    /// profile asks: a `collection` with the Patient and the card's clinical resources.
    case bundle
    /// Both where the mode allows it. A `U` link names one file, so a static link carries the card: it is
    /// signed (a receiver can tell who issued it and that nothing changed), and the Bundle holds nothing the
    /// card's own Bundle lacks.
    case both

    /// The content type and bytes of the one file of a `U` link for a card file.
    /// - Throws: `HealthCardError(.validation)` when the Bundle cannot be made from the card (`SharedBundle`).
    /// - Parameter pdf: the printed card, which a Bundle carries as a `DocumentReference` (ignored for a card).
    public func fileContent(card: [UInt8], pdf: [UInt8]? = nil) throws(HealthCardError) -> (contentType: String, bytes: [UInt8]) {
        switch self {
        case .card, .both: return (JWE.smartHealthCard, card)
        case .bundle: return (SharedBundle.contentType, try SharedBundle.make(cardFile: card, pdf: pdf))
        }
    }
}

/// A link label (links-specification: `label`, at most 80 characters, shown to the receiver) made from a
/// template. The label is public to whoever sees the link or its QR, so by default it names no one: the
/// default is `SMART Health Card`. `{name}` in the template is replaced by the Patient's name from the card,
/// only when the operator writes it (`--shl-label 'Vaccinations of {name}'`); a label that would be over 80
/// characters then has the name shortened with `…`.
public struct SHLLabel: Sendable, Equatable {
    /// The label used when none is given.
    public static let defaultText = "SMART Health Card"
    /// The one placeholder.
    public static let namePlaceholder = "{name}"

    /// The template text.
    public let template: String

    /// The default label.
    public init() { template = Self.defaultText }

    /// - Parameter option: the name of the setting that gave the template, for messages (a program passes its
    ///   own, such as a command-line option).
    /// - Throws: `HealthCardError(.configuration)` for an empty template, control characters, a `{…}` other than
    ///   `{name}`, or a text (without `{name}`) over 80 characters.
    public init(template: String, option: String = "label") throws(HealthCardError) {
        guard !template.trimmingCharacters(in: " ").isEmpty else {
            throw HealthCardError(.configuration, "\(option) is empty; leave it out for the label '\(Self.defaultText)'")
        }
        if template.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw HealthCardError(.configuration, "\(option) has control characters (a line break?); give one line of text")
        }
        let fixed = template.replacingAll(Self.namePlaceholder, with: "")
        if fixed.contains("{") || fixed.contains("}") {
            throw HealthCardError(
                .configuration,
                "\(option) \(Quote.text(template, limit: 100)) has a placeholder other than \(Self.namePlaceholder), the only one "
                    + "(the Patient's name)")
        }
        guard SHLink.labelFits(fixed) else {
            throw HealthCardError(
                .configuration,
                "\(option) is \(fixed.unicodeScalars.count) characters without \(Self.namePlaceholder) (Unicode characters, "
                    + "code points, as the links specification counts them); a link label has at most \(SHLink.maxLabelCharacters)")
        }
        self.template = template
    }

    /// True when the template puts the person's name in the label.
    public var namesThePerson: Bool { template.contains(Self.namePlaceholder) }

    /// The label for one card.
    /// - Parameter bundle: the card's Bundle, for `{name}` (its Patient's first name entry: `text`, or the
    ///   given names and family name).
    /// - Returns: the label (at most 80 Unicode characters, code points) and whether the name was shortened to fit.
    public func render(bundle: JSONValue?) -> (label: String, shortened: Bool) {
        guard namesThePerson else { return (template, false) }
        var name = Array(Self.patientName(in: bundle) ?? "")
        var label = template.replacingAll(Self.namePlaceholder, with: String(name))
        var shortened = false
        while !SHLink.labelFits(label) && !name.isEmpty {
            name.removeLast()
            shortened = true
            label = template.replacingAll(Self.namePlaceholder, with: String(name) + "…")
        }
        return (label, shortened)
    }

    /// The Patient's name in a card's Bundle: `name[0].text`, or `name[0].given` and `family` joined by spaces.
    static func patientName(in bundle: JSONValue?) -> String? {
        for entry in bundle?["entry"]?.arrayValue ?? []
        where entry["resource"]?["resourceType"]?.stringValue == "Patient" {
            let name = entry["resource"]?["name"]?[0]
            if let text = name?["text"]?.stringValue { return text }
            let parts =
                (name?["given"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                + [name?["family"]?.stringValue].compactMap { $0 }
            return parts.isEmpty ? nil : parts.joined(separator: " ")
        }
        return nil
    }
}

extension String {
    /// Every occurrence of `target` replaced by `replacement` (no Foundation).
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let range = rest.range(of: target) {
            out += rest[..<range.lowerBound]
            out += replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}
