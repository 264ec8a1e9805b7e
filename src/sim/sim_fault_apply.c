/*
 * sim fault apply: what a fault (sim_fault.c reads its two spellings) does to the running sim:
 * the flags the scheduler and the routes obey, the counts of requests it takes, the engine's end
 * for exit0; and the requests a hang holds, answered when it clears and forgotten when their
 * clients go.
 *
 * What it does not do: read a fault (sim_fault.c), or the deaths' lines (sim_death.c).
 */
#include "sim_internal.h"

/* A held request's client went away: forget it (and free it when libevent left it to us, as
 * on_client_gone does). */
static void on_hung_gone(struct evhttp_connection *c, void *arg)
{
    struct sw_sim *s = arg;
    for (size_t i = 0; i < s->n_hung; i++) {
        if (s->hung_conn[i] != c)
            continue;
        if (!evhttp_request_get_connection(s->hung[i]))
            evhttp_request_free(s->hung[i]);
        s->hung[i] = s->hung[--s->n_hung];
        s->hung_conn[i] = s->hung_conn[s->n_hung];
        i--;
    }
}

void sw__sim_hold(struct sw_sim *s, struct evhttp_request *req)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    if (s->n_hung == s->cap_hung) {
        size_t cap = s->cap_hung ? s->cap_hung * 2 : 64;
        struct evhttp_request **g = sw_realloc(s->hung, cap * sizeof(*g));
        if (g)
            s->hung = g;
        struct evhttp_connection **gc = g ? sw_realloc(s->hung_conn, cap * sizeof(*gc)) : NULL;
        if (gc)
            s->hung_conn = gc;
        if (!g || !gc) {
            evhttp_send_error(req, 500, "out of memory");
            return;
        }
        s->cap_hung = cap;
    }
    s->hung_conn[s->n_hung] = conn;
    s->hung[s->n_hung++] = req;
    if (conn)
        evhttp_connection_set_closecb(conn, on_hung_gone, s);
}

void sw__sim_fault_apply(struct sw_sim *s, const struct sw_sim_fault *f)
{
    struct sw_buf b;
    switch (f->kind) {
    case SW_SIM_FAULT_NONE:
        s->fault_dead = s->fault_hang = s->fault_oom_next = false;
        s->fault_500_left = s->fault_reset_left = s->fault_crash_left = 0;
        s->fault_jitter_us = s->fault_stall_us = 0;
        break;
    case SW_SIM_FAULT_DEAD_GENERATION:
        s->fault_dead = true;
        break;
    case SW_SIM_FAULT_HANG:
        s->fault_hang = true;
        break;
    case SW_SIM_FAULT_OOM_NEXT_REQUEST:
        s->fault_oom_next = true;
        break;
    case SW_SIM_FAULT_HTTP_500:
        s->fault_500_left = f->count;
        break;
    case SW_SIM_FAULT_JITTER:
        s->fault_jitter_us = (double)f->ms * 1000.0;
        s->jitter_rng = s->cfg.seed;
        break;
    case SW_SIM_FAULT_STALL:
        s->fault_stall_us += (double)f->ms * 1000.0;
        break;
    case SW_SIM_FAULT_RESET:
        s->fault_reset_left = f->count;
        s->fault_reset_after = f->after;
        break;
    case SW_SIM_FAULT_CRASH:
        s->fault_crash_left = f->count;
        break;
    case SW_SIM_FAULT_EXIT0:
        /* vLLM's API server after its engine died: the engine's last lines, exit 0 */
        sw_buf_init(&b, 4096);
        if (s->engine == SW__SIM_VLLM)
            sw__sim_vllm_dead_tail(&b);
        else if (s->engine == SW__SIM_SGLANG)
            sw_buf_puts(&b, "INFO:     Shutting down\n");
        else
            sw_buf_puts(&b, "I srv    operator(): operator(): cleaning up before exit...\n");
        sw__sim_log_lines(s, &b);
        sw_buf_free(&b);
        sw__sim_die(s, 0);
        return;
    }
    if (!s->fault_hang) { /* a hang cleared: what it held is answered; steps resume */
        size_t n_held = s->n_hung;
        s->n_hung = 0;
        for (size_t i = 0; i < n_held; i++) {
            if (s->hung_conn[i])
                evhttp_connection_set_closecb(s->hung_conn[i], NULL, NULL);
            sw__sim_on_request(s->hung[i], s);
        }
    }
    sw__sim_admit(s);
    sw__sim_schedule_step(s);
}
