/*
 * Test helper: read the memory lines llama-server printed (a log, or the "raw" lines of a bootlog
 * point) into a struct sw_llamacpp_report, so a prediction can be diffed against them with
 * sw_llamacpp_report_diff. Only what the law predicts is read; each llama_context constructed
 * restarts the report, so the last context of a log wins (--fit's probe context, when its lines
 * are shown at all, comes first).
 *
 * This is a test-side reader on purpose: the product's boot-log parser (engine/llamacpp) is
 * another module's job; these tests must not depend on it.
 */
#ifndef TEST_LLAMACPP_LINES_H
#define TEST_LLAMACPP_LINES_H

#include <slipway/memory.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t tll_mib(const char *s)
{
    return (uint64_t)llround(strtod(s, NULL) * 1048576.0);
}

/* The text after "key" (skipping spaces and '='), or NULL. */
static const char *tll_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p)
        return NULL;
    p += strlen(key);
    while (*p == ' ' || *p == '=')
        p++;
    return p;
}

/* The value of "key   = value" (the '=' is required, so a warning that merely mentions the key
 * does not count), or NULL. */
static const char *tll_value(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p)
        return NULL;
    p += strlen(key);
    while (*p == ' ')
        p++;
    if (*p != '=')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

/* Parse one "llama_kv_cache: size = ..." line. */
static int tll_kv(const char *p, struct sw_llamacpp_kv *k)
{
    char kt[16], vt[16];
    double size, kb, vb;
    unsigned cells, layers, seqs, streams;
    const char *s = strstr(p, "size =");
    if (!s)
        return -1;
    if (sscanf(s,
               "size = %lf MiB ( %u cells, %u layers, %u/%u seqs), K (%15[^)]): %lf MiB, V "
               "(%15[^)]): %lf MiB",
               &size, &cells, &layers, &seqs, &streams, kt, &kb, vt, &vb) != 9)
        return -1;
    memset(k, 0, sizeof(*k));
    k->cells = cells;
    k->layers = layers;
    k->seqs = seqs;
    k->streams = streams;
    k->k_type = sw_kv_type_from_name(kt);
    k->v_type = sw_kv_type_from_name(vt);
    k->k_bytes = (uint64_t)llround(kb * 1048576.0);
    k->v_bytes = (uint64_t)llround(vb * 1048576.0);
    return 0;
}

/* Parse one "llama_memory_recurrent: size = ..." line (with or without "R rs_seq"). */
static int tll_rec(const char *p, struct sw_llamacpp_recurrent *r)
{
    double size;
    unsigned cells, layers, seqs;
    const char *s = strstr(p, "size =");
    const char *R = strstr(p, "R (f32):"), *S = strstr(p, "S (f32):");
    if (!s || sscanf(s, "size = %lf MiB ( %u cells, %u layers, %u seqs", &size, &cells, &layers,
                     &seqs) != 4)
        return -1;
    memset(r, 0, sizeof(*r));
    r->cells = cells;
    r->layers = layers;
    r->seqs = seqs;
    const char *rs = strstr(p, "rs_seq");
    if (rs) {
        const char *q = rs;
        while (q > p && q[-1] == ' ')
            q--;
        while (q > p && q[-1] >= '0' && q[-1] <= '9')
            q--;
        r->rs_seq = (uint32_t)strtoul(q, NULL, 10);
    }
    if (R)
        r->r_bytes = tll_mib(R + 8);
    if (S)
        r->s_bytes = tll_mib(S + 8);
    return 0;
}

/* Fill r from a whole log text. Returns the number of memory lines read (KV + recurrent). */
static int tll_parse(const char *text, struct sw_llamacpp_report *r)
{
    int n = 0;
    bool next_swa = false;
    memset(r, 0, sizeof(*r));
    while (text && *text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        char line[2048];
        const char *v;
        if (len >= sizeof(line))
            len = sizeof(line) - 1;
        memcpy(line, text, len);
        line[len] = '\0';
        text += len + (nl ? 1 : 0);

        if (strstr(line, "load_tensors: loading model tensors")) {
            memset(r, 0, sizeof(*r));
            n = 0;
        } else if (strstr(line, "llama_context: constructing llama_context")) {
            uint64_t mb = r->model_bytes;
            bool mk = r->model_known;
            memset(r, 0, sizeof(*r));
            r->model_bytes = mb;
            r->model_known = mk;
            n = 0;
        } else if ((v = tll_value(line, "llama_context: n_ctx_seq"))) {
            r->n_ctx_seq = (uint32_t)strtoul(v, NULL, 10);
        } else if ((v = tll_value(line, "llama_context: n_ctx "))) {
            r->n_ctx = (uint32_t)strtoul(v, NULL, 10);
        } else if ((v = tll_value(line, "llama_context: n_seq_max"))) {
            r->n_seq_max = (uint32_t)strtoul(v, NULL, 10);
        } else if ((v = tll_value(line, "llama_context: n_batch"))) {
            r->n_batch = (uint32_t)strtoul(v, NULL, 10);
        } else if ((v = tll_value(line, "llama_context: n_ubatch"))) {
            r->n_ubatch = (uint32_t)strtoul(v, NULL, 10);
        } else if ((v = tll_value(line, "llama_context: kv_unified"))) {
            r->kv_unified = !strncmp(v, "true", 4);
        } else if (strstr(line, "creating     SWA KV cache")) {
            next_swa = true;
        } else if (strstr(line, "creating non-SWA KV cache")) {
            next_swa = false;
        } else if (strstr(line, "llama_kv_cache: size =")) {
            if (r->n_kv < SW_LLAMACPP_MAX_KV && tll_kv(line, &r->kv[r->n_kv]) == 0) {
                r->kv[r->n_kv].swa = next_swa;
                r->n_kv++;
                n++;
            }
            next_swa = false;
        } else if (strstr(line, "llama_memory_recurrent: size =")) {
            if (tll_rec(line, &r->recurrent) == 0) {
                r->has_recurrent = true;
                n++;
            }
        } else if ((v = tll_after(line, "output buffer size"))) {
            r->output_bytes += tll_mib(v);
        } else if ((v = tll_after(line, "model buffer size"))) {
            r->model_bytes += tll_mib(v);
            r->model_known = true;
        } else if ((v = tll_after(line, "compute buffer size"))) {
            r->compute_bytes += tll_mib(v);
            r->compute_known = true;
        }
    }
    return n;
}

#endif
