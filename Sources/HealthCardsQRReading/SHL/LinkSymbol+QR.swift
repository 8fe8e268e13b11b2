import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

extension QRImageCheck {
    /// What `SHLCheck` needs to know of the QR symbol a link was read from: version, ECC level, and the
    /// smallest version its text fits at that level as one byte segment (what `QRCode(link:)` and any standard
    /// QR library make), to warn a symbol larger than needed.
    package static func linkSymbol(_ symbol: DecodedQR) -> LinkSymbol {
        let smallest = symbol.errorCorrection.flatMap { level in
            QRVersionProbe.smallestVersion([(.byte, symbol.bytes)], level: level)
        }
        return LinkSymbol(version: symbol.version, errorCorrection: symbol.errorCorrection, smallestVersion: smallest)
    }
}
