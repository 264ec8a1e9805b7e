/*
 * deploy/bar: a boot's progress as a terminal bar, for sw_deploy_endpoint's on_progress: what
 * the boot is doing, the phase its log reached and what /health last said, against the seconds
 * it has taken (core's sw_progress draws it, on a terminal only).
 *
 * What it does not do: draw when it is off (--json, a dry run, no terminal), or finish the bar
 * (the caller does, once the boot was attempted).
 */
#include <slipway/deploy.h>
#include <slipway/engine.h>

#include <stdio.h>

void sw_deploy_bar_update(void *ctx, const struct sw_up_progress *p)
{
    struct sw_deploy_bar *b = ctx;
    if (!b->on)
        return;
    const char *ph = sw_boot_phase_name(p->phase);
    snprintf(b->label, sizeof(b->label), "%s (%s, /health %d)", p->what, ph ? ph : "start",
             p->health_status);
    b->bar.label = b->label;
    sw_progress_update(&b->bar, (uint64_t)(p->elapsed_s * 10));
}
