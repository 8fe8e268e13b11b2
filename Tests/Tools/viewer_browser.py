#!/usr/bin/env python3
"""Drives the link viewer (viewer/, written by `healthcards site --viewer`) in Debian's headless Chromium.

Run by ViewerBrowserTests with one argument, a JSON file:
  {"port": nginx's TLS port on 127.0.0.1, "viewer": "https://issuer.example.org/viewer/",
   "allowedHosts": [...], "downloads": DIR, "screenshots": DIR, "docScreenshot": PATH or null,
   "cases": {...}}
Every host name resolves to the test's nginx (--host-resolver-rules), which serves the issuer's site and proxies
the link server. Selenium uses the system chromedriver (no Selenium Manager: SE_OFFLINE). One browser session runs
every case. Prints a JSON object: {"results": {case: observations}, "failures": [text...]}; exit status 0 when
the run itself worked (the failures are for the Swift test to report).
"""
import base64
import json
import os
import struct
import sys
import time
import urllib.parse
import zlib

os.environ["SE_OFFLINE"] = "true"
os.environ["SE_AVOID_STATS"] = "true"

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

config = json.load(open(sys.argv[1]))
cases = config["cases"]
failures = []
results = {}


def fail(case, text):
    failures.append(case + ": " + text)


def check(case, condition, text):
    if not condition:
        fail(case, text)
    return condition


# ---- The browser ----
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in [
    "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
    "--host-resolver-rules=MAP * 127.0.0.1:%d" % config["port"], "--ignore-certificate-errors",
    "--window-size=500,900", "--lang=en-US",
    # Nothing of Chromium's own: every request on the wire is the page's.
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--no-first-run", "--no-pings",
    "--metrics-recording-only", "--disable-extensions", "--disable-component-extensions-with-background-pages",
    "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,NetworkTimeServiceQuerying,"
    "AccountConsistency,MirrorAccountConsistency,DiceWebSigninInterception",
    "--allow-browser-signin=false",
]:
    options.add_argument(argument)
options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
options.add_experimental_option("prefs", {
    "download.default_directory": config["downloads"], "download.prompt_for_download": False,
    "safebrowsing.enabled": False,
})
driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
driver.set_page_load_timeout(30)
driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": config["downloads"]})
# A phone's screen: 360 CSS pixels wide (a desktop window cannot be made that narrow).
driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                       {"width": 360, "height": 800, "deviceScaleFactor": 2, "mobile": True})
wait = WebDriverWait(driver, 20)

all_requests = []  # every URL the page asked for, over the whole run
console = []


def drain_logs():
    """The URLs requested since the last call (performance log: Network.requestWillBeSent)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    all_requests.extend(urls)
    console.extend(entry["message"] for entry in driver.get_log("browser"))
    return urls


def hosts(urls):
    return sorted({urllib.parse.urlsplit(u).hostname for u in urls if urllib.parse.urlsplit(u).scheme in ("http", "https", "ws", "wss")})


def open_link(link):
    """Loads the viewer fresh with `link` (the viewer prefix or a fragment) and waits for the script to start."""
    drain_logs()
    driver.get("about:blank")
    driver.get(link)
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")


def status_text():
    return driver.find_element(By.ID, "status").text


def wait_for(case, predicate, what):
    try:
        wait.until(lambda d: predicate())
        return True
    except Exception:
        fail(case, "timed out waiting for " + what + "; status: " + repr(status_text())
             + "; page: " + repr(driver.find_element(By.TAG_NAME, "main").text[:600]))
        return False


def page_text():
    return driver.find_element(By.TAG_NAME, "main").text


def verdicts():
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".verdict")]


# ---- PNG reading (Chromium's screenshots: 8-bit RGB or RGBA, not interlaced) ----
def png_pixels(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, width = 8, [], None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            chunks.append(body)
        at += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def ink(png):
    """The share of pixels of an element's screenshot that are dark (text), 0 to 1."""
    width, height, channels, rows = png_pixels(png)
    dark = sum(1 for row in rows for x in range(width)
               if sum(row[x * channels:x * channels + 3]) < 3 * 110)
    return dark / float(width * height)


# ---- Accessibility: axe-core (shipped by axe-selenium-python) and the checks written out ----
def accessibility(case):
    found = {}
    import axe_selenium_python  # axe-core's script ships inside it: nothing is fetched
    script = os.path.join(os.path.dirname(axe_selenium_python.__file__), "node_modules", "axe-core", "axe.min.js")
    if check(case, os.path.isfile(script), "axe-selenium-python ships no axe.min.js at " + script):
        driver.execute_script(open(script).read())
        answer = driver.execute_async_script(
            "var done = arguments[arguments.length - 1];"
            "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})"
            ".then(function (r) { done(JSON.stringify(r.violations.map(function (v) {"
            "  return {id: v.id, impact: v.impact, nodes: v.nodes.map(function (n) { return n.target.join(' '); })};"
            "}))); }, function (e) { done(JSON.stringify([{id: 'axe-error', nodes: [String(e)]}])); });")
        found["axe"] = json.loads(answer)
        for violation in found["axe"]:
            fail(case, "axe: %s at %s" % (violation["id"], violation["nodes"]))
    written = driver.execute_script("""
        const problems = [];
        if (!document.documentElement.lang) problems.push('no lang on html');
        for (const input of document.querySelectorAll('input, textarea, select')) {
          if (input.closest('[hidden]')) continue;
          const label = input.id && document.querySelector('label[for="' + input.id + '"]');
          if (!label && !input.getAttribute('aria-label')) problems.push('unlabelled ' + (input.id || input.name));
        }
        let last = 0;
        for (const h of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
          if (h.closest('[hidden]')) continue;
          const level = Number(h.tagName[1]);
          if (level > last + 1) problems.push('heading ' + h.tagName + ' after h' + last + ': ' + h.textContent);
          last = level;
        }
        if (document.querySelectorAll('h1').length !== 1) problems.push('not one h1');
        for (const img of document.querySelectorAll('img')) if (!img.hasAttribute('alt')) problems.push('img without alt');
        const live = document.querySelector('[aria-live], [role=status], [role=alert]');
        if (!live) problems.push('no live region');
        // Status colours: contrast of text on its background, WCAG 2 (4.5:1).
        function lum(c) {
          const [r, g, b] = c.match(/\\d+/g).slice(0, 3).map(Number).map(v => {
            v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
          return 0.2126 * r + 0.7152 * g + 0.0722 * b;
        }
        for (const kind of ['ok', 'bad', 'warn']) {
          const probe = document.createElement('div');
          probe.className = 'verdict ' + kind;
          probe.textContent = 'x';
          document.body.appendChild(probe);
          const s = getComputedStyle(probe);
          const a = lum(s.color), b = lum(s.backgroundColor);
          const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
          if (ratio < 4.5) problems.push('contrast of ' + kind + ' is ' + ratio.toFixed(2));
          probe.remove();
        }
        return problems;
    """)
    found["written"] = written
    for problem in written:
        fail(case, "accessibility: " + problem)
    return found


# ---- The cases ----
def case_card_checked():
    case = "u-card"
    c = cases[case]
    open_link(c["link"])
    ok = wait_for(case, lambda: any("checked" in v for v in verdicts()), "the verdict")
    text = page_text()
    observed = {"verdicts": verdicts(), "status": status_text(),
                "doses": len(driver.find_elements(By.CSS_SELECTOR, "ol.entries > li"))}
    if ok:
        check(case, any(("Signed by %s, checked" % c["issuer"]) in v for v in verdicts()),
              "no verdict 'Signed by %s, checked': %r" % (c["issuer"], verdicts()))
        check(case, c["name"] in text, "the name %r is not shown" % c["name"])
        check(case, observed["doses"] == c["doses"], "%d doses shown, expected %d" % (observed["doses"], c["doses"]))
        for expected in c["texts"]:
            check(case, expected in text, "%r is not shown" % expected)
        dates = [t.get_attribute("datetime") for t in driver.find_elements(By.CSS_SELECTOR, "ol.entries time")]
        check(case, dates == c["dates"], "dose dates %r, expected %r" % (dates, c["dates"]))
        # The verdict is in words and its colour class says the same.
        check(case, driver.find_elements(By.CSS_SELECTOR, ".verdict.ok"), "the verdict is not marked ok")
        # The page's own headers, as the site's nginx rules send them.
        headers = driver.execute_async_script(
            "var done = arguments[arguments.length - 1];"
            "fetch(location.pathname, {cache: 'no-store'}).then(r => done({csp: r.headers.get('content-security-policy'),"
            " referrer: r.headers.get('referrer-policy'), cache: r.headers.get('cache-control')}), e => done(String(e)));")
        observed["headers"] = headers
        check(case, isinstance(headers, dict) and "default-src 'self'" in (headers.get("csp") or "")
              and "connect-src https:" in headers["csp"] and "frame-ancestors 'none'" in headers["csp"],
              "the page's Content-Security-Policy: %r" % headers)
        check(case, isinstance(headers, dict) and headers.get("referrer") == "no-referrer"
              and headers.get("cache") == "no-store", "the page's headers: %r" % headers)
        # Readable at 360 px: nothing wider than the screen.
        widths = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        observed["widths"] = widths
        check(case, widths[1] == 360 and widths[0] <= widths[1], "the page is %d px wide on a %d px screen" % (widths[0], widths[1]))
        if config.get("docScreenshot"):
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": 360, "height": 1150, "deviceScaleFactor": 1, "mobile": True})
            driver.save_screenshot(config["docScreenshot"])
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": 360, "height": 800, "deviceScaleFactor": 2, "mobile": True})
        observed["accessibility"] = accessibility(case)
    observed["hosts"] = hosts(drain_logs())
    check(case, observed["hosts"] == [c["linkHost"]], "hosts contacted: %r" % observed["hosts"])
    results[case] = observed


def case_tolerant():
    case = "pasted"
    c = cases[case]
    # The link as people paste it: no viewer prefix, broken by spaces, into the page's own box.
    open_link(c["viewer"])
    box = driver.find_element(By.ID, "link-input")
    check(case, box.is_displayed(), "no box to paste a link into")
    text = c["link"]
    box.send_keys(" " + text[:30] + " \n" + text[30:70] + " " + text[70:] + " ")
    driver.find_element(By.ID, "open-button").click()
    ok = wait_for(case, lambda: any("checked" in v for v in verdicts()), "the verdict")
    results[case] = {"verdicts": verdicts()}
    if ok:
        check(case, c["name"] in page_text(), "the name %r is not shown" % c["name"])
    drain_logs()


def case_passcode():
    case = "p-manifest"
    c = cases[case]
    open_link(c["link"])
    recipient = driver.find_element(By.ID, "recipient")
    passcode = driver.find_element(By.ID, "passcode")
    check(case, recipient.is_displayed() and passcode.is_displayed(), "no recipient and passcode fields")
    observed = {"accessibilityForm": accessibility(case + " (form)")}
    recipient.send_keys("Front desk, Example Clinic")
    passcode.send_keys("not the passcode")
    driver.find_element(By.ID, "open-button").click()
    wait_for(case, lambda: "attempts left" in status_text(), "the remaining attempts")
    observed["wrong"] = status_text()
    check(case, ("%d attempts left" % c["remainingAfterWrong"]) in observed["wrong"],
          "after a wrong passcode the status says %r" % observed["wrong"])
    driver.find_element(By.ID, "passcode").send_keys(c["passcode"])
    driver.find_element(By.ID, "open-button").click()
    ok = wait_for(case, lambda: any("checked" in v for v in verdicts()), "the verdict")
    observed["verdicts"] = verdicts()
    if ok:
        check(case, c["name"] in page_text(), "the name %r is not shown" % c["name"])
    observed["hosts"] = hosts(drain_logs())
    check(case, observed["hosts"] == sorted([c["linkHost"], c["keyHost"]]), "hosts contacted: %r" % observed["hosts"])
    results[case] = observed


def case_bundle_pdf():
    case = "bundle-pdf"
    c = cases[case]
    for name in os.listdir(config["downloads"]):
        os.unlink(os.path.join(config["downloads"], name))
    open_link(c["link"])
    ok = wait_for(case, lambda: driver.find_elements(By.CSS_SELECTOR, "a.download"), "the PDF download")
    observed = {"verdicts": verdicts()}
    if ok:
        text = page_text()
        check(case, c["name"] in text, "the name %r is not shown" % c["name"])
        check(case, any("Not signed" in v for v in verdicts()), "a shared Bundle is not said to be unsigned: %r" % verdicts())
        check(case, len(driver.find_elements(By.CSS_SELECTOR, "ol.entries > li")) == c["doses"], "the doses are not shown")
        driver.find_element(By.CSS_SELECTOR, "a.download").click()
        path = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            names = [n for n in os.listdir(config["downloads"]) if not n.endswith(".crdownload")]
            if names:
                path = os.path.join(config["downloads"], names[0])
                break
            time.sleep(0.1)
        check(case, path is not None, "no file was downloaded")
        if path:
            downloaded = open(path, "rb").read()
            expected = open(c["pdf"], "rb").read()
            observed["downloaded"] = len(downloaded)
            check(case, downloaded == expected, "the downloaded PDF (%d bytes) is not the printed card (%d bytes)"
                  % (len(downloaded), len(expected)))
    observed["hosts"] = hosts(drain_logs())
    check(case, observed["hosts"] == [c["linkHost"]], "hosts contacted: %r" % observed["hosts"])
    results[case] = observed


def case_verdict(case, expected_title, expected_class):
    c = cases[case]
    open_link(c["link"])
    ok = wait_for(case, lambda: any(expected_title in v for v in verdicts()), "the verdict %r" % expected_title)
    observed = {"verdicts": verdicts(), "status": status_text()}
    if ok:
        check(case, driver.find_elements(By.CSS_SELECTOR, ".verdict." + expected_class), "the verdict is not marked " + expected_class)
        check(case, not any("checked" in v for v in verdicts()), "also says checked: %r" % verdicts())
        check(case, "Do not rely" in observed["status"], "the status says %r" % observed["status"])
    observed["hosts"] = hosts(drain_logs())
    results[case] = observed


def case_status(case, expected):
    c = cases[case]
    open_link(c["link"])
    recipient = driver.find_element(By.ID, "recipient")
    if recipient.is_displayed():  # a manifest link asks who opens it first
        recipient.send_keys("Front desk, Example Clinic")
        driver.find_element(By.ID, "open-button").click()
    ok = wait_for(case, lambda: expected in status_text(), "the status %r" % expected)
    observed = {"status": status_text(), "records": driver.find_element(By.ID, "records").is_displayed()}
    if ok:
        check(case, not observed["records"], "a record is shown")
        check(case, driver.find_elements(By.CSS_SELECTOR, "#status.bad"), "the status is not marked bad")
    observed["hosts"] = hosts(drain_logs())
    results[case] = observed
    return observed


def case_scripts():
    for case, lang, direction in [("arabic", "ar", "rtl"), ("chinese", "zh", "ltr")]:
        c = cases[case]
        open_link(c["link"])
        ok = wait_for(case, lambda: driver.find_elements(By.CSS_SELECTOR, ".person-name"), "the name")
        observed = {"verdicts": verdicts()}
        if ok:
            name = driver.find_element(By.CSS_SELECTOR, ".person-name")
            observed["name"] = name.text
            observed["lang"] = name.get_attribute("lang")
            observed["direction"] = driver.execute_script("return getComputedStyle(arguments[0]).direction", name)
            check(case, c["name"] == name.text, "the name reads %r, expected %r" % (name.text, c["name"]))
            check(case, observed["lang"] == lang and observed["direction"] == direction,
                  "lang %r, direction %r" % (observed["lang"], observed["direction"]))
            check(case, any("checked" in v for v in verdicts()), "not checked: %r" % verdicts())
            png = name.screenshot_as_png
            open(os.path.join(config["screenshots"], case + ".png"), "wb").write(png)
            observed["ink"] = ink(png)
            check(case, observed["ink"] > 0.02, "the name's screenshot is blank (%.3f dark)" % observed["ink"])
            if direction == "rtl":
                # Right to left: the text ends at the box's left, so its ink is at the right.
                width, _, channels, rows = png_pixels(png)
                columns = [x for x in range(width) if any(sum(r[x * channels:x * channels + 3]) < 330 for r in rows)]
                observed["inkColumns"] = [columns[0], columns[-1], width] if columns else None
                check(case, columns and columns[-1] > width * 0.8, "the Arabic name is not set from the right")
        drain_logs()
        results[case] = observed


def run_all():
    case_card_checked()
    case_tolerant()
    case_passcode()
    case_bundle_pdf()
    case_verdict("altered", "Signature does not match", "bad")
    case_verdict("revoked", "Revoked", "bad")
    expired = case_status("expired", "Link expired")
    check("expired", cases["expired"]["linkHost"] not in expired["hosts"], "the expired link was fetched anyway")
    case_status("deactivated", "Link no longer active")
    case_scripts()
    results["hosts"] = hosts(all_requests)
    for host in results["hosts"]:
        check("requests", host in config["allowedHosts"], "the browser contacted %s" % host)
    violations = [m for m in console if "Content Security Policy" in m or "Refused to" in m]
    results["cspViolations"] = violations
    check("csp", not violations, "Content-Security-Policy violations: %r" % violations)


try:
    run_all()
except Exception as error:  # a broken run is a failure with its reason, not a crash without output
    fail("run", "%s: %s" % (type(error).__name__, error))
finally:
    driver.quit()
print(json.dumps({"results": results, "failures": failures}, ensure_ascii=False))
