#include "CJPEG.h"
/* jpeglib.h needs FILE and size_t declared first. */
#include <stdio.h>
#include <stddef.h>
#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>
#include <string.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *err;
    size_t err_len;
    int max_scans;
} error_sink;

static void on_error(j_common_ptr cinfo) {
    error_sink *sink = (error_sink *)cinfo->err;
    char message[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, message);
    if (sink->err && sink->err_len) snprintf(sink->err, sink->err_len, "libjpeg: %s", message);
    longjmp(sink->jump, 1);
}

/* Warnings (corrupt data, a premature end) and trace messages are not printed: libjpeg would write them to
   stderr. The decoding goes on with what it has. */
static void on_message(j_common_ptr cinfo, int level) {
    (void)cinfo;
    (void)level;
}

/* Called by libjpeg between passes and scans: stops a progressive image with too many scans. */
static void on_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    error_sink *sink = (error_sink *)cinfo->err;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (sink->max_scans > 0 && d->input_scan_number > sink->max_scans) {
        if (sink->err && sink->err_len)
            snprintf(sink->err, sink->err_len, "libjpeg: the progressive image has more than %d scans", sink->max_scans);
        longjmp(sink->jump, 1);
    }
}

static int check_signature(const uint8_t *data, size_t size, char *err, size_t err_len) {
    if (size < 3 || data[0] != 0xFF || data[1] != 0xD8 || data[2] != 0xFF) {
        snprintf(err, err_len, "not a JPEG file (no start-of-image marker)");
        return 1;
    }
    return 0;
}

int CJPEG_read_size(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height, char *err, size_t err_len) {
    *width = 0;
    *height = 0;
    if (check_signature(data, size, err, err_len) != 0) return 1;
    struct jpeg_decompress_struct cinfo;
    error_sink sink;
    memset(&sink, 0, sizeof sink);
    sink.err = err;
    sink.err_len = err_len;
    cinfo.err = jpeg_std_error(&sink.base);
    sink.base.error_exit = on_error;
    sink.base.emit_message = on_message;
    if (setjmp(sink.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    jpeg_create_decompress(&cinfo);
    /* The header alone: a few KB of markers, but a file can hold many; nothing here grows with their count. */
    cinfo.mem->max_memory_to_use = 16L << 20;
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    *width = cinfo.image_width;
    *height = cinfo.image_height;
    jpeg_destroy_decompress(&cinfo);
    return 0;
}

int CJPEG_decode_gray8(const uint8_t *data, size_t size, uint8_t *gray, size_t capacity, long max_memory,
                       int max_scans, uint32_t *width, uint32_t *height, char *err, size_t err_len) {
    *width = 0;
    *height = 0;
    if (check_signature(data, size, err, err_len) != 0) return 1;
    struct jpeg_decompress_struct cinfo;
    struct jpeg_progress_mgr progress;
    error_sink sink;
    memset(&sink, 0, sizeof sink);
    memset(&progress, 0, sizeof progress);
    sink.err = err;
    sink.err_len = err_len;
    sink.max_scans = max_scans;
    cinfo.err = jpeg_std_error(&sink.base);
    sink.base.error_exit = on_error;
    sink.base.emit_message = on_message;
    /* A CMYK row, kept across the longjmp (volatile: set after setjmp). */
    JSAMPLE *volatile row = NULL;
    if (setjmp(sink.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    jpeg_create_decompress(&cinfo);
    /* libjpeg's allocator refuses past this (there is no backing store to spill to). */
    cinfo.mem->max_memory_to_use = max_memory;
    progress.progress_monitor = on_progress;
    cinfo.progress = &progress;
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    JDIMENSION w = cinfo.image_width, h = cinfo.image_height;
    if (w == 0 || h == 0 || (uint64_t)w * h > (uint64_t)capacity) ERREXIT(&cinfo, JERR_IMAGE_TOO_BIG);
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_GRAYSCALE;
    cinfo.scale_num = 1;
    cinfo.scale_denom = 1;
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_width != w || cinfo.output_height != h || cinfo.output_components != (cmyk ? 4 : 1))
        ERREXIT(&cinfo, JERR_CONVERSION_NOTIMPL);
    if (cmyk) row = (*cinfo.mem->alloc_sarray)((j_common_ptr)&cinfo, JPOOL_IMAGE, w * 4, 1)[0];
    while (cinfo.output_scanline < h) {
        JDIMENSION y = cinfo.output_scanline;
        JSAMPROW target = cmyk ? (JSAMPROW)row : (JSAMPROW)(gray + (size_t)y * w);
        if (jpeg_read_scanlines(&cinfo, &target, 1) != 1) ERREXIT(&cinfo, JERR_INPUT_EOF);
        if (cmyk) {
            /* Adobe writes CMYK inverted (255 = no ink); others write ink amounts. Gray = luma of the RGB
               that the inks leave. */
            int inverted = cinfo.saw_Adobe_marker;
            uint8_t *out = gray + (size_t)y * w;
            for (JDIMENSION x = 0; x < w; x++) {
                int c = row[4 * x], m = row[4 * x + 1], yel = row[4 * x + 2], k = row[4 * x + 3];
                if (!inverted) {
                    c = 255 - c;
                    m = 255 - m;
                    yel = 255 - yel;
                    k = 255 - k;
                }
                int r = c * k / 255, g = m * k / 255, b = yel * k / 255;
                out[x] = (uint8_t)((299 * r + 587 * g + 114 * b + 500) / 1000);
            }
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    *width = w;
    *height = h;
    return 0;
}

int CJPEG_lib_version(void) { return JPEG_LIB_VERSION; }

const char *CJPEG_turbo_version(void) {
#ifdef LIBJPEG_TURBO_VERSION
#define CJPEG_STR2(x) #x
#define CJPEG_STR(x) CJPEG_STR2(x)
    return CJPEG_STR(LIBJPEG_TURBO_VERSION);
#else
    return "";
#endif
}
