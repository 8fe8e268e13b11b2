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

/// Synthetic vaccination data in the CVRS layout (the columns of templates/covid19-vaccination.json):
/// N patients with 1 to 4 doses each, made-up names, deterministic for a seed. Rows come in dose
/// rounds (every patient's first dose, then every second dose, ...), as a date-sorted registry
/// extract does, so a patient's rows are far apart and the issuer must group them by position.
struct SyntheticCVRS {
    static let header = "vax_event_id,ext_type,recip_id,recip_first_name,recip_middle_name,recip_last_name,recip_dob,recip_sex,recip_address_city,recip_address_state,admin_name,vtrcks_prov_pin,admin_date,cvx,ndc,mvx,lot_number,vax_expiration,vax_admin_site,vax_route,dose_num"
    static let given = ["Ada", "Bob", "Chloé", "Dmitri", "Eun-ji", "Farah", "Gustavo", "Hana", "Ivan", "Jun", "Kwame", "Lucía", "Mateo", "Nia", "Oskar", "Priya"]
    static let middle = ["", "", "M.", "K", "Lee", "", "J.", ""]
    static let family = ["Testperson", "Sampleton", "Exampledóttir", "O'Fakename", "Mock-Smith", "Placeholder", "Fictional", "Dummy-Jones"]
    static let sites = ["ABC General Hospital", "Main St Pharmacy", "County Clinic, North", "School Clinic"]
    static let vaccines = [("207", "80777-0273-10", "MOD"), ("208", "59267-1000-01", "PFR"), ("212", "59676-0580-15", "JSN"), ("229", "80777-0282-05", "MOD")]

    var random: SeededRandom

    init(seed: UInt64) { random = SeededRandom(state: seed) }

    mutating func next() -> UInt64 { random.next() }

    mutating func pick<T>(_ list: [T]) -> T { list[Int(next() % UInt64(list.count))] }

    static func pad(_ v: Int, _ n: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, n - s.count)) + s
    }

    /// Writes `patients` patients to `path`; returns the number of rows.
    static func write(patients: Int, seed: UInt64 = 1, to path: String) throws -> Int {
        var g = SyntheticCVRS(seed: seed)
        let doses = (0..<patients).map { _ in 1 + Int(g.next() % 4) }
        guard let file = fopen(path, "w") else { throw BenchError("cannot write \(path)") }
        defer { fclose(file) }
        fputs(header + "\n", file)
        var rows = 0
        var event = 0
        for round in 0..<4 {
            for p in 0..<patients where doses[p] > round {
                // Per-patient values come from a generator seeded by the patient, so every row agrees.
                var pg = SyntheticCVRS(seed: seed &* 1_000_003 &+ UInt64(p))
                let first = pg.pick(given), mid = pg.pick(middle), last = pg.pick(family)
                let dob = "\(1930 + Int(pg.next() % 85))-\(pad(1 + Int(pg.next() % 12), 2))-\(pad(1 + Int(pg.next() % 28), 2))"
                let sex = pg.pick(["F", "M"])
                let vaccine = pg.pick(vaccines)
                let site = pg.pick(sites)
                var month = 1 + Int(pg.next() % 6)
                for _ in 0..<round { month += 1 + Int(pg.next() % 3) }
                let date = "\(2021 + (month - 1) / 12)-\(pad((month - 1) % 12 + 1, 2))-\(pad(1 + Int(g.next() % 28), 2))"
                event += 1
                let siteField = site.contains(",") ? "\"\(site)\"" : site
                let line = "EV-\(pad(event, 8)),1,P-\(pad(p + 1, 8)),\(first),\(mid),\(last),\(dob),\(sex),Springfield,IL,\(siteField),999999,\(date),\(vaccine.0),\(vaccine.1),\(vaccine.2),EN\(pad(Int(g.next() % 100_000), 5))A,2023-01-01,LA,C28161,\(round + 1)\n"
                fputs(line, file)
                rows += 1
            }
        }
        return rows
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
