/*
 * bench_verify: how fast does `slipway fetch --verify-only` re-hash a payload?
 *
 * Writes N files of S bytes (default 8 x 256 MiB, pseudo-random) into a temporary directory, then
 * on the same files, in one run, times:
 *   1. sha256sum (the real coreutils program, all files on one command line),
 *   2. single-threaded OpenSSL EVP SHA-256 (sw_payload_sha256_file, one file after another),
 *   3. slipway's parallel hashing (sw_payload_hash_files: one worker per core, one file each).
 * Each is run R times (default 3), best time kept; the first pass of each also checks the three
 * agree on every hash. The files stay in the page cache (they were just written), so this
 * measures hashing, not the disk; --drop is not attempted (it needs root).
 *
 *     build/bench/bench_verify [--files N] [--size 256MiB] [--repeats R] [--threads T]
 *                              [--buf 1MiB] [--dir DIR] [--keep] [--json] [--svg FILE]
 *
 * Target (issue 7): parallel >= 0.9 x min(cores, files) x single-threaded.
 */
#include <slipway/payload.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXF 256

/* CPU seconds (user + system) of this process, or of its waited-for children. */
static double cpu_s(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int write_file(const char *path, uint64_t size, uint64_t seed)
{
    size_t bufn = 1u << 20;
    uint64_t *buf = malloc(bufn);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!buf || fd < 0) {
        free(buf);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    uint64_t left = size;
    while (left) {
        for (size_t i = 0; i < bufn / 8; i++) { /* xorshift64 */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = x;
        }
        size_t n = left < bufn ? (size_t)left : bufn;
        if (write(fd, buf, n) != (ssize_t)n) {
            close(fd);
            free(buf);
            return -1;
        }
        left -= n;
    }
    free(buf);
    return close(fd);
}

/* Run sha256sum on the files; parse its output into hex[i]. Returns seconds or < 0. */
static double run_sha256sum(char **paths, size_t n, char (*hex)[65])
{
    int pfd[2];
    if (pipe(pfd) < 0)
        return -1;
    const char **argv = calloc(n + 2, sizeof(*argv));
    argv[0] = "sha256sum";
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = paths[i];
    double t0 = sw_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execvp("sha256sum", (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    char out[MAXF * 300];
    size_t got = 0;
    ssize_t r;
    while ((r = read(pfd[0], out + got, sizeof(out) - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(pfd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    double dt = sw_now_s() - t0;
    free(argv);
    if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    char *line = out;
    for (size_t i = 0; i < n; i++) {
        if (strlen(line) < 64)
            return -1;
        memcpy(hex[i], line, 64);
        hex[i][64] = '\0';
        char *nl = strchr(line, '\n');
        if (!nl)
            return -1;
        line = nl + 1;
    }
    return dt;
}

int main(int argc, char **argv)
{
    sw_core_init();
    uint64_t nfiles = 8, size = 256ull << 20, repeats = 3, threads = 0, buf = 0;
    const char *dir_arg = NULL, *svg = NULL;
    bool keep = false, json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--files") && v)
            bad = sw_parse_u64(v, &nfiles, NULL), i++;
        else if (!strcmp(a, "--size") && v)
            bad = sw_parse_bytes(v, &size, NULL), i++;
        else if (!strcmp(a, "--repeats") && v)
            bad = sw_parse_u64(v, &repeats, NULL), i++;
        else if (!strcmp(a, "--threads") && v)
            bad = sw_parse_u64(v, &threads, NULL), i++;
        else if (!strcmp(a, "--buf") && v)
            bad = sw_parse_bytes(v, &buf, NULL), i++;
        else if (!strcmp(a, "--dir") && v)
            dir_arg = v, i++;
        else if (!strcmp(a, "--svg") && v)
            svg = v, i++;
        else if (!strcmp(a, "--keep"))
            keep = true;
        else if (!strcmp(a, "--json"))
            json = true;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "usage: bench_verify [--files N] [--size 256MiB] [--repeats R] "
                            "[--threads T] [--buf 1MiB] [--dir DIR] [--keep] [--json] "
                            "[--svg FILE]\n");
            return 2;
        }
    }
    if (nfiles < 1 || nfiles > MAXF || repeats < 1 || size < 1) {
        fprintf(stderr, "bench_verify: 1..%d files, size >= 1, repeats >= 1\n", MAXF);
        return 2;
    }
    char dir[4096];
    if (dir_arg) {
        snprintf(dir, sizeof(dir), "%s", dir_arg);
        mkdir(dir, 0755);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/bench_verify.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
    }
    char **paths = calloc(nfiles, sizeof(*paths));
    const char **rel = calloc(nfiles, sizeof(*rel));
    char(*h_sum)[65] = calloc(nfiles, 65), (*h_one)[65] = calloc(nfiles, 65),
    (*h_par)[65] = calloc(nfiles, 65);
    char sz[32];
    fprintf(stderr, "writing %llu files of %s into %s ...\n", (unsigned long long)nfiles,
            sw_fmt_bytes(size, sz, sizeof(sz)), dir);
    for (uint64_t i = 0; i < nfiles; i++) {
        char name[64];
        snprintf(name, sizeof(name), "model-%05llu-of-%05llu.safetensors",
                 (unsigned long long)i + 1, (unsigned long long)nfiles);
        rel[i] = strdup(name);
        size_t pl = strlen(dir) + strlen(name) + 2;
        paths[i] = malloc(pl);
        snprintf(paths[i], pl, "%s/%s", dir, name);
        struct stat st;
        if (stat(paths[i], &st) == 0 && (uint64_t)st.st_size == size && dir_arg)
            continue; /* reuse a kept set */
        if (write_file(paths[i], size, i + 1)) {
            fprintf(stderr, "cannot write %s: %s\n", paths[i], strerror(errno));
            return 1;
        }
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double total_mb = (double)size * (double)nfiles / 1e6;
    double best_sum = 1e30, best_one = 1e30, best_par = 1e30;
    /* CPU used per wall second during each best run: how many cores the method really got (a
     * busy machine shows here, not as a slower algorithm) */
    double cpu_sum = 0, cpu_one = 0, cpu_par = 0;
    unsigned used = 0;
    struct sw_verify_opts o = {.threads = (unsigned)threads, .buf_size = (size_t)buf};
    int mismatch = 0;
    for (uint64_t r = 0; r < repeats; r++) {
        double c0 = cpu_s(RUSAGE_CHILDREN);
        double t = run_sha256sum(paths, nfiles, h_sum);
        if (t < 0) {
            fprintf(stderr, "sha256sum failed\n");
            return 1;
        }
        if (t < best_sum) {
            best_sum = t;
            cpu_sum = (cpu_s(RUSAGE_CHILDREN) - c0) / t;
        }

        c0 = cpu_s(RUSAGE_SELF);
        double t0 = sw_now_s();
        for (uint64_t i = 0; i < nfiles; i++) {
            struct sw_err e;
            if (sw_payload_sha256_file(paths[i], (size_t)buf, h_one[i], NULL, &e)) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
        }
        t = sw_now_s() - t0;
        if (t < best_one) {
            best_one = t;
            cpu_one = (cpu_s(RUSAGE_SELF) - c0) / t;
        }

        c0 = cpu_s(RUSAGE_SELF);
        t0 = sw_now_s();
        struct sw_err e;
        if (sw_payload_hash_files(dir, rel, nfiles, &o, h_par, NULL, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        t = sw_now_s() - t0;
        if (t < best_par) {
            best_par = t;
            cpu_par = (cpu_s(RUSAGE_SELF) - c0) / t;
        }
        for (uint64_t i = 0; i < nfiles; i++)
            if (strcmp(h_sum[i], h_one[i]) || strcmp(h_sum[i], h_par[i]))
                mismatch++;
    }
    used = threads ? (unsigned)threads : (unsigned)cores;
    if (used > nfiles)
        used = (unsigned)nfiles;
    double r_sum = total_mb / best_sum, r_one = total_mb / best_one, r_par = total_mb / best_par;
    double want = 0.9 * (double)used * r_one;
    double load[3] = {0, 0, 0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = -1;
        fclose(la);
    }
    if (json) {
        printf("{\"files\":%llu,\"bytes_per_file\":%llu,\"repeats\":%llu,\"cores\":%ld,"
               "\"workers\":%u,\"sha256sum_mbps\":%.1f,\"openssl_single_mbps\":%.1f,"
               "\"parallel_mbps\":%.1f,\"ratio_vs_single\":%.3f,\"ratio_vs_sha256sum\":%.3f,"
               "\"target_mbps\":%.1f,\"target_met\":%s,\"hashes_agree\":%s,\"loadavg\":%.2f,"
               "\"cores_used\":{\"sha256sum\":%.2f,\"single\":%.2f,\"parallel\":%.2f}}\n",
               (unsigned long long)nfiles, (unsigned long long)size, (unsigned long long)repeats,
               cores, used, r_sum, r_one, r_par, r_par / r_one, r_par / r_sum, want,
               r_par >= want ? "true" : "false", mismatch ? "false" : "true", load[0], cpu_sum,
               cpu_one, cpu_par);
    } else {
        printf("files: %llu x %s (%.0f MB), best of %llu, %ld cores online, %u workers, "
               "load %.2f\n",
               (unsigned long long)nfiles, sw_fmt_bytes(size, sz, sizeof(sz)), total_mb,
               (unsigned long long)repeats, cores, used, load[0]);
        printf("  sha256sum (coreutils)       %8.1f MB/s  (%.2f s, %.2f cores busy)\n", r_sum,
               best_sum, cpu_sum);
        printf("  OpenSSL, single thread      %8.1f MB/s  (%.2f s, %.2f cores busy)\n", r_one,
               best_one, cpu_one);
        printf("  slipway parallel verify     %8.1f MB/s  (%.2f s, %.2f cores busy)\n", r_par,
               best_par, cpu_par);
        printf("  ratio parallel/single %.2f, parallel/sha256sum %.2f\n", r_par / r_one,
               r_par / r_sum);
        /* per CPU-second: equal figures mean the parallel path costs nothing extra, so its
         * wall rate scales with the cores the machine actually gives it */
        if (cpu_one > 0 && cpu_par > 0)
            printf("  per busy core: single %.1f MB/s, parallel %.1f MB/s (efficiency %.2f)\n",
                   r_one / cpu_one, r_par / cpu_par, (r_par / cpu_par) / (r_one / cpu_one));
        printf("  target 0.9 x min(cores, files) x single = %.1f MB/s: %s\n", want,
               r_par >= want ? "met" : "NOT met");
        printf("  hashes agree across the three: %s\n", mismatch ? "NO" : "yes");
    }
    int status = 0;
    if (svg) {
        /* the three rates side by side, the target beside the parallel one */
        static const char *const cats[] = {"sha256sum\n(coreutils)", "OpenSSL EVP\none thread",
                                           "slipway verify\nparallel"};
        const double rate[] = {r_sum, r_one, r_par}, tgt[] = {NAN, NAN, want};
        char title[160], note[200];
        snprintf(title, sizeof(title), "verify throughput: %llu files x %s",
                 (unsigned long long)nfiles, sw_fmt_bytes(size, sz, sizeof(sz)));
        snprintf(note, sizeof(note),
                 "best of %llu, %ld cores, %u workers, load %.2f; target 0.9 x min(cores, "
                 "files) x single",
                 (unsigned long long)repeats, cores, used, load[0]);
        struct sw_chart_series se[] = {{.name = "MB/s", .n = 3, .y = rate},
                                       {.name = "target", .n = 3, .y = tgt}};
        struct sw_chart ch = {.kind = SW_CHART_BARS,
                              .title = title,
                              .note = note,
                              .x_label = "",
                              .y_label = "MB/s",
                              .categories = cats,
                              .n_categories = 3,
                              .series = se,
                              .n_series = 2,
                              .y_from_zero = true};
        struct sw_err e;
        if (sw_chart_write_svg(&ch, 1, svg, &e)) {
            char m[1200];
            fprintf(stderr, "bench_verify: --svg: %s\n", sw_err_format(&e, m, sizeof(m)));
            status = 1;
        }
    }
    if (!keep) {
        for (uint64_t i = 0; i < nfiles; i++)
            unlink(paths[i]);
        if (!dir_arg)
            rmdir(dir);
    }
    for (uint64_t i = 0; i < nfiles; i++) {
        free(paths[i]);
        free((void *)rel[i]);
    }
    free(paths);
    free(rel);
    free(h_sum);
    free(h_one);
    free(h_par);
    return mismatch ? 1 : status;
}
