import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer

/// A file given to `link create` that is not valid JSON says what the parser found and where (a trial got "is not a
/// JSON object" for an object with a duplicate member, a NUL after the JSON and nesting too deep), and JSON that
/// is not an object says that.
@Suite struct LinkContentReadTests {
    @Test(arguments: [
        (#"{"resourceType":"Patient","resourceType":"Bundle"}"#, #"duplicate member name "resourceType""#),
        ("{\"resourceType\":\"Patient\"}\u{0}", "after the end of the JSON value"),
        (String(repeating: "[", count: 300) + String(repeating: "]", count: 300), "nest"),
        (#"{"resourceType":"Pat"#, "line 1"),
    ])
    func notValidJSONSaysWhatWasFound(text: String, says: String) {
        #expect {
            _ = try LinkContent.read(Array(text.utf8), name: "card.json")
        } throws: { error in
            let error = error as? HealthCardError
            return error?.code == .jsonInvalid && error?.text.hasPrefix("card.json is not valid JSON (") == true
                && error?.text.contains(says) == true
        }
    }

    @Test func jsonThatIsNotAnObjectSaysSo() {
        #expect {
            _ = try LinkContent.read(Array(#"["x"]"#.utf8), name: "list.json")
        } throws: { error in
            (error as? HealthCardError)?.text.hasPrefix("list.json is JSON but not an object") == true
        }
    }
}
