import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
import HealthCardsTestSupport

/// The name shown for a person (verify's summary, printed cards): FHIR HumanName's use, period, prefix,
/// suffix and text.
struct HumanNameTests {
    static let today = "2024-06-15"

    func name(_ json: String) throws -> String? {
        HumanName.display(try JSONParser.parse(Array(json.utf8)), today: Self.today)
    }

    @Test func officialAndUsualComeBeforeOldAndMaiden() throws {
        #expect(
            try name(
                #"[{"use":"maiden","family":"Smith","given":["Jane"]},{"use":"official","family":"Jones","given":["Jane"]}]"#
            ) == "Jane Jones")
        #expect(
            try name(#"[{"use":"old","family":"Smith","given":["Jane"]},{"family":"Jones","given":["Jane"]}]"#)
                == "Jane Jones")
        // usual (what the person goes by) before official.
        #expect(
            try name(
                #"[{"use":"official","family":"Doe","given":["Robert"]},{"use":"usual","family":"Doe","given":["Bob"]}]"#
            ) == "Bob Doe")
        // A nickname does not replace the official name.
        #expect(
            try name(#"[{"use":"nickname","given":["Bobby"]},{"use":"official","family":"Doe","given":["Robert"]}]"#)
                == "Robert Doe")
        // Only an old name: it is still the name on the card.
        #expect(try name(#"[{"use":"old","family":"Smith","given":["Jane"]}]"#) == "Jane Smith")
        // Equal ranks: the first in the list.
        #expect(try name(#"[{"family":"First","given":["A"]},{"family":"Second","given":["B"]}]"#) == "A First")
    }

    @Test func periodIsRespected() throws {
        // The official name ended in 2020; the newer one started then.
        #expect(
            try name(
                #"[{"use":"official","family":"Smith","given":["Jane"],"period":{"end":"2020-03-01"}},{"use":"official","family":"Jones","given":["Jane"],"period":{"start":"2020-03-02"}}]"#
            ) == "Jane Jones")
        // A name that starts after today is not current yet.
        #expect(
            try name(
                #"[{"use":"usual","family":"Future","given":["Jane"],"period":{"start":"2030"}},{"use":"official","family":"Now","given":["Jane"]}]"#
            ) == "Jane Now")
        // Partial precision: ending 2024 includes 2024-06-15; ending 2024-05 does not.
        #expect(
            try name(
                #"[{"use":"usual","family":"Year","given":["J"],"period":{"end":"2024"}},{"family":"Other","given":["J"]}]"#
            ) == "J Year")
        #expect(
            try name(
                #"[{"use":"usual","family":"Month","given":["J"],"period":{"end":"2024-05"}},{"family":"Other","given":["J"]}]"#
            ) == "J Other")
        // dateTime bounds are judged by their day.
        #expect(
            try name(
                #"[{"use":"usual","family":"Today","given":["J"],"period":{"start":"2024-06-15T23:00:00+02:00"}},{"family":"Other","given":["J"]}]"#
            ) == "J Today")
        // When no name is current, every name is considered.
        #expect(
            try name(
                #"[{"use":"old","family":"Smith","given":["Jane"],"period":{"end":"2001"}},{"use":"official","family":"Jones","given":["Jane"],"period":{"end":"2010"}}]"#
            ) == "Jane Jones")
    }

    @Test func prefixSuffixAndText() throws {
        #expect(
            try name(#"[{"prefix":["Dr."],"given":["Maria","José"],"family":"García López","suffix":["PhD"]}]"#)
                == "Dr. Maria José García López PhD")
        #expect(try name(#"[{"text":"Prof. Ana Lima"}]"#) == "Prof. Ana Lima")
        // text, when given, is the name as it is written.
        #expect(try name(#"[{"text":"Jean-Luc Picard","family":"Picard","given":["Jean-Luc"]}]"#) == "Jean-Luc Picard")
        // Blank parts are left out, whitespace runs (a line break) become one space.
        #expect(try name(#"[{"given":["Ada"," ",""],"family":"Test\nperson"}]"#) == "Ada Test person")
        #expect(try name(#"[{"family":"Solo"}]"#) == "Solo")
        #expect(try name(#"[{"given":["Cher"]}]"#) == "Cher")
    }

    @Test func namesWithoutTextAreSkipped() throws {
        #expect(
            try name(#"[{"use":"usual","given":[" "]},{"use":"old","family":"Kept","given":["Name"]}]"#) == "Name Kept")
        #expect(try name(#"[]"#) == nil)
        #expect(try name(#"[{"use":"official"}]"#) == nil)
        #expect(HumanName.display(nil, today: Self.today) == nil)
    }

    @Test func eastAsianNamesAreFamilyFirstWithoutSpace() throws {
        #expect(try name(#"[{"family":"王","given":["小明"]}]"#) == "王小明")
        #expect(try name(#"[{"family":"山田","given":["太郎"]}]"#) == "山田太郎")
        #expect(try name(#"[{"family":"김","given":["민준"]}]"#) == "김민준")
        // Latin, Greek, Cyrillic, Arabic and Hebrew keep given then family.
        #expect(try name(#"[{"family":"Παπαδοπούλου","given":["Ελένη"]}]"#) == "Ελένη Παπαδοπούλου")
        #expect(try name(#"[{"family":"Иванова","given":["Анна"]}]"#) == "Анна Иванова")
        #expect(try name(#"[{"family":"المنصوري","given":["فاطمة"]}]"#) == "فاطمة المنصوري")
        #expect(try name(#"[{"family":"כהן","given":["דוד"]}]"#) == "דוד כהן")
        // A mixed name (romanized given name) keeps the general order.
        #expect(try name(#"[{"family":"王","given":["Ming"]}]"#) == "Ming 王")
    }

    @Test func verifySummaryUsesTheRule() throws {
        let patient = try JSONParser.parse(
            Array(
                #"{"resourceType":"Patient","name":[{"use":"maiden","family":"Smith","given":["Jane"]},{"use":"official","prefix":["Dr."],"family":"Jones","given":["Jane"]}],"birthDate":"1970-01-01"}"#
                    .utf8))
        #expect(CredentialReport.describe(patient, today: "2026-12-01") == "patient  Dr. Jane Jones, born 1970-01-01")
    }
}
