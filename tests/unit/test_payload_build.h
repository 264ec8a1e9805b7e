/*
 * Fixture builders for the payload tests: safetensors files written byte by byte (length prefix,
 * header JSON, zero data), GGUF files through slipway's writer (a tiny model, a split set, a
 * projector). Every fixture goes into a temporary directory the test owns.
 */
#ifndef TEST_PAYLOAD_BUILD_H
#define TEST_PAYLOAD_BUILD_H

#include <slipway/gguf.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A safetensors file: header of the given tensors (each "name" F32 [n] consecutive), then the
 * data. extra > 0 appends bytes, extra < 0 cuts bytes off the end. Returns the intended size. */
static size_t pb_st(const char *path, const char *const *names, const unsigned *n_elems,
                    size_t count, long extra)
{
    char hdr[8192];
    size_t h = 0;
    uint64_t off = 0;
    h += (size_t)snprintf(hdr + h, sizeof(hdr) - h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < count; i++) {
        uint64_t bytes = (uint64_t)n_elems[i] * 4;
        h += (size_t)snprintf(hdr + h, sizeof(hdr) - h,
                              ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%u],\"data_offsets\":[%llu,"
                              "%llu]}",
                              names[i], n_elems[i], (unsigned long long)off,
                              (unsigned long long)(off + bytes));
        off += bytes;
    }
    h += (size_t)snprintf(hdr + h, sizeof(hdr) - h, "}");
    while (h % 8)
        hdr[h++] = ' ';
    size_t total = 8 + h + (size_t)off;
    size_t write = (size_t)((long)total + extra);
    unsigned char *b = calloc(1, write > total ? write : total);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, hdr, h);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, write, f) != write)
        abort();
    fclose(f);
    free(b);
    return total;
}

/* One tensor named `name`. */
static size_t pb_st1(const char *path, const char *name, unsigned n, long extra)
{
    const char *names[] = {name};
    unsigned ns[] = {n};
    return pb_st(path, names, ns, 1, extra);
}

/* A GGUF with architecture `arch` and the given f32 tensors of 32 elements; split_no/count > 0
 * writes the split keys (split_tensors = split.tensors.count, written only on part 0). */
static void pb_gguf(const char *path, const char *arch, const char *const *names, size_t n,
                    int split_no, int split_count, int split_tensors, uint64_t nextn)
{
    struct sw_gguf_writer *w;
    struct sw_err e;
    if (sw_gguf_writer_new(&w, 3, 0))
        abort();
    sw_gguf_writer_set_str(w, "general.architecture", arch);
    char key[128];
    snprintf(key, sizeof(key), "%s.block_count", arch);
    sw_gguf_writer_set_u32(w, key, 1);
    if (nextn) {
        snprintf(key, sizeof(key), "%s.nextn_predict_layers", arch);
        sw_gguf_writer_set_u32(w, key, (uint32_t)nextn);
    }
    if (split_count > 0) {
        struct sw_gguf_value v = {.type = SW_GGUF_UINT16};
        v.as.u = (uint64_t)split_no;
        sw_gguf_writer_set(w, "split.no", &v);
        v.as.u = (uint64_t)split_count;
        sw_gguf_writer_set(w, "split.count", &v);
        if (split_no == 0)
            sw_gguf_writer_set_i32(w, "split.tensors.count", split_tensors);
    }
    float data[32] = {0};
    uint64_t ne[1] = {32};
    for (size_t i = 0; i < n; i++)
        if (sw_gguf_writer_add_tensor(w, names[i], 0 /* f32 */, 1, ne, data, false))
            abort();
    if (sw_gguf_writer_write(w, path, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        abort();
    }
    sw_gguf_writer_free(w);
}

#endif
