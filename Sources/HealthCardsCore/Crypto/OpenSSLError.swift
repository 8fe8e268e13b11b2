internal import COpenSSL

/// Reads and clears OpenSSL's thread-local error queue, returning its newest message.
func openSSLErrorMessage() -> String {
    var last: UInt = 0
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        last = code
    }
    guard last != 0 else { return "no detail from OpenSSL" }
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(last, &buffer, buffer.count)
    return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The version of the OpenSSL libcrypto this process runs with, as it reports it
/// (`OpenSSL_version(OPENSSL_VERSION_STRING)`, e.g. "3.0.19").
public func openSSLRuntimeVersion() -> String { String(cString: OpenSSL_version(OPENSSL_VERSION_STRING)) }

package func cryptoError(_ what: String) -> HealthCardError {
    HealthCardError(.crypto, "\(what) failed in OpenSSL: \(openSSLErrorMessage())")
}
