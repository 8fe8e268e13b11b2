// The C shim over zxing-cpp (CZXing.h). Compiled as C++17; every exception is caught here.
#define ZX_USE_UTF8 1
#include "CZXing.h"

#include <ZXing/ReadBarcode.h>
#include <ZXing/ZXVersion.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#define CZXING_STR2(x) #x
#define CZXING_STR(x) CZXING_STR2(x)

namespace {

uint8_t *copy_bytes(const uint8_t *data, size_t length) {
    if (length == 0) return nullptr;
    auto *copy = static_cast<uint8_t *>(std::malloc(length));
    if (!copy) throw std::bad_alloc();
    std::memcpy(copy, data, length);
    return copy;
}

}  // namespace

extern "C" int CZXing_read(const uint8_t *gray, int width, int height, int try_harder, int pure, CZXing_symbol **out,
                           size_t *count, char *err, size_t err_len) {
    *out = nullptr;
    *count = 0;
    if (!gray || width <= 0 || height <= 0) {
        std::snprintf(err, err_len, "zxing-cpp: empty image");
        return 1;
    }
    CZXing_symbol *symbols = nullptr;
    size_t made = 0;
    try {
        // The second pass only when the first found nothing: the default local-average binarizer (uneven light),
        // then a global histogram (low contrast, some symbols in perspective).
        const ZXing::Binarizer passes[] = {ZXing::Binarizer::LocalAverage, ZXing::Binarizer::GlobalHistogram};
        ZXing::ImageView view(gray, width, height, ZXing::ImageFormat::Lum);
        ZXing::Results results;
        for (ZXing::Binarizer binarizer : passes) {
            ZXing::DecodeHints hints;
            hints.setFormats(ZXing::BarcodeFormat::QRCode);
            hints.setTryHarder(try_harder != 0);
            hints.setTryRotate(try_harder != 0);
            hints.setTryDownscale(try_harder != 0);
            hints.setBinarizer(binarizer);
            hints.setIsPure(pure != 0);
            results = ZXing::ReadBarcodes(view, hints);
            bool any = false;
            for (const auto &result : results) any = any || (result.isValid() && result.format() == ZXing::BarcodeFormat::QRCode);
            if (any || !try_harder || pure) break;
        }
        size_t valid = 0;
        for (const auto &result : results)
            if (result.isValid() && result.format() == ZXing::BarcodeFormat::QRCode) valid++;
        if (valid == 0) return 0;
        symbols = static_cast<CZXing_symbol *>(std::calloc(valid, sizeof(CZXing_symbol)));
        if (!symbols) throw std::bad_alloc();
        for (const auto &result : results) {
            if (!result.isValid() || result.format() != ZXing::BarcodeFormat::QRCode) continue;
            CZXing_symbol &symbol = symbols[made++];
            const ZXing::ByteArray &bytes = result.bytes();
            symbol.bytes = copy_bytes(bytes.data(), bytes.size());
            symbol.length = bytes.size();
#if ZXING_VERSION_MAJOR < 2
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            const ZXing::ByteArray &raw = result.rawBytes();
#pragma GCC diagnostic pop
            symbol.codewords = copy_bytes(raw.data(), raw.size());
            symbol.codeword_count = raw.size();
#endif
            const auto &position = result.position();
            for (int i = 0; i < 4; i++) {
                symbol.corners[2 * i] = position[i].x;
                symbol.corners[2 * i + 1] = position[i].y;
            }
            std::string level = result.ecLevel();
            symbol.error_correction = level.size() == 1 && std::strchr("LMQH", level[0]) ? level[0] : 0;
            symbol.mirrored = result.isMirrored() ? 1 : 0;
        }
    } catch (const std::exception &e) {
        CZXing_free(symbols, made);
        std::snprintf(err, err_len, "zxing-cpp: %s", e.what());
        return 1;
    } catch (...) {
        CZXing_free(symbols, made);
        std::snprintf(err, err_len, "zxing-cpp: unknown failure");
        return 1;
    }
    *out = symbols;
    *count = made;
    return 0;
}

extern "C" void CZXing_free(CZXing_symbol *symbols, size_t count) {
    if (!symbols) return;
    for (size_t i = 0; i < count; i++) {
        std::free(symbols[i].bytes);
        std::free(symbols[i].codewords);
    }
    std::free(symbols);
}

extern "C" const char *CZXing_version(void) {
    return CZXING_STR(ZXING_VERSION_MAJOR) "." CZXING_STR(ZXING_VERSION_MINOR) "." CZXING_STR(ZXING_VERSION_PATCH);
}
