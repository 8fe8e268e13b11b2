import Foundation

import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsIssuing
import HealthCardsTestSupport

/// `VerifyForge`'s file-level checks: verifying paths goes through `FileVerifier` (HealthCardsIssuing, which reads
/// card files, QR images and key sets from disk) and QR images are written by `QRImage` (HealthCardsQR), so these
/// live beside the tests that use them, not in the shared support target (Core, Verify and Site only).
extension VerifyForge {
    /// Verifies paths with the library and returns every report.
    package func verify(_ paths: [String], keySets: [String]? = nil, now: Int64 = VerifyForge.now) throws -> [CredentialReport] {
        let sets = try keySets ?? [writeKeySet()]
        let verifier = try FileVerifier(keySets: sets, now: now)
        return verifier.keySetReports + (try verifier.verify(paths))
    }

    /// The codes found for paths.
    package func codes(_ paths: [String], keySets: [String]? = nil, now: Int64 = VerifyForge.now) throws -> Set<String> {
        Set(try verify(paths, keySets: keySets, now: now).flatMap(\.findings).map(\.code.rawValue))
    }

    /// A PNG of a module matrix (4-module quiet zone, 4 px per module), for QR symbols our encoder refuses
    /// to make (forced versions, other error correction levels, one segment): written by `QRImage`, so no
    /// Python is needed.
    package func png(size: Int, modules: [Bool], name: String) throws -> String {
        try write(try QRImage(scale: 4, quietZone: 4).png(size: size, modules: modules), name)
    }
}
