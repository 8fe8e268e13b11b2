import Foundation

import HealthCardsCore
import HealthCardsSite

/// A private nginx (Debian package `nginx`, which `make test` installs: Makefile TEST_APT_PACKAGES) serving one
/// folder on a free port of 127.0.0.1, with the site's own `healthcards-nginx.conf` included. Stopped by `stop()`.
package final class NginxServer {
    package static let binary = "/usr/sbin/nginx"

    /// Whether nginx is installed; the tests that need it say so and skip without it (`swift test` alone).
    package static let available: Bool = FileManager.default.isExecutableFile(atPath: binary)

    package let process = Process()
    package let port: Int

    /// - Parameter accessLog: a file for nginx's access log in its `combined` format, or nil for none.
    package init(root: String, in dir: URL, accessLog: String? = nil) throws {
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        port = try Self.freePort()
        let prefix = dir.path
        let conf = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log;
            events { worker_connections 32; }
            http {
                include /etc/nginx/mime.types;
                default_type application/octet-stream;
                access_log \(accessLog.map { "\($0) combined" } ?? "off");
                client_body_temp_path \(prefix)/tmp/body;
                proxy_temp_path \(prefix)/tmp/proxy;
                fastcgi_temp_path \(prefix)/tmp/fastcgi;
                uwsgi_temp_path \(prefix)/tmp/uwsgi;
                scgi_temp_path \(prefix)/tmp/scgi;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root);
                    include \(root)/\(HostRules.nginxFileName);
                }
            }

            """
        let confPath = try TestSupport.write(conf, to: "nginx.conf", in: dir)
        let test = try TestSupport.run(Self.binary, ["-t", "-p", prefix, "-e", prefix + "/error.log", "-c", confPath])
        guard test.status == 0 else {
            throw HealthCardError(.configuration, "nginx -t refused the configuration: \(test.stderr)")
        }
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["-p", prefix, "-e", prefix + "/error.log", "-c", confPath]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until it accepts connections (readiness, not timing: give up after about 20 s).
        for _ in 0..<400 {
            if Self.accepts(port: port) { return }
            guard process.isRunning else { break }
            usleep(50_000)
        }
        stop()
        let log = (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""
        throw HealthCardError(.io, "nginx did not start on 127.0.0.1:\(port): \(log)")
    }

    /// Stops nginx with SIGKILL: a child spawned from a test thread inherits that thread's blocked
    /// signals, and nginx in single-process mode does not unblock SIGTERM, so it would never see it.
    package func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A port the kernel hands out for 127.0.0.1 (bound, read and released).
    package static func freePort() throws -> Int {
        let (fd, port) = try boundSocket()
        close(fd)
        return port
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel hands out, and that port (the caller closes it).
    package static func boundSocket() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HealthCardError(.io, "socket() failed") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw HealthCardError(.io, "cannot bind 127.0.0.1:0")
        }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    package static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
