/*
 * sim death: how the engine dies, its last lines and exit status: a request past the declared
 * runtime headroom (or the oom_next_request fault) dies the runtime-OOM way (llama-server: HTTP
 * 500 std::bad_alloc and its GGML_ASSERT abort, 134; vLLM: torch.OutOfMemoryError in the engine
 * core, EngineDeadError, HTTP 500, the API server exits 0; SGLang: the scheduler's exception and
 * the launcher's SIGKILL of its tree, 137); the crash fault; vLLM's API server's tail.
 *
 * What it does not do: decide when (the scheduler, the request reader, the faults).
 */
#include "sim_internal.h"

#include <inttypes.h>
#include <stdio.h>

/* vLLM's API server after its engine core died: its last lines (after the cause's). */
void sw__sim_vllm_dead_tail(struct sw_buf *b)
{
    sw_buf_puts(b, "(APIServer pid=1) ERROR [async_llm.py:480] EngineCore encountered a "
                   "fatal error.\n");
    sw_buf_puts(b, "(APIServer pid=1) ERROR EngineDeadError: EngineCore encountered an issue. "
                   "See stack trace (above) for the root cause.\n");
    sw_buf_puts(b, "(APIServer pid=1) INFO Shutting down FastAPI HTTP server.\n");
}

/* The engine is gone: what is in flight is cut, and the process ends with the engine's status
 * once the replies already written are flushed. */
void sw__sim_die(struct sw_sim *s, int status)
{
    s->state = SW__SIM_FAILED;
    s->exit_status = status;
    sw__sim_drop_all(s);
    struct timeval flush = {0, 200000};
    event_base_loopexit(s->base, &flush);
}

/* SGLang's scheduler died of `cause`: its traceback's last line, then the launcher's SIGQUIT
 * handler kills the whole process tree: what is in flight gets no reply (status 137). */
static void sglang_child_died(struct sw_sim *s, const char *cause)
{
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    sw__sim_sglang_death(&b, cause);
    sw__sim_log_lines(s, &b);
    sw_buf_free(&b);
    sw__sim_die(s, SW__SIM_SGLANG_DIED);
}

/* The crash fault: llama-server aborts on a failed assertion (exit 134, what abort() gives);
 * vLLM's engine core dies on a device error and its API server exits 0. */
void sw__sim_crash(struct sw_sim *s)
{
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    s->crash_pending = false;
    if (s->engine == SW__SIM_LLAMACPP) {
        FILE *f = s->cfg.log ? s->cfg.log : stderr;
        fprintf(f, "ggml/src/ggml.c:0: GGML_ABORT(sim fault: crash) failed\n");
        fflush(f);
        sw__sim_die(s, 134);
    } else if (s->engine == SW__SIM_SGLANG) {
        sglang_child_died(s, "RuntimeError: CUDA error: an illegal memory access was encountered "
                             "(sim fault: crash)");
    } else {
        sw_buf_puts(&b, "(EngineCore_DP0 pid=2) ERROR RuntimeError: CUDA error: an illegal "
                        "memory access was encountered (sim fault: crash)\n");
        sw__sim_vllm_dead_tail(&b);
        sw__sim_log_lines(s, &b);
        sw__sim_die(s, 0);
    }
    sw_buf_free(&b);
}

/* The engine dies on this request: its lines, its 500, then the process ends (after the reply
 * is flushed) with the engine's status. */
void sw__sim_runtime_oom(struct sw_sim *s, struct evhttp_request *req)
{
    struct sw_buf b;
    uint64_t task = ++s->next_id;
    if (s->engine == SW__SIM_SGLANG) {
        char cause[256] =
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB.";
        if (s->cfg.device_memory)
            snprintf(cause, sizeof(cause),
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU "
                     "0 has a total capacity of %.2f GiB of which 0 bytes is free.",
                     (double)s->cfg.device_memory / SW_GIB);
        (void)req; /* the process tree is killed: no reply */
        sglang_child_died(s, cause);
        return;
    }
    sw_buf_init(&b, 8192);
    if (s->engine == SW__SIM_LLAMACPP) {
        /* tests/data/bootlogs/llamacpp/oom_runtime.log */
        sw_buf_printf(
            &b, "E slot      iterate: id  0 | task %" PRIu64 " | got exception: std::bad_alloc\n",
            task);
        sw_buf_printf(&b,
                      "E srv    send_error: task id = %" PRIu64 ", error: got exception: "
                      "std::bad_alloc\n",
                      task);
        sw__sim_reply_json(req, 500, "Internal Server Error",
                           json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 500, "message",
                                     "got exception: std::bad_alloc", "type", "server_error"));
        sw__sim_log_lines(s, &b);
        /* the assertion has no log prefix */
        FILE *f = s->cfg.log ? s->cfg.log : stderr;
        fprintf(f, "tools/server/server-context.cpp:2830: GGML_ASSERT(batch.slot_batched || "
                   "batch.size() == 0) failed\n");
        fflush(f);
    } else {
        char gib[128] = "";
        if (s->cfg.device_memory)
            snprintf(gib, sizeof(gib),
                     " GPU 0 has a total capacity of %.2f GiB of which 0 bytes "
                     "is free.",
                     (double)s->cfg.device_memory / SW_GIB);
        sw_buf_printf(&b,
                      "(EngineCore_DP0 pid=2) ERROR torch.OutOfMemoryError: CUDA out of memory. "
                      "Tried to allocate 50.00 MiB.%s\n",
                      gib);
        sw__sim_vllm_dead_tail(&b);
        sw__sim_reply_json(
            req, 500, "Internal Server Error",
            json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message",
                      "EngineCore encountered an issue. See stack trace (above) for the "
                      "root cause.",
                      "type", "InternalServerError", "param", "code", 500));
        sw__sim_log_lines(s, &b);
    }
    sw_buf_free(&b);
    /* llama-server's abort(); vLLM's API server exits 0 after its engine died */
    sw__sim_die(s, s->engine == SW__SIM_LLAMACPP ? 134 : 0);
}
