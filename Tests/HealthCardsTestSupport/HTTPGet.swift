import Foundation

import HealthCardsCore

/// One HTTP GET with an `Origin` header, done by python3's urllib (the test process stays free of
/// networking code); only 127.0.0.1 is ever asked.
package enum HTTPGet {
    package struct Response {
        package var status: Int
        package var headers: [(String, String)]
        package var body: [UInt8]
        package func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    package static let script = """
        import base64, json, sys, urllib.request, urllib.error
        req = urllib.request.Request(sys.argv[1], headers={"Origin": "https://verifier.example"})
        try:
            r = urllib.request.urlopen(req, timeout=10)
        except urllib.error.HTTPError as e:
            r = e
        body = r.read()
        print(json.dumps({"status": r.status, "headers": [[k, v] for k, v in r.headers.items()],
                          "body": base64.b64encode(body).decode()}))
        """

    package static func fetch(_ url: String) throws -> Response {
        precondition(url.hasPrefix("http://127.0.0.1:"), "tests talk to 127.0.0.1 only")
        let run = try TestSupport.run("/usr/bin/env", ["python3", "-c", script, url])
        guard run.status == 0 else { throw HealthCardError(.io, "GET \(url): \(run.stderr)") }
        let json = try JSONParser.parse(Array(run.stdout.utf8))
        let headers = (json["headers"]?.arrayValue ?? []).compactMap { pair -> (String, String)? in
            guard let k = pair[0]?.stringValue, let v = pair[1]?.stringValue else { return nil }
            return (k, v)
        }
        return Response(
            status: Int(json["status"]?.numberLexeme ?? "0") ?? 0, headers: headers,
            body: Base64URL.decodeStandard(json["body"]?.stringValue ?? "") ?? [])
    }
}
