/* healthcards-viewer: opens a SMART Health Link in the browser (WebCrypto, DecompressionStream), no other code. */
"use strict";

(function () {
  // ---- Limits: every byte comes from outside. ----
  const LIMITS = {
    linkCharacters: 20000, // the link text (fragment or pasted)
    responseBytes: 10 * 1024 * 1024, // a manifest or a JWE
    inflatedBytes: 10 * 1024 * 1024, // a file or a card payload after inflating
    files: 50, // files of a manifest
    cards: 50, // JWS in a .smart-health-card file
    keySetBytes: 512 * 1024,
    crlBytes: 5 * 1024 * 1024,
    timeoutMs: 30000,
  };
  const RECIPIENT_FOR_DIRECT = "Health record viewer page at " + location.host;

  const $ = (id) => document.getElementById(id);
  const textEncoder = new TextEncoder();
  const strictDecoder = new TextDecoder("utf-8", { fatal: true });

  class ViewerError extends Error {
    constructor(kind, message) {
      super(message);
      this.kind = kind; // "bad", "warn", "expired", "inactive", "keys"
    }
  }

  // ---- Small DOM helpers: text only, never HTML. ----
  function el(tag, attributes, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") node.textContent = value;
      else if (name === "className") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children || []) if (child) node.appendChild(child);
    return node;
  }

  /** A guess at the language of a name from its script, so that CJK names get the right glyphs. */
  function scriptLang(text) {
    if (/[\u3040-\u30ff]/.test(text)) return "ja";
    if (/[\uac00-\ud7af\u1100-\u11ff]/.test(text)) return "ko";
    if (/[\u3400-\u9fff\uf900-\ufaff]/.test(text)) return "zh";
    if (/[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff]/.test(text)) return "ar";
    if (/[\u0590-\u05ff]/.test(text)) return "he";
    return null;
  }

  /** Text from a record: its own direction (dir=auto) and, where the script tells, its language. */
  function recordText(tag, text, className) {
    const lang = scriptLang(text);
    return el(tag, { text, dir: "auto", lang: lang || undefined, className });
  }

  // ---- Status: the live region says what happens, in words; colour repeats it. ----
  const SYMBOLS = { ok: "\u2713", bad: "\u2717", warn: "!", busy: "\u2026" };

  function setStatus(kind, title, detail) {
    const status = $("status");
    status.className = "status " + kind;
    const lines = [el("p", {}, [el("span", { className: "symbol", "aria-hidden": "true", text: SYMBOLS[kind] || "" }),
      el("span", { className: "verdict-title", text: title })])];
    if (detail) lines.push(el("p", { text: detail, dir: "auto" }));
    status.replaceChildren(...lines);
  }

  function clearStatus() {
    const status = $("status");
    status.className = "status";
    status.replaceChildren();
  }

  // ---- base64url and bytes ----
  function base64ToBytes(text, { strict }) {
    let s = text;
    if (strict) {
      if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new ViewerError("bad", "not base64url");
    } else {
      s = s.replace(/\s+/g, "").replace(/=+$/, "");
      if (!/^[A-Za-z0-9_\-+/]*$/.test(s)) throw new ViewerError("bad", "not base64url");
    }
    if (s.length % 4 === 1) throw new ViewerError("bad", "base64url of an impossible length");
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    s += "=".repeat((4 - (s.length % 4)) % 4);
    const binary = atob(s);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function bytesToBase64url(bytes) {
    let binary = "";
    for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function concat(chunks, total) {
    const out = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }

  async function readLimited(stream, limit, what) {
    const reader = stream.getReader();
    const chunks = [];
    let total = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > limit) {
        reader.cancel().catch(() => {});
        throw new ViewerError("bad", what + " is larger than this page reads (" + Math.round(limit / 1048576) + " MB)");
      }
      chunks.push(value);
    }
    return concat(chunks, total);
  }

  /** Raw DEFLATE (RFC 1951, no zlib header), as cards and JWE files with zip DEF carry. */
  async function inflateRaw(bytes, what) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    try {
      return await readLimited(stream, LIMITS.inflatedBytes, what);
    } catch (error) {
      if (error instanceof ViewerError) throw error;
      throw new ViewerError("bad", what + " is not raw DEFLATE data");
    }
  }

  function parseJSON(bytes, what) {
    try {
      return JSON.parse(typeof bytes === "string" ? bytes : strictDecoder.decode(bytes));
    } catch (error) {
      throw new ViewerError("bad", what + " is not JSON");
    }
  }

  const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

  // ---- Network: no cookies, no referrer, no cache, a time limit and a size limit. ----
  async function request(url, options, limit, what) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), LIMITS.timeoutMs);
    try {
      const response = await fetch(url, Object.assign({
        credentials: "omit", referrerPolicy: "no-referrer", cache: "no-store", redirect: "follow", mode: "cors",
        signal: controller.signal,
      }, options));
      const body = response.body ? await readLimited(response.body, limit, what) : new Uint8Array(0);
      return { status: response.status, headers: response.headers, body };
    } finally {
      clearTimeout(timer);
    }
  }

  function httpsURL(text) {
    let url;
    try {
      url = new URL(text);
    } catch (error) {
      return null;
    }
    return url.protocol === "https:" ? url : null;
  }

  // ---- The link ----
  /**
   * Reads a link as people paste or scan it: with or without a viewer address in front, with spaces or line
   * breaks inside, percent-encoded, with '=' padding. Returns the payload object or throws.
   */
  function parseLink(raw) {
    let text = String(raw || "");
    if (text.length > LIMITS.linkCharacters) throw new ViewerError("bad", "This link is too long to be a SMART Health Link.");
    if (/%[0-9A-Fa-f]{2}/.test(text)) {
      try {
        text = decodeURIComponent(text);
      } catch (error) {
        /* keep it as it is */
      }
    }
    text = text.replace(/\s+/g, "");
    const marker = text.toLowerCase().lastIndexOf("shlink:/");
    let encoded;
    if (marker >= 0) encoded = text.slice(marker + "shlink:/".length);
    else if (text.startsWith("#")) encoded = text.slice(1);
    else encoded = text;
    encoded = encoded.replace(/^\/+/, "");
    if (!/^eyJ/.test(encoded)) {
      throw new ViewerError("bad", "This is not a SMART Health Link: it should contain shlink:/ followed by the link's code.");
    }
    let payload;
    try {
      payload = parseJSON(base64ToBytes(encoded, { strict: false }), "The link");
    } catch (error) {
      throw new ViewerError("bad", "This SMART Health Link is damaged (its code does not decode). Ask for the link again.");
    }
    if (!isObject(payload)) throw new ViewerError("bad", "This SMART Health Link is damaged. Ask for the link again.");
    const url = typeof payload.url === "string" ? httpsURL(payload.url) : null;
    if (!url) throw new ViewerError("bad", "This SMART Health Link has no https address to fetch the record from.");
    let key = null;
    if (typeof payload.key === "string" && payload.key.length === 43) {
      try {
        key = base64ToBytes(payload.key, { strict: true });
      } catch (error) {
        key = null;
      }
    }
    if (!key || key.length !== 32) throw new ViewerError("bad", "This SMART Health Link has no usable key (32 bytes, base64url).");
    const flag = typeof payload.flag === "string" ? payload.flag : "";
    if (flag.includes("U") && flag.includes("P")) {
      throw new ViewerError("bad", "This SMART Health Link is malformed: flags U and P never go together.");
    }
    const exp = typeof payload.exp === "number" && isFinite(payload.exp) ? payload.exp : null;
    const label = typeof payload.label === "string" ? payload.label.slice(0, 80) : null;
    return { url: url.href, key, flag, exp, label };
  }

  // ---- JWE (compact, alg dir, enc A256GCM) ----
  async function decryptJWE(compact, keyBytes) {
    const text = typeof compact === "string" ? compact.trim() : "";
    const parts = text.split(".");
    if (parts.length !== 5 || parts[1] !== "") throw new ViewerError("bad", "a file of the link is not a compact JWE with alg dir");
    const header = parseJSON(base64ToBytes(parts[0], { strict: true }), "a file's JWE header");
    if (!isObject(header) || header.alg !== "dir" || header.enc !== "A256GCM") {
      throw new ViewerError("bad", "a file of the link is not encrypted as SMART Health Links are (alg dir, enc A256GCM)");
    }
    if (header.crit !== undefined) throw new ViewerError("bad", "a file's JWE header has crit, which this page does not understand");
    const iv = base64ToBytes(parts[2], { strict: true });
    const ciphertext = base64ToBytes(parts[3], { strict: true });
    const tag = base64ToBytes(parts[4], { strict: true });
    if (iv.length !== 12 || tag.length !== 16) throw new ViewerError("bad", "a file's JWE has an IV or tag of the wrong size");
    const key = await crypto.subtle.importKey("raw", keyBytes, { name: "AES-GCM" }, false, ["decrypt"]);
    let plaintext;
    try {
      plaintext = new Uint8Array(await crypto.subtle.decrypt(
        { name: "AES-GCM", iv, additionalData: textEncoder.encode(parts[0]), tagLength: 128 }, key,
        concat([ciphertext, tag], ciphertext.length + tag.length)));
    } catch (error) {
      throw new ViewerError("bad", "A file of the link does not open with the link's key: the link is damaged, or the file was altered.");
    }
    if (header.zip !== undefined) {
      if (header.zip !== "DEF") throw new ViewerError("bad", "a file is compressed with " + String(header.zip) + ", not DEF");
      plaintext = await inflateRaw(plaintext, "a file of the link");
    }
    return { header, plaintext };
  }

  // ---- Fetching the link's files ----
  /** The files of the link: [{contentType, jwe}], or throws ViewerError with what the person should know. */
  async function fetchFiles(link, recipient, passcode) {
    if (link.flag.includes("U")) {
      const url = new URL(link.url);
      url.searchParams.set("recipient", recipient);
      const response = await request(url.href, { method: "GET" }, LIMITS.responseBytes, "The link's file");
      if (response.status === 404 || response.status === 410) throw new ViewerError("inactive");
      if (response.status !== 200) throw new ViewerError("bad", "The link's host answered " + response.status + ".");
      return [{ contentType: null, jwe: strictDecoder.decode(response.body) }];
    }
    const body = { recipient };
    if (link.flag.includes("P")) body.passcode = passcode;
    const response = await request(link.url, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    }, LIMITS.responseBytes, "The link's manifest");
    if (response.status === 401) {
      let remaining = null;
      try {
        const answer = parseJSON(response.body, "the answer");
        if (typeof answer.remainingAttempts === "number") remaining = answer.remainingAttempts;
      } catch (error) {
        /* no count given */
      }
      const error = new ViewerError("passcode");
      error.remainingAttempts = remaining;
      throw error;
    }
    if (response.status === 404) throw new ViewerError("inactive");
    if (response.status === 429) {
      const wait = response.headers.get("Retry-After");
      throw new ViewerError("warn", "The link's host asks to wait" + (wait ? " " + wait + " seconds" : "") + " before fetching again.");
    }
    if (response.status !== 200) throw new ViewerError("bad", "The link's host answered " + response.status + ".");
    const manifest = parseJSON(response.body, "The link's manifest");
    if (!isObject(manifest) || !Array.isArray(manifest.files)) throw new ViewerError("bad", "The link's manifest lists no files.");
    if (manifest.files.length > LIMITS.files) throw new ViewerError("bad", "The link's manifest lists more files than this page reads.");
    const files = [];
    for (const entry of manifest.files) {
      if (!isObject(entry) || typeof entry.contentType !== "string") continue;
      if (typeof entry.embedded === "string") {
        files.push({ contentType: entry.contentType, jwe: entry.embedded });
      } else if (typeof entry.location === "string" && httpsURL(entry.location)) {
        const file = await request(entry.location, { method: "GET" }, LIMITS.responseBytes, "A file of the link");
        if (file.status === 404) throw new ViewerError("inactive");
        if (file.status !== 200) throw new ViewerError("bad", "The link's host answered " + file.status + " for a file.");
        files.push({ contentType: entry.contentType, jwe: strictDecoder.decode(file.body) });
      }
    }
    return files;
  }

  // ---- SMART Health Cards: ES256 signature, kid, key set, revocation ----
  const keySets = new Map();

  async function fetchJSON(url, limit, what) {
    const response = await request(url, { method: "GET" }, limit, what);
    if (response.status !== 200) throw new Error(what + ": " + response.status);
    return parseJSON(response.body, what);
  }

  function issuerKeySet(iss) {
    if (!keySets.has(iss)) keySets.set(iss, fetchJSON(iss + "/.well-known/jwks.json", LIMITS.keySetBytes, "the key set"));
    return keySets.get(iss);
  }

  /** RFC 7638 thumbprint of an EC P-256 JWK, base64url: what a SMART Health Card's kid SHALL be. */
  async function thumbprint(jwk) {
    const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
    return bytesToBase64url(new Uint8Array(await crypto.subtle.digest("SHA-256", textEncoder.encode(canonical))));
  }

  /** Whether the CRL entries revoke a card with rid `rid` and nbf `nbf` (`rid` or `rid.<seconds>`, nbf before it). */
  function revokes(rids, rid, nbf) {
    for (const entry of rids) {
      if (typeof entry !== "string") continue;
      const dot = entry.indexOf(".");
      if (dot < 0) {
        if (entry === rid) return true;
      } else if (entry.slice(0, dot) === rid) {
        const before = Number(entry.slice(dot + 1));
        if (!isFinite(before) || typeof nbf !== "number" || nbf < before) return true;
      }
    }
    return false;
  }

  /**
   * Verifies one compact JWS of a card. Returns {verdict: "ok"|"bad"|"warn", title, detail, payload}; payload is
   * null when the card could not even be read.
   */
  async function checkCard(jws) {
    const parts = typeof jws === "string" ? jws.split(".") : [];
    if (parts.length !== 3) return { verdict: "bad", title: "Not a SMART Health Card", detail: "The card is not a compact JWS.", payload: null };
    let header;
    let payload;
    try {
      header = parseJSON(base64ToBytes(parts[0], { strict: true }), "the card's header");
      const deflated = base64ToBytes(parts[1], { strict: true });
      payload = parseJSON(header.zip === "DEF" ? await inflateRaw(deflated, "the card") : deflated, "the card");
    } catch (error) {
      return { verdict: "bad", title: "The card cannot be read", detail: error.message, payload: null };
    }
    if (!isObject(payload) || !isObject(payload.vc)) {
      return { verdict: "bad", title: "The card cannot be read", detail: "It has no vc.", payload: null };
    }
    const iss = typeof payload.iss === "string" ? payload.iss : "";
    const issURL = httpsURL(iss);
    if (!issURL || iss.endsWith("/") || issURL.search || issURL.hash) {
      return { verdict: "bad", title: "Signature does not match", detail: "The card names no issuer address (iss) to check it with.", payload };
    }
    if (header.alg !== "ES256" || typeof header.kid !== "string") {
      return { verdict: "bad", title: "Signature does not match", detail: "The card is not signed with ES256 and a kid.", payload };
    }
    let keySet;
    try {
      keySet = await issuerKeySet(iss);
    } catch (error) {
      return {
        verdict: "warn", title: "Issuer's keys could not be fetched",
        detail: "Not checked: " + iss + "/.well-known/jwks.json could not be read, so nothing says who signed this card.", payload,
      };
    }
    const keys = isObject(keySet) && Array.isArray(keySet.keys) ? keySet.keys : [];
    const jwk = keys.find((key) => isObject(key) && key.kid === header.kid && key.kty === "EC" && key.crv === "P-256");
    if (!jwk) {
      return { verdict: "bad", title: "Signature does not match", detail: iss + " publishes no key with this card's kid.", payload };
    }
    let valid = false;
    try {
      if ((await thumbprint(jwk)) !== header.kid) {
        return { verdict: "bad", title: "Signature does not match", detail: "The issuer's key with this kid is not the key the kid names.", payload };
      }
      const signature = base64ToBytes(parts[2], { strict: true });
      if (signature.length === 64) {
        const key = await crypto.subtle.importKey("jwk", { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, ext: true },
          { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
        // WebCrypto's ECDSA takes the IEEE P1363 form, R||S: the JWS form.
        valid = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, signature,
          textEncoder.encode(parts[0] + "." + parts[1]));
      }
    } catch (error) {
      valid = false;
    }
    if (!valid) {
      return { verdict: "bad", title: "Signature does not match", detail: "The card was changed after " + iss + " signed it, or was not signed by it.", payload };
    }
    const now = Date.now() / 1000;
    if (typeof payload.exp === "number" && payload.exp < now) {
      return { verdict: "bad", title: "Card expired", detail: "Signed by " + iss + ", but it expired on " + formatInstant(payload.exp) + ".", payload };
    }
    if (typeof jwk.crlVersion === "number") {
      const rid = typeof payload.vc.rid === "string" ? payload.vc.rid : null;
      if (rid) {
        let crl;
        try {
          crl = await fetchJSON(iss + "/.well-known/crl/" + encodeURIComponent(header.kid) + ".json", LIMITS.crlBytes, "the revocation list");
        } catch (error) {
          return { verdict: "warn", title: "Signed by " + iss + ", revocation not checked", detail: "The issuer's revocation list could not be fetched.", payload };
        }
        if (!isObject(crl) || !Array.isArray(crl.rids)) {
          return { verdict: "warn", title: "Signed by " + iss + ", revocation not checked", detail: "The issuer's revocation list cannot be read.", payload };
        }
        if (revokes(crl.rids, rid, payload.nbf)) {
          return { verdict: "bad", title: "Revoked", detail: iss + " has revoked this card: do not accept it.", payload };
        }
        if (typeof crl.ctr === "number" && crl.ctr < jwk.crlVersion) {
          return { verdict: "warn", title: "Signed by " + iss + ", revocation list out of date", detail: "The revocation list is older than the key set says.", payload };
        }
      }
    }
    return { verdict: "ok", title: "Signed by " + iss + ", checked", detail: "The signature matches the issuer's published key, and the card is not revoked.", payload };
  }

  // ---- Showing a FHIR Bundle ----
  function codes() {
    return (typeof window.HEALTHCARDS_CODES === "object" && window.HEALTHCARDS_CODES) || {};
  }

  const SYSTEMS = {
    cvx: "http://hl7.org/fhir/sid/cvx",
    loinc: "http://loinc.org",
    snomed: "http://snomed.info/sct",
  };

  function conceptText(concept) {
    if (!isObject(concept)) return null;
    const tables = codes();
    const codings = Array.isArray(concept.coding) ? concept.coding.filter(isObject) : [];
    for (const coding of codings) {
      const code = typeof coding.code === "string" ? coding.code : null;
      if (!code) continue;
      const table = coding.system === SYSTEMS.cvx ? tables.cvx : coding.system === SYSTEMS.loinc ? tables.loinc
        : coding.system === SYSTEMS.snomed ? tables.snomed : null;
      if (table && typeof table[code] === "string") return table[code];
    }
    if (typeof concept.text === "string") return concept.text;
    for (const coding of codings) if (typeof coding.display === "string") return coding.display;
    for (const coding of codings) {
      if (typeof coding.code === "string") {
        const system = coding.system === SYSTEMS.cvx ? "CVX" : coding.system === SYSTEMS.loinc ? "LOINC"
          : coding.system === SYSTEMS.snomed ? "SNOMED CT" : "code";
        return system + " " + coding.code;
      }
    }
    return null;
  }

  function formatInstant(seconds) {
    return new Date(seconds * 1000).toISOString().slice(0, 10);
  }

  /** A FHIR date or dateTime as a <time>: the day in words in the reader's language, the value in datetime. */
  function timeElement(value) {
    if (typeof value !== "string") return null;
    const match = /^(\d{4})(-(\d{2})(-(\d{2}))?)?/.exec(value);
    let text = value;
    if (match && match[5]) {
      const date = new Date(Date.UTC(Number(match[1]), Number(match[3]) - 1, Number(match[5])));
      if (!isNaN(date)) {
        text = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "long", day: "numeric", timeZone: "UTC" }).format(date);
      }
    }
    return el("time", { datetime: value.slice(0, 10), text });
  }

  function humanName(names) {
    if (!Array.isArray(names)) return null;
    const name = names.find(isObject);
    if (!name) return null;
    if (typeof name.text === "string" && name.text.trim()) return name.text.trim();
    const given = Array.isArray(name.given) ? name.given.filter((part) => typeof part === "string") : [];
    const family = typeof name.family === "string" ? name.family : "";
    const all = given.join(" ") + family;
    // Chinese, Japanese and Korean names are said family name first, without a space.
    if (/^(zh|ja|ko)$/.test(scriptLang(all) || "")) return (family + given.join("")).trim();
    return [...given, family].filter((part) => part).join(" ").trim() || null;
  }

  function factList(facts) {
    const list = el("dl", { className: "facts" });
    for (const [term, value] of facts) {
      if (!value) continue;
      list.appendChild(el("dt", { text: term }));
      const dd = el("dd");
      if (typeof value === "string") dd.appendChild(recordText("span", value));
      else dd.appendChild(value);
      list.appendChild(dd);
    }
    return list;
  }

  function observationValue(resource) {
    if (isObject(resource.valueCodeableConcept)) return conceptText(resource.valueCodeableConcept);
    if (isObject(resource.valueQuantity) && typeof resource.valueQuantity.value === "number") {
      const unit = resource.valueQuantity.unit || resource.valueQuantity.code || "";
      return String(resource.valueQuantity.value) + (unit ? " " + unit : "");
    }
    if (typeof resource.valueString === "string") return resource.valueString;
    if (typeof resource.valueBoolean === "boolean") return resource.valueBoolean ? "yes" : "no";
    return null;
  }

  function performerText(performers, key) {
    if (!Array.isArray(performers)) return null;
    for (const performer of performers) {
      const target = isObject(performer) ? (key ? performer[key] : performer) : null;
      if (isObject(target) && typeof target.display === "string") return target.display;
    }
    return null;
  }

  function isPatientSummaryPDF(resource) {
    if (resource.resourceType !== "DocumentReference") return false;
    const coded = isObject(resource.type) && Array.isArray(resource.type.coding)
      && resource.type.coding.some((c) => isObject(c) && c.system === SYSTEMS.loinc && c.code === "60591-5");
    return coded || Array.isArray(resource.content);
  }

  function pdfDownload(resource) {
    const contents = Array.isArray(resource.content) ? resource.content : [];
    for (const content of contents) {
      const attachment = isObject(content) ? content.attachment : null;
      if (!isObject(attachment) || attachment.contentType !== "application/pdf" || typeof attachment.data !== "string") continue;
      let bytes;
      try {
        bytes = base64ToBytes(attachment.data.replace(/[+/]/g, (c) => (c === "+" ? "-" : "_")), { strict: false });
      } catch (error) {
        return el("p", { text: "The record's PDF cannot be read (its data is not base64)." });
      }
      if (bytes.length < 5 || String.fromCharCode(...bytes.slice(0, 5)) !== "%PDF-") {
        return el("p", { text: "The record's attachment is not a PDF." });
      }
      const url = URL.createObjectURL(new Blob([bytes], { type: "application/pdf" }));
      const size = bytes.length < 1024 ? bytes.length + " bytes" : Math.round(bytes.length / 1024) + " kB";
      const title = typeof attachment.title === "string" ? attachment.title : "the printed record";
      return el("p", {}, [el("a", {
        className: "download", href: url, download: "health-record.pdf",
        text: "Download " + title + " (PDF, " + size + ")",
      })]);
    }
    return null;
  }

  /** The Patient, immunizations, results and a PDF of a FHIR Bundle, under headings of `level`. */
  function renderBundle(bundle, level) {
    const container = el("div", { className: "bundle" });
    if (!isObject(bundle) || bundle.resourceType !== "Bundle" || !Array.isArray(bundle.entry)) {
      container.appendChild(el("p", { text: "The record is not a FHIR Bundle; nothing of it is shown." }));
      return container;
    }
    const resources = bundle.entry.filter(isObject).map((entry) => entry.resource).filter(isObject);
    const patient = resources.find((r) => r.resourceType === "Patient");
    const heading = (text) => el("h" + Math.min(level, 6), { text });
    container.appendChild(heading("Person"));
    if (patient) {
      const name = humanName(patient.name);
      container.appendChild(recordText("p", name || "(no name given)", "person-name"));
      container.appendChild(factList([["Birth date", timeElement(patient.birthDate)]]));
    } else {
      container.appendChild(el("p", { text: "The record names no person." }));
    }
    const immunizations = resources.filter((r) => r.resourceType === "Immunization");
    if (immunizations.length) {
      container.appendChild(heading("Vaccinations (" + immunizations.length + ")"));
      const list = el("ol", { className: "entries" });
      immunizations.forEach((dose, index) => {
        const vaccine = conceptText(dose.vaccineCode) || "Vaccine not named";
        const status = dose.status && dose.status !== "completed" ? String(dose.status) : null;
        list.appendChild(el("li", {}, [
          el("p", { className: "entry-title", text: "Dose " + (index + 1) + " of " + immunizations.length }),
          factList([
            ["Date", timeElement(dose.occurrenceDateTime || dose.occurrenceString)],
            ["Vaccine", vaccine],
            ["Lot", typeof dose.lotNumber === "string" ? dose.lotNumber : null],
            ["Given by", performerText(dose.performer, "actor")],
            ["Status", status],
          ]),
        ]));
      });
      container.appendChild(list);
    }
    const observations = resources.filter((r) => r.resourceType === "Observation");
    if (observations.length) {
      container.appendChild(heading("Test results (" + observations.length + ")"));
      const list = el("ol", { className: "entries" });
      for (const result of observations) {
        const test = conceptText(result.code) || "Test not named";
        list.appendChild(el("li", {}, [
          recordText("p", test, "entry-title"),
          factList([
            ["Result", observationValue(result) || "(no value)"],
            ["Date", timeElement(result.effectiveDateTime || (isObject(result.effectivePeriod) ? result.effectivePeriod.start : null))],
            ["Performed by", performerText(result.performer, null)],
            ["Status", typeof result.status === "string" && result.status !== "final" ? result.status : null],
          ]),
        ]));
      }
      container.appendChild(list);
    }
    for (const documentReference of resources.filter(isPatientSummaryPDF)) {
      const link = pdfDownload(documentReference);
      if (link) {
        container.appendChild(heading("Document"));
        container.appendChild(link);
      }
    }
    const shown = new Set(["Patient", "Immunization", "Observation", "DocumentReference"]);
    const others = resources.filter((r) => !shown.has(r.resourceType)).map((r) => String(r.resourceType));
    if (others.length) {
      container.appendChild(el("p", { className: "hint", text: "Also in the record, not shown here: " + others.join(", ") + "." }));
    }
    return container;
  }

  function verdictBox(kind, title, detail) {
    return el("div", { className: "verdict " + kind }, [
      el("p", {}, [el("span", { className: "symbol", "aria-hidden": "true", text: SYMBOLS[kind] }),
        el("span", { className: "verdict-title", text: title })]),
      detail ? el("p", { text: detail, dir: "auto" }) : null,
    ]);
  }

  /** A card: its verdict first, its content under it (behind a disclosure when it must not be trusted). */
  function renderCard(result, heading) {
    const article = el("article", { className: "record" }, [el("h3", { text: heading })]);
    article.appendChild(verdictBox(result.verdict, result.title, result.detail));
    const bundle = result.payload && isObject(result.payload.vc) && isObject(result.payload.vc.credentialSubject)
      ? result.payload.vc.credentialSubject.fhirBundle : null;
    if (!bundle) return article;
    const content = renderBundle(bundle, 4);
    if (result.verdict === "bad") {
      article.appendChild(el("details", { className: "untrusted" }, [
        el("summary", { text: "Show what the card says anyway (do not rely on it)" }), content]));
    } else {
      article.appendChild(content);
    }
    return article;
  }

  // ---- The page's flow ----
  const state = { link: null, busy: false };

  function contentTypeOf(file, header) {
    const type = file.contentType || (isObject(header) && typeof header.cty === "string" ? header.cty : "");
    return type.split(";")[0].trim().toLowerCase();
  }

  async function open() {
    const link = state.link;
    const recipient = link.flag.includes("U") ? ($("recipient").value.trim() || RECIPIENT_FOR_DIRECT) : $("recipient").value.trim();
    if (!recipient) {
      setStatus("warn", "Please enter your name or organisation.", "The link's host records who opens the link.");
      $("recipient").focus();
      return;
    }
    const passcode = $("passcode").value;
    if (link.flag.includes("P") && !passcode) {
      setStatus("warn", "Please enter the passcode.", null);
      $("passcode").focus();
      return;
    }
    state.busy = true;
    $("open-button").disabled = true;
    $("refetch-button").disabled = true;
    setStatus("busy", "Opening the record\u2026", null);
    $("record-list").replaceChildren();
    $("records").hidden = true;
    try {
      const files = await fetchFiles(link, recipient, passcode);
      const articles = [];
      const verdicts = [];
      for (const file of files) {
        const { header, plaintext } = await decryptJWE(file.jwe, link.key);
        const type = contentTypeOf(file, header);
        if (type === "application/smart-health-card") {
          const cardFile = parseJSON(plaintext, "The card file");
          const list = isObject(cardFile) && Array.isArray(cardFile.verifiableCredential) ? cardFile.verifiableCredential : [];
          if (!list.length) {
            articles.push(el("article", { className: "record" }, [el("h3", { text: "SMART Health Card" }),
              verdictBox("bad", "The card cannot be read", "The file holds no verifiableCredential.")]));
            verdicts.push("bad");
          }
          for (const [index, jws] of list.slice(0, LIMITS.cards).entries()) {
            const result = await checkCard(jws);
            verdicts.push(result.verdict);
            articles.push(renderCard(result, list.length > 1 ? "SMART Health Card " + (index + 1) + " of " + list.length : "SMART Health Card"));
          }
        } else if (type === "application/fhir+json") {
          const resource = parseJSON(plaintext, "The record");
          const article = el("article", { className: "record" }, [el("h3", { text: "Shared health record" })]);
          article.appendChild(verdictBox("warn", "Not signed: shared by " + new URL(link.url).host,
            "This record carries no signature, so this page cannot check who wrote it or whether it was changed."));
          article.appendChild(renderBundle(resource, 4));
          articles.push(article);
          verdicts.push("warn");
        } else {
          articles.push(el("article", { className: "record" }, [el("h3", { text: "A file this page does not show" }),
            el("p", { text: "Its type is " + (type || "not given") + "." })]));
        }
      }
      $("record-list").replaceChildren(...articles);
      $("records").hidden = articles.length === 0;
      summarize(verdicts);
      $("passcode-field").hidden = true;
      $("open-button").hidden = true;
      $("refetch-button").hidden = !link.flag.includes("L");
    } catch (error) {
      showError(error);
    } finally {
      state.busy = false;
      $("open-button").disabled = false;
      $("refetch-button").disabled = false;
    }
  }

  function summarize(verdicts) {
    if (!verdicts.length) {
      setStatus("warn", "The link holds nothing this page can show.", null);
    } else if (verdicts.includes("bad")) {
      setStatus("bad", "Do not rely on this record: see below.", verdicts.length > 1 ? "At least one item failed its check." : null);
    } else if (verdicts.every((v) => v === "ok")) {
      setStatus("ok", verdicts.length > 1 ? "All " + verdicts.length + " cards checked." : "Record opened and checked.", null);
    } else {
      setStatus("warn", "Record opened; not everything in it could be checked: see below.", null);
    }
  }

  function showError(error) {
    if (!(error instanceof ViewerError)) {
      setStatus("bad", "The record could not be fetched.", "The link's host could not be reached: check the connection and try again.");
      return;
    }
    switch (error.kind) {
      case "inactive":
        setStatus("bad", "Link no longer active", "The person who shared it has withdrawn it, or it ran out. Ask them for a new link.");
        break;
      case "expired":
        setStatus("bad", "Link expired", error.message);
        break;
      case "passcode": {
        $("passcode-field").hidden = false;
        $("passcode").value = "";
        const left = error.remainingAttempts;
        if (left === 0) {
          setStatus("bad", "Wrong passcode: no attempts left", "The link is now closed for good. Ask the person who shared it for a new link.");
          $("open-button").disabled = true;
        } else {
          setStatus("bad", "Wrong passcode", left === null ? "Try again." : left + (left === 1 ? " attempt left." : " attempts left."));
          $("passcode").focus();
        }
        break;
      }
      default:
        setStatus(error.kind === "warn" ? "warn" : "bad", error.message || "The record could not be opened.", null);
    }
  }

  function describeLink(link) {
    if (link.label) {
      $("link-label").textContent = link.label;
      $("link-label").hidden = false;
    }
    const facts = ["From " + new URL(link.url).host + "."];
    if (link.flag.includes("P")) facts.push("Needs a passcode.");
    if (link.flag.includes("L")) facts.push("Its content may be updated.");
    if (link.exp !== null) facts.push("Valid until " + new Date(link.exp * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC.");
    $("link-facts").textContent = facts.join(" ");
    $("link-facts").hidden = false;
  }

  /** Reads the link; a U link opens at once, a manifest link waits for the recipient (and passcode). */
  function start(raw) {
    let link;
    try {
      link = parseLink(raw);
    } catch (error) {
      $("paste-field").hidden = false;
      $("recipient-field").hidden = true;
      showError(error);
      return;
    }
    state.link = link;
    $("paste-field").hidden = true;
    describeLink(link);
    if (link.exp !== null && link.exp < Date.now() / 1000) {
      $("open-button").hidden = true;
      showError(new ViewerError("expired", "It was valid until " + new Date(link.exp * 1000).toISOString().replace("T", " ").slice(0, 16)
        + " UTC. Ask the person who shared it for a new link."));
      return;
    }
    clearStatus();
    const direct = link.flag.includes("U");
    $("recipient-field").hidden = direct;
    $("passcode-field").hidden = !link.flag.includes("P");
    if (direct) {
      open();
    } else if (!direct) {
      setStatus("busy", link.flag.includes("P") ? "Enter your name and the passcode, then open the record." : "Enter your name, then open the record.", null);
      $("recipient").focus();
    }
  }

  function init() {
    $("open-form").addEventListener("submit", (event) => {
      event.preventDefault();
      if (state.busy) return;
      if (!state.link) start($("link-input").value);
      else open();
    });
    $("refetch-button").addEventListener("click", () => {
      if (!state.busy && state.link) open();
    });
    window.addEventListener("hashchange", () => location.reload());
    const fragment = location.hash.slice(1);
    if (fragment) {
      start(fragment);
    } else {
      $("paste-field").hidden = false;
      $("recipient-field").hidden = true;
      setStatus("busy", "Scan a SMART Health Link with the camera, or paste one here.", null);
    }
  }

  init();
})();
