/// Ready-to-use HTTP header rules for serving an issuer site from common static hosts.
///
/// What they make the host send (digest sections 5, 7 and 8):
/// - `.well-known/jwks.json` and `.well-known/crl/<kid>.json`: `Content-Type: application/json` and
///   `Access-Control-Allow-Origin: *` (verifier web apps fetch them cross-origin);
/// - `*.smart-health-card`: `Content-Type: application/smart-health-card`.
public enum HostRules {
    /// One rules file: its name relative to the site root and its text.
    public struct File: Sendable, Equatable {
        public var name: String
        public var text: String
    }

    /// File name of the nginx snippet.
    public static let nginxFileName = "healthcards-nginx.conf"

    /// The three rules files: the nginx snippet, Apache `.htaccess`, and a Netlify / Cloudflare Pages
    /// `_headers` file.
    /// - Parameter pathPrefix: the path part of `iss` (`""` or e.g. `/examples/issuer`), used by `_headers`,
    ///   whose paths are absolute on the host. The nginx and Apache rules match any prefix.
    public static func files(pathPrefix: String = "") -> [File] {
        [
            File(name: nginxFileName, text: nginx), File(name: ".htaccess", text: apache),
            File(name: "_headers", text: headersFile(pathPrefix: pathPrefix)),
        ]
    }

    /// nginx: `include` this inside the `server` block whose `root` is the site folder.
    public static let nginx = """
        # healthcards: HTTP header rules for a SMART Health Cards issuer site (nginx).
        # Include this inside the server block that serves the site folder at the issuer URL (iss):
        #     server {
        #         listen 443 ssl;  server_name issuer.example.org;  # TLS 1.2 or 1.3
        #         root /srv/shc-site;
        #         include /srv/shc-site/\(nginxFileName);
        #     }
        # The locations match at any path, so an iss with a path (https://host/shc) works too.

        # The key set: JSON, readable by verifier web apps on any origin.
        location ~ /\\.well-known/jwks\\.json$ {
            types { }
            default_type application/json;
            add_header Access-Control-Allow-Origin "*" always;
        }

        # Revocation lists, one per key: .well-known/crl/<kid>.json.
        location ~ /\\.well-known/crl/[A-Za-z0-9_-]+\\.json$ {
            types { }
            default_type application/json;
            add_header Access-Control-Allow-Origin "*" always;
        }

        # Health card files.
        location ~ \\.smart-health-card$ {
            types { }
            default_type application/smart-health-card;
        }

        # The toolkit's record of the issuer (\(SiteRecord.fileName)): bookkeeping, not for verifiers.
        location ~ /healthcards-site\\.json$ {
            return 404;
        }

        """

    /// Apache httpd 2.4 `.htaccess` (needs mod_headers, and `AllowOverride FileInfo` for the folder).
    public static let apache = """
        # healthcards: HTTP header rules for a SMART Health Cards issuer site (Apache httpd 2.4).
        # Needs mod_headers (a2enmod headers) and "AllowOverride FileInfo" for this folder.

        AddType application/smart-health-card .smart-health-card

        # The key set: JSON, readable by verifier web apps on any origin.
        <Files "jwks.json">
            ForceType application/json
            Header always set Access-Control-Allow-Origin "*"
        </Files>

        # Revocation lists, one per key: .well-known/crl/<kid>.json (a kid is 43 base64url characters).
        <FilesMatch "^[A-Za-z0-9_-]{43}\\.json$">
            ForceType application/json
            Header always set Access-Control-Allow-Origin "*"
        </FilesMatch>

        # The toolkit's record of the issuer: bookkeeping, not for verifiers.
        <Files "\(SiteRecord.fileName)">
            Require all denied
        </Files>

        """

    /// Netlify / Cloudflare Pages `_headers` (put it in the published folder's root).
    public static func headersFile(pathPrefix: String) -> String {
        let p = pathPrefix.hasSuffix("/") ? String(pathPrefix.dropLast()) : pathPrefix
        return """
            # healthcards: HTTP header rules for a SMART Health Cards issuer site (Netlify, Cloudflare Pages).
            # Paths are absolute on the host: the issuer URL's path is \(p.isEmpty ? "/" : p).

            \(p)/.well-known/jwks.json
              Access-Control-Allow-Origin: *
              Content-Type: application/json

            \(p)/.well-known/crl/*
              Access-Control-Allow-Origin: *
              Content-Type: application/json

            # healthcards-site.json (the toolkit's record of the issuer) is public information but not for
            # verifiers; these hosts cannot refuse a file by header rules, so leave it out of what you deploy.

            # Card files, where the host's splat matches inside a name; otherwise keep cards in one folder
            # and use e.g. \(p)/cards/*
            \(p)/*.smart-health-card
              Content-Type: application/smart-health-card

            """
    }
}
