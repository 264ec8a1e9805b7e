/*
 * Helpers shared by slipway's cmocka tests: fixture paths, temporary directories, running the
 * slipway binary (or any program) and capturing what it prints.
 * Include after <setjmp.h>/<cmocka.h>.
 */
#ifndef SWTEST_H
#define SWTEST_H

#include <slipway/core.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/types.h>

/* $SW_SOURCE_DIR/rel, $SW_SHARED_DIR/rel, $SW_BUILD_DIR/rel (static buffers rotate, 8 deep). */
const char *swt_src(const char *rel);
const char *swt_shared(const char *rel);
const char *swt_build(const char *rel);
/* The slipway binary under test. */
const char *swt_bin(void);
/* The fleet file at $SW_SOURCE_DIR/rel, loaded with no environment (a ${VAR} the file needs
 * is then an error, not the caller's shell); fails the test on error. sw_fleet_free it. */
struct sw_fleet *swt_fleet(const char *rel);

/* The head of a test fleet: one local host h with one 24 GiB NVIDIA GPU g0, up to "endpoints:"
 * (the test's endpoints follow, indented two spaces). */
#define SWT_FLEET_ONE_GPU                                                                          \
    "version: 1\n"                                                                                 \
    "hosts:\n"                                                                                     \
    "  h:\n"                                                                                       \
    "    transport: {kind: local}\n"                                                               \
    "    devices:\n"                                                                               \
    "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}\n"                                 \
    "endpoints:\n"

/* The fleet text (name is the file it claims to be, for messages), loaded with no environment;
 * fails the test on error. sw_fleet_free it. */
struct sw_fleet *swt_fleet_text(const char *name, const char *text);

/* The operator's fleet (examples/operator.yaml), loaded once for a cmocka group whose tests share
 * it: cmocka_run_group_tests(tests, swt_operator_setup, swt_operator_teardown) (the setup calls
 * sw_core_init); swt_operator() is the fleet in between. */
int swt_operator_setup(void **state);
int swt_operator_teardown(void **state);
struct sw_fleet *swt_operator(void);

/* Endpoint `name` of fleet f planned into p (sw_plan_free it); fails the test naming the endpoint
 * on error. */
struct sw_plan;
void swt_plan(const struct sw_fleet *f, const char *name, struct sw_plan *p);
/* The GGUF at path opened (sw_gguf_open); fails the test with the error where it is. sw_gguf_free
 * it. */
struct sw_gguf *swt_gguf_open(const char *path);
/* The GGUF's "<architecture>.<suffix>" as a number (sw_gguf_arch_u64); fails the test naming the
 * key when it is absent. */
struct sw_gguf;
uint64_t swt_gguf_u64(const struct sw_gguf *g, const char *suffix);
/* The SGLang law's inputs for endpoint `name` of fleet f as planned: its options and its
 * architecture; fails the test on error. */
struct sw_sglang_opts;
struct sw_hf_config;
void swt_sglang_law(struct sw_fleet *f, const char *name, struct sw_sglang_opts *o,
                    struct sw_hf_config *c);

/* examples/operator.yaml made local to root: frank-primary's model at root/models/primary (the
 * config.json inferred for it, tests/data/vllm/models/frank-primary-inferred, written there), the
 * models mount from root/models. The fleet text; free it. */
char *swt_operator_local(const char *root);

/* The head of a test fleet: one local host `local` with one 8 GiB test device gpu0 (no driver is
 * asked), up to its hosts' end (profiles: or endpoints: follow). */
#define SWT_FLEET_LOCAL_8G                                                                         \
    "version: 1\n"                                                                                 \
    "hosts:\n"                                                                                     \
    "  local:\n"                                                                                   \
    "    transport: {kind: local}\n"                                                               \
    "    devices:\n"                                                                               \
    "      gpu0: {kind: test, vendor: nvidia, index: 0, memory_total: 8GiB}\n"

/* The head of a bench test's fleet: one local host `here` with one 24 GiB NVIDIA GPU g0 of memory
 * bandwidth bw (a string literal: "1TB/s"), up to "endpoints:" exclusive. */
#define SWT_FLEET_HERE_GPU(bw)                                                                     \
    "version: 1\n"                                                                                 \
    "hosts:\n"                                                                                     \
    "  here:\n"                                                                                    \
    "    transport: local\n"                                                                       \
    "    devices:\n"                                                                               \
    "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB, bandwidth: " bw "}\n"

/* 127.0.0.1:port as a socket address (for bind or connect). */
struct sockaddr_in swt_loopback(int port);
/* A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0). -1 on error. */
int swt_free_port(void);
/* Something accepts connections on 127.0.0.1:port. */
bool swt_port_open(int port);

/* A fresh temporary directory, removed (recursively) by swt_tmpdir_free. */
char *swt_tmpdir(void);
void swt_tmpdir_free(char *dir);
/* The entries of directory dir not starting with '.'; -1 when it cannot be read. */
int swt_count_entries(const char *dir);
/* dir/name in a static rotating buffer. */
const char *swt_join(const char *dir, const char *name);
/* Write a file (whole); fails the test on error. */
void swt_write(const char *path, const void *data, size_t len);
void swt_write_str(const char *path, const char *s);

/* A file's whole text (up to 64 MiB), NUL-terminated; fails the test when it cannot be read.
 * free it. */
char *swt_slurp(const char *path);
/* Copy the file `from` to `to` (whole); fails the test on error. */
void swt_copy(const char *from, const char *to);
/* text with the first `from` replaced by `to`; fails the test when from is not in it. free it. */
char *swt_replace1(const char *text, const char *from, const char *to);
/* Every needle (NULL-terminated) is in text; else fails the test naming `what`, the needle and
 * the text. */
void swt_has_all(const char *what, const char *text, ...) __attribute__((sentinel));
/* n pseudo-random bytes from seed (xorshift32): the same bytes for the same seed, and content
 * that no compressor shrinks. */
void swt_noise(void *buf, size_t n, unsigned seed);

struct swt_run {
    int status; /* exit code, or 128+signal */
    char *out;  /* stdout, NUL-terminated; free with swt_run_free */
    char *err;  /* stderr */
};
/* Run argv (argv[0] searched in PATH unless it contains '/'), with optional stdin text,
 * capturing up to 64 MiB of each stream; timeout_s kills it (status 128+9). */
int swt_run(const char *const *argv, const char *stdin_text, unsigned timeout_s, struct swt_run *r);
/* swt_run with no stdin where blocking is the failure: a run still going after bound_s is killed
 * and fails the test, named as blocked (with its stderr). */
void swt_run_bounded(const char *const *argv, unsigned bound_s, struct swt_run *r);
/* Append the strings of ap, up to its NULL, to argv[0..n): at most max - 1 in all, then NULL.
 * The new count (a test's own argv vector for swt_run). */
size_t swt_argv_va(const char **argv, size_t n, size_t max, va_list ap);
/* Run the slipway binary: swt_slipway(&r, "plan", "--json", NULL). */
int swt_slipway(struct swt_run *r, ...);
void swt_run_free(struct swt_run *r);
/* A finished run r exited `want` and its stdout holds every needle (NULL-terminated); else fails
 * the test showing both streams. Frees r. */
void swt_out_has(struct swt_run *r, int want, ...) __attribute__((sentinel));
/* Run the slipway binary (arguments NULL-terminated) and require exit status `want`; the failure
 * shows both streams. swt_slipway_exits(2, "gguf", "frobnicate", NULL). */
void swt_slipway_exits(int want, ...);

/*
 * Prerequisites. A test that needs something this machine may lack (a built llama.cpp, nginx, a
 * test model, the shared data) calls swt_need(have, "what is missing", ...) before using it. When
 * `have` is false the test stops there: skipped on a developer's machine, FAILED under CI (the
 * environment's CI is "true" or "1"), the message naming what is missing either way, so a CI run
 * cannot go green having tested nothing. Returns only when have is true.
 */
void swt_need(bool have, const char *what_fmt, ...) __attribute__((format(printf, 2, 3)));
/* True under CI (CI=true or CI=1). */
bool swt_ci(void);

/*
 * Allocation-failure torture (curl's torture mode over sw_alloc_fail_at). Runs `run` once with
 * nothing failing and counts its allocations N (it must return 0 and allocate at least once),
 * then N times with the 1st, 2nd, ... Nth allocation failing. Each of those runs must reach the
 * failing allocation (else the allocation points are not what the clean run said) and return
 * `want` (SW_ENOMEM unless the function documents another code); ASan checks that each error path
 * frees what it took. A final run past N must succeed again with N allocations. `run` frees what
 * it got before returning. Fails the test naming `name` and the allocation; returns N.
 */
long swt_torture(const char *name, int (*run)(void *arg), void *arg, int want);

/* The element of the JSON array arr whose string member `key` is `value`; fails the test when
 * there is none. */
const json_t *swt_json_find(const json_t *arr, const char *key, const char *value);
/* Parse r->out as JSON (fails the test if it is not). */
json_t *swt_json_out(const struct swt_run *r);
/* Run argv (timeout_s at most): its exit status in *status, its stdout parsed as JSON (fails the
 * test when it is not), its stderr printed when it has any. json_decref it. */
json_t *swt_run_json(const char *const *argv, unsigned timeout_s, int *status);
/* Run the slipway binary (arguments NULL-terminated, 300 s at most), require exit status `want`
 * (the failure shows both streams) and return its stdout parsed as JSON; swt_run_free r. */
json_t *swt_slipway_json(struct swt_run *r, int want, ...);

/* Start argv (argv[0] a path) in a process group of its own that dies with the test
 * (PR_SET_PDEATHSIG), stdout to out_path and stderr to err_path (created, truncated), with each
 * "NAME=VALUE" of env (NULL-terminated; NULL for none) added to its environment. The child's
 * pid; -1 when fork failed. */
pid_t swt_spawn(const char *const *argv, const char *out_path, const char *err_path,
                const char *const *env);
/* The port a spawned server announced as the first number of out_path (`slipway sim` prints it
 * as it binds, before it accepts: a vLLM sim accepts nothing while it loads), polled every
 * 100 ms for up to timeout_ms. 0 when none came: *exited (may be NULL) then says whether pid
 * exited (reaped) first. */
int swt_announced_port(const char *out_path, pid_t pid, unsigned timeout_ms, bool *exited);

/* Wait up to timeout_s for pid (a child) to exit: its exit code, or 128+signal. Past the timeout
 * it is killed and the test fails. */
int swt_wait_exit(pid_t pid, unsigned timeout_s);

/* Run the slipway binary with args (NULL-terminated), reading its stdout, and SIGKILL it at its
 * first line that starts with `needle` (anywhere: that holds it); fails the test unless that line
 * came and the kill ended it. */
void swt_slipway_kill_at(const char *needle, int anywhere, ...);

/* Start a server that announces its port on stdout (swt_spawn: argv, stdout to out, stderr to
 * log). *pid is its pid from the start (the caller's to stop; 0 once it exited and was reaped).
 * The port it announced within 30 s; fails the test naming `what`, with the end of the log, when it
 * exits first or announces none. */
int swt_spawn_announced(const char *what, const char *const *argv, const char *out, const char *log,
                        pid_t *pid);

/* Live processes (not zombies, not this one) whose argv holds `mark`; each printed on stderr when
 * `print`, the last one's pid in *one (may be NULL). */
int swt_survivors(const char *mark, bool print, pid_t *one);

/* A cmocka (group) setup's fresh directory: *state and *dir (may be NULL) are a new swt_tmpdir(),
 * and SLIPWAY_LEDGER is unset (no run reaches the ledger of the shell that started the test).
 * Returns 0. swt_tmpdir_teardown removes it. */
int swt_tmpdir_setup(void **state, char **dir);
/* A cmocka (group) teardown for a setup whose *state is a swt_tmpdir(): removes it. */
int swt_tmpdir_teardown(void **state);

/* A file (up to 64 MiB) holds exactly data[0..n) / holds needle somewhere. False when unreadable. */
bool swt_file_is(const char *path, const void *data, size_t n);
bool swt_file_has(const char *path, const char *needle);

/* A Llama-3-8B-shaped config.json: what vLLM's and SGLang's laws (and their sims) read of a
 * checkpoint directory the tests make. */
#define SWT_LLAMA8B_CONFIG                                                                         \
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\","                          \
    "\"hidden_size\":4096,\"num_hidden_layers\":32,\"num_attention_heads\":32,"                    \
    "\"num_key_value_heads\":8,\"head_dim\":128,\"intermediate_size\":14336,"                      \
    "\"max_position_embeddings\":131072,\"vocab_size\":128256,"                                    \
    "\"torch_dtype\":\"bfloat16\"}"

/* frank-primary's architecture as a config.json's fields (Qwen3-Next: 48 layers, one in four full
 * attention, the rest gated delta net), without the braces (a test may add fields). */
#define SWT_QWEN3_NEXT_FIELDS                                                                      \
    "\"model_type\":\"qwen3_next\",\"num_hidden_layers\":48,\"num_attention_heads\":16,"           \
    "\"num_key_value_heads\":2,\"head_dim\":256,\"hidden_size\":2048,"                             \
    "\"full_attention_interval\":4,\"linear_num_key_heads\":16,\"linear_num_value_heads\":48,"     \
    "\"linear_key_head_dim\":128,\"linear_value_head_dim\":128,\"linear_conv_kernel_dim\":4,"      \
    "\"torch_dtype\":\"bfloat16\",\"mamba_ssm_dtype\":\"float32\","                                \
    "\"max_position_embeddings\":262144"
#define SWT_QWEN3_NEXT_CONFIG "{" SWT_QWEN3_NEXT_FIELDS "}"

#endif
