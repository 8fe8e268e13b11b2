import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// A clone without `../shared` beside it gets only `Tests/requirements.txt` in its test venv, so every package a
/// test's Python imports must be listed there: `QRRobustnessTests` and `QRImagesTests` failed with
/// `ModuleNotFoundError: No module named 'PIL'` because Pillow came only from the checker's requirements.
///
/// Every Python source the tests run is read (the `.py` files under `Tests/`, and the scripts written inline in the
/// Swift tests); Python's own `ast` (for files) finds their imports, `sys.stdlib_module_names` leaves out the
/// standard library, and `importlib.metadata.packages_distributions()` of the test venv names the distribution each
/// other module comes from, which must be a requirement of `Tests/requirements.txt`.
@Suite struct TestPythonRequirementsTests {
    static let root = VerifyFixtures.repoRoot

    /// The top-level modules imported by the Python written inline in the Swift test sources: lines that, once
    /// trimmed of indentation and an opening quote, are `import a, b` or `from a import …` (a Swift `import` line
    /// is left out: at column 0, a Swift module, or one the file checks with `canImport`; so are comments).
    static func inlineImports() throws -> Set<String> {
        // Swift's own, imported inside `#if` (indented) in a few test files.
        let swiftModules: Set<String> = ["Foundation", "FoundationNetworking", "Glibc", "Darwin", "Musl", "Testing", "XCTest"]
        let folder = root.appendingPathComponent("Tests")
        var modules: Set<String> = []
        let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for raw in text.split(separator: "\n") {
                if raw.hasPrefix("import ") || raw.hasPrefix("@testable") { continue }
                var line = raw.drop { $0 == " " }
                if line.hasPrefix("//") { continue }
                if line.hasPrefix("let script = \"") { line = line.dropFirst("let script = \"".count) }
                if line.hasPrefix("\"") { line = line.dropFirst() }
                let words = line.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\\" })
                guard let first = words.first, first == "import" || first == "from", words.count >= 2 else { continue }
                if first == "from" && !(words.count >= 3 && words[2] == "import") { continue }
                let names = first == "import" ? words.dropFirst().prefix { $0 != "as" } : words[1...1]
                for name in names {
                    let top = name.split(separator: ".").first.map(String.init) ?? ""
                    guard !top.isEmpty, top.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
                        !swiftModules.contains(top), !text.contains("canImport(\(top))")
                    else { continue }
                    modules.insert(top)
                }
            }
        }
        return modules
    }

    @Test(.enabled(if: TestSupport.python != nil, "the test venv is made by `make test-deps`"))
    func everyPackageATestImportsIsATestRequirement() throws {
        let inline = try Self.inlineImports()
        // The inline scripts this reads include the JPEGs from Pillow (QRImagesTests) and pypdf's extraction.
        #expect(inline.isSuperset(of: ["PIL", "pypdf", "ecdsa", "jsonschema", "fhir"]), "\(inline.sorted())")
        let script = """
            import ast, importlib.metadata, json, pathlib, re, sys
            root, inline = pathlib.Path(sys.argv[1]), sys.argv[2].split(",")
            modules = {m: "inline Python in a Swift test" for m in inline if m}
            for path in sorted((root / "Tests").rglob("*.py")):
                for node in ast.walk(ast.parse(path.read_text())):
                    names = []
                    if isinstance(node, ast.Import):
                        names = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        names = [node.module]
                    for name in names:
                        modules.setdefault(name.split(".")[0], str(path.relative_to(root)))
            def norm(name):
                return re.sub(r"[-_.]+", "-", name).lower()
            listed = set()
            for line in (root / "Tests/requirements.txt").read_text().splitlines():
                line = line.split("#")[0].strip()
                if line:
                    listed.add(norm(re.split(r"[<>=!~\\[; ]", line)[0]))
            distributions = importlib.metadata.packages_distributions()
            problems = []
            for module, where in sorted(modules.items()):
                if module in sys.stdlib_module_names:
                    continue
                found = distributions.get(module)
                if not found:
                    problems.append(f"{module} ({where}) is installed by no package of the test venv")
                elif not any(norm(d) in listed for d in found):
                    problems.append(f"{module} ({where}) comes from {', '.join(found)}, not in Tests/requirements.txt")
            print(json.dumps({"checked": sorted(modules), "problems": problems}))
            """
        let run = try TestSupport.run(
            TestSupport.python!, ["-c", script, Self.root.path, inline.sorted().joined(separator: ",")])
        try #require(run.status == 0, "\(run.stderr)")
        let answer = try JSONParser.parse(run.stdout)
        let checked = answer["checked"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(checked.contains("PIL") && checked.contains("zxingcpp") && checked.contains("cryptography"), "\(checked)")
        let problems = answer["problems"]?.arrayValue?.compactMap(\.stringValue) ?? ["no answer: \(run.stdout)"]
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
