/*
 * sim scheduler: n_slots sequences run at once; a request past them waits in a FIFO admission
 * queue. The running set advances in steps with a token budget (chunked prefill: decodes first,
 * then the prompts' chunks); a step's duration is the timing model's for that batch (sim.h),
 * chained on the engine's clock, and its effects land when the step's timer fires. vLLM's pool
 * (kv_pool tokens, in blocks) gates admission and preempts (recompute) the latest admitted
 * sequence when the running ones' next tokens do not fit; llama.cpp's --kv-unified slots share
 * the n_ctx cells. In firehose mode steps take no time and a turn of the loop runs several.
 *
 * What it does not do: read requests (sim_request.c), format what is sent (sim_reply.c), or the
 * engine's deaths (sim_death.c).
 */
#include "sim_internal.h"

#include <inttypes.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <string.h>
#include <sys/socket.h>

/* ---------------------------------------------------------------------------------------------
 * Requests and the scheduler.
 */
static void req_free(struct sw__sim_req *r)
{
    if (!r)
        return;
    sw_buf_free(&r->text);
    sw_buf_free(&r->reason);
    sw_buf_free(&r->tool_args);
    sw_free(r->tool_name);
    sw_free(r);
}

static void on_client_gone(struct evhttp_connection *c, void *arg)
{
    struct sw__sim_req *r = arg;
    (void)c;
    /* libevent detaches a request whose reply is not done when its connection fails, and leaves
     * it to its user (http.c evhttp_connection_incoming_fail): free it here. One still attached
     * goes with its connection. */
    if (r->http && !evhttp_request_get_connection(r->http))
        evhttp_request_free(r->http);
    r->http = NULL; /* cancelled at the next step */
}

void sw__sim_detach(struct sw__sim_req *r)
{
    if (r->http) {
        struct evhttp_connection *c = evhttp_request_get_connection(r->http);
        if (c)
            evhttp_connection_set_closecb(c, NULL, NULL);
    }
}

int sw__sim_n_running(const struct sw_sim *s)
{
    int n = 0;
    for (int i = 0; i < s->n_slots; i++)
        n += s->slots[i] != NULL;
    return n;
}

int sw__sim_n_queued(const struct sw_sim *s)
{
    int n = 0;
    for (const struct sw__sim_req *r = s->queue_head; r; r = r->next)
        n++;
    return n;
}

/* KV a sequence holds: its tokens, in whole blocks for vLLM (block_size tokens each; a block is
 * allocated whole). */
static int64_t seq_kv(const struct sw_sim *s, int64_t tokens)
{
    int64_t bs = s->block_size > 0 ? s->block_size : 1;
    return (tokens + bs - 1) / bs * bs;
}

/* KV the running sequences hold, of the shared pool (vLLM's blocks; llama.cpp's cells with
 * --kv-unified, each admitted sequence reserving its prompt and max_tokens). */
int64_t sw__sim_kv_held(const struct sw_sim *s)
{
    int64_t n = 0;
    for (int i = 0; i < s->n_slots; i++) {
        const struct sw__sim_req *r = s->slots[i];
        if (!r)
            continue;
        n += s->engine != SW__SIM_LLAMACPP ? seq_kv(s, r->n_prompt + r->n_gen)
                                           : r->n_prompt + r->max_tokens;
    }
    return n;
}

/* The KV a queued request needs to be admitted. */
static int64_t kv_need(const struct sw_sim *s, const struct sw__sim_req *r)
{
    return s->engine != SW__SIM_LLAMACPP ? seq_kv(s, r->n_prompt + r->n_gen + 1)
                                         : r->n_prompt + r->max_tokens;
}

/* Queued requests into free slots, in arrival order. vLLM admits a request only when its
 * prompt (and what it already generated, after a preemption) fits what the pool has left. */
void sw__sim_admit(struct sw_sim *s)
{
    for (int i = 0; i < s->n_slots && s->queue_head; i++) {
        if (s->slots[i])
            continue;
        struct sw__sim_req *r = s->queue_head;
        if (s->kv_pool > 0 && sw__sim_kv_held(s) + kv_need(s, r) > s->kv_pool &&
            sw__sim_n_running(s) > 0)
            break; /* FIFO: the head waits for blocks (cells) */
        s->queue_head = r->next;
        if (!s->queue_head)
            s->queue_tail = NULL;
        r->next = NULL;
        r->slot = i;
        r->in_step = false; /* it joins the next step, not the one running */
        r->prefill_done = 0;
        if (!r->started) {
            r->t_start_ns = sw_now_ns();
            r->started = true;
            if (r->stream && r->http)
                sw__sim_start_stream(s, r);
        }
        s->slots[i] = r;
    }
}

/* vLLM's recompute preemption (SGLang's retraction of a decode request is the same move): when
 * the next step's tokens do not fit the pool, the most recently admitted sequence gives its
 * blocks back and waits at the head of the queue; on its return it prefills its prompt and what
 * it had generated again. */
static void preempt(struct sw_sim *s)
{
    if (s->engine == SW__SIM_LLAMACPP || s->kv_pool <= 0)
        return;
    for (;;) {
        /* the blocks the running sequences hold once each has its next token */
        int64_t next = 0;
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i])
                next += seq_kv(s, s->slots[i]->n_prompt + s->slots[i]->n_gen + 1);
        if (sw__sim_n_running(s) <= 1 || next <= s->kv_pool)
            break;
        int victim = -1;
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i] &&
                (victim < 0 || s->slots[i]->t_start_ns >= s->slots[victim]->t_start_ns))
                victim = i;
        struct sw__sim_req *r = s->slots[victim];
        s->slots[victim] = NULL;
        r->prefilled = false;
        r->prefill_done = 0;
        r->slot = -1;
        r->next = s->queue_head;
        s->queue_head = r;
        if (!s->queue_tail)
            s->queue_tail = r;
        s->m_preemptions++;
    }
}

/* A tool call, one token per step: the first names the function, each next one carries up to 4
 * bytes of its arguments (as llama-server and vLLM stream a call's deltas). True when done. */
static bool tool_step(struct sw_sim *s, struct sw__sim_req *r)
{
    char piece[8] = "";
    bool first = r->n_gen == 0;
    if (!first) {
        size_t n = r->tool_args.len - r->tool_off;
        n = n > 4 ? 4 : n;
        memcpy(piece, r->tool_args.data + r->tool_off, n);
        piece[n] = '\0';
        r->tool_off += n;
    }
    r->n_gen++;
    if (r->stream && r->http)
        sw__sim_stream_tool_call(s, r, first, piece);
    return (!first && r->tool_off >= r->tool_args.len) || r->n_gen >= r->max_tokens;
}

/* A reset fault's request has generated its tokens. */
static bool reset_due(const struct sw__sim_req *r)
{
    return r->reset_at > 0 && r->n_gen >= r->reset_at;
}

/* Reset the connection of slot i's request (an RST, not a FIN), after what was generated so far
 * reached the socket: the client reads those tokens, then "connection reset by peer". The slot
 * is freed. */
static void reset_slot(struct sw_sim *s, int i)
{
    struct sw__sim_req *r = s->slots[i];
    struct evhttp_connection *c = r->http ? evhttp_request_get_connection(r->http) : NULL;
    sw__sim_detach(r);
    r->http = NULL; /* freed with its connection */
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        /* the bufferevent keeps its output's front frozen (only it drains it): thawed for
         * this one write */
        struct evbuffer *out = bufferevent_get_output(bev);
        evbuffer_unfreeze(out, 1);
        evbuffer_write(out, fd);
        evbuffer_freeze(out, 1);
        /* Linux aborts a connected TCP socket dissolved with AF_UNSPEC: it sends the RST that
         * close() with a zero linger would, and leaves the descriptor to its owner */
        struct sockaddr sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_family = AF_UNSPEC;
        (void)connect(fd, &sa, sizeof(sa));
    }
    if (c)
        evhttp_connection_free(c);
    s->slots[i] = NULL;
    req_free(r);
}

/* Speculative decoding (cfg.spec_accept): one draft of n_spec tokens for r's decode step; how
 * many of them are kept, drawn from the seed (P(kept > k) = spec_accept[k]). Counted as the
 * engine counts: drafts, draft tokens, kept tokens, per position. */
static int spec_kept(struct sw_sim *s, struct sw__sim_req *r)
{
    if (s->cfg.n_spec < 1)
        return 0;
    double u = (double)(sw__sim_rng_next(&s->spec_rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    int a = 0;
    while (a < s->cfg.n_spec && u < s->cfg.spec_accept[a])
        a++;
    s->m_spec_drafts++;
    s->m_spec_draft_tokens += (uint64_t)s->cfg.n_spec;
    s->m_spec_accepted += (uint64_t)a;
    for (int k = 0; k < a; k++)
        s->m_spec_pos[k]++;
    r->draft_n += s->cfg.n_spec;
    r->draft_accepted += a;
    return a;
}

/* The step that just ended: its effects. */
static void step_end(struct sw_sim *s)
{
    char tok[64];
    s->stepping = false;
    s->m_decode_calls++;
    uint64_t now = sw_now_ns();
    s->step_chained = true; /* a step started from here follows this one at once */
    for (int i = 0; i < s->n_slots; i++) {
        struct sw__sim_req *r = s->slots[i];
        if (!r)
            continue;
        if (!r->http) { /* the client went away: the engine cancels its task */
            struct sw_buf lb;
            sw_buf_init(&lb, 256);
            s->m_cancelled++;
            if (s->engine == SW__SIM_LLAMACPP)
                sw_buf_printf(&lb, "I srv  cancel_tasks: cancel task, id_task = %" PRIu64 "\n",
                              r->id);
            else
                sw_buf_printf(&lb, "INFO: Aborted request cmpl-%" PRIu64 ".\n", r->id);
            sw__sim_log_lines(s, &lb);
            sw_buf_free(&lb);
            s->slots[i] = NULL;
            req_free(r);
            continue;
        }
        if (!r->in_step) /* not in the step that ended */
            continue;
        r->in_step = false;
        if (!r->prefilled) {
            /* a chunk of its prompt; the first token comes with the last chunk */
            r->prefill_done += r->step_chunk;
            r->step_chunk = 0;
            if (r->prefill_done < r->n_prompt + r->n_gen)
                continue;
            r->prefilled = true;
            if (!r->t_first_ns) {
                r->t_first_ns = now;
                r->prompt_ms = sw__sim_ms_between(r->t_start_ns, now);
            }
        }
        if (r->tool_name) {
            bool done = tool_step(s, r);
            if (reset_due(r)) {
                reset_slot(s, i);
            } else if (done) {
                sw__sim_finish(s, r,
                               r->tool_off < r->tool_args.len || !r->tool_args.len ? "length"
                                                                                   : "tool_calls");
                s->slots[i] = NULL;
                req_free(r);
            }
            continue;
        }
        /* reasoning: the first half of the tokens, in the engine's reasoning_content */
        bool reasoning = r->reasoning && r->n_gen < r->max_tokens / 2;
        /* with speculative decoding a decode step keeps its accepted drafts too: one chunk */
        int want = r->n_gen > 0 ? 1 + spec_kept(s, r) : 1;
        char step_txt[64 * (SW_SIM_SPEC_MAX + 1)];
        size_t used = 0;
        for (int k = 0; k < want && r->n_gen < r->max_tokens; k++) {
            if (k && (r->reasoning && r->n_gen < r->max_tokens / 2) != reasoning)
                break; /* a part's end ends the chunk */
            sw__sim_token_text(r, r->n_gen, tok, sizeof(tok));
            r->n_gen++;
            /* each part (reasoning, content) starts without the separating space */
            bool *begun = reasoning ? &r->reason_begun : &r->content_begun;
            const char *t = !*begun && tok[0] == ' ' ? tok + 1 : tok;
            *begun = true;
            int w = snprintf(step_txt + used, sizeof(step_txt) - used, "%s", t);
            if (w > 0 && (size_t)w < sizeof(step_txt) - used)
                used += (size_t)w;
        }
        if (r->stream)
            sw__sim_stream_token(s, r, step_txt, reasoning);
        else
            sw_buf_puts(reasoning ? &r->reason : &r->text, step_txt);
        if (reset_due(r)) {
            reset_slot(s, i);
        } else if (r->n_gen >= r->max_tokens) {
            sw__sim_finish(s, r, "length");
            s->slots[i] = NULL;
            req_free(r);
        }
    }
    if (s->crash_pending) {
        sw__sim_crash(s);
        return;
    }
    sw__sim_admit(s);
    sw__sim_schedule_step(s);
    s->step_chained = false; /* a request arriving while idle starts a step when it arrives */
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
    struct sw_sim *s = arg;
    (void)fd;
    (void)what;
    /* firehose: several steps per turn of the loop (each stream's chunks leave in one write),
     * fewer the more streams there are (what one turn buffers stays bounded) */
    int running = sw__sim_n_running(s);
    int rounds = s->cfg.firehose ? SW_MAX(1, SW_MIN(64, 4096 / SW_MAX(running, 1))) : 1;
    for (int k = 0; k < rounds; k++) {
        step_end(s);
        if (!s->stepping || k + 1 == rounds)
            break;
        event_del(s->step_timer); /* the next step runs now, in this turn */
    }
}

/* Start the next step when anything runs: its duration from the timing model. Steps run back to
 * back on the engine's clock: a step that follows the previous one at once starts at that one's
 * ideal end, not when the loop got to it, so the loop's own lateness does not add up. */
void sw__sim_schedule_step(struct sw_sim *s)
{
    if (s->stepping || s->in_window || s->state != SW__SIM_READY || s->fault_dead || s->fault_hang)
        return;
    preempt(s);
    int running = 0, decoding = 0;
    size_t npf = 0;
    double kv = 0;
    /* the step's token budget (vLLM max_num_batched_tokens, llama.cpp -b): the decoding
     * sequences' tokens first, then the prompts in admission order, the last one cut to a chunk
     * (chunked prefill); 0: no budget */
    int64_t budget = s->batch_tokens > 0 ? s->batch_tokens : INT64_MAX;
    for (int i = 0; i < s->n_slots; i++) {
        struct sw__sim_req *r = s->slots[i];
        if (!r)
            continue;
        running++;
        r->in_step = false;
        if (r->prefilled) {
            decoding++;
            kv += (double)(r->n_prompt + r->n_gen);
            r->in_step = true;
            budget--;
        }
    }
    if (!running)
        return;
    for (int pass = 0; pass < 2; pass++) /* the longest-admitted prompt first */
        for (int i = 0; i < s->n_slots && budget > 0; i++) {
            struct sw__sim_req *r = s->slots[i];
            if (!r || r->prefilled || r->in_step || npf >= s->n_pf_max)
                continue;
            if (pass == 0 && !r->prefill_done)
                continue; /* first the prompts already under way */
            /* after a preemption its tokens are prefilled again */
            int64_t left = r->n_prompt + r->n_gen - r->prefill_done;
            int64_t chunk = left < budget ? left : budget;
            r->step_chunk = chunk;
            r->in_step = true;
            budget -= chunk;
            s->pf_n[npf] = (double)chunk;
            s->pf_k0[npf++] = (double)r->prefill_done;
        }
    double win = s->cfg.firehose ? 0 : s->cfg.timing.batch_window_us;
    if (!s->step_chained && !s->window_passed && win > 0) {
        /* idle: what arrives within the window joins the first step */
        uint64_t w = (uint64_t)(win * 1000.0);
        struct timeval wt = {(time_t)(w / 1000000000u), (suseconds_t)(w % 1000000000u / 1000u)};
        s->in_window = true;
        s->window_end_ns = sw_now_ns() + w;
        event_add(s->window_timer, &wt);
        return;
    }
    double us =
        s->cfg.firehose ? 0 : sw_sim_step_us(&s->cfg.timing, decoding, kv, npf, s->pf_n, s->pf_k0);
    if (s->fault_jitter_us > 0) { /* seeded: the same seed jitters the same way */
        us += (double)(sw__sim_rng_next(&s->jitter_rng) % ((uint64_t)s->fault_jitter_us + 1));
    }
    us += s->fault_stall_us; /* a stall holds one step */
    s->fault_stall_us = 0;
    uint64_t now = sw_now_ns();
    /* chained to the last step's ideal end (or the batch window's), unless the loop fell 20 ms
     * behind (a stall is not caught up in a burst): a late timer on a loaded machine does not
     * add to the time the model says */
    uint64_t start = now;
    if (s->step_chained && s->step_end_ns <= now && now - s->step_end_ns < 20000000u)
        start = s->step_end_ns;
    else if (s->window_passed && s->window_end_ns <= now && now - s->window_end_ns < 20000000u)
        start = s->window_end_ns;
    uint64_t end = start + (uint64_t)(us * 1000.0);
    s->step_end_ns = end;
    uint64_t wait = end > now ? end - now : 0;
    struct timeval tv = {(time_t)(wait / 1000000000u), (suseconds_t)(wait % 1000000000u / 1000u)};
    s->stepping = true;
    event_add(s->step_timer, &tv);
}

static void on_window(evutil_socket_t fd, short what, void *arg)
{
    struct sw_sim *s = arg;
    (void)fd;
    (void)what;
    s->in_window = false;
    s->window_passed = true;
    sw__sim_admit(s);
    sw__sim_schedule_step(s);
    s->window_passed = false;
}

void sw__sim_drop_all(struct sw_sim *s)
{
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        if (s->slots[i]) {
            sw__sim_detach(s->slots[i]);
            req_free(s->slots[i]);
            s->slots[i] = NULL;
        }
    }
    while (s->queue_head) {
        struct sw__sim_req *r = s->queue_head;
        s->queue_head = r->next;
        sw__sim_detach(r);
        req_free(r);
    }
    s->queue_tail = NULL;
}

void sw__sim_http_ready(struct sw_sim *s)
{
    for (int i = 0; i < s->cfg.n_faults && s->state == SW__SIM_READY; i++)
        sw__sim_fault_apply(s, &s->cfg.faults[i]);
    sw__sim_admit(s);
    sw__sim_schedule_step(s);
}

void sw__sim_enqueue(struct sw_sim *s, struct sw__sim_req *r)
{
    evhttp_connection_set_closecb(evhttp_request_get_connection(r->http), on_client_gone, r);
    if (s->queue_tail)
        s->queue_tail->next = r;
    else
        s->queue_head = r;
    s->queue_tail = r;
    sw__sim_admit(s);
    sw__sim_schedule_step(s);
}

int sw__sim_sched_init(struct sw_sim *s, struct sw_err *e)
{
    s->spec_rng = s->cfg.seed ^ 0x5bd1e9955bd1e995ull; /* the drafts' own seeded sequence */
    s->slots = sw_calloc((size_t)s->n_slots, sizeof(*s->slots));
    s->n_pf_max = (size_t)s->n_slots;
    s->pf_n = sw_calloc(s->n_pf_max, sizeof(*s->pf_n));
    s->pf_k0 = sw_calloc(s->n_pf_max, sizeof(*s->pf_k0));
    s->step_timer = evtimer_new(s->base, on_step, s);
    s->window_timer = evtimer_new(s->base, on_window, s);
    if (!s->slots || !s->pf_n || !s->pf_k0 || !s->step_timer || !s->window_timer)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    return 0;
}
