/// This toolkit's version and the SMART Health Cards framework version it implements. The C libraries each
/// program runs with are reported by the layer that links them (`healthcards --version` lists them all).
public enum Versions {
    /// This toolkit's version (semantic versioning). `make deb` takes the Debian package version from it.
    public static let toolkit = "0.1.0"

    /// The SMART Health Cards framework version this toolkit implements (the spec's `docs/changelog.md`).
    public static let shcFramework = "1.4.0"
}
