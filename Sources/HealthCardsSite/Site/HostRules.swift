import HealthCardsCore
import HealthCardsVerify

/// Ready-to-use HTTP header rules for serving an issuer site from common static hosts.
///
/// What they make the host send (digest sections 5, 7 and 8):
/// - `.well-known/jwks.json` and `.well-known/crl/<kid>.json`: `Content-Type: application/json` and
///   `Access-Control-Allow-Origin: *` (verifier web apps fetch them cross-origin);
/// - `*.smart-health-card`: `Content-Type: application/smart-health-card`;
/// - SMART Health Link files, `shl/<43 base64url characters>` (`SHLDestination`): `Content-Type:
///   application/jose`, `Access-Control-Allow-Origin: *` (browser viewers fetch them cross-origin) and
///   `Cache-Control: no-store` (a withdrawn link stops working at once, and no cache keeps a copy);
/// - the viewer, `viewer/` (`SiteViewer`): `Content-Security-Policy` (`SiteViewer.contentSecurityPolicy`),
///   `Referrer-Policy: no-referrer`, `Cache-Control: no-store` and `X-Content-Type-Options: nosniff`, on any site
///   (harmless where no viewer was written);
/// - the files in `deniedFiles` (the rule files themselves, the issuer record, the site lock): 404 Not Found.
package enum HostRules {
    /// One rules file: its name relative to the site root and its text.
    public struct File: Sendable, Equatable {
        public var name: String
        public var text: String
    }

    /// File name of the nginx snippet.
    public static let nginxFileName = "healthcards-nginx.conf"

    /// Files `site` writes into the site folder that are not for visitors: the rule files themselves
    /// (they show how the host is set up), the toolkit's record of the issuer (`SiteRecord`) and the lock
    /// of the commands that write the site (`SiteLock`): bookkeeping. nginx and Apache answer 404 for any of these names, at any path. The one list: add a
    /// file here and every host's rules deny it.
    public static let deniedFiles = [nginxFileName, ".htaccess", "_headers", SiteRecord.fileName, SiteLock.fileName]

    /// `deniedFiles` as a regular expression alternation, dots escaped: `healthcards-nginx\.conf|…`.
    static var deniedPattern: String {
        deniedFiles.map { $0.split(separator: ".", omittingEmptySubsequences: false).joined(separator: "\\.") }
            .joined(separator: "|")
    }

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
    public static var nginx: String { nginxRules + nginxViewer + nginxDenied }

    /// The viewer's files, `viewer/` (and `viewer/index.html` through nginx's `index`), at any path.
    static var nginxViewer: String {
        """

        # The SMART Health Link viewer (viewer/: index.html, viewer.css, viewer.js, codes.js). A strict
        # Content-Security-Policy: its own scripts and styles only, connections to https hosts (a link's host and the
        # issuer's key host), no plugins, never framed; no referrer; never cached (a new version applies at once).
        location ~ "/\(SiteViewer.folderName)/([a-z]+\\.(html|css|js))?$" {
            types { text/html html; text/css css; text/javascript js; }
            add_header Content-Security-Policy "\(SiteViewer.contentSecurityPolicy)" always;
            add_header Referrer-Policy "no-referrer" always;
            add_header Cache-Control "no-store" always;
            add_header X-Content-Type-Options "nosniff" always;
        }

        """
    }

    /// The nginx deny rule: regex locations are tried in order and this one names only the rule files.
    static var nginxDenied: String {
        """

        # The rule files and the toolkit's bookkeeping (issuer record, lock) are not for visitors: 404, at any path.
        location ~ (^|/)(\(deniedPattern))$ {
            return 404;
        }

        """
    }

    static let nginxRules = """
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

        # SMART Health Link files (flag U): shl/<43 random characters>, a JWE fetched with GET ?recipient=...
        # (the query is ignored). Readable from any origin, never cached: a withdrawn link stops at once.
        # Audit: keep this server's access_log in nginx's "combined" format (the default), which logs the request
        # line ($request) with its query, ?recipient=...: the toolkit's link audit lists each access from it
        # (docs/shl.md). A log_format of your own must keep $request, not $uri (which drops the query).
        location ~ "/shl/[A-Za-z0-9_-]{43}$" {
            types { }
            default_type application/jose;
            add_header Access-Control-Allow-Origin "*" always;
            add_header Cache-Control "no-store" always;
        }

        """

    /// Apache httpd 2.4 `.htaccess` (needs mod_headers, and `AllowOverride FileInfo` for the folder).
    public static var apache: String { apacheRules + apacheViewer + apacheDenied }

    /// The viewer's headers (`<If>` and `Header` are allowed in `.htaccess` with `AllowOverride FileInfo`).
    static var apacheViewer: String {
        """

        # The SMART Health Link viewer (viewer/): a strict Content-Security-Policy (its own scripts and styles only,
        # connections to https hosts: a link's host and the issuer's key host), no referrer, never cached.
        <If "%{REQUEST_URI} =~ m#/\(SiteViewer.folderName)/([a-z]+\\.(html|css|js))?$#">
            Header always set Content-Security-Policy "\(SiteViewer.contentSecurityPolicy)"
            Header always set Referrer-Policy "no-referrer"
            Header always set Cache-Control "no-store"
            Header always set X-Content-Type-Options "nosniff"
        </If>

        """
    }

    /// The Apache deny rule (mod_alias, allowed by `AllowOverride FileInfo`): 404 for the rule files.
    static var apacheDenied: String {
        """

        # The rule files and the toolkit's bookkeeping (issuer record, lock) are not for visitors: 404, at any path.
        RedirectMatch 404 (^|/)(\(deniedPattern))$

        """
    }

    static let apacheRules = """
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

        # SMART Health Link files (flag U): shl/<43 random characters, no extension>, a JWE fetched with GET.
        # Readable from any origin, never cached: a withdrawn link stops at once.
        # Audit: log in the server configuration (not here) with the "combined" or "common" format,
        #     CustomLog ${APACHE_LOG_DIR}/access.log combined
        # whose %r is the request line with its query, ?recipient=...: the toolkit's link audit lists each access
        # from it (docs/shl.md). A LogFormat of your own must keep %r, not %U (which drops the query).
        <FilesMatch "^[A-Za-z0-9_-]{43}$">
            ForceType application/jose
            Header always set Access-Control-Allow-Origin "*"
            Header always set Cache-Control "no-store"
        </FilesMatch>

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

            # These hosts cannot refuse a file by header rules: leave \(deniedFiles.filter { $0 != "_headers" }.joined(separator: ", "))
            # (the other hosts' rules and the toolkit's bookkeeping) out of what you deploy.

            # Card files, where the host's splat matches inside a name; otherwise keep cards in one folder
            # and use e.g. \(p)/cards/*
            \(p)/*.smart-health-card
              Content-Type: application/smart-health-card

            # SMART Health Link files (flag U), fetched with GET by receivers on any origin; never cached, so
            # a withdrawn link stops at once. (A link folder deeper than shl/ needs a block like this one.)
            \(p)/shl/*
              Access-Control-Allow-Origin: *
              Content-Type: application/jose
              Cache-Control: no-store

            # The SMART Health Link viewer: a strict Content-Security-Policy, no referrer, never cached.
            \(p)/\(SiteViewer.folderName)/*
              Content-Security-Policy: \(SiteViewer.contentSecurityPolicy)
              Referrer-Policy: no-referrer
              Cache-Control: no-store
              X-Content-Type-Options: nosniff

            """
    }
}
