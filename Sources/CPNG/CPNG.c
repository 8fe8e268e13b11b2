#include "CPNG.h"
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

typedef struct {
    char *err;
    size_t err_len;
} error_sink;

static void on_error(png_structp png, png_const_charp message) {
    error_sink *sink = (error_sink *)png_get_error_ptr(png);
    if (sink && sink->err && sink->err_len) snprintf(sink->err, sink->err_len, "libpng: %s", message);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

static void write_to_buffer(png_structp png, png_bytep data, png_size_t length) {
    CPNG_buffer *out = (CPNG_buffer *)png_get_io_ptr(png);
    if (out->size + length > out->capacity) {
        size_t capacity = out->capacity ? out->capacity : 4096;
        while (capacity < out->size + length) capacity *= 2;
        uint8_t *grown = (uint8_t *)realloc(out->data, capacity);
        if (!grown) png_error(png, "out of memory");
        out->data = grown;
        out->capacity = capacity;
    }
    memcpy(out->data + out->size, data, length);
    out->size += length;
}

static void flush_buffer(png_structp png) { (void)png; }

int CPNG_encode_gray1(const uint8_t *packed_rows, uint32_t width, uint32_t height, size_t stride,
                      int compression_level, int filter, uint32_t pixels_per_metre, CPNG_buffer *out, char *err,
                      size_t err_len) {
    error_sink sink = {err, err_len};
    out->data = NULL;
    out->size = 0;
    out->capacity = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
    if (!png) {
        snprintf(err, err_len, "libpng: cannot create write struct");
        return 1;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(err, err_len, "libpng: cannot create info struct");
        return 1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        CPNG_buffer_free(out);
        return 1;
    }
    png_set_write_fn(png, out, write_to_buffer, flush_buffer);
    png_set_compression_level(png, compression_level);
    if (filter == 0) png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    else if (filter == 1) png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);
    png_set_IHDR(png, info, width, height, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (pixels_per_metre > 0) png_set_pHYs(png, info, pixels_per_metre, pixels_per_metre, PNG_RESOLUTION_METER);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) png_write_row(png, (png_const_bytep)(packed_rows + (size_t)y * stride));
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t offset;
} read_source;

static void read_from_buffer(png_structp png, png_bytep data, png_size_t length) {
    read_source *src = (read_source *)png_get_io_ptr(png);
    if (src->offset + length > src->size) png_error(png, "unexpected end of PNG data");
    memcpy(data, src->data + src->offset, length);
    src->offset += length;
}

/* libpng reads with these limits: no ancillary chunk (iCCP, zTXt, ...) may need more than 8 MiB, nor may
   more than 1000 of them be kept, so a small file cannot make libpng allocate without bound. */
static void set_read_limits(png_structp png) {
    png_set_chunk_malloc_max(png, 8u << 20);
    png_set_chunk_cache_max(png, 1000);
}

/* The start of both readers: checks the PNG signature and makes libpng's read and info structs, reporting
   errors to `sink` (which must outlive them). Returns 0 with *png and *info set; otherwise 1 with a message in
   the sink and nothing to free. setjmp stays with the caller: it must be set in the frame that outlives the
   reading. */
static int open_reader(const uint8_t *data, size_t size, error_sink *sink, png_structp *png, png_infop *info) {
    if (size < 8 || png_sig_cmp((png_const_bytep)data, 0, 8) != 0) {
        snprintf(sink->err, sink->err_len, "not a PNG file (bad signature)");
        return 1;
    }
    *png = png_create_read_struct(PNG_LIBPNG_VER_STRING, sink, on_error, on_warning);
    if (!*png) {
        snprintf(sink->err, sink->err_len, "libpng: cannot create read struct");
        return 1;
    }
    *info = png_create_info_struct(*png);
    if (!*info) {
        png_destroy_read_struct(png, NULL, NULL);
        snprintf(sink->err, sink->err_len, "libpng: cannot create info struct");
        return 1;
    }
    return 0;
}

/* Reads the header (IHDR and the chunks before the image data) from `src`, under the read limits. On a
   libpng error this longjmps to the caller's setjmp. */
static void read_header(png_structp png, png_infop info, read_source *src) {
    set_read_limits(png);
    png_set_read_fn(png, src, read_from_buffer);
    png_read_info(png, info);
}

int CPNG_read_size(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height, char *err, size_t err_len) {
    error_sink sink = {err, err_len};
    *width = 0;
    *height = 0;
    png_structp png;
    png_infop info;
    if (open_reader(data, size, &sink, &png, &info) != 0) return 1;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        return 1;
    }
    read_source src = {data, size, 0};
    read_header(png, info, &src);
    *width = png_get_image_width(png, info);
    *height = png_get_image_height(png, info);
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}

int CPNG_decode_gray8(const uint8_t *data, size_t size, uint8_t *gray, size_t capacity, uint32_t *width,
                      uint32_t *height, char *err, size_t err_len) {
    error_sink sink = {err, err_len};
    *width = 0;
    *height = 0;
    png_structp png;
    png_infop info;
    if (open_reader(data, size, &sink, &png, &info) != 0) return 1;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows);
        return 1;
    }
    read_source src = {data, size, 0};
    read_header(png, info, &src);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    /* The caller sized `gray` from CPNG_read_size and its pixel budget: any other size is refused before a
       pixel is decoded. */
    if (w == 0 || h == 0 || (uint64_t)w * h > (uint64_t)capacity) png_error(png, "image size out of range");
    png_set_expand(png);
    png_set_strip_16(png);
    png_color_16 white = {0, 0xff, 0xff, 0xff, 0xff};
    png_set_background(png, &white, PNG_BACKGROUND_GAMMA_SCREEN, 0, 1.0);
    png_set_rgb_to_gray_fixed(png, 1, -1, -1);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != w) png_error(png, "unexpected row layout after conversion to gray");
    rows = (png_bytep *)malloc(sizeof(png_bytep) * h);
    if (!rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++) rows[y] = gray + (size_t)y * w;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    *width = w;
    *height = h;
    return 0;
}

void CPNG_buffer_free(CPNG_buffer *buffer) {
    free(buffer->data);
    buffer->data = NULL;
    buffer->size = 0;
    buffer->capacity = 0;
}

void CPNG_free(void *pointer) { free(pointer); }

const char *CPNG_libpng_version(void) { return png_get_libpng_ver(NULL); }
