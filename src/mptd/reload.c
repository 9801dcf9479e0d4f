/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Live reload (mptd(8), RELOADING): mptd reads its profile again (SIGHUP, mptctl reload, systemctl
 * reload) or another file (mptctl syncconf), compares it with the running one key by key, and
 * applies what changed in place, or refuses all of it and keeps running as it was. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "diag.h"
#include "learn.h"
#include "log.h"
#include "netdev.h"
#include "nft.h"
#include "profile.h"
#include "reload.h"
#include "tunnel.h"
#include "worker.h"

/* Why a key cannot change while the tunnel runs; NULL: it can. */
static const char *not_live(MptKeyId id) {
        switch (id) {
        case MPT_KEY_TUNNEL_NAME:
                return "it names the device, the control socket and the unit";
        case MPT_KEY_TUNNEL_MODE:
                return "the other end would no longer understand the datagrams";
        case MPT_KEY_TUNNEL_LOCAL_PORT:
                return "every path's sockets are bound to it";
        case MPT_KEY_TUNNEL_WORKERS:
                return "the TUN device has a queue per worker";
        case MPT_KEY_TUNNEL_REORDER_WINDOW:
                return "the receiving workers and their reorder buffers are set up for it";
        default:
                return NULL;
        }
}

typedef struct Plan {
        MptDiagnostics refused;
        char *changed; /* "MTU=, p0: Weight=, ..."; NULL: nothing */
        size_t n_changed;
} Plan;

static void plan_done(Plan *p) {
        diag_done(&p->refused);
        free(p->changed);
}

static int plan_add_changed(Plan *p, const char *path, const MptConfKey *k) {
        char *s;

        if (asprintf(&s, "%s%s%s%s%s=", strempty(p->changed), p->changed ? ", " : "", path ? path : "",
                     path ? ": " : "", k->name) < 0)
                return -ENOMEM;
        free(p->changed);
        p->changed = s;
        p->n_changed++;
        return 0;
}

static int plan_add_text(Plan *p, const char *what, const char *name) {
        char *s;

        if (asprintf(&s, "%s%s%s '%s'", strempty(p->changed), p->changed ? ", " : "", what, name) < 0)
                return -ENOMEM;
        free(p->changed);
        p->changed = s;
        p->n_changed++;
        return 0;
}

/* Whether key k differs between two sections (tunnel or path configurations). */
static int key_differs(const MptConfKey *k, const void *a, const void *b) {
        _cleanup_free_ char *x = NULL, *y = NULL;
        int r;

        r = profile_format_value(k, a, &x);
        if (r < 0)
                return r;
        r = profile_format_value(k, b, &y);
        if (r < 0)
                return r;
        return !streq(x, y);
}

/* "a, b, c": the names of a profile's paths. */
static char *path_names(const MptProfile *p) {
        char *s = strdup("");

        for (size_t i = 0; s && i < p->n_paths; i++) {
                char *x;
                if (asprintf(&x, "%s%s%s", s, i > 0 ? ", " : "", p->paths[i].name) < 0)
                        x = NULL;
                free(s);
                s = x;
        }
        return s;
}

static bool keys_equal(const MptKey *a, const MptKey *b) {
        return a->set == b->set && memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0;
}

static int make_plan(const Tunnel *t, const MptProfile *old, const MptProfile *n, Plan *plan) {
        const char *file;
        unsigned line;
        int r;

        for (size_t i = 0; i < _MPT_KEY_MAX; i++) {
                const MptConfKey *k = conf_key((MptKeyId) i);
                const char *why;

                if (k->section != MPT_SECTION_TUNNEL ||
                    (i >= MPT_KEY_TUNNEL_KEY && i <= MPT_KEY_TUNNEL_PRESHARED_KEY_FILE))
                        continue;
                r = key_differs(k, &old->tunnel, &n->tunnel);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                why = not_live((MptKeyId) i);
                if (why) {
                        _cleanup_free_ char *was = NULL, *now = NULL;
                        if (profile_format_value(k, &old->tunnel, &was) < 0 ||
                            profile_format_value(k, &n->tunnel, &now) < 0)
                                return -ENOMEM;
                        file = profile_tunnel_key_where(n, (MptKeyId) i, &line);
                        diag_add(&plan->refused, file, line,
                                 "%s= cannot change while the tunnel runs (%s): it is '%s', the file says '%s'",
                                 k->name, why, was, now);
                        continue;
                }
                r = plan_add_changed(plan, NULL, k);
                if (r < 0)
                        return r;
        }
        /* The keys themselves, wherever they come from (Key= or KeyFile=, PrivateKey= or
         * PrivateKeyFile=, ...): both ends must change them together, and a running tunnel has
         * sessions under the old ones. */
        if (!keys_equal(&old->tunnel.psk, &n->tunnel.psk) || !keys_equal(&old->tunnel.hs_private, &n->tunnel.hs_private) ||
            !keys_equal(&old->tunnel.public_key, &n->tunnel.public_key) ||
            !keys_equal(&old->tunnel.hs_psk, &n->tunnel.hs_psk)) {
                MptKeyId where = n->tunnel.key_file             ? MPT_KEY_TUNNEL_KEY_FILE
                                 : n->tunnel.key.set            ? MPT_KEY_TUNNEL_KEY
                                 : n->tunnel.private_key_file   ? MPT_KEY_TUNNEL_PRIVATE_KEY_FILE
                                 : n->tunnel.private_key.set    ? MPT_KEY_TUNNEL_PRIVATE_KEY
                                 : n->tunnel.public_key.set     ? MPT_KEY_TUNNEL_PUBLIC_KEY
                                                                : MPT_KEY_TUNNEL_KEY;

                file = profile_tunnel_key_where(n, where, &line);
                diag_add(&plan->refused, file, line,
                         "the keys cannot change while the tunnel runs (both ends change them together): restart "
                         "mptd for them");
        } else {
                /* The same keys from elsewhere (Key= now, or another KeyFile=): what showconf says. */
                for (MptKeyId id = MPT_KEY_TUNNEL_KEY; id <= MPT_KEY_TUNNEL_PRESHARED_KEY_FILE; id++) {
                        r = key_differs(conf_key(id), &old->tunnel, &n->tunnel);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                r = plan_add_changed(plan, NULL, conf_key(id));
                                if (r < 0)
                                        return r;
                        }
                }
        }
        if (profile_uses_sequence(old) != profile_uses_sequence(n)) {
                file = profile_tunnel_key_where(n, MPT_KEY_TUNNEL_SCHEDULER, &line);
                diag_add(&plan->refused, file, line,
                         "Scheduler=%s would %s sequence numbers on the data while the tunnel runs (the other "
                         "end reorders by them): restart mptd for it",
                         mpt_scheduler_to_string(n->tunnel.scheduler),
                         profile_uses_sequence(n) ? "start putting" : "stop putting");
        }

        /* Paths are matched by name, and their order is their identity on the wire (the other end
         * has the same paths in the same order): new ones may come after the last, and the last
         * ones may go, but none may be renamed or moved. */
        size_t common = MIN(old->n_paths, n->n_paths), at = 0;
        while (at < common && streq(old->paths[at].name, n->paths[at].name))
                at++;
        if (at < common) {
                _cleanup_free_ char *a = path_names(old), *b = path_names(n);

                if (!a || !b)
                        return -ENOMEM;
                diag_add(&plan->refused, profile_file_name(n, n->paths[at].line_src), n->paths[at].line,
                         "paths cannot be renamed or reordered while the tunnel runs (the other end numbers "
                         "them alike; new paths go after the last one): running %s; the file has %s. Restart "
                         "mptd on both ends for it", strna(a), strna(b));
                return 0;
        }
        for (size_t i = common; i < n->n_paths; i++) {
                r = plan_add_text(plan, "added path", n->paths[i].name);
                if (r < 0)
                        return r;
        }
        for (size_t i = common; i < old->n_paths; i++) {
                r = plan_add_text(plan, "removed path", old->paths[i].name);
                if (r < 0)
                        return r;
        }
        for (size_t p = 0; p < common; p++)
                for (size_t i = 0; i < _MPT_KEY_MAX; i++) {
                        const MptConfKey *k = conf_key((MptKeyId) i);

                        if (k->section != MPT_SECTION_PATH)
                                continue;
                        r = key_differs(k, &old->paths[p], &n->paths[p]);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                r = plan_add_changed(plan, n->paths[p].name, k);
                                if (r < 0)
                                        return r;
                        }
                }
        (void) t;
        return 0;
}

static int join_diagnostics(const MptDiagnostics *d, char **ret) {
        char *s = NULL;

        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = NULL;
                char *x;

                if (diag_format(&d->items[i], &line) < 0 ||
                    asprintf(&x, "%s%s%s", strempty(s), s ? "\n" : "", line) < 0) {
                        free(s);
                        return -ENOMEM;
                }
                free(s);
                s = x;
        }
        if (d->n_dropped > 0) {
                char *x;
                if (asprintf(&x, "%s\n(and %zu more)", strempty(s), d->n_dropped) < 0) {
                        free(s);
                        return -ENOMEM;
                }
                free(s);
                s = x;
        }
        *ret = s;
        return 0;
}

static void apply_firewall(Tunnel *t, const MptTunnelConfig *old, unsigned *failed) {
        const MptTunnelConfig *c = &t->profile->tunnel;
        int r;

        if (old->firewall && !c->firewall) {
                if (t->nft) {
                        r = nft_remove(t->nft, t->name);
                        if (r < 0) {
                                log_tunnel_warning_errno(t, r, "Reload: failed to delete nftables table 'inet mpt-%s': %m",
                                                         t->name);
                                (*failed)++;
                        } else
                                log_tunnel_info(t, "Reload: removed nftables table 'inet mpt-%s' (Firewall=no).", t->name);
                        t->nft = nft_close(t->nft);
                }
                t->fw_applied = false;
                return;
        }
        if (!c->firewall)
                return;
        if (!t->nft) {
                r = nft_open(&t->nft);
                if (r < 0) {
                        log_tunnel_warning_errno(t, r, "Reload: failed to open nftables netlink socket: %m");
                        (*failed)++;
                        return;
                }
        }
        if (!old->firewall || old->firewall_mark != c->firewall_mark)
                t->fw_applied = false; /* write it, even if the remotes and the MTU are the same */
        if (tunnel_update_firewall(t, false) < 0)
                (*failed)++;
}

int tunnel_reload(Tunnel *t, MptProfile *n, char **ret_message) {
        Peer *peer = t->peers[0];
        MptProfile *old = t->profile, **olds;
        _cleanup_free_ bool *remote_changed = NULL, *weight_changed = NULL;
        Plan plan = {};
        unsigned failed = 0;
        int r;

        assert(ret_message);
        *ret_message = NULL;
        r = make_plan(t, old, n, &plan);
        if (r < 0) {
                plan_done(&plan);
                return log_oom_tunnel(t);
        }
        if (diag_has_errors(&plan.refused)) {
                r = join_diagnostics(&plan.refused, ret_message);
                for (size_t i = 0; i < plan.refused.n; i++)
                        log_tunnel_warning(t, "Reload refused: %s:%u: %s", plan.refused.items[i].file,
                                           plan.refused.items[i].line, plan.refused.items[i].message);
                plan_done(&plan);
                return r < 0 ? r : -EBUSY;
        }
        if (plan.n_changed == 0) {
                log_tunnel_info(t, "Reload: %s: nothing changed.", strna(n->filename));
                plan_done(&plan);
                *ret_message = strdup("nothing changed");
                profile_free(n);
                return *ret_message ? 0 : -ENOMEM;
        }

        /* What follows does not fail half-way for want of memory. */
        olds = reallocarray(t->old_profiles, t->n_old_profiles + 1, sizeof(MptProfile *));
        remote_changed = calloc(MAX(n->n_paths, (size_t) 1), sizeof(bool));
        weight_changed = calloc(MAX(n->n_paths, (size_t) 1), sizeof(bool));
        if (olds)
                t->old_profiles = olds;
        if (!olds || !remote_changed || !weight_changed) {
                plan_done(&plan);
                return log_oom_tunnel(t);
        }
        for (size_t i = 0; i < MIN(n->n_paths, old->n_paths); i++) {
                remote_changed[i] = !address_equal(&old->paths[i].remote, &n->paths[i].remote) ||
                                    path_config_remote_port(old, &old->paths[i]) !=
                                            path_config_remote_port(n, &n->paths[i]);
                weight_changed[i] = key_differs(conf_key(MPT_KEY_PATH_WEIGHT), &old->paths[i], &n->paths[i]) > 0;
        }

        log_tunnel_info(t, "Reloading from %s: %s.", strna(n->filename), plan.changed);
        if (t->owns_profile)
                t->old_profiles[t->n_old_profiles++] = old; /* (else its owner frees it) */
        __atomic_store_n(&t->profile, n, __ATOMIC_RELEASE);
        t->owns_profile = true;
        /* Other rules: their counts start again (they are counted by position). */
        if (key_differs(conf_key(MPT_KEY_TUNNEL_POLICY), &old->tunnel, &n->tunnel) > 0)
                for (unsigned w = 0; w < t->n_workers; w++)
                        worker_policy_reset(t->workers[w]);

        /* Paths removed (the last ones): they stop, leave the schedule and go. */
        while (peer->n_paths > n->n_paths) {
                Path *p = peer->paths[peer->n_paths - 1];

                path_retire(p);
                peer->n_paths--;
                r = tunnel_publish(t);
                if (r < 0)
                        failed++;
                path_free(p);
        }
        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];

                p->config = &n->paths[i];
                if (weight_changed[i] && p->weight_runtime_set) {
                        log_path_info(p, "Reload: Weight= changed in the file: the weight set by mptctl no longer holds.");
                        p->weight_runtime_set = false;
                }
                r = path_apply_config(p, &old->paths[i], remote_changed[i]);
                if (r < 0)
                        failed++;
        }
        if (n->tunnel.scheduler != old->tunnel.scheduler) {
                /* Only the learned scheduler paces (feedback.c sets it again at its next split);
                 * what it learned before another scheduler ran is stale. */
                __atomic_store_n(&peer->pace_paths, 0, __ATOMIC_RELAXED);
                for (size_t i = 0; i < peer->n_paths; i++)
                        if (n->tunnel.scheduler == MPT_SCHEDULER_LEARNED)
                                learn_path_reset(&peer->paths[i]->learn);
        }
        /* Paths added (after the last one): as at start, but a bind conflict is retried. */
        if (n->n_paths > peer->n_paths) {
                Path **paths = reallocarray(peer->paths, n->n_paths, sizeof(Path *));

                if (!paths)
                        failed++;
                else
                        peer->paths = paths;
                for (size_t i = peer->n_paths; paths && i < n->n_paths; i++) {
                        Path *p;

                        r = path_new(peer, (unsigned) i, &n->paths[i], &p);
                        if (r < 0) {
                                failed++;
                                break;
                        }
                        peer->paths[i] = p;
                        peer->n_paths = i + 1;
                        if (path_refresh(p, false) < 0 || path_start(p) < 0)
                                failed++;
                        log_path_info(p, "Added by a reload.");
                }
        }
        r = tunnel_apply_device(t, &old->tunnel, &failed);
        if (r < 0)
                failed++;
        apply_firewall(t, &old->tunnel, &failed);
        if (n->tunnel.reorder_max_delay != old->tunnel.reorder_max_delay && peer->reorder_enabled)
                peer_set_reorder_hold(peer, n->tunnel.reorder_max_delay, n->tunnel.reorder_max_delay);
        r = tunnel_publish(t);
        if (r < 0)
                failed++;

        if (failed > 0)
                r = asprintf(ret_message, "applied %s; %u part%s failed (see the log)", plan.changed, failed,
                             failed == 1 ? "" : "s");
        else
                r = asprintf(ret_message, "applied %s", plan.changed);
        log_tunnel_info(t, "Reloaded%s.", failed > 0 ? ", with failures (see above)" : "");
        plan_done(&plan);
        return r < 0 ? -ENOMEM : 0;
}

int reload_read(const char *filename, bool netdev, MptProfile **ret, char **ret_message) {
        _cleanup_(profile_freep) MptProfile *profile = NULL;
        MptDiagnostics diag = {};
        int r;

        *ret_message = NULL;
        if (netdev) {
                r = netdev_load_file(filename, &profile, NULL, &diag);
                if (r == 0) {
                        diag_done(&diag);
                        return asprintf(ret_message, "%s has no [" NETDEV_TUNNEL_SECTION "] section any more",
                                        filename) < 0 ? -ENOMEM : -EINVAL;
                }
        } else
                r = profile_load_file(filename, &profile, &diag);
        if (r == -EINVAL) {
                int k = join_diagnostics(&diag, ret_message);
                diag_done(&diag);
                return k < 0 ? k : -EINVAL;
        }
        diag_done(&diag);
        if (r < 0)
                return asprintf(ret_message, "cannot read %s: %s", filename,
                                r == -EBADFD ? "not a regular file" : strerror(-r)) < 0 ? -ENOMEM : r;
        profile_log_read(profile, netdev);
        *ret = TAKE_PTR(profile);
        return 0;
}

void profile_log_read(const MptProfile *p, bool netdev) {
        MptDiagnostics w = {};

        /* A key that others can read is no secret, but the tunnel works: warn (mptctl check
         * --strict refuses it); [X-MPT...] in networkd's drop-ins of a .netdev is ignored. */
        (void) profile_check_key_private(p, &w);
        if (netdev)
                (void) netdev_dropin_warnings(p->filename, &w);
        for (size_t i = 0; i < w.n; i++)
                log_full_errno(LOG_WARNING, 0, p->tunnel.name, NULL, "%s:%u: warning: %s", w.items[i].file,
                               w.items[i].line, w.items[i].message);
        diag_done(&w);
        for (size_t i = 0; i < p->n_dropins; i++)
                log_full_errno(LOG_INFO, 0, p->tunnel.name, NULL, "Read drop-in %s.", p->dropins[i]);
}

int tunnel_reload_file(Tunnel *t, const char *filename, char **ret_message) {
        Peer *peer = t->peers[0];
        _cleanup_(profile_freep) MptProfile *n = NULL;
        bool netdev = !filename && t->reload_netdev;
        int r;

        if (!filename)
                filename = t->reload_file;
        if (!filename)
                return asprintf(ret_message, "mptd has no file to read again") < 0 ? -ENOMEM : -ENOENT;
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=%s: reloading %s", (uint64_t) now_usec(),
                          t->name, filename);
        r = reload_read(filename, netdev, &n, ret_message);
        if (r < 0)
                log_tunnel_warning(t, "Reload refused: %s has errors:\n%s", filename, strna(*ret_message));
        else {
                r = tunnel_reload(t, n, ret_message);
                if (r >= 0)
                        TAKE_PTR(n);
        }
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s: %u of %zu paths up", t->name, peer->paths_up, peer->n_paths);
        return r;
}
