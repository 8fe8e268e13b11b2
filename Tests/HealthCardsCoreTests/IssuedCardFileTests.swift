import Foundation
import Testing

@testable import HealthCardsCore
import HealthCardsTestSupport

/// `IssuedCard.fileBytes` writes the file around the JWS text: the same bytes as `JSONWriter`, and the
/// spec's example file once parsed.
@Suite struct IssuedCardFileTests {
    @Test func fileOfTheSpecExampleJWS() throws {
        let compact = try VerifyFixtures.text(TestSupport.spec("example-00-d-jws.txt")).trimmingCharacters(in: .whitespacesAndNewlines)
        let card = IssuedCard(payload: [], jws: JWS(compact: compact), warnings: [])
        let written = JSONWriter.minified(.object(["verifiableCredential": .array([.string(compact)])]))
        #expect(card.fileBytes == written)
        let spec = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-e-file.smart-health-card")))
        #expect(try JSONParser.parse(card.fileBytes) == spec)
    }

    /// A JWS text that is not base64url and dots (a caller's own value) is escaped by the JSON writer.
    @Test func textOutsideTheAlphabetIsEscaped() throws {
        for compact in [#"a"b.c\d.e"#, "a.b.c\u{1}", "é.b.c", ""] {
            let card = IssuedCard(payload: [], jws: JWS(compact: compact), warnings: [])
            #expect(card.fileBytes == JSONWriter.minified(.object(["verifiableCredential": .array([.string(compact)])])))
            #expect(try JSONParser.parse(card.fileBytes)["verifiableCredential"]?.arrayValue?.first?.stringValue == compact)
        }
    }
}
