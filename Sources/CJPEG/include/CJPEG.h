#ifndef HEALTHCARDS_CJPEG_H
#define HEALTHCARDS_CJPEG_H
#include <stddef.h>
#include <stdint.h>

/* Reading JPEG images (photographs of QR codes) with libjpeg (Debian libjpeg62-turbo). libjpeg's error path
   is a longjmp out of its error handler, which must stay inside C: this target owns every setjmp. */

/* Reads a JPEG's width and height from its header (SOF marker), decoding no pixel. Returns 0 on success;
   otherwise non-zero with a message in err. */
int CJPEG_read_size(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height, char *err, size_t err_len);

/* Decodes a JPEG (baseline, progressive, arithmetic; gray, YCbCr, RGB, CMYK or YCCK) to 8-bit gray, row-major,
   into the caller's `gray` buffer of `capacity` bytes. An image of more than `capacity` pixels is refused
   before any pixel is decoded.
   max_memory: the most bytes libjpeg may allocate for its own buffers (a progressive image keeps every DCT
   coefficient: 2 bytes a pixel and component); over it the decoding stops with an error.
   max_scans: the most scans (SOS markers) accepted in a progressive image; each scan may revisit every
   coefficient, so this bounds the time a small crafted file can take.
   Corrupt-data warnings are tolerated (a cut-off photo keeps what was decoded; the rest is gray).
   Returns 0 on success with the size in *width and *height. */
int CJPEG_decode_gray8(const uint8_t *data, size_t size, uint8_t *gray, size_t capacity, long max_memory,
                       int max_scans, uint32_t *width, uint32_t *height, char *err, size_t err_len);

/* The libjpeg API version this was built against (JPEG_LIB_VERSION, e.g. 62) and libjpeg-turbo's version
   when known (LIBJPEG_TURBO_VERSION, e.g. "2.1.5"). */
int CJPEG_lib_version(void);
const char *CJPEG_turbo_version(void);
#endif
