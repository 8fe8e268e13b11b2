/// The minimization rules every card's Bundle follows (digest section 3; spec `docs/index.md`
/// L282–290), references, FHIR string characters, and `meta` (the identity-assurance label).
enum MinimizationRules {
    /// The identity-assurance code system of `meta.security` (SHC spec "Identity Assurance").
    static let ialSystem = "https://smarthealth.cards/ial"
    /// The identity-assurance levels the SHC spec defines for `meta.security`.
    static let ialCodes = ["IAL1", "IAL1.2", "IAL1.4", "IAL2"]

    /// Minimization rules and references of one entry resource.
    static func checkMinimal(
        _ resource: JSONValue, path: String, count: Int, findings f: inout BundleValidator.Findings
    ) {
        if resource["id"] != nil {
            f.error(.minResourceID, "\(path).id", "Resource.id must be removed when minimizing")
        }
        if resource["text"] != nil {
            f.error(.minText, "\(path).text", "the narrative (DomainResource.text) must be removed when minimizing")
        }
        if let meta = resource["meta"] { checkMeta(meta, path: "\(path).meta", findings: &f) }
        var lazy = LazyPath(path)
        walk(resource, path: &lazy, count: count, findings: &f)
    }

    /// `meta`: an object holding only `security`, a non-empty list of identity-assurance Codings, each
    /// exactly `{"system":"https://smarthealth.cards/ial","code":"IAL…"}` (SHC spec: "Resource.meta …
    /// except meta.security"; Vaccination IG: `meta.security` from the IAL value set).
    static func checkMeta(_ meta: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        guard let object = meta.objectValue else {
            f.error(
                .minMeta, path,
                "Resource.meta must be an object holding only 'security' (the identity-assurance label), found \(quoted(meta)); remove it or write {\"security\":[…]}"
            )
            return
        }
        if object.keys != ["security"] {
            let others = object.keys.filter { $0 != "security" }.map(ControlCharacters.escaped)
            f.error(
                .minMeta, path,
                "Resource.meta may hold only 'security' (the identity-assurance label), found \(others.isEmpty ? "no member" : others.joined(separator: ", ")); remove the rest"
            )
        }
        guard let security = object["security"] else { return }
        guard let codings = security.arrayValue, !codings.isEmpty else {
            f.error(
                .metaSecurity, path + ".security",
                "meta.security must be a non-empty list of identity-assurance Codings, found \(quoted(security))")
            return
        }
        let expected =
            "each is exactly {\"system\":\"\(ialSystem)\",\"code\":…} with code \(ialCodes.joined(separator: ", "))"
        for (i, coding) in codings.enumerated() {
            let at = "\(path).security[\(i)]"
            guard let c = coding.objectValue else {
                f.error(
                    .metaSecurity, at,
                    "an identity-assurance label is a Coding object, found \(quoted(coding)); \(expected)")
                continue
            }
            let extra = c.keys.filter { $0 != "system" && $0 != "code" }.map(ControlCharacters.escaped)
            if !extra.isEmpty {
                f.error(
                    .metaSecurity, at,
                    "the identity-assurance Coding holds \(extra.joined(separator: ", ")); \(expected)")
            }
            if c["system"]?.stringValue != ialSystem {
                f.error(
                    .metaSecurity, at + ".system",
                    "the identity-assurance system must be '\(ialSystem)', found \(quoted(c["system"]))")
            }
            if !(c["code"]?.stringValue.map(ialCodes.contains) ?? false) {
                f.error(
                    .metaSecurity, at + ".code",
                    "the identity-assurance level must be one of \(ialCodes.joined(separator: ", ")), found \(quoted(c["code"]))"
                )
            }
        }
    }

    private static func walk(_ node: JSONValue, path: inout LazyPath, count: Int, findings f: inout BundleValidator.Findings) {
        switch node {
        case .object(let o):
            if o.isEmpty { f.error(.minEmptyElement, path.text, "empty object; remove it") }
            if o["coding"] != nil && o["text"] != nil {
                f.error(.minCodeableConceptText, path.text + ".text", "CodeableConcept.text must be removed when minimizing")
            }
            if o["system"] != nil && o["code"] != nil && o["display"] != nil {
                if f.purpose == .issuing {
                    f.error(.minCodingDisplay, path.text + ".display", "Coding.display must be removed when minimizing")
                } else {
                    // The reference validator warns ("should not include .display elements"): the code and its system
                    // say what was given or found; display is a label for people, which verifiers show from the code.
                    f.warn(
                        .minCodingDisplay, path.text + ".display",
                        "the issuer left Coding.display in the card (SMART Health Cards minimization removes it); the code "
                            + "and its system carry the meaning, so this is the issuer's defect, not a different card")
                }
            }
            if let reference = o["reference"]?.stringValue, !BundleValidator.resolves(reference, count: count) {
                f.error(
                    .referenceUnresolved, path.text + ".reference",
                    "reference \(quoted(.string(reference))) does not resolve to an entry of this Bundle as resource:N (N from 0 to \(count - 1))"
                )
            }
            for (k, v) in o {
                if ControlCharacters.firstForbidden(in: k) != nil { checkMemberName(k, path: path.text, findings: &f) }
                path.push(.escapedMember(k))
                walk(v, path: &path, count: count, findings: &f)
                path.pop()
            }
        case .array(let a):
            if a.isEmpty { f.error(.minEmptyElement, path.text, "empty array; remove it") }
            for (i, v) in a.enumerated() {
                path.push(.index(i))
                walk(v, path: &path, count: count, findings: &f)
                path.pop()
            }
        case .string(let s):
            if hasOuterWhitespace(s) {
                f.error(.minStringWhitespace, path.text, "empty string or leading/trailing whitespace: \(quoted(node))")
            }
            if ControlCharacters.firstForbidden(in: s) != nil { checkString(s, path: path.text, findings: &f) }
            if let hidden = ControlCharacters.hiddenCharacter(in: s) {
                let severity: Finding.Severity = f.purpose == .issuing ? .error : .warning
                if let named = f.nameInvisible[path.text], named.scalar == hidden {
                    // A name part: PATIENT_NAME_INVISIBLE (`NameRules`, run first) already says this character at this
                    // place, and is the more specific code. Said once; when issuing it refuses the record as this would.
                    if severity == .error { f.all[named.index].severity = .error }
                } else {
                    f.add(
                        .stringInvisibleCharacter, path.text,
                        "\(quoted(node)) holds \(ControlCharacters.describeHidden(hidden)): in a card, the value differs from "
                            + "the one everyone reads; remove it from the source data",
                        severity)
                }
            }
        default: break
        }
    }

    /// True when `s` is empty or starts or ends with a space, tab, CR or LF: when it differs from
    /// `s.trimmingCharacters(in: " \t\r\n")`. Those are ASCII, and an ASCII byte is never part of another
    /// character's UTF-8, so the first and last bytes tell.
    static func hasOuterWhitespace(_ s: String) -> Bool {
        let utf8 = s.utf8
        guard let first = utf8.first, let last = utf8.last else { return true }
        func space(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
        return space(first) || space(last)
    }

    /// Control characters only, for the parts of the Bundle outside the entry resources.
    static func checkCharacters(
        member: String, value: JSONValue, path: String, findings f: inout BundleValidator.Findings
    ) {
        checkMemberName(member, path: path, findings: &f)
        checkCharacters(value, path: "\(path).\(ControlCharacters.escaped(member))", findings: &f)
    }

    private static func checkCharacters(_ value: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        switch value {
        case .object(let o):
            for (k, v) in o { checkCharacters(member: k, value: v, path: path, findings: &f) }
        case .array(let a):
            for (i, v) in a.enumerated() { checkCharacters(v, path: "\(path)[\(i)]", findings: &f) }
        case .string(let s): checkString(s, path: path, findings: &f)
        default: break
        }
    }

    /// FHIR `string`: no character below U+0020 except tab, CR and LF (FHIR R4 datatypes, `[ \r\n\t\S]+`).
    private static func checkString(_ s: String, path: String, findings f: inout BundleValidator.Findings) {
        guard let (scalar, offset) = ControlCharacters.firstForbidden(in: s) else { return }
        f.error(
            .stringControlCharacter, path,
            "the string holds the control character \(ControlCharacters.codePoint(scalar)) at character \(offset + 1) "
                + "(\(quoted(.string(s)))); FHIR strings may not hold characters below U+0020 other than tab, CR and LF. Remove it from the source data"
        )
    }

    private static func checkMemberName(_ name: String, path: String, findings f: inout BundleValidator.Findings) {
        guard let (scalar, offset) = ControlCharacters.firstForbidden(in: name) else { return }
        f.error(
            .stringControlCharacter, "\(path).\(ControlCharacters.escaped(name))",
            "the JSON member name holds the control character "
                + "\(ControlCharacters.codePoint(scalar)) at character \(offset + 1); FHIR element names never do. Remove it"
        )
    }
}

/// The characters a person's name may hold. A name is printed on cards and shown by verifier apps on
/// one line: a line break, tab or other control character in it (allowed in a FHIR `string`) would
/// split or hide it, so every part of every `Patient.name` is refused when it holds one.
enum NameRules {
    /// The `HumanName` members that hold text (a string, or a list of strings).
    static let parts = ["text", "family", "given", "prefix", "suffix"]

    static func check(_ patient: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        for (i, name) in (patient["name"]?.arrayValue ?? []).enumerated() {
            for part in parts {
                let values: [(String, String)]
                switch name[part] {
                case .string(let s)?: values = [(s, "\(path).name[\(i)].\(part)")]
                case .array(let list)?:
                    values = list.enumerated().compactMap { j, v in
                        v.stringValue.map { ($0, "\(path).name[\(i)].\(part)[\(j)]") }
                    }
                default: values = []
                }
                // FHIR JSON's HumanName: family and text are strings, given, prefix and suffix lists of strings.
                // Anything else (a number, a bare string for given, null) is not FHIR, and apps show no name.
                let list = part == "given" || part == "prefix" || part == "suffix"
                let strings = { (value: JSONValue) in value.arrayValue?.allSatisfy { $0.stringValue != nil } == true }
                if let value = name[part], list ? !strings(value) : value.stringValue == nil {
                    let example = list ? "[\"Ada\"]" : "\"Testperson\""
                    f.error(
                        .patientNameForm, "\(path).name[\(i)].\(part)",
                        "\(part) is \(quoted(value)); FHIR writes \(part) as \(list ? "a list of strings" : "a string"), "
                            + "e.g. \"\(part)\": \(example)")
                }
                // Characters no FHIR string may hold are already STRING_CONTROL_CHARACTER.
                for (value, at) in values where ControlCharacters.firstForbidden(in: value) == nil {
                    guard let (scalar, offset) = firstControl(in: value) else { continue }
                    f.error(
                        .patientNameCharacter, at,
                        "the name part \(Quote.text(escaped(value))) holds \(ControlCharacters.codePoint(scalar)) "
                            + "(a line break, tab or other control character) at character \(offset + 1); a name is shown on one line. Remove it from the source data"
                    )
                }
                for (value, at) in values {
                    guard let (scalar, offset) = firstInvisible(in: value) else { continue }
                    f.nameInvisible[at] = (scalar, f.all.count)
                    f.warn(
                        .patientNameInvisible, at,
                        "the name part \(Quote.text(ControlCharacters.escaped(value))) holds \(ControlCharacters.codePoint(scalar)), an "
                            + "invisible \(isBidiControl(scalar) ? "bidirectional control" : "format") character, at character "
                            + "\(offset + 1): it can make the name display as another, and whoever checks the card cannot see it. "
                            + "Remove it from the source data")
                }
            }
        }
    }

    /// `text` with the characters `firstControl` finds written as `\u{…}`.
    static func escaped(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if firstControl(in: String(scalar)) != nil {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// The first bidirectional control or invisible format character (`ControlCharacters.isInvisibleFormat`),
    /// with its 0-based position in Unicode scalars. A zero-width (non-)joiner between two letters beyond
    /// ASCII is how some scripts are written (Persian, the Indic scripts) and is not counted.
    static func firstInvisible(in text: String) -> (scalar: Unicode.Scalar, offset: Int)? {
        let scalars = Array(text.unicodeScalars)
        for (i, scalar) in scalars.enumerated() where ControlCharacters.isInvisibleFormat(scalar) {
            if scalar.value == 0x200C || scalar.value == 0x200D, i > 0, i + 1 < scalars.count,
                scalars[i - 1].value > 0x7F, scalars[i + 1].value > 0x7F,
                scalars[i - 1].properties.isAlphabetic || scalars[i - 1].properties.generalCategory == .nonspacingMark,
                scalars[i + 1].properties.isAlphabetic
            {
                continue
            }
            return (scalar, i)
        }
        return nil
    }

    /// True for the Unicode `Bidi_Control` characters.
    static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// The first C0 control (tab, CR and LF included), DEL, C1 control, or line or paragraph separator
    /// (U+2028, U+2029), with its 0-based position in Unicode scalars.
    static func firstControl(in text: String) -> (scalar: Unicode.Scalar, offset: Int)? {
        for (i, scalar) in text.unicodeScalars.enumerated()
        where ControlCharacters.isTerminalControl(scalar) || scalar.value == 0x2028 || scalar.value == 0x2029 {
            return (scalar, i)
        }
        return nil
    }
}
