/// The order of doses and lab results on a card. Verifier apps show entries in the order stored, so
/// the issuer lists each kind (Immunizations, Observations) by date, earliest first, keeping the input's
/// order for equal dates; every other entry keeps its place. `verify` warns about a card that does not.
enum EntryOrder {
    /// The instant a dose or lab result is sorted by: the earliest instant of its date
    /// (`Immunization.occurrenceDateTime`; `Observation.effectiveDateTime`, else `effectivePeriod.start`,
    /// else `.end`); nil when it has no valid date (such entries go after the dated ones).
    static func sortKey(_ resource: JSONValue) -> Int64? {
        DateRules.clinicalDates(resource).lazy.compactMap { FHIRDateTime($0.text)?.earliest }.first
    }

    /// The order of `entries` on the card: `order[newIndex] == oldIndex`. Immunizations are sorted among
    /// the places Immunizations hold, Observations among theirs; the sort is stable.
    static func sorted(_ entries: [JSONValue]) -> [Int] {
        var order = Array(entries.indices)
        for type in ["Immunization", "Observation"] {
            let places = entries.indices.filter { entries[$0]["resource"]?["resourceType"]?.stringValue == type }
            let keys = places.map { sortKey(entries[$0]["resource"] ?? .null) }
            let byDate = places.indices.sorted { a, b in
                switch (keys[a], keys[b]) {
                case (let x?, let y?): return x != y ? x < y : a < b
                case (.some, nil): return true
                case (nil, .some): return false
                case (nil, nil): return a < b
                }
            }
            for (place, index) in zip(places, byDate) { order[place] = places[index] }
        }
        return order
    }

    /// Warns at each dose or lab result listed after one of the same kind with a later date.
    static func checkOrder(_ entries: [JSONValue], findings f: inout BundleValidator.Findings) {
        var latest: [String: (key: Int64, index: Int, text: String)] = [:]
        for (i, entry) in entries.enumerated() {
            guard let resource = entry["resource"], let type = resource["resourceType"]?.stringValue,
                type == "Immunization" || type == "Observation",
                let (member, text) = DateRules.clinicalDates(resource).first, let key = FHIRDateTime(text)?.earliest
            else { continue }
            if let before = latest[type], before.key > key {
                let what = type == "Immunization" ? "dose" : "lab result"
                f.warn(
                    .bundleEntryOrder, "Bundle.entry[\(i)].resource.\(member)",
                    "this \(what) (\(Quote.text(text))) is listed after a later one (Bundle.entry[\(before.index)], "
                        + "\(Quote.text(before.text))); verifier apps show entries in the order stored. List them by date"
                )
            }
            if latest[type].map({ $0.key <= key }) ?? true { latest[type] = (key, i, text) }
        }
    }
}
