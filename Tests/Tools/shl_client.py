#!/usr/bin/env python3
"""An independent SMART Health Links receiver for the link server's tests.

Written from the HL7 SMART Health Cards and Links IG (links-specification), not from the server's code: the
standard library's http.client and socket, and pyca/cryptography's AES-GCM. Every command prints one JSON
object on standard output.

  resolve LINK_FILE OUT_DIR [--recipient R] [--passcode-file F] [--embedded-max N]
      Resolves a link as a receiver does: decodes the shlink:/ payload, GETs a U link's url?recipient= or
      POSTs the manifest, fetches each location (checking application/jose) or takes the embedded JWE,
      decrypts each file with the link's key (alg dir, enc A256GCM, AAD = the protected header's ASCII,
      zip DEF inflated) and writes the plaintexts OUT_DIR/file-N (N from 1). Prints the statuses, headers
      and what was written.
  post URL BODY_JSON          one POST; prints status, Retry-After and the body.
  get URL                     one GET; prints status, content type, Retry-After and the body (text).
  call METHOD URL [BODY]      one request as a browser's CORS preflight would send it (Origin, Access-Control-Request-*).
  burst URL PARALLEL COUNT BODY_JSON [URL2]
      COUNT POSTs of BODY_JSON from PARALLEL threads at once, spread over URL and URL2 (two servers);
      prints every status and body.
  raw HOST PORT ACTION ...    socket-level probes of the server's limits (see raw_* below).
"""
import base64
import http.client
import json
import os
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import zlib

from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def b64url_decode(text):
    if isinstance(text, str):
        text = text.encode("ascii")
    return base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))


def request(method, url, body=None, headers=None, timeout=30):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        # The tests' TLS front has a self-signed certificate made for the test.
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                           context=ssl._create_unverified_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    path = parts.path + ("?" + parts.query if parts.query else "")
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    result = {
        "status": response.status,
        "headers": {k.lower(): v for k, v in response.getheaders()},
        "body": data,
    }
    conn.close()
    return result


def decrypt(jwe, key):
    parts = jwe.split(".")
    if len(parts) != 5 or parts[1] != "":
        raise ValueError("not a compact JWE with alg dir: %d parts" % len(parts))
    header = json.loads(b64url_decode(parts[0]))
    if header.get("alg") != "dir" or header.get("enc") != "A256GCM":
        raise ValueError("unexpected JWE header %r" % header)
    iv = b64url_decode(parts[2])
    ciphertext = b64url_decode(parts[3])
    tag = b64url_decode(parts[4])
    plaintext = AESGCM(key).decrypt(iv, ciphertext + tag, parts[0].encode("ascii"))
    if header.get("zip") == "DEF":
        plaintext = zlib.decompress(plaintext, -15)
    return header, plaintext, parts[2]


def read_link(path):
    text = open(path, encoding="utf-8").read().strip()
    if "#shlink:/" in text:
        text = text.split("#", 1)[1]
    if not text.startswith("shlink:/"):
        raise ValueError("not a shlink:/ link")
    payload = json.loads(b64url_decode(text[len("shlink:/"):]))
    key = b64url_decode(payload["key"])
    if len(key) != 32:
        raise ValueError("the key is not 32 bytes")
    return payload, key


def resolve(argv):
    link_file, out_dir = argv[0], argv[1]
    recipient, passcode, embedded_max = "Independent test client", None, None
    rest = argv[2:]
    while rest:
        name, value, rest = rest[0], rest[1], rest[2:]
        if name == "--recipient":
            recipient = value
        elif name == "--passcode-file":
            passcode = open(value, encoding="utf-8").read().rstrip("\n")
        elif name == "--embedded-max":
            embedded_max = int(value)
        else:
            raise SystemExit("unknown option " + name)
    payload, key = read_link(link_file)
    flags = payload.get("flag", "")
    os.makedirs(out_dir, exist_ok=True)
    result = {"flag": flags, "files": []}
    if "U" in flags:
        url = payload["url"] + "?" + urllib.parse.urlencode({"recipient": recipient})
        answer = request("GET", url)
        result["status"] = answer["status"]
        result["headers"] = answer["headers"]
        if answer["status"] != 200:
            result["body"] = answer["body"].decode("utf-8", "replace")
            return result
        entries = [("direct", answer["headers"].get("content-type"), answer["body"].decode("ascii"), None)]
    else:
        body = {"recipient": recipient}
        if passcode is not None:
            body["passcode"] = passcode
        if embedded_max is not None:
            body["embeddedLengthMax"] = embedded_max
        answer = request("POST", payload["url"], json.dumps(body), {"Content-Type": "application/json"})
        result["status"] = answer["status"]
        result["headers"] = answer["headers"]
        if answer["status"] != 200:
            result["body"] = answer["body"].decode("utf-8", "replace")
            return result
        if answer["headers"].get("content-type") != "application/json":
            raise ValueError("the manifest is not application/json")
        manifest = json.loads(answer["body"])
        result["manifest"] = manifest
        entries = []
        for entry in manifest["files"]:
            if "embedded" in entry:
                if embedded_max is None or len(entry["embedded"]) > embedded_max:
                    raise ValueError("an embedded file longer than embeddedLengthMax")
                entries.append(("embedded", entry["contentType"], entry["embedded"], entry))
            else:
                fetched = request("GET", entry["location"])
                if fetched["status"] != 200:
                    result["files"].append({"via": "location", "status": fetched["status"]})
                    continue
                if fetched["headers"].get("content-type") != "application/jose":
                    raise ValueError("a location answered %r, not application/jose" % fetched["headers"].get("content-type"))
                entries.append(("location", entry["contentType"], fetched["body"].decode("ascii"), entry))
    for index, (via, content_type, jwe, entry) in enumerate(entries, start=1):
        header, plaintext, iv = decrypt(jwe, key)
        if entry is not None and header.get("cty") != entry["contentType"]:
            raise ValueError("the JWE's cty %r is not the manifest's contentType %r" % (header.get("cty"), entry["contentType"]))
        path = os.path.join(out_dir, "file-%d" % index)
        with open(path, "wb") as f:
            f.write(plaintext)
        result["files"].append({"via": via, "status": 200, "cty": header.get("cty"), "path": path, "iv": iv,
                                "bytes": len(plaintext), "jweLength": len(jwe)})
    return result


def summarize(answer):
    body = answer["body"]
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = body.decode("utf-8", "replace")
    return {"status": answer["status"], "retryAfter": answer["headers"].get("retry-after"),
            "contentType": answer["headers"].get("content-type"), "headers": answer["headers"], "body": parsed}


def burst(argv):
    urls = [argv[0]] + argv[4:5]
    parallel, count, body = int(argv[1]), int(argv[2]), argv[3]
    results = [None] * count
    start = threading.Barrier(parallel)
    lock = threading.Lock()
    next_index = [0]

    def worker():
        start.wait()
        while True:
            with lock:
                index = next_index[0]
                next_index[0] += 1
            if index >= count:
                return
            try:
                answer = request("POST", urls[index % len(urls)], body, {"Content-Type": "application/json"})
                results[index] = summarize(answer)
            except OSError as error:
                results[index] = {"status": 0, "error": str(error)}

    threads = [threading.Thread(target=worker) for _ in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"results": results}


# Socket-level probes. Each connects to HOST:PORT itself.

def connect(host, port):
    s = socket.create_connection((host, port), timeout=10)
    return s


def read_all(s, limit=1 << 20):
    data = b""
    while len(data) < limit:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    return data


def statuses(data):
    return [int(m.group(1)) for m in re.finditer(rb"HTTP/1\.1 (\d{3}) ", data)]


def raw(argv):
    host, port, action = argv[0], int(argv[1]), argv[2]
    if action == "slow":
        # Sends half a request line, then nothing: the server must close the connection after its timeout.
        s = connect(host, port)
        s.settimeout(float(argv[3]))
        s.sendall(b"POST /shl/")
        begin = time.monotonic()
        data = read_all(s)
        return {"closedAfter": time.monotonic() - begin, "received": len(data)}
    if action == "headers":
        # A request whose headers are SIZE bytes in all.
        size = int(argv[3])
        s = connect(host, port)
        filler = b"X-Filler: " + b"a" * 1000 + b"\r\n"
        request_bytes = b"GET /healthz HTTP/1.1\r\nHost: test\r\n" + filler * (size // len(filler)) + b"\r\n"
        try:
            s.sendall(request_bytes)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = read_all(s)
        return {"statuses": statuses(data)}
    if action == "pipeline":
        # COUNT requests in one write; the server answers them in turn up to its per-connection limit, then
        # says Connection: close and closes.
        count = int(argv[3])
        s = connect(host, port)
        one = b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n"
        last = b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
        try:
            s.sendall(one * (count - 1) + last)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = read_all(s, limit=64 << 20)
        return {"statuses": statuses(data), "closes": data.count(b"Connection: close")}
    if action == "connections":
        # Opens COUNT connections and holds them; then tries one request on each and reports which answered.
        count = int(argv[3])
        sockets = []
        for _ in range(count):
            try:
                sockets.append(connect(host, port))
            except OSError:
                sockets.append(None)
        time.sleep(0.3)
        answered = 0
        refused = 0
        for s in sockets:
            if s is None:
                refused += 1
                continue
            try:
                s.settimeout(5)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
                data = read_all(s)
                if statuses(data):
                    answered += 1
                else:
                    refused += 1
            except OSError:
                refused += 1
        for s in sockets:
            if s is not None:
                s.close()
        return {"answered": answered, "refused": refused}
    if action == "chunked":
        # A chunked POST of SIZE bytes to PATH.
        path, size = argv[3], int(argv[4])
        s = connect(host, port)
        s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        sent = 0
        try:
            while sent < size:
                n = min(4096, size - sent)
                s.sendall(b"%x\r\n" % n + b" " * n + b"\r\n")
                sent += n
            s.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = read_all(s)
        return {"statuses": statuses(data), "sent": sent}
    if action == "inflight":
        # A POST whose headers and first half of the body are sent, then READY_FILE is made; the rest is sent once
        # GO_FILE exists. Prints the status and body answered.
        path, body, ready, go = argv[3], argv[4].encode(), argv[5], argv[6]
        s = connect(host, port)
        s.settimeout(30)
        s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body[:len(body) // 2])
        open(ready, "w").close()
        deadline = time.monotonic() + 30
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)
        s.sendall(body[len(body) // 2:])
        data = read_all(s)
        head, _, rest = data.partition(b"\r\n\r\n")
        return {"statuses": statuses(data), "body": rest.decode("utf-8", "replace")}
    raise SystemExit("unknown raw action " + action)


def main():
    command, argv = sys.argv[1], sys.argv[2:]
    if command == "resolve":
        result = resolve(argv)
    elif command == "post":
        result = summarize(request("POST", argv[0], argv[1], {"Content-Type": "application/json"}))
    elif command == "get":
        result = summarize(request("GET", argv[0]))
    elif command == "call":
        headers = {"Origin": "https://viewer.example.org", "Access-Control-Request-Method": "POST",
                   "Access-Control-Request-Headers": "content-type"}
        result = summarize(request(argv[0], argv[1], argv[2] if len(argv) > 2 else None, headers))
    elif command == "burst":
        result = burst(argv)
    elif command == "raw":
        result = raw(argv)
    else:
        raise SystemExit("unknown command " + command)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
