#ifndef HEALTHCARDS_CPNG_H
#define HEALTHCARDS_CPNG_H
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer that libpng writes into. Free with CPNG_buffer_free. */
typedef struct {
    uint8_t *data;
    size_t size;
    size_t capacity;
} CPNG_buffer;

/* Encodes a 1-bit grayscale PNG (bit set = white, as PNG gray 1 means) from packed rows.
   packed_rows: height rows of `stride` bytes, most significant bit first.
   compression_level: zlib level 0-9; filter: 0 = none, 1 = all (PNG_ALL_FILTERS), 2 = libpng default.
   pixels_per_metre: written as the pHYs chunk (the size the image is meant to print at); 0 writes none.
   Returns 0 on success; otherwise non-zero with a message in err. libpng's setjmp/longjmp error path
   never leaves this function. */
int CPNG_encode_gray1(const uint8_t *packed_rows, uint32_t width, uint32_t height, size_t stride,
                      int compression_level, int filter, uint32_t pixels_per_metre, CPNG_buffer *out, char *err,
                      size_t err_len);

/* Reads a PNG's width and height from its header, decoding no pixel. Returns 0 on success. */
int CPNG_read_size(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height, char *err, size_t err_len);

/* Decodes any PNG into 8-bit grayscale (alpha composited on white), row-major, into `gray` (the caller's
   buffer of `capacity` bytes). An image of more than `capacity` pixels is refused before any pixel is
   decoded. Returns 0 on success with the size in *width and *height. */
int CPNG_decode_gray8(const uint8_t *data, size_t size, uint8_t *gray, size_t capacity, uint32_t *width,
                      uint32_t *height, char *err, size_t err_len);

/* The version of the libpng this process runs with (png_get_libpng_ver), e.g. "1.6.39". */
const char *CPNG_libpng_version(void);

void CPNG_buffer_free(CPNG_buffer *buffer);
void CPNG_free(void *pointer);
#endif
