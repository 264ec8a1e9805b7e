/*
 * model/gguf: a GGUF (v2, v3) reader hardened against hostile files, and (gguf_write) a writer.
 *
 * The reader parses the header only: metadata key/values and tensor infos. It never maps or reads
 * tensor data (a model is tens of GB; its header is a few MB at most). Every count, length and
 * dimension product is checked against the bytes that remain in the file BEFORE anything is
 * allocated, so a 40-byte file that claims 2^62 strings fails fast with SW_ETRUNC/SW_ERANGE.
 * A file that is not GGUF at all (an HTML 403 page, a git-lfs pointer, a JSON error body) fails
 * with SW_EPARSE and a message saying what its first bytes look like.
 *
 * A caller that needs the header only (a plan, an inspection) may accept a file whose tensor data
 * is absent (struct sw_gguf_read_opts.header_only), and may parse the first bytes of a file held
 * elsewhere (sw_gguf_parse_head: read by ranges from another machine), which says how many bytes
 * the header needs when the bytes held end inside it.
 *
 * What it does not do: dequantize, validate tensor data, or know what an architecture means (that
 * is model/arch).
 */
#ifndef SLIPWAY_GGUF_H
#define SLIPWAY_GGUF_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types, numbered as in the GGUF specification. */
enum sw_gguf_type {
    SW_GGUF_UINT8 = 0,
    SW_GGUF_INT8 = 1,
    SW_GGUF_UINT16 = 2,
    SW_GGUF_INT16 = 3,
    SW_GGUF_UINT32 = 4,
    SW_GGUF_INT32 = 5,
    SW_GGUF_FLOAT32 = 6,
    SW_GGUF_BOOL = 7,
    SW_GGUF_STRING = 8,
    SW_GGUF_ARRAY = 9,
    SW_GGUF_UINT64 = 10,
    SW_GGUF_INT64 = 11,
    SW_GGUF_FLOAT64 = 12,
    SW_GGUF__NTYPES = 13
};

const char *sw_gguf_type_name(enum sw_gguf_type t);

struct sw_gguf_str {
    char *s;      /* NUL-terminated copy (the file's bytes; may contain NULs before len) */
    uint64_t len; /* length in the file */
};

/*
 * One metadata value. Scalars are widened: unsigned types into u, signed into i, floats into f.
 * Arrays keep their element type; numeric arrays are stored widened too (u64/i64/f64 per element)
 * so callers need not care whether a per-layer array was written as u32 or i32.
 */
struct sw_gguf_value {
    enum sw_gguf_type type;
    union {
        uint64_t u;
        int64_t i;
        double f;
        bool b;
        struct sw_gguf_str str;
        struct {
            enum sw_gguf_type elem; /* never SW_GGUF_ARRAY (nested arrays are rejected) */
            uint64_t n;
            union {
                uint64_t *u;
                int64_t *i;
                double *f;
                bool *b;
                struct sw_gguf_str *str;
            } v;
        } arr;
    } as;
};

struct sw_gguf_kv {
    struct sw_gguf_str key;
    struct sw_gguf_value val;
    uint64_t offset; /* byte offset of the key in the file, for error messages */
};

#define SW_GGUF_MAX_DIMS 4

struct sw_gguf_tensor {
    struct sw_gguf_str name;
    uint32_t n_dims;
    uint64_t ne[SW_GGUF_MAX_DIMS]; /* unused dims are 1 */
    uint32_t type;                 /* ggml type id */
    uint64_t offset;               /* relative to the data section */
    uint64_t nbytes;               /* from ggml's block arithmetic */
    int split;                     /* which file of a split set holds it (0 for single files) */
};

/* A parsed GGUF header (or a whole split set). Fields are read-only for callers. */
struct sw_gguf {
    char *path;       /* first file */
    uint32_t version; /* 2 or 3 */
    uint64_t n_kv;
    struct sw_gguf_kv *kv;
    uint64_t n_tensors;
    struct sw_gguf_tensor *tensors;
    uint64_t alignment;        /* general.alignment or 32 */
    uint64_t data_offset;      /* start of tensor data in the first file */
    uint64_t file_size;        /* total over the split set (what is there: see header_only) */
    uint64_t tensor_bytes;     /* sum of tensor nbytes */
    int n_splits;              /* 1 for a single file */
    bool header_only;          /* read header-only, and the tensor data is not (all) in the file */
    struct sw_gguf_priv *priv; /* opaque: the arena holding everything above, lookup indexes */
};

/* The reader refuses a header (metadata + tensor infos) larger than this, and a parsed header
 * that would take more memory than SW_GGUF_MAX_HEADER_MEM (numeric arrays are widened to 8 bytes
 * per element). Real headers are a few MB; the biggest vocabularies (256k tokens + merges) about
 * 20 MB. These bound what a hostile file can make slipway allocate. */
#define SW_GGUF_MAX_HEADER     (256ull * 1024 * 1024)
#define SW_GGUF_MAX_HEADER_MEM (1024ull * 1024 * 1024)

/*
 * Open a GGUF file and parse its header. If the file is part of a split set (it has split.count >
 * 1), the other parts are found beside it by the llama.cpp naming rule
 * (<prefix>-00001-of-00003.gguf) and merged: tensors from all parts, metadata from the first,
 * split.no/split.count/split.tensors.count checked for consistency and completeness.
 * On success *out is set; free with sw_gguf_free.
 */
int sw_gguf_open(const char *path, struct sw_gguf **out, struct sw_err *e);
/* Parse only this one file even if it belongs to a split set. */
int sw_gguf_open_single(const char *path, struct sw_gguf **out, struct sw_err *e);
/* Parse a header held in memory (the fuzz entry point). `size` is the whole file's size as far as
 * the data section goes; `where` names it in errors. */
int sw_gguf_parse_mem(const void *buf, size_t size, const char *where, struct sw_gguf **out,
                      struct sw_err *e);
void sw_gguf_free(struct sw_gguf *g);

/* How a header is read. A zeroed struct (or NULL) reads as sw_gguf_open does. */
struct sw_gguf_read_opts {
    const struct sw_gguf_types *types; /* a fork's extra tensor types (below), or NULL */
    /* Only the header is needed: a file shorter than data_offset + the tensors' extent (a header
     * copied alone, a download cut inside the data) is accepted, and the result says
     * header_only. The header itself must still be whole, and the tensors' offsets aligned,
     * disjoint and inside 64 bits. Off by default: verify, fetch and sniff need the data. */
    bool header_only;
};
/* sw_gguf_open / sw_gguf_open_single with read options (o may be NULL). */
int sw_gguf_open_opts(const char *path, const struct sw_gguf_read_opts *o, struct sw_gguf **out,
                      struct sw_err *e);
int sw_gguf_open_single_opts(const char *path, const struct sw_gguf_read_opts *o,
                             struct sw_gguf **out, struct sw_err *e);
/* One part of a split set, read by a caller's reader (a file here; a head read on another
 * machine): *out on success, SW_ENOENT when the part is not there. */
typedef int (*sw_gguf_part_fn)(void *ctx, const char *path, struct sw_gguf **out, struct sw_err *e);
/* sw_gguf_open's split-set logic over any reader of single parts: the part at path, and when it
 * belongs to a set, the other parts by llama.cpp's naming beside it, checked and merged
 * (header_only when any part is). sw_gguf_open_opts is this over files here. */
int sw_gguf_open_set(const char *path, sw_gguf_part_fn part, void *ctx, struct sw_gguf **out,
                     struct sw_err *e);
/*
 * Parse the head of a file held elsewhere: buf holds its first n bytes, file_size is the whole
 * file's size (the data's layout is checked against it). When the bytes held end inside the
 * header, SW_ETRUNC with *need (may be NULL) set to the fewest bytes from the file's start the
 * header needs (> n, <= min(file_size, SW_GGUF_MAX_HEADER)): read up to there at least, then
 * parse again. Every other failure leaves *need 0. sw_gguf_parse_mem is this with n = file_size.
 */
int sw_gguf_parse_head(const void *buf, size_t n, uint64_t file_size, const char *where,
                       const struct sw_gguf_read_opts *o, uint64_t *need, struct sw_gguf **out,
                       struct sw_err *e);

/* Lookups. Missing key: SW_ENOENT. Wrong type: SW_EPARSE naming the key and both types.
 * Integer getters accept any integer type (and bool) when the value fits. */
const struct sw_gguf_kv *sw_gguf_find(const struct sw_gguf *g, const char *key);
int sw_gguf_get_u64(const struct sw_gguf *g, const char *key, uint64_t *out);
int sw_gguf_get_i64(const struct sw_gguf *g, const char *key, int64_t *out);
int sw_gguf_get_f64(const struct sw_gguf *g, const char *key, double *out);
int sw_gguf_get_bool(const struct sw_gguf *g, const char *key, bool *out);
int sw_gguf_get_str(const struct sw_gguf *g, const char *key, const char **out);
/* "<general.architecture>.<suffix>", e.g. sw_gguf_arch_u64(g, "block_count", &n). */
int sw_gguf_arch_u64(const struct sw_gguf *g, const char *suffix, uint64_t *out);
int sw_gguf_arch_f64(const struct sw_gguf *g, const char *suffix, double *out);
/* A per-layer value that llama.cpp accepts either as a scalar or as an array of n_layer values
 * (e.g. head_count_kv, feed_forward_length). Fills out[0..n-1]; a scalar is broadcast.
 * An array of the wrong length is SW_EPARSE. */
int sw_gguf_arch_per_layer(const struct sw_gguf *g, const char *suffix, uint64_t *out, size_t n);
/* The same for float per-layer values (scalar broadcast or an n-long float/integer array). */
int sw_gguf_arch_per_layer_f64(const struct sw_gguf *g, const char *suffix, double *out, size_t n);
/* general.architecture, or NULL when missing or not a string. */
const char *sw_gguf_arch(const struct sw_gguf *g);
/* Write "<general.architecture>.<suffix>" into out; SW_ENOENT without an architecture,
 * SW_ERANGE if it does not fit. */
int sw_gguf_arch_key(const struct sw_gguf *g, const char *suffix, char *out, size_t n);
/* Explain a failed lookup: fills e with "<file>: byte N: key 'K' is f32, expected u64" or
 * "<file>: key 'K' not found" for the rc a getter returned (`expected` names what the caller
 * wanted, e.g. "u64" or "array of 32 integers"). Returns rc. `key` is the full key. */
int sw_gguf_key_err(const struct sw_gguf *g, const char *key, const char *expected, int rc,
                    struct sw_err *e);
/* Element i of an array value as a value of its element type (a string points into the
 * array). SW_EINVAL when v is not an array, SW_ERANGE when i is past its end. */
int sw_gguf_array_elem(const struct sw_gguf_value *v, uint64_t i, struct sw_gguf_value *out);
/* Element count of a tensor (product of ne). */
uint64_t sw_gguf_tensor_nelements(const struct sw_gguf_tensor *t);
const struct sw_gguf_tensor *sw_gguf_tensor(const struct sw_gguf *g, const char *name);

/* ggml tensor types: name, elements per block, bytes per block. NULL for unknown ids. */
struct sw_ggml_type {
    uint32_t id;
    const char *name; /* "f16", "q8_0", "q4_K" ... as ggml_type_name prints them */
    uint32_t blck;
    uint32_t size;
};
const struct sw_ggml_type *sw_ggml_type(uint32_t id);
const struct sw_ggml_type *sw_ggml_type_by_name(const char *name);
/* Iterate the known types: i in [0, sw_ggml_type_count_known()). */
size_t sw_ggml_type_count_known(void);
const struct sw_ggml_type *sw_ggml_type_at(size_t i);
/* Bytes of a row of ne0 elements; SW_EPARSE if ne0 is not a multiple of the block size. */
int sw_ggml_row_size(uint32_t type, uint64_t ne0, uint64_t *out);

/*
 * Fork tensor types: the extra ggml types a fork build reads (a fork profile's `gguf_types`,
 * include/slipway/profile.h), consulted after the pinned ggml's table, never instead of it. A file
 * with such a type is refused without the declaration, and the error names the type id and the
 * declaration that would make it readable. Bounds checks are the same as for stock types: the
 * row and tensor sizes are computed with overflow checks from the declared geometry.
 */
#define SW_GGUF_MAX_EXTRA_TYPES 64
#define SW_GGML_MAX_BLCK        65536u   /* elements per block a declaration may state */
#define SW_GGML_MAX_TYPE_SIZE   1048576u /* bytes per block a declaration may state */
struct sw_gguf_types {
    const struct sw_ggml_type *types; /* names are copied into a parsed header */
    size_t n;
    const char *declared_by; /* who declared them, for messages ("profile rocmfpx"); may be NULL */
};
/* A declaration is usable: 1..SW_GGUF_MAX_EXTRA_TYPES types, each with a name, an id that is not
 * a stock ggml type and not declared twice, 1 <= blck <= SW_GGML_MAX_BLCK and 1 <= size <=
 * SW_GGML_MAX_TYPE_SIZE. SW_EINVAL naming the type otherwise. */
int sw_gguf_types_check(const struct sw_gguf_types *x, struct sw_err *e);
/* sw_gguf_open / sw_gguf_open_single / sw_gguf_parse_mem that also read the declared types (x may
 * be NULL: the stock reader). The declaration is checked first. */
int sw_gguf_open_types(const char *path, const struct sw_gguf_types *x, struct sw_gguf **out,
                       struct sw_err *e);
int sw_gguf_open_single_types(const char *path, const struct sw_gguf_types *x, struct sw_gguf **out,
                              struct sw_err *e);
int sw_gguf_parse_mem_types(const void *buf, size_t size, const char *where,
                            const struct sw_gguf_types *x, struct sw_gguf **out, struct sw_err *e);
/* The type of `id` as g was read: the stock table, else a type declared to the reader; NULL. */
const struct sw_ggml_type *sw_gguf_type(const struct sw_gguf *g, uint32_t id);

/* What a tensor is for, from llama.cpp's tensor naming ("blk.N.attn_q.weight" is attention,
 * "blk.N.ffn_up_exps.weight" experts, "blk.N.ssm_in.weight" ssm/recurrent, any "*norm*" norms,
 * "v.*"/"mm.*" vision/projector). */
enum sw_gguf_role {
    SW_GGUF_ROLE_TOKEN_EMBD,
    SW_GGUF_ROLE_OUTPUT,
    SW_GGUF_ROLE_ATTENTION,
    SW_GGUF_ROLE_FFN,
    SW_GGUF_ROLE_EXPERTS,
    SW_GGUF_ROLE_SSM,
    SW_GGUF_ROLE_NORMS,
    SW_GGUF_ROLE_VISION,
    SW_GGUF_ROLE_OTHER,
    SW_GGUF__NROLES
};
enum sw_gguf_role sw_gguf_tensor_role(const char *name);
const char *sw_gguf_role_name(enum sw_gguf_role r);
/* Tensor count and bytes per role. */
int sw_gguf_role_totals(const struct sw_gguf *g, uint64_t count[SW_GGUF__NROLES],
                        uint64_t bytes[SW_GGUF__NROLES]);
/* Tensor count and bytes of one ggml type. */
void sw_gguf_type_totals(const struct sw_gguf *g, uint32_t type, uint64_t *count, uint64_t *bytes);
/* llama.h llama_ftype name of general.file_type ("Q4_K_M"), NULL if unknown. */
const char *sw_gguf_ftype_name(uint64_t ftype);
/* One metadata value as JSON; arrays longer than max_elems become
 * {"type":"array","elem":"string","count":N,"first":[...8]}. NaN/inf become strings, bytes that
 * are not UTF-8 become U+FFFD. New reference, NULL on OOM. */
json_t *sw_gguf_value_to_json(const struct sw_gguf_value *v, uint64_t max_elems);

/* Summary for `slipway gguf inspect --json`: metadata (long arrays summarized), tensors grouped by
 * role with bytes, arch summary. New reference. */
json_t *sw_gguf_to_json(const struct sw_gguf *g, bool all_tensors);

/* ---------------------------------------------------------------------------------------------
 * gguf_write: build a GGUF file from metadata and tensors (used by `slipway gguf synth` and tests).
 * The writer owns copies of everything given to it.
 */
struct sw_gguf_writer;
/* version 2 or 3; alignment 0 means ggml's default 32, else a power of two (written as
 * general.alignment when not 32). SW_EINVAL otherwise. */
int sw_gguf_writer_new(struct sw_gguf_writer **out, uint32_t version, uint64_t alignment);
void sw_gguf_writer_free(struct sw_gguf_writer *w);
/* Set (or replace) a key. Values are copied. */
int sw_gguf_writer_set(struct sw_gguf_writer *w, const char *key, const struct sw_gguf_value *v);
int sw_gguf_writer_set_u32(struct sw_gguf_writer *w, const char *key, uint32_t v);
int sw_gguf_writer_set_str(struct sw_gguf_writer *w, const char *key, const char *v);
int sw_gguf_writer_set_u64(struct sw_gguf_writer *w, const char *key, uint64_t v);
int sw_gguf_writer_set_i32(struct sw_gguf_writer *w, const char *key, int32_t v);
int sw_gguf_writer_set_f32(struct sw_gguf_writer *w, const char *key, float v);
int sw_gguf_writer_set_bool(struct sw_gguf_writer *w, const char *key, bool v);
int sw_gguf_writer_remove(struct sw_gguf_writer *w, const char *key);
/* Copy every key/value of a parsed file, in its order (general.alignment included). */
int sw_gguf_writer_copy_kv(struct sw_gguf_writer *w, const struct sw_gguf *g);
size_t sw_gguf_writer_n_kv(const struct sw_gguf_writer *w);
/* Add a tensor whose data comes from `data` (copied unless `borrow`); n_dims <= 4.
 * SW_EINVAL for a bad name (empty, >= 64 bytes), type or shape (ne0 not a multiple of the block,
 * a zero dimension), SW_ERANGE for an overflowing size. Duplicate names fail at write time. */
int sw_gguf_writer_add_tensor(struct sw_gguf_writer *w, const char *name, uint32_t type,
                              uint32_t n_dims, const uint64_t *ne, const void *data, bool borrow);
/* The same, with the data streamed at write time from `path` at byte `offset` (e.g. a tensor of
 * another GGUF: its data_offset + tensor offset), so big tensors are never held in memory. */
int sw_gguf_writer_add_tensor_from_file(struct sw_gguf_writer *w, const char *name, uint32_t type,
                                        uint32_t n_dims, const uint64_t *ne, const char *path,
                                        uint64_t offset);
size_t sw_gguf_writer_n_tensors(const struct sw_gguf_writer *w);
/* Write the file atomically (temp + fsync + rename): ggml's layout, tensors in the order added,
 * each padded to the alignment. Nothing is left behind on failure. */
int sw_gguf_writer_write(struct sw_gguf_writer *w, const char *path, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * gguf_synth: make a random-weight model from llama.cpp's test-llama-archs chat-capable (see
 * `slipway gguf synth`): graft the tokenizer + chat template of a vocabulary GGUF, resize the
 * vocabulary-sized tensors (new rows: deterministic N(0, 0.01) noise), set a long training context.
 */
#define SW_GGUF_SYNTH_DEFAULT_CTX 32768

/* A random base model slipway writes itself, for architectures test-llama-archs cannot write
 * (gemma3: sliding-window attention with a layer pattern). Zero fields take the defaults:
 * 6 layers, embd 256, 4 heads / 2 KV heads of 64, ff 512, window 128, pattern 6 (every 6th
 * layer full attention, as llama.cpp's set_swa_pattern). Placeholder 128-token vocabulary,
 * 256-token context, N(0, 0.01) weights, norms around 1, f32. */
struct sw_gguf_base_opts {
    const char *arch; /* "gemma3" */
    uint32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff;
    uint32_t swa, swa_pattern;
    uint64_t seed;
};
void sw_gguf_base_defaults(struct sw_gguf_base_opts *b);
int sw_gguf_synth_base(const struct sw_gguf_base_opts *b, const char *path, struct sw_err *e);

struct sw_gguf_synth_opts {
    const char *in; /* e.g. llama-dense.gguf from test-llama-archs -o DIR; or NULL and: */
    const struct sw_gguf_base_opts *base; /* a base model slipway writes first */
    const char *vocab;                    /* e.g. <llama.cpp>/models/ggml-vocab-phi-3.gguf */
    const char *out;                      /* written atomically */
    uint64_t ctx;      /* <arch>.context_length to set; 0 = SW_GGUF_SYNTH_DEFAULT_CTX */
    uint64_t seed;     /* for the new rows */
    bool force_chatml; /* use slipway's ChatML template even if the vocabulary has one */
};

struct sw_gguf_synth_result {
    char arch[64];
    char tokenizer[32];      /* tokenizer.ggml.model of the vocabulary */
    char template_source[8]; /* "vocab" or "chatml" */
    uint64_t n_vocab_old, n_vocab_new;
    uint64_t ctx_old, ctx_new;
    char resized[8][64]; /* names of the resized tensors (first 8) */
    size_t n_resized;
    uint64_t n_tensors;
    uint64_t weight_bytes;
    uint64_t out_bytes;
};

int sw_gguf_synth(const struct sw_gguf_synth_opts *o, struct sw_gguf_synth_result *r,
                  struct sw_err *e);
/* The result as JSON (what `slipway gguf synth --json` prints). New reference. */
json_t *sw_gguf_synth_result_json(const struct sw_gguf_synth_opts *o,
                                  const struct sw_gguf_synth_result *r);
/* The ChatML template synth writes when the vocabulary has none. */
const char *sw_gguf_synth_chatml(void);

#ifdef __cplusplus
}
#endif
#endif
