/*
 * Internal to src/net: what the loop (loop.c) and the transfer (xfer.c) say to each other.
 * Not part of the public API.
 */
#ifndef SW_NET_INTERNAL_H
#define SW_NET_INTERNAL_H

#include <slipway/net.h>

#include <curl/curl.h>

/* Once per process: curl_global_init. Thread-safe. */
int sw__net_global_init(struct sw_err *e);

/* The loop's list of running transfers. */
void sw__net_loop_link(struct sw_net_loop *l, struct sw_net_xfer *x);
void sw__net_loop_unlink(struct sw_net_loop *l, struct sw_net_xfer *x);
/* Ask the loop to finish cancelled transfers on its next turn (outside any curl callback). */
void sw__net_loop_wake_reaper(struct sw_net_loop *l);

/* curl reported x done with res (called outside curl callbacks). */
void sw__net_xfer_curl_done(struct sw_net_xfer *x, CURLcode res);
/* Finish a running x with a failure decided by slipway (timeout, cancel). Calls on_done. */
void sw__net_xfer_fail(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt, ...)
    SW_PRINTF(4, 5);

#endif
