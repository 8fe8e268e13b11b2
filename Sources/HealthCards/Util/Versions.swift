/// What `healthcards --version` reports: this toolkit's version, the SMART Health Cards framework version it
/// implements, and the C libraries it runs with. Each library's version is asked from the library itself at
/// run time, in the one file that owns it, so a binary built on one machine and run on another (the `.deb`)
/// names the libraries it really loaded.
public enum Versions {
    /// This toolkit's version (semantic versioning). `make deb` takes the Debian package version from it.
    public static let toolkit = "0.1.0"

    /// The SMART Health Cards framework version this toolkit implements (the spec's `docs/changelog.md`).
    public static let shcFramework = "1.4.0"

    /// `(library, version)` for OpenSSL's libcrypto, zlib, libqrencode, libpng, zbar, and the libraries printed
    /// cards (PDF) run with: Cairo, Pango and librsvg; in that order, each as the loaded library reports it.
    public static var runtimeLibraries: [(library: String, version: String)] {
        [
            ("OpenSSL", openSSLRuntimeVersion()),
            ("zlib", RawDeflater.zlibRuntimeVersion),
            ("libqrencode", QRCode.libqrencodeRuntimeVersion),
            ("libpng", QRImage.libpngRuntimeVersion),
            ("zbar", QRDecoder.zbarRuntimeVersion),
            ("Cairo", PDFFile.cairoRuntimeVersion),
            ("Pango", TextContext.pangoRuntimeVersion),
            ("librsvg", SVGImage.librsvgRuntimeVersion),
        ]
    }
}
