#ifndef HEALTHCARDS_CZXING_H
#define HEALTHCARDS_CZXING_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A C interface to zxing-cpp (Debian libzxing-dev, a C++ library) for reading QR symbols from a gray raster:
   the second decoder `verify` tries when zbar finds nothing. The C++ (templates, exceptions) stays in
   CZXing.cpp; no exception crosses this interface. */

/* One QR symbol zxing-cpp read. */
typedef struct {
    /* The symbol's content: every segment's data concatenated, no charset conversion (Result::bytes()). */
    uint8_t *bytes;
    size_t length;
    /* The error-corrected data codewords in stream order (zxing-cpp 1.x Result::rawBytes()), from which the
       segment headers are read; NULL with count 0 when the library does not report them. */
    uint8_t *codewords;
    size_t codeword_count;
    /* The symbol's corners in pixels, x then y, in the symbol's own order: top left, top right, bottom right,
       bottom left (so a symbol turned a quarter has its top left elsewhere). */
    int corners[8];
    /* 'L', 'M', 'Q' or 'H'; 0 when not reported. */
    char error_correction;
    /* 1 when the symbol was read mirrored. */
    int mirrored;
} CZXing_symbol;

/* Reads every QR symbol in `gray` (8-bit, row-major, `width` x `height`, rows of `width` bytes, 0 black).
   try_harder: 1 also tries rotated, downscaled and harder-to-find symbols, and, when nothing is found, a
   global-histogram binarizer after the local-average one (slower).
   pure: 1 reads only a symbol that fills the image with its quiet zone, straight (zxing-cpp's pure-symbol reader,
   which searches no finder patterns: zxing-cpp 1.4's finder search misses some symbols of about 1.25 pixels a
   module that it reads); try_harder is then ignored.
   On success returns 0 with *out an array of *count symbols (free with CZXing_free; NULL when none).
   On failure (out of memory, an exception in the library) returns non-zero with a message in err. */
int CZXing_read(const uint8_t *gray, int width, int height, int try_harder, int pure, CZXing_symbol **out, size_t *count,
                char *err, size_t err_len);

void CZXing_free(CZXing_symbol *symbols, size_t count);

/* The zxing-cpp version this was built against, e.g. "1.4.0". */
const char *CZXing_version(void);

#ifdef __cplusplus
}
#endif
#endif
