import HealthCardsCore
import HealthCardsPrint
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsServer

/// What `healthcards --version` reports beside `Versions.toolkit` and `Versions.shcFramework`: the C libraries
/// it runs with. Each library's version is asked from the library itself at run time, in the one file that owns
/// it, so a binary built on one machine and run on another (the `.deb`) names the libraries it really loaded.
extension Versions {
    /// `(library, version)` for OpenSSL's libcrypto, zlib, libqrencode, libpng, zbar, and the libraries printed
    /// cards (PDF) run with: Cairo, Pango and librsvg; the link server's: libmicrohttpd, SQLite and libpq; in that
    /// order, each as the loaded library reports it. Then libjpeg-turbo and zxing-cpp (reading photographed QR
    /// images), which have no run-time version call: the versions the program was built with, marked so.
    static var runtimeLibraries: [(library: String, version: String)] {
        [
            ("OpenSSL", openSSLRuntimeVersion()),
            ("zlib", RawDeflater.zlibRuntimeVersion),
            ("libqrencode", QRCode.libqrencodeRuntimeVersion),
            ("libpng", QRImage.libpngRuntimeVersion),
            ("zbar", QRDecoder.zbarRuntimeVersion),
            ("Cairo", PDFFile.cairoRuntimeVersion),
            ("Pango", TextContext.pangoRuntimeVersion),
            ("librsvg", SVGImage.librsvgRuntimeVersion),
            ("libmicrohttpd", HTTPServer.libraryVersion),
        ] + Database.libraryVersions + [
            ("libjpeg-turbo", GrayImage.libjpegTurboBuildVersion + " (built with)"),
            ("zxing-cpp", QRDecoder.zxingBuildVersion + " (built with)"),
        ]
    }
}
