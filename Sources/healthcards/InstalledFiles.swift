import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where the shipped templates and documentation are, for help texts and messages: `make install` puts them in
/// `PREFIX/share/healthcards/templates` and `PREFIX/share/doc/healthcards/docs` (PREFIX `/usr/local`), the .deb in
/// `/usr/share/...`, and a source checkout has `templates/` and `docs/`.
enum InstalledFiles {
    /// The installed paths, as help texts (and so the man pages) say them: the same on every machine.
    static let help = """
        Files: the templates and their sample CSVs are in /usr/local/share/healthcards/templates after
        `make install` (PREFIX/share/healthcards/templates; /usr/share/healthcards/templates from the .deb;
        templates/ in the source tree), the documentation in /usr/local/share/doc/healthcards/docs
        (/usr/share/doc/healthcards/docs from the .deb; docs/ in the source tree).
        """

    /// `PREFIX/share/healthcards/templates` of this program (the folder beside its `bin/`), when it is there.
    static let templates: String? = {
        guard let exe = FileIO.realPath("/proc/self/exe") else { return nil }
        let prefix = FileIO.parent(of: FileIO.parent(of: exe))
        let folder = prefix + "/share/healthcards/templates"
        return FileIO.isDirectory(folder) ? folder : nil
    }()

    /// The path of a shipped template to show in an example: installed, or as in the source tree.
    static func template(_ name: String) -> String { (templates ?? "templates") + "/" + name }
}
