/*
 * model/gguf_types: the types a GGUF names. The ggml tensor type table (id, name, elements per
 * block, bytes per block) and the row-size arithmetic built on it; the extra types a fork build
 * reads, as its profile declares them (checked, kept with the header that was read with them);
 * and GGUF's own metadata value types (names, scalar sizes).
 *
 * The numbers are facts of the pinned llama.cpp (80fb11ac): ggml/include/ggml.h `enum ggml_type`
 * for the ids, ggml/src/ggml.c `type_traits[]` for names and block sizes, and sizeof(block_*) from
 * ggml/src/ggml-common.h for bytes per block (measured by compiling against that header).
 * Ids that ggml removed from GGUF files (4, 5, 31-33, 36-38) are not types: lookups return NULL,
 * and sw__ggml_removed_name() names them so an error can say what the file asked for.
 *
 * What it does not do: quantize, dequantize, or know which backend supports which type.
 */
#include <slipway/gguf.h>

#include <inttypes.h>
#include <string.h>

#include "model/gguf_internal.h"

static const struct sw_ggml_type types[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},    {40, "nvfp4", 64, 36},
    {41, "q1_0", 128, 18},    {42, "q2_0", 64, 18},
};

/* GGML_TYPE_COUNT of the pinned ggml: ids at or above it are unknown. */
#define GGML_TYPE_COUNT 43

static const struct {
    uint32_t id;
    const char *name;
} removed[] = {
    {4, "q4_2"},      {5, "q4_3"},        {31, "q4_0_4_4"},   {32, "q4_0_4_8"},
    {33, "q4_0_8_8"}, {36, "iq4_nl_4_4"}, {37, "iq4_nl_4_8"}, {38, "iq4_nl_8_8"},
};

const struct sw_ggml_type *sw_ggml_type(uint32_t id)
{
    /* the table is sorted by id and short: a linear scan is as fast as anything here */
    for (size_t i = 0; i < SW_ARRAY_LEN(types); i++)
        if (types[i].id == id)
            return &types[i];
    return NULL;
}

const struct sw_ggml_type *sw_ggml_type_by_name(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < SW_ARRAY_LEN(types); i++)
        if (!strcasecmp(types[i].name, name))
            return &types[i];
    return NULL;
}

const char *sw__ggml_removed_name(uint32_t id)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(removed); i++)
        if (removed[i].id == id)
            return removed[i].name;
    return NULL;
}

uint32_t sw__ggml_type_count(void)
{
    return GGML_TYPE_COUNT;
}

int sw_ggml_row_size(uint32_t type, uint64_t ne0, uint64_t *out)
{
    const struct sw_ggml_type *t = sw_ggml_type(type);
    if (!t)
        return SW_EPARSE;
    if (ne0 % t->blck)
        return SW_EPARSE;
    if (!sw_mul_ok(ne0 / t->blck, t->size, out))
        return SW_ERANGE;
    return 0;
}

size_t sw_ggml_type_count_known(void)
{
    return SW_ARRAY_LEN(types);
}

const struct sw_ggml_type *sw_ggml_type_at(size_t i)
{
    return i < SW_ARRAY_LEN(types) ? &types[i] : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Fork types
 */
int sw__gguf_keep_types(struct sw_gguf *g, const struct sw_gguf_types *x, struct sw_err *e)
{
    if (!x || !x->n)
        return 0;
    struct sw_ggml_type *t = sw__arena_alloc(&g->priv->arena, x->n * sizeof(*t));
    if (!t)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < x->n; i++) {
        size_t l = strlen(x->types[i].name);
        char *nm = sw__arena_alloc(&g->priv->arena, l + 1);
        if (!nm)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        memcpy(nm, x->types[i].name, l + 1);
        t[i] = x->types[i];
        t[i].name = nm;
    }
    g->priv->extra = t;
    g->priv->n_extra = x->n;
    return 0;
}

int sw_gguf_types_check(const struct sw_gguf_types *x, struct sw_err *e)
{
    const char *by = x && x->declared_by ? x->declared_by : "the declaration";
    if (!x || !x->n)
        return 0;
    if (!x->types || x->n > SW_GGUF_MAX_EXTRA_TYPES)
        return sw_err_set(e, SW_EINVAL, "%s: %zu gguf_types (at most %d)", by, x->n,
                          SW_GGUF_MAX_EXTRA_TYPES);
    for (size_t i = 0; i < x->n; i++) {
        const struct sw_ggml_type *t = &x->types[i];
        if (!t->name || !t->name[0])
            return sw_err_set(e, SW_EINVAL, "%s: gguf_types[%zu] (id %" PRIu32 ") has no name", by,
                              i, t->id);
        const struct sw_ggml_type *stock = sw_ggml_type(t->id);
        if (stock)
            return sw_err_set(e, SW_EINVAL,
                              "%s: gguf_types %s: id %" PRIu32
                              " is the stock ggml type %s; a fork type needs an id of its own",
                              by, t->name, t->id, stock->name);
        if (t->blck < 1 || t->blck > SW_GGML_MAX_BLCK)
            return sw_err_set(e, SW_EINVAL,
                              "%s: gguf_types %s (id %" PRIu32 "): block_size %" PRIu32
                              " (elements per block) must be 1..%u",
                              by, t->name, t->id, t->blck, SW_GGML_MAX_BLCK);
        if (t->size < 1 || t->size > SW_GGML_MAX_TYPE_SIZE)
            return sw_err_set(e, SW_EINVAL,
                              "%s: gguf_types %s (id %" PRIu32 "): type_size %" PRIu32
                              " (bytes per block) must be 1..%u",
                              by, t->name, t->id, t->size, SW_GGML_MAX_TYPE_SIZE);
        for (size_t k = 0; k < i; k++)
            if (x->types[k].id == t->id)
                return sw_err_set(e, SW_EINVAL, "%s: gguf_types: id %" PRIu32 " declared twice", by,
                                  t->id);
    }
    return 0;
}

const struct sw_ggml_type *sw__ggml_type_in(const struct sw_ggml_type *extra, size_t n, uint32_t id)
{
    const struct sw_ggml_type *t = sw_ggml_type(id);
    for (size_t i = 0; !t && extra && i < n; i++)
        if (extra[i].id == id)
            t = &extra[i];
    return t;
}

const struct sw_ggml_type *sw_gguf_type(const struct sw_gguf *g, uint32_t id)
{
    if (!g || !g->priv)
        return sw_ggml_type(id);
    return sw__ggml_type_in(g->priv->extra, g->priv->n_extra, id);
}

/* ---------------------------------------------------------------------------------------------
 * Metadata types
 */
static const char *const type_names[SW_GGUF__NTYPES] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

const char *sw_gguf_type_name(enum sw_gguf_type t)
{
    if ((unsigned)t >= SW_GGUF__NTYPES)
        return "invalid";
    return type_names[t];
}

size_t sw__gguf_type_size(uint32_t t)
{
    switch (t) {
    case SW_GGUF_UINT8:
    case SW_GGUF_INT8:
    case SW_GGUF_BOOL:
        return 1;
    case SW_GGUF_UINT16:
    case SW_GGUF_INT16:
        return 2;
    case SW_GGUF_UINT32:
    case SW_GGUF_INT32:
    case SW_GGUF_FLOAT32:
        return 4;
    case SW_GGUF_UINT64:
    case SW_GGUF_INT64:
    case SW_GGUF_FLOAT64:
        return 8;
    default:
        return 0;
    }
}
