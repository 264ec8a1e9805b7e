/*
 * bench_watch: what `slipway watch` costs while it keeps 10 endpoints under watch at a 10 s
 * interval: the CPU of the watch process (user + system, its own and its reaped children's:
 * the host commands each look runs) as a percentage of one core over the run, and its peak RSS
 * (VmHWM). Targets: under 1 % of a core and under 30 MiB.
 *
 * The endpoints are 10 vLLM sims (`slipway sim --engine vllm`, a Llama-3-8B-shaped checkpoint
 * directory) on this machine's loopback, on a local host in the fleet; each look is the real
 * status look (systemctl show, the installed files read back, /health and a one-token
 * generation, the device tool looked for). watch: {act: false}: on a machine without a running
 * systemd the units are not there, and the bench measures looking, not restarting.
 *
 * Usage: bench_watch [seconds, default 60] [endpoints, default 10] [interval s, default 10]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXN 64

static const char CONFIG[] =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":4096,"
    "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
    "\"head_dim\":128,\"intermediate_size\":14336,\"max_position_embeddings\":131072,"
    "\"vocab_size\":128256,\"torch_dtype\":\"bfloat16\"}";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        perror(path);
        exit(2);
    }
}

static pid_t start_sim(const char *model, int port)
{
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        execl(SW_BUILD_DIR "/slipway", "slipway", "sim", "--engine", "vllm", "--device-memory",
              "24GiB", "--weights", "16GiB", "--load-time", "0s", "--", "vllm", "serve", model,
              "--host", "127.0.0.1", "--port", p, "--max-model-len", "4096", "--max-num-seqs", "2",
              "--served-model-name", "b", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* utime+stime+cutime+cstime of pid, seconds. */
static double cpu_of(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long v[17] = {0};
    /* fields after ")": state(3) ... utime(14) stime(15) cutime(16) cstime(17) */
    char st;
    if (sscanf(p + 2, "%c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
               &st, &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13],
               &v[14], &v[15], &v[16], &v[0]) < 14)
        return -1;
    return (double)(v[13] + v[14] + v[15] + v[16]) / (double)sysconf(_SC_CLK_TCK);
}

static long status_kib(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, key, strlen(key)))
            v = atol(line + strlen(key));
    if (f)
        fclose(f);
    return v;
}

int main(int argc, char **argv)
{
    int secs = argc > 1 ? atoi(argv[1]) : 60;
    int n = argc > 2 ? atoi(argv[2]) : 10;
    int interval = argc > 3 ? atoi(argv[3]) : 10;
    if (secs < 5 || n < 1 || n > MAXN || interval < 1) {
        fprintf(stderr, "usage: bench_watch [seconds >= 5] [endpoints 1..%d] [interval s]\n", MAXN);
        return 2;
    }
    char dir[] = "/tmp/bench_watch.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    char model[512], fleet[512], ledger[512], path[600];
    snprintf(model, sizeof(model), "%s/model", dir);
    mkdir(model, 0755);
    snprintf(path, sizeof(path), "%s/config.json", model);
    write_file(path, CONFIG);
    pid_t sims[MAXN];
    int ports[MAXN];
    static char text[1 << 16];
    int w = snprintf(text, sizeof(text),
                     "version: 1\nhosts:\n  here:\n    transport: local\n    devices:\n"
                     "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}\nendpoints:\n");
    for (int i = 0; i < n; i++) {
        ports[i] = 20000 + (int)(getpid() % 20000) + i;
        sims[i] = start_sim(model, ports[i]);
        w += snprintf(text + w, sizeof(text) - (size_t)w,
                      "  e%d:\n    host: here\n    devices: [g0]\n    engine: vllm\n"
                      "    binary: /opt/vllm/bin/vllm\n    runtime: native\n"
                      "    listen: 127.0.0.1:%d\n    alias: b\n    payload: {path: %s}\n"
                      "    shape: {max_model_len: 4096, seqs: 2}\n"
                      "    watch: {interval: %ds, act: false}\n",
                      i, ports[i], model, interval);
    }
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    snprintf(ledger, sizeof(ledger), "%s/ledger.sqlite", dir);
    write_file(fleet, text);
    sleep(2); /* the sims bind */
    pid_t wp = fork();
    if (wp == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        execl(SW_BUILD_DIR "/slipway", "slipway", "watch", "--fleet", fleet, "--ledger", ledger,
              "--json", (char *)NULL);
        _exit(127);
    }
    /* the first looks (start-up, the first status of every endpoint) are part of the bill */
    struct timespec t0, t1, tw;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* the steady state: from the end of the first round of looks (start-up, the first status of
     * every endpoint with its device tool, the ledger's first rows) to the end */
    unsigned warm = (unsigned)(interval + 2 < secs / 2 ? interval + 2 : secs / 2);
    sleep(warm);
    double cpu_w = cpu_of(wp);
    clock_gettime(CLOCK_MONOTONIC, &tw);
    sleep((unsigned)secs - warm);
    double cpu = cpu_of(wp);
    long rss = status_kib(wp, "VmRSS:"), hwm = status_kib(wp, "VmHWM:");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    kill(wp, SIGTERM);
    waitpid(wp, NULL, 0);
    for (int i = 0; i < n; i++) {
        kill(sims[i], SIGTERM);
        waitpid(sims[i], NULL, 0);
    }
    char cmd[700];
    snprintf(cmd, sizeof(cmd),
             "sqlite3 %s \"SELECT state, count(*) FROM watch_events WHERE "
             "kind='observation' GROUP BY state\" 2>/dev/null",
             ledger);
    double steady = (double)(t1.tv_sec - tw.tv_sec) + (double)(t1.tv_nsec - tw.tv_nsec) / 1e9;
    printf("bench_watch: %d endpoints, interval %d s, %.1f s: watch CPU %.3f s = %.2f %% of a "
           "core overall; after the first %u s (start-up and first looks): %.3f s in %.1f s = "
           "%.2f %% of a core (target < 1 %%); RSS %.1f MiB, peak %.1f MiB (target < 30 MiB)\n",
           n, interval, wall, cpu, 100.0 * cpu / wall, warm, cpu - cpu_w, steady,
           100.0 * (cpu - cpu_w) / steady, rss / 1024.0, hwm / 1024.0);
    printf("observations by state:\n");
    fflush(stdout);
    if (system(cmd) != 0)
        printf("(sqlite3 not available)\n");
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return 0;
}
