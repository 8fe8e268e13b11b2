/// A FHIR path (`Bundle.entry[1].resource.code.coding[0]`) kept as its steps and written out only when a finding
/// needs it: a walk over every element of a Bundle builds no text for the elements that are fine.
package struct LazyPath {
    package enum Step {
        /// `.name` as it is.
        case member(String)
        /// `.name` with the characters a message must not show raw escaped (`ControlCharacters.escaped`).
        case escapedMember(String)
        /// `[i]`.
        case index(Int)
    }

    package var root: String
    package private(set) var steps: [Step] = []

    package init(_ root: String) {
        self.root = root
        steps.reserveCapacity(12)
    }

    package mutating func push(_ step: Step) { steps.append(step) }
    package mutating func pop() { steps.removeLast() }

    /// The path as text: the root, then each step.
    package var text: String {
        var out = root
        for step in steps {
            switch step {
            case .member(let name): out += ".\(name)"
            case .escapedMember(let name): out += ".\(ControlCharacters.escaped(name))"
            case .index(let i): out += "[\(i)]"
            }
        }
        return out
    }
}
