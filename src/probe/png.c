/*
 * A solid-colour PNG for the vision check, written by hand: an 8-bit RGB image whose zlib stream
 * uses stored (uncompressed) deflate blocks, so no compression library is needed. CRC-32 and
 * Adler-32 are the PNG and zlib specifications' own (RFC 2083, RFC 1950/1951).
 *
 * What it deliberately does not do: compress, or write anything but one flat colour.
 */
#include <slipway/probe.h>

#include <string.h>

static uint32_t crc_table[256];
static bool crc_ready;

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
    crc_ready = true;
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    if (!crc_ready)
        crc_init();
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Append a chunk (length, type, data, CRC over type + data) at o; returns the new end. */
static unsigned char *chunk(unsigned char *o, const char *type, const unsigned char *data, size_t n)
{
    be32(o, (uint32_t)n);
    memcpy(o + 4, type, 4);
    if (n)
        memcpy(o + 8, data, n);
    be32(o + 8 + n, crc32_of(o + 4, n + 4));
    return o + 12 + n;
}

unsigned char *sw_probe_png_solid(unsigned w, unsigned h, unsigned char r, unsigned char g,
                                  unsigned char b, size_t *len)
{
    if (!w || !h || w > 1024 || h > 1024)
        return NULL;
    size_t row = 1 + (size_t)w * 3;
    size_t raw = row * h;
    size_t blocks = (raw + 65534) / 65535;
    size_t zlen = 2 + raw + blocks * 5 + 4;
    size_t total = 8 + (12 + 13) + (12 + zlen) + 12;
    unsigned char *png = sw_malloc(total);
    unsigned char *z = sw_malloc(zlen);
    unsigned char *pix = sw_malloc(raw);
    if (!png || !z || !pix) {
        sw_free(png);
        sw_free(z);
        sw_free(pix);
        return NULL;
    }
    for (size_t y = 0; y < h; y++) {
        unsigned char *p = pix + y * row;
        p[0] = 0; /* filter: none */
        for (size_t x = 0; x < w; x++) {
            p[1 + 3 * x] = r;
            p[2 + 3 * x] = g;
            p[3 + 3 * x] = b;
        }
    }
    /* zlib: CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (0x7801 is a multiple of 31) */
    size_t zi = 0;
    z[zi++] = 0x78;
    z[zi++] = 0x01;
    for (size_t off = 0; off < raw; off += 65535) {
        size_t n = raw - off < 65535 ? raw - off : 65535;
        z[zi++] = off + n == raw ? 1 : 0; /* BFINAL, BTYPE 00 (stored) */
        z[zi++] = (unsigned char)(n & 0xFF);
        z[zi++] = (unsigned char)(n >> 8);
        z[zi++] = (unsigned char)(~n & 0xFF);
        z[zi++] = (unsigned char)((~n >> 8) & 0xFF);
        memcpy(z + zi, pix + off, n);
        zi += n;
    }
    uint32_t a = 1, s = 0;
    for (size_t i = 0; i < raw; i++) {
        a = (a + pix[i]) % 65521u;
        s = (s + a) % 65521u;
    }
    be32(z + zi, s << 16 | a);
    zi += 4;
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char ihdr[13];
    be32(ihdr, w);
    be32(ihdr + 4, h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering */
    ihdr[12] = 0; /* no interlace */
    memcpy(png, sig, 8);
    unsigned char *o = chunk(png + 8, "IHDR", ihdr, sizeof(ihdr));
    o = chunk(o, "IDAT", z, zi);
    o = chunk(o, "IEND", NULL, 0);
    *len = (size_t)(o - png);
    sw_free(z);
    sw_free(pix);
    return png;
}
