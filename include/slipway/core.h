/*
 * slipway core: errors, allocation, bounded buffers, regions (arenas), the lines of a text,
 * units, files, time, JSON helpers, progress and logging. Every other module depends on this one;
 * this one depends on nothing in slipway.
 *
 * What it deliberately does not do: no global state beyond the allocation counters (the
 * failure injector, and per thread the failures seen) and the log level, no exit()/abort() on
 * bad input or out of memory (the CLI decides what to do).
 */
#ifndef SLIPWAY_CORE_H
#define SLIPWAY_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SW_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

/* ---------------------------------------------------------------------------------------------
 * Error codes. Every fallible function returns 0 or one of these (negative).
 */
enum sw_errcode {
    SW_OK = 0,
    SW_ENOMEM = -1,       /* allocation failed */
    SW_EINVAL = -2,       /* bad argument or flag from the caller */
    SW_EIO = -3,          /* read/write/system call failed */
    SW_EPARSE = -4,       /* input is malformed (config, GGUF, log, HTTP reply) */
    SW_ERANGE = -5,       /* a value or a length is outside what is allowed */
    SW_ENOENT = -6,       /* file, key, endpoint or resource not found */
    SW_EUNSUPPORTED = -7, /* well-formed but not something slipway models */
    SW_ETRUNC = -8,       /* input ended before it should */
    SW_EEXIST = -9,       /* already exists / already running */
    SW_ETIMEDOUT = -10,   /* a deadline passed */
    SW_ENET = -11,        /* network / transport failure */
    SW_EHTTP = -12,       /* HTTP status or protocol error */
    SW_EBUSY = -13,       /* resource busy (port in use, database locked) */
    SW_EDB = -14,         /* database error */
    SW_ECHILD = -15,      /* a child process failed */
    SW_EGATE = -16,       /* a gate refused the plan */
    SW_EINTR = -17,       /* interrupted by a signal */
    SW_EMISMATCH = -18,   /* verification failed (size, hash, prediction) */
    SW__ELAST = -19
};

/* Name of a code: "SW_EPARSE: malformed input". Never NULL. */
const char *sw_strerror(int code);

/*
 * Detail of an error, owned by the caller. Functions that take a `struct sw_err *` accept NULL.
 * `where` is a file name or a source label ("<argv>", "http://127.0.0.1:8080/health");
 * line/col are 1-based and 0 when unknown; offset is a byte offset or -1.
 */
struct sw_err {
    int code;
    int line;
    int col;
    int64_t offset;
    char where[512];
    char msg[1024];
};

void sw_err_clear(struct sw_err *e);
/* Set code and message; returns `code` so callers can `return sw_err_set(e, SW_EPARSE, ...)`. */
int sw_err_set(struct sw_err *e, int code, const char *fmt, ...) SW_PRINTF(3, 4);
int sw_err_vset(struct sw_err *e, int code, const char *fmt, va_list ap) SW_PRINTF(3, 0);
/* Set with a source position (line:col, 1-based). */
int sw_err_at(struct sw_err *e, int code, const char *where, int line, int col, const char *fmt,
              ...) SW_PRINTF(6, 7);
/* Set with a byte offset into `where`. */
int sw_err_at_offset(struct sw_err *e, int code, const char *where, int64_t offset, const char *fmt,
                     ...) SW_PRINTF(5, 6);
/* Prepend context to the message of an error already set: "loading fleet: <old message>". */
void sw_err_prefix(struct sw_err *e, const char *fmt, ...) SW_PRINTF(2, 3);
/* "where:line:col: msg", "where: byte N: msg", "where: msg" or "msg". Returns `out`. */
const char *sw_err_format(const struct sw_err *e, char *out, size_t n);
/* The same as a JSON object {code, error, where, line, col, offset, message}. New reference. */
json_t *sw_err_to_json(const struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Allocation. All of slipway (and jansson, once sw_core_init() ran) allocates through these, so a
 * test can make the Nth allocation fail and check that nothing leaks or crashes.
 */
void *sw_malloc(size_t n);
void *sw_calloc(size_t count, size_t size);
void *sw_realloc(void *p, size_t n);
void sw_free(void *p);
char *sw_strdup(const char *s);
char *sw_strndup(const char *s, size_t n);
/* Whether s equals one of the strings of a NULL-terminated list (false for a NULL s). */
bool sw_str_in(const char *s, const char *const *list);
/* Make the nth allocation from now fail (1 = the next one); 0 turns injection off. */
void sw_alloc_fail_at(long n);
/* Allocations made since start (successful or not); for torture loops. */
long sw_alloc_count(void);
/* Allocations that returned NULL on this thread since it started (injected or real): lets a
 * caller of a library that reports its own out-of-memory as something else (jansson's parser says
 * "invalid JSON") tell the two apart. */
long sw_alloc_failures(void);
/* The heap array *arr (the address of its pointer; *cap elements of `size` bytes) made to hold
 * index n: doubled (from 8) with sw_realloc, at most max_n elements. 0; SW_ERANGE when n >=
 * max_n; SW_ENOMEM (overflow too), the array then as it was. The one grower of such arrays. */
int sw_grow(void *arr, size_t *cap, size_t n, size_t size, size_t max_n);
/* Multiply with overflow check: returns false on overflow. */
bool sw_mul_ok(uint64_t a, uint64_t b, uint64_t *out);
bool sw_add_ok(uint64_t a, uint64_t b, uint64_t *out);

/* Call once at program start: routes jansson's allocations through sw_malloc/sw_free. */
void sw_core_init(void);

/* ---------------------------------------------------------------------------------------------
 * Bounded growable buffer, always NUL-terminated. `max` is a ceiling on len (curl's dynbuf
 * toobig): appending past it fails with SW_ERANGE and leaves the buffer as it was.
 */
struct sw_buf {
    char *data; /* NULL until the first append; sw_buf_cstr() never returns NULL */
    size_t len;
    size_t cap;
    size_t max;
};

void sw_buf_init(struct sw_buf *b, size_t max);
int sw_buf_append(struct sw_buf *b, const void *p, size_t n);
int sw_buf_puts(struct sw_buf *b, const char *s);
int sw_buf_putc(struct sw_buf *b, char c);
/* s[0..n) as HTML text or a quoted attribute value: & < > " escaped, a control character other
 * than tab and newline written as a space. The one escaper of the generated pages. */
int sw_buf_html(struct sw_buf *b, const char *s, size_t n);
/* s[0..n) as Markdown inline text or a table cell: & < > as HTML entities (no tag survives), the
 * characters Markdown reads (backslash ` * [ ] | ~, and _ but inside a word) escaped with a
 * backslash, a control character (LF, CR, tab...) written as a space (a cell is one line). The
 * one escaper of the Markdown report. */
int sw_buf_md(struct sw_buf *b, const char *s, size_t n);
/* One Prometheus text sample, NAME{k1="v1",...} VALUE and a newline: labels as NULL-ended
 * key/value pairs (NULL: none), each value escaped as the exposition format says (backslash, `"`
 * and LF). The one sample writer of slipway's metrics (the textfile export, watch, serve). */
int sw_buf_prom_sample(struct sw_buf *b, const char *name, const char *const *labels, double v);
/* s as a YAML double-quoted scalar, quotes included: `"` and backslash escaped, LF as \\n, the
 * other C0 characters and DEL as \\xNN, C1 as \\u00NN (YAML's non-printables), so no value
 * ends or continues a line. NULL is "". The one escaper of the YAML slipway writes (the
 * llama-swap export, the Kubernetes objects). */
int sw_buf_yaml_str(struct sw_buf *b, const char *s);
int sw_buf_printf(struct sw_buf *b, const char *fmt, ...) SW_PRINTF(2, 3);
int sw_buf_vprintf(struct sw_buf *b, const char *fmt, va_list ap) SW_PRINTF(2, 0);
const char *sw_buf_cstr(const struct sw_buf *b);
/* Drop the first n bytes (a consumed prefix). */
void sw_buf_consume(struct sw_buf *b, size_t n);
void sw_buf_reset(struct sw_buf *b);
/* Hand the data to the caller (free with sw_free); the buffer is reset. Never NULL unless OOM. */
char *sw_buf_steal(struct sw_buf *b);
void sw_buf_free(struct sw_buf *b);

/* ---------------------------------------------------------------------------------------------
 * Region (core/region): an arena, many small allocations owned together and freed in one call
 * (a parsed fleet and its YAML tree, a scanned unit). Every allocation is zeroed and 16-byte
 * aligned. `max` is a ceiling on the bytes the region takes from sw_malloc (its chunks of at
 * least 16 KiB), set at init: an allocation past it fails (NULL) as an out-of-memory does, so a
 * hostile input cannot grow a region without limit.
 * Fields: head is opaque; total (chunk bytes held, <= max) and used (bytes handed out, each
 * rounded up to 16) may be read.
 */
struct sw__region_chunk;
struct sw_region {
    struct sw__region_chunk *head;
    size_t total;
    size_t used;
    size_t max;
};
void sw_region_init(struct sw_region *a, size_t max);
/* n zeroed bytes (a distinct address even for 0); NULL when out of memory or over the ceiling.
 * Freed with the region. */
void *sw_region_alloc(struct sw_region *a, size_t n);
/* count * size bytes, NULL on overflow too. */
void *sw_region_allocn(struct sw_region *a, size_t count, size_t size);
/* Copies in the region; NULL for a NULL s. */
char *sw_region_strndup(struct sw_region *a, const char *s, size_t n);
char *sw_region_strdup(struct sw_region *a, const char *s);
char *sw_region_printf(struct sw_region *a, const char *fmt, ...) SW_PRINTF(2, 3);
/* The array *p (of *cap elements of `size` bytes, in the region) made to hold index n: doubled
 * from 8 elements up to max_n, the old elements copied (the old block stays in the region). 0,
 * SW_ERANGE when n >= max_n, or SW_ENOMEM. */
int sw_region_grow(struct sw_region *a, void *p, size_t *cap, size_t n, size_t size, size_t max_n);
/* Free every chunk; the region may be used again (same ceiling). NULL is allowed. */
void sw_region_free(struct sw_region *a);

/* ---------------------------------------------------------------------------------------------
 * Lines of a text (core/lines): the one walk over text[0..len) line by line. A line ends at LF,
 * the last one at the end of the text (a final LF makes no empty line after it); NUL bytes are
 * ordinary bytes. With SW_LINES_CRLF a CR that ends a line (before its LF, or at the end of the
 * text) is not part of it; any other CR is. Every walk has a bound: a line longer than `max`
 * bytes (its CR dropped first) ends the walk with `over` set, `no` that line's number and the
 * line in the last sw_line, so the caller can name it (SIZE_MAX: the text's own size is the
 * bound).
 *   struct sw_lines it; struct sw_line ln;
 *   sw_lines_init(&it, text, len, 8191, SW_LINES_CRLF);
 *   while (sw_lines_next(&it, &ln)) ... ln.s[0..ln.len), line it.no ...
 *   if (it.over) ... "line %d: %zu bytes", it.no, ln.len ...
 * Fields: p (where the walk is: past the last line returned), no and over may be read.
 */
#define SW_LINES_CRLF 1u
struct sw_lines {
    const char *p, *end;
    size_t max;
    unsigned flags;
    int no;    /* 1-based number of the line last returned (or of the one over max) */
    bool over; /* the walk stopped at a line longer than max */
};
struct sw_line {
    const char *s; /* into the text, not NUL-terminated */
    size_t len;
    bool lf; /* it ended at an LF (false: at the end of the text) */
};
void sw_lines_init(struct sw_lines *it, const char *text, size_t len, size_t max, unsigned flags);
/* The next line into *out: true; false at the end, or at a line over the bound (then *out is
 * that line and every later call is false too). */
bool sw_lines_next(struct sw_lines *it, struct sw_line *out);

/* ---------------------------------------------------------------------------------------------
 * Units. Binary suffixes are powers of 1024 (KiB MiB GiB TiB, also Ki Mi Gi Ti); SI suffixes are
 * powers of 1000 (kB MB GB TB, also k K M G T for bytes as Kubernetes reads them). A plain number
 * may use an exponent ("3.15e9") and thousands separators ("200,704" or "200_704"). The result
 * must be a whole number: "0.1KiB" is an error, not a rounding.
 * Counts take k/M/G (x1000) and Ki/Mi (x1024): "180k" = 180000, "176Ki" = 180224.
 */
int sw_parse_bytes(const char *s, uint64_t *out, struct sw_err *e);
int sw_parse_count(const char *s, uint64_t *out, struct sw_err *e);
/*
 * The one number lexer behind them (and behind the fleet's quantities and the rule grammar):
 * "[+-]<digits>[.<digits>][e[+-]N]" at the start of s, with ',' or '_' between digits of the
 * integer part. The sign is read only when `sign` is true. Returns the characters it used (0: no
 * number; nothing is skipped before it). Fields of struct sw_number:
 *   mant, exp10   the value without sign, exactly: mant x 10^exp10;
 *   overflow      a significant digit beyond what 64 bits hold (mant is then not the value);
 *   exp_huge      an exponent of more than four digits' worth (exp10 is then not the value);
 *   real, real_ok the nearest double with the sign (strtod), when finite and under 127 characters.
 */
struct sw_number {
    size_t len;
    bool negative;
    uint64_t mant;
    int exp10;
    bool overflow;
    bool exp_huge;
    double real;
    bool real_ok;
};
int sw_number_scan(const char *s, bool sign, struct sw_number *out);
/* The unit tables (exact spelling, n bytes of s): a byte unit (B, KiB, MiB, GiB, TiB, kB, KB, MB,
 * GB, TB) or a multiplier (Ki, Mi, Gi, k, K, M, G) -> its factor; 0 when s is not one. Byte sizes
 * take both, and Ti and T besides. */
uint64_t sw_unit_bytes(const char *s, size_t n);
uint64_t sw_unit_multiplier(const char *s, size_t n);
/*
 * Rule expressions (rule.c): the one grammar and evaluator of known-bad rules, `slots == 2 &&
 * kv_dtype == fp8`, `!(tp >= 2) || util < 0.9`, `ctx = 180k and not tp == 2` (the words and, or,
 * not and a lone '=' are spellings of &&, ||, ! and ==; the grammar is in rule.c). Which keys
 * exist, how a literal is read and where a key's value is found are the caller's vocabulary, so
 * the ledger (canonical JSON shapes), the fleet (its shape fields) and any other module use one
 * parser and one evaluator. A comparison with a key the subject lacks, or of two different types,
 * is false.
 */
#define SW_RULE_KEY_MAX 320 /* a key as written is at most 255 bytes */
enum sw_rule_type { SW_RULE_INT = 1, SW_RULE_REAL, SW_RULE_STR, SW_RULE_BOOL };
struct sw_rule_value {
    enum sw_rule_type type;
    int64_t i;
    double d;
    const char *s;
    bool b;
};
enum sw_rule_op { SW_RULE_EQ = 1, SW_RULE_NE, SW_RULE_LT, SW_RULE_LE, SW_RULE_GT, SW_RULE_GE };
/* One comparison as the parser met it, for a vocabulary's value reader. */
struct sw_rule_cmp {
    const char *key; /* canonical (vocab->key's output) */
    enum sw_rule_op op;
    const char *text; /* the literal as written; a "quoted" one without quotes and unescaped */
    bool quoted;
    bool bare;                    /* a bare key ("== true"): text is "true" */
    size_t key_at, op_at, lit_at; /* byte offsets in the expression */
};
struct sw_rule_vocab {
    /* The canonical spelling of the key path text[0..n) into out (outn bytes): 0, or -1 with
     * why in msg (the error then points at the key). */
    int (*key)(void *ctx, const char *text, size_t n, char *out, size_t outn, char *msg,
               size_t msgn);
    /* Optional: read the literal of cmp in the key's own units and choices: 0 with *out filled
     * (out->s is copied), or -1 with why in msg (the error then points at the literal). NULL:
     * the grammar reads true/false, numbers with byte units, and words as strings. */
    int (*value)(void *ctx, const struct sw_rule_cmp *cmp, struct sw_rule_value *out, char *msg,
                 size_t msgn);
    /* Optional: a string literal compared with key, normalized into out; false: kept as is. */
    bool (*literal)(void *ctx, const char *key, const char *s, char *out, size_t outn);
    /* The value of key in subject: true and *out filled (out->s may point into tmp), or false
     * when the subject lacks it or holds something no literal compares with. */
    bool (*get)(void *ctx, const void *subject, const char *key, struct sw_rule_value *out,
                char *tmp, size_t tmpn);
    void *ctx;             /* passed to every hook; key's text points into the parsed expression */
    const char *keys_hint; /* "a shape key (slots, ctx, ...)": said when a key is missing */
};
struct sw_rule;
/* Parse expr (NUL-terminated); errors are SW_EPARSE with the byte offset in the expression
 * (where "rule"). *out freed with sw_rule_free; the vocabulary is copied (ctx must outlive it). */
int sw_rule_parse(const char *expr, const struct sw_rule_vocab *vocab, struct sw_rule **out,
                  struct sw_err *e);
bool sw_rule_eval(const struct sw_rule *r, const void *subject);
/* True when r is comparisons joined by && only (no ||, no !). */
bool sw_rule_is_conjunction(const struct sw_rule *r);
void sw_rule_free(struct sw_rule *r);
/* A duration as milliseconds: a number with an optional unit ms, s, m (min) or h; a bare number
 * is seconds ("1.5" = 1500). A value that does not fit int64_t milliseconds, or is not a whole
 * number of milliseconds, is an error naming it (never a wrap-around). */
int sw_parse_duration_ms(const char *s, int64_t *ms, struct sw_err *e);
/* Strict integer / float parse of the whole string (no suffix). */
int sw_parse_i64(const char *s, int64_t *out, struct sw_err *e);
int sw_parse_u64(const char *s, uint64_t *out, struct sw_err *e);
int sw_parse_double(const char *s, double *out, struct sw_err *e);
/* "20.05 GiB" / "1,153 MiB" / "931.3 KiB" / "17 B"; returns out. */
const char *sw_fmt_bytes(uint64_t v, char *out, size_t n);
/* Bytes as MiB with two decimals, as llama.cpp prints them: "272.00". */
const char *sw_fmt_mib(uint64_t v, char *out, size_t n);
/* "180,224" */
const char *sw_fmt_count(uint64_t v, char *out, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Files.
 */
/* Read a whole regular file of at most `max` bytes. *data is NUL-terminated; free with sw_free.
 * Every reader of a user-named file goes through here: a FIFO, device or socket is refused
 * (SW_EINVAL, "not a regular file") without blocking on it. */
int sw_read_file(const char *path, size_t max, char **data, size_t *len, struct sw_err *e);
/* Write via a temporary file in the same directory, fsync, rename: readers see the old file or the
 * whole new one, never half of it. mode as for open(2). */
int sw_write_file_atomic(const char *path, const void *data, size_t len, int mode,
                         struct sw_err *e);
/* The same in steps, for a file written piece by piece: sw_atomic_open creates the temporary
 * file beside path (write to a->fd), sw_atomic_commit gives it mode, fsyncs it and renames it over
 * path, sw_atomic_abort removes it. After commit (either outcome) or abort, nothing is left to
 * free; abort after commit, or on a zeroed struct, does nothing. */
struct sw_atomic {
    const char *path; /* not owned */
    char *tmp;
    int fd;
};
int sw_atomic_open(struct sw_atomic *a, const char *path, struct sw_err *e);
int sw_atomic_commit(struct sw_atomic *a, int mode, struct sw_err *e);
void sw_atomic_abort(struct sw_atomic *a);
/* mkdir -p */
int sw_mkdir_p(const char *path, int mode, struct sw_err *e);
/* An output directory a verb writes files into (--out DIR): 0 when dir is a directory. Otherwise
 * an error naming dir and why, and what to do: not a directory (SW_EINVAL), missing (SW_ENOENT,
 * saying whether its parent exists), cannot be reached (SW_EIO). It creates nothing: a mistyped
 * path writes nothing anywhere. */
int sw_out_dir(const char *dir, struct sw_err *e);
/* The lexical form of path into out (n bytes): `.` and empty segments dropped, `..` taking the
 * segment before it away (at the root it stays the root; a relative path keeps leading `..`), no
 * trailing slash; "." for an empty result. No file system access (a symlink is not followed).
 * 0, or SW_ERANGE when it does not fit. */
int sw_path_lexical(const char *path, char *out, size_t n);
/* path lies at or under dir, both in lexical form: 0 when not (or either is longer than 4095
 * bytes, or rest is too small), else the length of dir's lexical form (the longer, the closer:
 * "/" gives 1). rest (rn bytes, may be NULL) gets what follows dir in path's lexical form: "" or
 * "/a/b" (the whole path when dir is "/"). */
size_t sw_path_within(const char *path, const char *dir, char *rest, size_t rn);
/* path under `from` seen from `to` (a host path in a container's view through its mount): out (n
 * bytes) gets to's lexical form followed by what follows from in path's. Returns as
 * sw_path_within (0: not under from, or out too small). */
size_t sw_path_rebase(const char *path, const char *from, const char *to, char *out, size_t n);
/* The length of path without a ".yaml" or ".yml" ending of its last segment: the stem of the
 * files kept beside a fleet file (fleet.yaml -> fleet.ledger.sqlite, fleet.manifests/). */
size_t sw_path_yaml_stem(const char *path);
/* slipway's private run directory: $SLIPWAY_RUN_DIR, else $XDG_RUNTIME_DIR/slipway, else
 * $HOME/.local/state/slipway/run; created 0700 when missing, then required a real directory owned
 * by the euid without group/other write (SW_EIO naming the path otherwise). For sockets and pid
 * files below the layers that may use deploy's sw_deploy_run_dir (the same rule). */
int sw_run_dir(char *out, size_t n, struct sw_err *e);
/* Where that directory is (the rule above), without creating or judging it. SW_ENOENT when
 * neither variable nor a home directory names one, SW_ERANGE when it does not fit. */
int sw_run_dir_path(char *out, size_t n, struct sw_err *e);
/* The same, created 0700 (with its parents) when missing, not judged: for a caller that judges
 * it by its own rule (deploy's pid files). */
int sw_run_dir_create(char *out, size_t n, struct sw_err *e);
/* Describe what the first bytes of a buffer look like, for error messages about a file that is
 * not what its name says: "an HTML page", "a git-lfs pointer", "a JSON object", "empty",
 * "text starting \"...\"" or "binary starting 0x..". Writes into out; returns out. */
const char *sw_sniff(const void *p, size_t n, char *out, size_t outn);
/* The class sw_sniff's description is chosen by, for code that must act on it (payload/). */
enum sw_sniff_kind {
    SW_SNIFF_EMPTY = 0,
    SW_SNIFF_GGUF,  /* starts with the GGUF magic */
    SW_SNIFF_LFS,   /* a git-lfs pointer */
    SW_SNIFF_HTML,  /* an HTML page */
    SW_SNIFF_XML,   /* an XML document */
    SW_SNIFF_JSON,  /* starts (after a BOM and blanks) with { or [ */
    SW_SNIFF_TEXT,  /* printable text otherwise */
    SW_SNIFF_BINARY /* anything else */
};
enum sw_sniff_kind sw_sniff_kind(const void *p, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Time. Monotonic clock for every interval; wall clock only for timestamps shown to people.
 */
uint64_t sw_now_ns(void);   /* CLOCK_MONOTONIC */
double sw_now_s(void);      /* CLOCK_MONOTONIC, seconds */
int64_t sw_wall_unix(void); /* seconds since the epoch */
/* ISO-8601 UTC "2026-12-02T20:38:54Z" of a unix time; returns out. */
const char *sw_fmt_time(int64_t unix_s, char *out, size_t n);
void sw_sleep_ms(unsigned ms);

/* ---------------------------------------------------------------------------------------------
 * JSON helpers over jansson.
 */
/* Print compact or indented JSON followed by a newline. */
int sw_json_print(FILE *f, const json_t *j, bool pretty);
/* The one way to serialize: jansson's json_dumps, whose text is allocated through sw_malloc
 * (sw_core_init routes jansson there) and is freed with sw_free. NULL when out of memory. */
char *sw_json_dumps(const json_t *j, size_t flags);
/* Parse text; the error names where and at which line:col. New reference or NULL. */
json_t *sw_json_parse(const char *text, size_t len, const char *where, struct sw_err *e);
json_t *sw_json_load_file(const char *path, size_t max, struct sw_err *e);
/* The one way a JSON number becomes an integer: `v` must be a JSON integer, or a real with no
 * fractional part (2.0, 1e3), within [min, max]. The range is checked on the double before any
 * conversion (converting a double outside int64_t's range is undefined behaviour). Anything else
 * (a fraction, 2e56, a string, null, a missing value) is SW_EPARSE or SW_ERANGE naming `key` at
 * `where`; *out is untouched then. */
int sw_json_int_range(const json_t *v, int64_t min, int64_t max, const char *where, const char *key,
                      int64_t *out /* OUT */, struct sw_err *e);
/* A JSON string of s[0..len), bytes from outside (a server, a file, a ledger): kept as they are
 * when they are well-formed UTF-8, else repaired with sw_utf8_repair (each byte that starts no
 * well-formed sequence, a NUL included, becomes U+FFFD) - never dropped. *replaced (may be NULL)
 * gets the count of bytes replaced. New reference; NULL only when out of memory. */
json_t *sw_json_text(const char *s, size_t len, size_t *replaced);
/* Setters that steal nothing and tolerate NULL values (store null). Return 0 or SW_ENOMEM.
 * sw_json_set_str stores val through sw_json_text: a string that is not UTF-8 is repaired, not
 * lost, and never reported as out of memory. */
int sw_json_set_str(json_t *obj, const char *key, const char *val);
int sw_json_set_int(json_t *obj, const char *key, int64_t val);
int sw_json_set_real(json_t *obj, const char *key, double val);
int sw_json_set_bool(json_t *obj, const char *key, bool val);
/* Steals `val` (decrefs it on failure too). */
int sw_json_set_new(json_t *obj, const char *key, json_t *val);
/* A struct written as a JSON object from a table of its members, in the table's order: the one
 * way a struct of plain members becomes JSON (typed inside, JSON at the edges). A row: the key,
 * the member's kind and offset, flags, and for SW_JF_HAS the offset of the bool member that says
 * whether the value is there. A value is empty when that bool is false, else when it is "", NULL
 * or 0; an empty value is left out with SW_JF_OMIT, null with SW_JF_NULL, written otherwise.
 * Strings go through sw_json_set_str (repaired when not UTF-8). */
enum sw_json_kind {
    SW_JK_CHARS,  /* char[] */
    SW_JK_STR,    /* const char * (NULL: null) */
    SW_JK_BOOL,   /* bool */
    SW_JK_INT,    /* int (pid_t too) */
    SW_JK_I64,    /* int64_t */
    SW_JK_U64,    /* uint64_t, as an integer */
    SW_JK_DOUBLE, /* double */
    SW_JK_JSON,   /* json_t *: a new reference (NULL: null) */
    SW_JK_FN,     /* fn(o, key, the struct) sets the key (or leaves it out): 0 or SW_ENOMEM */
};
#define SW_JF_OMIT 1u
#define SW_JF_NULL 2u
#define SW_JF_HAS  4u
struct sw_json_field {
    const char *key;
    enum sw_json_kind kind;
    size_t off;
    unsigned flags;
    size_t has_off;
    int (*fn)(json_t *o, const char *key, const void *obj);
};
/* A table's rows: member m of struct T (SW_JSON_M: keyed by its name); with its presence flag
 * `has`; a function. */
/* clang-format off */
#define SW_JSON_ROW(key, kind, T, m, fl)         {key, kind, offsetof(T, m), fl, 0, NULL}
#define SW_JSON_M(kind, T, m, fl)                SW_JSON_ROW(#m, kind, T, m, fl)
#define SW_JSON_ROW_IF(key, kind, T, m, fl, has) {key, kind, offsetof(T, m), (fl) | SW_JF_HAS, \
                                                  offsetof(T, has), NULL}
#define SW_JSON_ROW_FN(key, f)                   {key, SW_JK_FN, 0, 0, 0, f}
/* clang-format on */
/* obj's members into o (an object); 0, or SW_ENOMEM (o then holds what was written). */
int sw_json_put_fields(json_t *o, const struct sw_json_field *t, size_t n, const void *obj);
/* The string at obj[key], or dflt when there is none (no key, not a string, obj NULL). */
const char *sw_json_str(const json_t *obj, const char *key, const char *dflt);

/* ---------------------------------------------------------------------------------------------
 * Text from elsewhere (core/utf8, core/redact).
 */
/* Length of the well-formed UTF-8 sequence at s[0..n), 0 when none starts there (a NUL too). */
size_t sw_utf8_seq(const unsigned char *s, size_t n);
/* Copy s[0..len) into out (outn bytes, always NUL-terminated when outn > 0) as well-formed
 * UTF-8: each byte that starts no well-formed sequence (a NUL included) becomes U+FFFD; a
 * character that does not fit whole is left out with everything after it. *replaced (may be
 * NULL) gets the count of such bytes. Returns the bytes written (without the NUL). */
size_t sw_utf8_repair(const char *s, size_t len, char *out, size_t outn, size_t *replaced);

/* Write s to f for a terminal: control characters (C0 but tab, DEL, C1 U+0080..U+009F) and
 * bytes that are not UTF-8 become visible escapes (\\xNN, \\u00NN), so text from elsewhere (a
 * server's reply, an engine's journal) cannot move the cursor, recolour or retitle the terminal.
 * A newline is kept when flags has SW_TERM_LINES, else written as \\n. NULL writes nothing. */
#define SW_TERM_LINES 1u
void sw_fput_term(FILE *f, const char *s, unsigned flags);
/* Append s as text within one line of a line-based file (a `#` comment of a unit, of an env file,
 * of a YAML export): the escapes of sw_fput_term (LF as \\n, CR as \\r, other controls and bytes
 * that are not UTF-8 as \\xNN / \\u00NN) and a backslash doubled, so the text can neither end
 * the line nor continue it (systemd's env-file parser continues a comment at a backslash before
 * the line end). Tab is kept. NULL appends nothing. The one escaper of such a line. */
int sw_buf_line(struct sw_buf *b, const char *s);

/* A secret shorter than this is not redacted: it would shred ordinary text. */
#define SW_REDACT_MIN 4u
/* Replace every occurrence of secret in the NUL-terminated s (in place) by "***", and of its
 * forms a server may echo: JSON-escaped, percent-encoded, base64 (so "Bearer KEY" and
 * "Authorization: Bearer KEY" too). secret NULL or shorter than SW_REDACT_MIN: nothing is done.
 * Returns the number of replacements. The one routine for every message, evidence or record
 * that may hold a token (probe, fetch, hub). */
size_t sw_redact(char *s, const char *secret);
/* The same over s[0..*len) (may hold NUL bytes); *len gets the new length. */
size_t sw_redact_mem(char *s, size_t *len, const char *secret);

/* ---------------------------------------------------------------------------------------------
 * Progress bar for long work. Draws on stderr only when it is a terminal (or when forced), at most
 * 10 times a second; shows done/total, rate and ETA. Silent otherwise.
 */
struct sw_progress {
    const char *label;
    const char *unit; /* "B" formats bytes; anything else is a count unit */
    uint64_t total;   /* 0 = unknown: shows a counter instead of a bar */
    uint64_t done;
    double t0;
    double last_draw;
    bool enabled;
    FILE *out;
};
void sw_progress_init(struct sw_progress *p, const char *label, const char *unit, uint64_t total);
void sw_progress_update(struct sw_progress *p, uint64_t done);
void sw_progress_finish(struct sw_progress *p);
/* Force on (tests) or off (--json, --quiet) regardless of isatty. */
void sw_progress_force(struct sw_progress *p, bool enabled, FILE *out);

/* ---------------------------------------------------------------------------------------------
 * Logging to stderr. Level from SLIPWAY_LOG (error|warn|info|debug), default warn.
 */
enum sw_log_level { SW_LOG_ERROR = 0, SW_LOG_WARN = 1, SW_LOG_INFO = 2, SW_LOG_DEBUG = 3 };
void sw_log_set_level(enum sw_log_level lvl);
enum sw_log_level sw_log_get_level(void);
void sw_log(enum sw_log_level lvl, const char *fmt, ...) SW_PRINTF(2, 3);

#define SW_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SW_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define SW_MAX(a, b)    ((a) > (b) ? (a) : (b))
#define SW_MIB          (1024ull * 1024ull)
#define SW_GIB          (1024ull * 1024ull * 1024ull)

/* ---------------------------------------------------------------------------------------------
 * Charts (core/chart): SVG for results people compare. Panels stack vertically.
 */
enum sw_chart_kind {
    SW_CHART_LINES, /* numeric x; points joined per series; a non-finite value breaks the line */
    SW_CHART_BARS,  /* categories on x, one bar per series in each */
};
struct sw_chart_series {
    const char *name;
    size_t n;
    const double *x;           /* LINES only */
    const double *y;           /* a non-finite y is not drawn */
    const double *lo, *hi;     /* optional lo..hi whisker per value (NULL: none) */
    const char *const *labels; /* LINES: optional text drawn above each point (NULL or "": none) */
};
struct sw_chart {
    enum sw_chart_kind kind;
    const char *title, *note, *x_label, *y_label;
    const char *const *categories; /* BARS */
    size_t n_categories;
    const struct sw_chart_series *series;
    size_t n_series; /* 1..8 */
    bool y_from_zero, x_from_zero;
};
/* Append the SVG document of n panels to out. SW_EINVAL when a panel has nothing finite to
 * draw or is malformed (names the panel), SW_ERANGE for too many series. */
int sw_chart_svg(const struct sw_chart *charts, size_t n, struct sw_buf *out, struct sw_err *e);
/* The same, written atomically to path (mode 0644). */
int sw_chart_write_svg(const struct sw_chart *charts, size_t n, const char *path, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
