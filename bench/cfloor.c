/* cfloor: the C floor of the issuing pipeline (docs/performance.md, "The C floor").

   The stages a card needs, called straight from C on the payloads `healthcards issue` signed, with nothing
   around them: raw DEFLATE (zlib, level 6, windowBits -15, one z_stream reset per card), the JWS signing input
   (base64url), ES256 with OpenSSL (EVP_DigestSign, DER to R||S), and with QR images the shc:/ QR (libqrencode:
   a byte segment "shc:/" and a numeric segment, error correction L, smallest version) and its PNG (libpng,
   1-bit gray, 4 px a module, 4-module quiet zone). Beside the floor, and left out of its figure, floor_verify
   reads each signature back as the pipeline's self-check does: SHA-256 of the signing input and ECDSA verify
   (EVP_PKEY_verify, one context for the run, the cheapest OpenSSL way), so what that check costs in OpenSSL
   alone can be compared too.

   Usage: cfloor [--no-qr | --png-fast | --png-both] KEY.pem PAYLOADS
     PAYLOADS   the JWS header JSON on the first line, then one minified payload JSON per line
                (`healthcards-bench instructions` writes it from the cards of a run)
     --no-qr    DEFLATE and ES256 only
     --png-fast the PNG at the pipeline's settings (zlib level 1, no row filter) instead of libpng's defaults
     --png-both both PNGs of each symbol (the bench counts each through its function)
   It prints the number of cards and the bytes it made (so nothing can be optimised away). Run it under
   `valgrind --tool=callgrind` on 100 and on 500 payloads: the difference over 400 is the floor per card, the
   start-up (OpenSSL's initialisation, reading the key) dropped out. The inclusive counts of floor_deflate,
   floor_sign, floor_qr, floor_png_default and floor_png_fast are the floor per stage; floor_verify's is the
   verify beside it. */
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <png.h>
#include <qrencode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void die(const char *what) {
    fprintf(stderr, "cfloor: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(2);
}

typedef struct {
    unsigned char *data;
    size_t size, capacity;
} buffer;

static void reserve(buffer *b, size_t extra) {
    if (b->size + extra <= b->capacity) return;
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + extra) capacity *= 2;
    b->data = realloc(b->data, capacity);
    if (!b->data) die("out of memory");
    b->capacity = capacity;
}

static void append(buffer *b, const void *data, size_t n) {
    reserve(b, n);
    memcpy(b->data + b->size, data, n);
    b->size += n;
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void base64url(buffer *out, const unsigned char *in, size_t n) {
    reserve(out, (n + 2) / 3 * 4);
    unsigned char *o = out->data + out->size;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        *o++ = b64url[v >> 18];
        *o++ = b64url[(v >> 12) & 63];
        *o++ = b64url[(v >> 6) & 63];
        *o++ = b64url[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)in[i] << 16;
        *o++ = b64url[v >> 18];
        *o++ = b64url[(v >> 12) & 63];
    } else if (n - i == 2) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
        *o++ = b64url[v >> 18];
        *o++ = b64url[(v >> 12) & 63];
        *o++ = b64url[(v >> 6) & 63];
    }
    out->size = (size_t)(o - out->data);
}

/* Raw DEFLATE of one payload into `out`. */
__attribute__((noinline)) void floor_deflate(z_stream *z, const unsigned char *in, size_t n, buffer *out) {
    if (deflateReset(z) != Z_OK) die("deflateReset");
    out->size = 0;
    reserve(out, deflateBound(z, n));
    z->next_in = (unsigned char *)in;
    z->avail_in = (uInt)n;
    z->next_out = out->data;
    z->avail_out = (uInt)out->capacity;
    if (deflate(z, Z_FINISH) != Z_STREAM_END) die("deflate");
    out->size = out->capacity - z->avail_out;
}

/* The JWS: header.payload signed with ES256, the signature as R||S. */
__attribute__((noinline)) void floor_sign(EVP_MD_CTX *ctx, EVP_PKEY *key, const buffer *header64, const buffer *deflated,
                                          buffer *jws, unsigned char raw[64]) {
    jws->size = 0;
    append(jws, header64->data, header64->size);
    append(jws, ".", 1);
    base64url(jws, deflated->data, deflated->size);
    unsigned char der[80];
    size_t der_len = sizeof der;
    if (EVP_MD_CTX_reset(ctx) != 1 || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1) die("EVP_DigestSignInit");
    if (EVP_DigestSign(ctx, der, &der_len, jws->data, jws->size) != 1) die("EVP_DigestSign");
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)der_len);
    if (!sig) die("d2i_ECDSA_SIG");
    if (BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, 32) != 32 || BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + 32, 32) != 32)
        die("signature size");
    ECDSA_SIG_free(sig);
    append(jws, ".", 1);
    base64url(jws, raw, 64);
}

/* The self-check's verify, beside the floor: the signature (R||S, the last 64 bytes signed) back to DER and
   verified over the SHA-256 of header.payload with one reused EVP_PKEY_CTX. */
__attribute__((noinline)) int floor_verify(EVP_PKEY_CTX *vctx, const buffer *jws, size_t signing_input, const unsigned char *raw) {
    unsigned char digest[32];
    SHA256(jws->data, signing_input, digest);
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    if (!sig || !r || !s || ECDSA_SIG_set0(sig, r, s) != 1) die("ECDSA_SIG");
    unsigned char *der = NULL;
    int der_len = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);
    if (der_len <= 0) die("i2d_ECDSA_SIG");
    int ok = EVP_PKEY_verify(vctx, der, (size_t)der_len, digest, sizeof digest);
    OPENSSL_free(der);
    if (ok != 1) die("the signature does not verify");
    return ok;
}

/* The shc:/ QR symbol of a JWS. */
__attribute__((noinline)) QRcode *floor_qr(const buffer *jws, buffer *digits) {
    digits->size = 0;
    reserve(digits, jws->size * 2);
    for (size_t i = 0; i < jws->size; i++) {
        unsigned v = jws->data[i] - 45u;
        digits->data[digits->size++] = (unsigned char)('0' + v / 10);
        digits->data[digits->size++] = (unsigned char)('0' + v % 10);
    }
    QRinput *input = QRinput_new2(0, QR_ECLEVEL_L);
    if (!input) die("QRinput_new2");
    if (QRinput_append(input, QR_MODE_8, 5, (const unsigned char *)"shc:/") != 0) die("QRinput_append byte");
    if (QRinput_append(input, QR_MODE_NUM, (int)digits->size, digits->data) != 0) die("QRinput_append numeric");
    QRcode *code = QRcode_encodeInput(input);
    QRinput_free(input);
    if (!code || code->version > 22) die("QRcode_encodeInput");
    return code;
}

static void png_write(png_structp png, png_bytep data, png_size_t n) { append((buffer *)png_get_io_ptr(png), data, n); }
static void png_flush(png_structp png) { (void)png; }

/* The symbol as a PNG in memory: 1-bit gray, `scale` px a module, a 4-module quiet zone. */
static void floor_png(const QRcode *code, int fast, buffer *raster, buffer *out) {
    const int scale = 4, quiet = 4;
    int side = (code->width + 2 * quiet) * scale;
    size_t stride = (size_t)(side + 7) / 8;
    raster->size = 0;
    reserve(raster, stride * (size_t)side);
    memset(raster->data, 0xFF, stride * (size_t)side);
    for (int my = 0; my < code->width; my++) {
        unsigned char *row = raster->data + (size_t)(my + quiet) * scale * stride;
        for (int mx = 0; mx < code->width; mx++) {
            if (!(code->data[my * code->width + mx] & 1)) continue;
            for (int x = (mx + quiet) * scale, end = x + scale; x < end; x++) row[x >> 3] &= (unsigned char)~(0x80 >> (x & 7));
        }
        for (int y = 1; y < scale; y++) memcpy(row + (size_t)y * stride, row, stride);
    }
    out->size = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) die("libpng");
    if (setjmp(png_jmpbuf(png))) die("libpng write");
    png_set_write_fn(png, out, png_write, png_flush);
    if (fast) {
        png_set_compression_level(png, 1);
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    }
    png_set_IHDR(png, info, (png_uint_32)side, (png_uint_32)side, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < side; y++) png_write_row(png, raster->data + (size_t)y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
}

/* The PNG at libpng's defaults (zlib level 6, adaptive filters), and at the pipeline's settings. */
__attribute__((noinline)) void floor_png_default(const QRcode *code, buffer *raster, buffer *out) { floor_png(code, 0, raster, out); }
__attribute__((noinline)) void floor_png_fast(const QRcode *code, buffer *raster, buffer *out) { floor_png(code, 1, raster, out); }

int main(int argc, char **argv) {
    int qr = 1, fast = 0, both = 0, arg = 1;
    const char *usage = "usage: cfloor [--no-qr | --png-fast | --png-both] KEY.pem PAYLOADS";
    for (; arg < argc && argv[arg][0] == '-'; arg++) {
        if (!strcmp(argv[arg], "--no-qr")) qr = 0;
        else if (!strcmp(argv[arg], "--png-fast")) fast = 1;
        else if (!strcmp(argv[arg], "--png-both")) both = 1;
        else die(usage);
    }
    if (argc - arg != 2) die(usage);
    FILE *keyfile = fopen(argv[arg], "r");
    if (!keyfile) die("cannot open the key");
    EVP_PKEY *key = PEM_read_PrivateKey(keyfile, NULL, NULL, NULL);
    fclose(keyfile);
    if (!key) die("cannot read the key");
    FILE *in = fopen(argv[arg + 1], "r");
    if (!in) die("cannot open the payloads");
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) die("deflateInit2");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) die("EVP_MD_CTX_new");
    EVP_PKEY_CTX *vctx = EVP_PKEY_CTX_new(key, NULL);
    if (!vctx || EVP_PKEY_verify_init(vctx) != 1 || EVP_PKEY_CTX_set_signature_md(vctx, EVP_sha256()) != 1) die("EVP_PKEY_verify_init");
    unsigned char raw[64];
    buffer header64 = {0}, deflated = {0}, jws = {0}, digits = {0}, raster = {0}, png = {0};
    char *line = NULL;
    size_t capacity = 0;
    ssize_t n;
    long cards = 0;
    unsigned long long bytes = 0;
    int first = 1;
    while ((n = getline(&line, &capacity, in)) > 0) {
        if (line[n - 1] == '\n') n--;
        if (first) {
            base64url(&header64, (unsigned char *)line, (size_t)n);
            first = 0;
            continue;
        }
        floor_deflate(&z, (unsigned char *)line, (size_t)n, &deflated);
        floor_sign(ctx, key, &header64, &deflated, &jws, raw);
        floor_verify(vctx, &jws, jws.size - 87, raw);
        bytes += jws.size;
        if (qr) {
            QRcode *code = floor_qr(&jws, &digits);
            if (both || !fast) {
                floor_png_default(code, &raster, &png);
                bytes += png.size;
            }
            if (both || fast) {
                floor_png_fast(code, &raster, &png);
                bytes += png.size;
            }
            QRcode_free(code);
        }
        cards++;
    }
    printf("%ld cards, %llu bytes\n", cards, bytes);
    free(line);
    fclose(in);
    deflateEnd(&z);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_CTX_free(vctx);
    EVP_PKEY_free(key);
    free(header64.data), free(deflated.data), free(jws.data), free(digits.data), free(raster.data), free(png.data);
    return 0;
}
