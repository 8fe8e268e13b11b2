#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// Withdrawing a SMART Health Link from a static host (`revoke --link`): its encrypted file is deleted from the
/// site folder, so once the site is deployed a receiver's `GET` gets 404 and the link opens nothing. The
/// card itself is not revoked: a copy someone already fetched still verifies (revoke the card's rid for that).
package enum SHLWithdrawal {
    /// What `withdraw` did.
    public enum Result: Sendable, Equatable {
        /// The file at this path was deleted.
        case withdrawn(String)
        /// There was no file at this path: the link was withdrawn before (or never published).
        case alreadyWithdrawn(String)
    }

    /// Deletes the file of the link in `text` from `site`.
    ///
    /// Checked first: the text is a link with flag `U`, its URL is a link file of this site
    /// (`<issuer>/…/shl/<43 base64url characters>`), and the file there opens with the link's key, so a
    /// mistyped or foreign link never deletes another link's file (unless `force`).
    /// - Parameters:
    ///   - what: how to name the link in messages (a file name or "argument 2"; never the text).
    ///   - dryRun: check everything, delete nothing (the result says what would be done).
    /// - Throws: `HealthCardError(.configuration)` saying which check failed and what to do; `.io` when the file
    ///   cannot be deleted.
    public static func withdraw(
        linkText text: String, site: PublishedSite, force: Bool, what: String, dryRun: Bool = false
    )
        throws -> Result
    {
        let link: SHLink
        do { link = try SHLinkText.parse(text) } catch {
            throw HealthCardError(.configuration, "link \(what): \(error.text)").about("link")
        }
        guard link.flag?.contains("U") == true else {
            throw HealthCardError(
                .configuration,
                "link \(what) has no flag U: its URL is a manifest on a server, not a file in a static site; withdraw it "
                    + "with the server that made it"
            ).about("link")
        }
        guard let path = site.localPath(forURL: link.url),
            FileIO.basename(FileIO.parent(of: path)) == SHLDestination.folderName,
            SHLDestination.isFileName(FileIO.basename(path))
        else {
            throw HealthCardError(
                .configuration,
                "link \(what) points to \(link.url), which is not a link file of site \(site.site.root) (published at "
                    + "\(site.issuer)): expected \(site.issuer)/…/\(SHLDestination.folderName)/<43 characters>. Give the "
                    + "site the link was made for"
            ).about("link")
        }
        guard FileIO.exists(path) else { return .alreadyWithdrawn(path) }
        if !force {
            let opens: Bool
            if let key = AES256Key.decode(base64url: link.key), let bytes = try? FileIO.read(path),
                (try? JWE(compact: String(decoding: bytes, as: UTF8.self)).decrypt(key: key)) != nil
            {
                opens = true
            } else {
                opens = false
            }
            guard opens else {
                throw HealthCardError(
                    .configuration,
                    "link \(what): the file \(path) does not open with this link's key, so it is not this link's file; "
                        + "nothing was deleted. Check the link, or force the withdrawal to delete the file anyway"
                ).about("link")
            }
        }
        if dryRun { return .withdrawn(path) }
        guard unlink(path) == 0 else {
            throw HealthCardError(.io, "cannot delete \(path): \(OS.errorText())")
        }
        return .withdrawn(path)
    }
}
