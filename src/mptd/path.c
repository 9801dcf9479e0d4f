/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "devclass.h"
#include "feedback.h"
#include "log.h"
#include "path.h"
#include "worker.h"

#define SOCKET_BUFFER_SIZE (4 * 1024 * 1024)
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#define BIND_RETRY_USEC (1 * USEC_PER_SEC)
#define PROBE_ANSWER_INTERVAL_USEC (50 * USEC_PER_MSEC)

static void send_keepalive(Path *p);
static void send_path_status(Path *about);

/* The first problem path_refresh() finds is the one compute_state() reports (it checks in the
 * same order): later ones do not overwrite it. set_reason(p, NULL) clears it. */
static void set_reason(Path *p, const char *fmt, ...) _printf_(2, 3);
static void set_reason(Path *p, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        if (fmt && p->state_reason)
                return;
        if (fmt) {
                va_start(ap, fmt);
                if (vasprintf(&s, fmt, ap) < 0)
                        s = NULL;
                va_end(ap);
        }
        free(p->state_reason);
        p->state_reason = s;
}

/* When getrandom() fails, a path's token is the clock mixed with its index times 2^32 / phi
 * (Knuth's multiplicative hash), so that paths made in the same microsecond still differ. */
#define PATH_TOKEN_SPREAD 2654435761u

int path_new(Peer *peer, unsigned index, const MptPathConfig *config, Path **ret) {
        Path *p;

        p = calloc(1, sizeof(Path));
        if (!p)
                return log_oom();
        p->peer = peer;
        p->index = index;
        p->config = config;
        p->name = config->name;
        p->remote_port = path_config_remote_port(peer->tunnel->profile, config);
        p->remote_len = sockaddr_from_address(&config->remote, p->remote_port, 0, &p->remote);
        p->state = PATH_STATE_UP;
        p->route_ok = true;
        p->devclass = MPT_DEVCLASS_UNKNOWN;
        learn_path_reset(&p->learn);
        p->learn_news = now_usec();
        do
                if (getrandom(&p->token, sizeof p->token, 0) != sizeof p->token)
                        p->token = (uint32_t) now_usec() ^ (index * PATH_TOKEN_SPREAD);
        while (p->token == 0);
        *ret = p;
        return 0;
}

static void unbind(Path *p) {
        if (!p->fds)
                return;
        /* Workers may still read the old sockets until they pick up the next snapshot. */
        tunnel_retire_fds(p->peer->tunnel, p->fds, p->peer->tunnel->n_workers);
        p->fds = mfree(p->fds);
        p->shares_fds = false;
        p->local = (MptAddress) {};
}

Path *path_free(Path *p) {
        if (!p)
                return NULL;
        sd_event_source_disable_unref(p->keepalive_timer);
        sd_event_source_disable_unref(p->dead_timer);
        sd_event_source_disable_unref(p->retry_timer);
        if (p->fds) {
                for (unsigned i = 0; i < p->peer->tunnel->n_workers; i++)
                        safe_close(p->fds[i]);
                free(p->fds);
        }
        free(p->state_reason);
        return mfree(p);
}

bool path_can_send(const Path *p) {
        return p->fds && p->link_up;
}

static bool locally_usable(const Path *p) {
        return path_can_send(p) && p->route_ok;
}

/* ---- binding ---- */

static int set_buffer(int fd, int force_opt, int opt, int size) {
        if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof size) >= 0)
                return 0;
        return setsockopt(fd, SOL_SOCKET, opt, &size, sizeof size) < 0 ? -errno : 0;
}

static int open_socket(Path *p, const MptAddress *local, bool reuseport) {
        _cleanup_close_ int fd = -EBADF;
        const MptPathConfig *c = p->config;
        MptSockaddr sa;
        socklen_t len;
        int one = 1;

        fd = socket(local->family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
        if (fd < 0)
                return -errno;
        if (local->family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
                return -errno;
        if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
                return -errno;
        if (c->interface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, c->interface, strlen(c->interface)) < 0)
                return -errno;
        if (reuseport) {
                (void) set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, SOCKET_BUFFER_SIZE);
                (void) set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, SOCKET_BUFFER_SIZE);
                /* Arrival times for the reorder buffer and RTT samples (see receive.c). */
                (void) setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
                /* Several datagrams of a path in one receive (receive.c splits them). */
                if (dataplane_options.offload && dataplane_options.batch > 1)
                        (void) setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof one);
        }
        len = sockaddr_from_address(local, p->peer->tunnel->profile->tunnel.local_port, p->ifindex, &sa);
        if (bind(fd, &sa.sa, len) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static const char *bind_hint(int r) {
        switch (r) {
        case -EADDRINUSE:
                return " (another mptd or another program uses this port)";
        case -EADDRNOTAVAIL:
                return " (the address is not configured on this host)";
        case -EPERM:
                return " (binding to an interface needs CAP_NET_RAW)";
        default:
                return "";
        }
}

/* The kernel picks one socket of a SO_REUSEPORT group by a hash of the sender's address and
 * port. A path is one UDP flow, so that hash puts it on one worker for good, and with a few paths
 * chance may put most of them on the same worker (in a lab: always the same). Instead each path's
 * group hands its datagrams to the worker path_rx_worker() chooses, by a socket filter. Each
 * group is one path's (a group that paths share goes to the first path's worker); the sockets'
 * order in the group is the workers' order (bound one after the other in bind_path()). Without
 * the filter (an old kernel): the hash, as before. */
static unsigned path_rx_worker(const Tunnel *t, unsigned index) {
        /* With reordering, receiving and sending workers are apart (t->rx_workers): the paths
         * go to the first rx_workers workers, path index mod rx_workers, and received packets
         * are written through the other workers' TUN queues, so that the kernel sends the
         * flows' answers by them; a worker that receives is never held up by sending, nor
         * the senders by it. Compat mode has one receiving worker: everything a received
         * datagram needs is done under the reorder lock, so receiving workers could only take
         * turns at it (and sleep and wake more often). Secure mode has half of the workers
         * receive: their decryption runs outside the lock, in parallel (tests/bench/workers
         * compares the layouts). Without the split (MPT_DEBUG_RX_SPREAD=1, or no reordering):
         * path index mod workers. */
        if (t->n_workers < 2)
                return 0;
        if (t->rx_workers > 0)
                return index % t->rx_workers;
        return index % t->n_workers;
}

static void steer_path(Path *p, const int *fds) {
        struct sock_filter code[] = {
                BPF_STMT(BPF_RET | BPF_K, path_rx_worker(p->peer->tunnel, p->index)),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(code), .filter = code };

        if (p->peer->tunnel->n_workers < 2)
                return;
        if (setsockopt(fds[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) < 0)
                log_path_full(LOG_DEBUG, errno, p, "Cannot steer the path's datagrams to one worker, leaving it to the kernel: %m");
}

static int bind_path(Path *p, const MptAddress *local, bool startup) {
        Tunnel *t = p->peer->tunnel;
        Peer *peer = p->peer;
        char buf[MPT_ADDRESS_STRLEN];
        MptSockaddr sa;
        int *fds, r;

        sockaddr_from_address(local, t->profile->tunnel.local_port, p->ifindex, &sa);

        /* Paths that share a local socket address share the socket group of the first of them
         * (the receive side tells them apart by source address). */
        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *o = peer->paths[i];
                if (o == p || !o->fds || o->shares_fds || o->ifindex != p->ifindex || !address_equal(&o->local, local))
                        continue;
                fds = calloc(t->n_workers, sizeof(int));
                if (!fds)
                        return log_oom();
                for (unsigned w = 0; w < t->n_workers; w++) {
                        fds[w] = fcntl(o->fds[w], F_DUPFD_CLOEXEC, 3);
                        if (fds[w] < 0) {
                                r = -errno;
                                for (unsigned k = 0; k < w; k++)
                                        safe_close(fds[k]);
                                free(fds);
                                return log_path_error_errno(p, r, "Failed to duplicate socket: %m");
                        }
                }
                p->fds = fds;
                p->shares_fds = true;
                p->local = *local;
                return 0;
        }

        /* SO_REUSEPORT lets our workers share the address, but would also let another process of
         * the same user share it silently. Bind once without it to find out whether it is free. */
        r = open_socket(p, local, false);
        if (r < 0) {
                set_reason(p, "cannot bind %s: %s%s", sockaddr_to_string(&sa, buf), strerror(-r), bind_hint(r));
                if (startup)
                        return log_path_error_errno(p, r, "Cannot bind %s%s%s: %m%s", sockaddr_to_string(&sa, buf),
                                                    p->config->interface ? " on " : "",
                                                    strempty(p->config->interface), bind_hint(r));
                return r;
        }
        safe_close(r);

        fds = calloc(t->n_workers, sizeof(int));
        if (!fds)
                return log_oom();
        for (unsigned w = 0; w < t->n_workers; w++) {
                r = open_socket(p, local, true);
                if (r < 0) {
                        for (unsigned k = 0; k < w; k++)
                                safe_close(fds[k]);
                        free(fds);
                        set_reason(p, "cannot bind %s: %s", sockaddr_to_string(&sa, buf), strerror(-r));
                        return startup ? log_path_error_errno(p, r, "Cannot bind %s: %m", sockaddr_to_string(&sa, buf))
                                       : r;
                }
                fds[w] = r;
        }
        steer_path(p, fds);
        p->fds = fds;
        p->local = *local;
        if (p->remote_len == 0)
                log_path_info(p, "Bound %s%s%s, listening for the other end.", sockaddr_to_string(&sa, buf),
                              p->config->interface ? " on " : "", strempty(p->config->interface));
        else
                log_path_info(p, "Bound %s%s%s, sending to %s.", sockaddr_to_string(&sa, buf),
                              p->config->interface ? " on " : "", strempty(p->config->interface),
                              sockaddr_to_string(&p->remote, (char[MPT_ADDRESS_STRLEN]) {}));
        return 0;
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Path *p = userdata;

        (void) path_refresh(p, false);
        return 0;
}

static void arm_retry(Path *p) {
        if (!p->retry_timer) {
                if (sd_event_add_time_relative(p->peer->tunnel->event, &p->retry_timer, CLOCK_MONOTONIC, BIND_RETRY_USEC,
                                               10 * USEC_PER_MSEC, on_retry_timer, p) < 0)
                        return;
        } else
                (void) sd_event_source_set_time_relative(p->retry_timer, BIND_RETRY_USEC);
        (void) sd_event_source_set_enabled(p->retry_timer, SD_EVENT_ONESHOT);
}

/* ---- following the kernel ---- */

/* The address to bind: LocalAddress= when it is configured here, else the interface's best address
 * of the family of Remote= (global before link-local, not tentative, not deprecated if avoidable).
 * Returns 0 and sets *ret, -EADDRNOTAVAIL when there is none (reason set), or another error. */
static int wanted_local_address(Path *p, MptAddress *ret) {
        _cleanup_free_ RtnlAddress *addrs = NULL;
        const MptPathConfig *c = p->config;
        const RtnlAddress *best = NULL;
        int family = path_config_family(c);
        size_t n = 0;
        char buf[MPT_ADDRESS_STRLEN];
        int r;

        r = rtnl_addr_list(p->peer->tunnel->rtnl, c->interface ? p->ifindex : 0, family, &addrs, &n);
        if (r < 0)
                return log_path_warning_errno(p, r, "Failed to list addresses: %m");

        for (size_t i = 0; i < n; i++) {
                const RtnlAddress *a = &addrs[i];
                if (a->flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED))
                        continue;
                if (address_is_set(&c->local)) {
                        if (address_equal(&a->address, &c->local)) {
                                best = a;
                                break;
                        }
                        continue;
                }
                if (!best || (best->scope != RT_SCOPE_UNIVERSE && a->scope == RT_SCOPE_UNIVERSE) ||
                    ((best->flags & IFA_F_DEPRECATED) && !(a->flags & IFA_F_DEPRECATED) && a->scope == best->scope))
                        best = a;
        }
        if (!best) {
                if (address_is_set(&c->local))
                        set_reason(p, "LocalAddress=%s is not configured%s%s", address_to_string(&c->local, buf),
                                   c->interface ? " on " : "", strempty(c->interface));
                else
                        set_reason(p, "interface '%s' has no usable %s address", c->interface,
                                   family == AF_INET ? "IPv4" : "IPv6");
                return -EADDRNOTAVAIL;
        }
        if (!c->interface)
                p->ifindex = best->ifindex; /* the link that carries LocalAddress= */
        *ret = best->address;
        return 0;
}

/* Interface: which one (Interface=, or the one holding LocalAddress=), and is it up? */
static int refresh_link(Path *p) {
        const MptPathConfig *c = p->config;
        RtnlLink link;
        int r;

        if (!c->interface)
                /* Learned with the address; see wanted_local_address(). */
                return p->ifindex > 0 ? rtnl_link_get_by_index(p->peer->tunnel->rtnl, p->ifindex, &link) : -ENODEV;

        r = rtnl_link_get_by_name(p->peer->tunnel->rtnl, c->interface, &link);
        if (r == -ENODEV) {
                if (p->ifindex > 0)
                        log_path_notice(p, "Interface '%s' is gone.", c->interface);
                unbind(p);
                p->ifindex = 0;
                p->link_up = false;
                p->link_mtu = 0;
                set_reason(p, "interface '%s' does not exist", c->interface);
                return r;
        }
        if (r < 0)
                return log_path_warning_errno(p, r, "Failed to look up interface '%s': %m", c->interface);
        if (streq(c->interface, p->peer->tunnel->name)) {
                set_reason(p, "interface '%s' is the tunnel itself", c->interface);
                return -ELOOP;
        }
        if (link.ifindex != p->ifindex) {
                /* New, or deleted and created again: old sockets are bound to the old device. */
                unbind(p);
                if (p->peer->tunnel->running)
                        log_path_info(p, "Interface '%s' appeared (ifindex %i).", c->interface, link.ifindex);
                p->ifindex = link.ifindex;
                p->devclass = devclass_of(c->interface);
        }
        p->link_mtu = link.mtu;
        p->link_up = (link.flags & IFF_UP) && (link.flags & IFF_RUNNING);
        if (!p->link_up)
                set_reason(p, "interface '%s' is %s", c->interface, (link.flags & IFF_UP) ? "without carrier" : "down");
        return 0;
}

static void refresh_link_by_index(Path *p) {
        RtnlLink link;

        if (p->ifindex <= 0 || rtnl_link_get_by_index(p->peer->tunnel->rtnl, p->ifindex, &link) < 0) {
                p->link_up = false;
                return;
        }
        p->link_mtu = link.mtu;
        p->link_up = (link.flags & IFF_UP) && (link.flags & IFF_RUNNING);
        if (!p->link_up)
                set_reason(p, "interface '%s' is %s", link.ifname, (link.flags & IFF_UP) ? "without carrier" : "down");
        if (p->devclass == MPT_DEVCLASS_UNKNOWN)
                p->devclass = devclass_of(link.ifname);
}

static void arm_dead_timer(Path *p, usec_t from) {
        if (!p->dead_timer)
                return;
        (void) sd_event_source_set_time(p->dead_timer, from + p->config->dead_time);
        (void) sd_event_source_set_enabled(p->dead_timer, SD_EVENT_ONESHOT);
}

int path_refresh(Path *p, bool startup) {
        const MptPathConfig *c = p->config;
        bool was_usable = locally_usable(p), was_backup = path_is_backup(p);
        uint32_t mtu_before = p->link_mtu;
        MptAddress want;
        int r;

        set_reason(p, NULL);

        r = refresh_link(p);
        if (r == -ELOOP)
                return startup ? log_path_error_errno(p, r, "Interface '%s' is the tunnel itself.", c->interface) : 0;
        if (r < 0 && c->interface)
                goto done;

        r = wanted_local_address(p, &want);
        if (r < 0) {
                unbind(p);
                if (!c->interface)
                        refresh_link_by_index(p);
                goto done;
        }
        if (!c->interface)
                refresh_link_by_index(p);

        if (!p->fds || !address_equal(&p->local, &want)) {
                char a[MPT_ADDRESS_STRLEN], b[MPT_ADDRESS_STRLEN];
                bool rebind = p->fds;
                if (rebind)
                        log_path_notice(p, "Local address changed from %s to %s; rebinding.",
                                        address_to_string(&p->local, a), address_to_string(&want, b));
                unbind(p);
                r = bind_path(p, &want, startup);
                if (r < 0) {
                        /* At start a conflict is a configuration error; later it may clear. */
                        if (startup)
                                return r;
                        log_path_warning(p, "%s; retrying.", strna(p->state_reason));
                        arm_retry(p);
                        goto done;
                }
                if (!startup) {
                        /* New sockets: the workers must read them now, whether or not the state
                         * changes; and the other end follows as soon as it hears the new source. */
                        (void) tunnel_publish(p->peer->tunnel);
                        if (rebind && path_can_send(p) && c->keepalive_interval > 0)
                                send_keepalive(p);
                }
        }

        if (p->link_up && p->remote_len == 0)
                p->route_ok = true; /* listening: nothing to route to yet */
        else if (p->link_up) {
                /* Where we send now: the remote may have followed the other end. */
                MptAddress remote;
                (void) sockaddr_to_address(&p->remote, &remote, NULL);
                r = rtnl_route_check(p->peer->tunnel->rtnl, &remote, c->interface ? p->ifindex : 0);
                p->route_ok = r >= 0;
                if (!p->route_ok) {
                        char buf[MPT_ADDRESS_STRLEN];
                        set_reason(p, "no route to %s%s%s", address_to_string(&remote, buf),
                                   c->interface ? " through " : "", strempty(c->interface));
                }
        }

done:
        if (startup)
                return 0;

        if (was_usable && !locally_usable(p)) {
                /* It leaves the schedule now (path_update_state); the other end hears it over the
                 * paths that still work. Back again, it must first hear from the other end. */
                if (p->dead_timer)
                        (void) sd_event_source_set_enabled(p->dead_timer, SD_EVENT_OFF);
                p->dead = false;
                p->probing = c->keepalive_interval > 0 && c->dead_time > 0;
                p->peer_flags = 0;
        } else if (!was_usable && locally_usable(p) && p->probing) {
                arm_dead_timer(p, now_usec());
                send_keepalive(p); /* with PROBE: the other end answers at once */
        }
        path_update_state(p, p->state_reason);
        if (path_is_backup(p) != was_backup)
                (void) tunnel_publish(p->peer->tunnel);
        if (p->link_mtu != mtu_before)
                tunnel_update_mtu(p->peer->tunnel);
        return 0;
}

/* ---- state ---- */

static const char *peer_reason(const Path *p) {
        if (p->peer_flags & MPT_KA_FLAG_DOWN)
                return "the other end does not use it";
        if (p->peer_flags & MPT_KA_FLAG_RX_DEAD)
                return "the other end hears nothing on it (yet)";
        return NULL;
}

static void notify_status(Tunnel *t) {
        Peer *peer = t->peers[0];

        (void) sd_notifyf(false, "STATUS=%s: %u of %zu paths up", t->name, peer->paths_up, peer->n_paths);
}

static PathState compute_state(const Path *p) {
        if (p->admin_down)
                return PATH_STATE_ADMIN_DOWN;
        if (p->config->interface && p->ifindex <= 0)
                return PATH_STATE_NO_INTERFACE;
        if (p->ifindex > 0 && !p->link_up)
                return PATH_STATE_LINK_DOWN;
        if (!p->fds)
                return PATH_STATE_NO_ADDRESS;
        if (!p->route_ok)
                return PATH_STATE_NO_ROUTE;
        if (p->remote_len == 0)
                return PATH_STATE_LISTENING;
        if (p->dead)
                return PATH_STATE_DEAD;
        if (p->probing)
                return PATH_STATE_PROBING;
        if (p->peer_flags & (MPT_KA_FLAG_DOWN | MPT_KA_FLAG_RX_DEAD))
                return PATH_STATE_PEER_DOWN;
        return PATH_STATE_UP;
}

const char *path_reason(const Path *p) {
        if (p->state == PATH_STATE_UP)
                return NULL;
        if (p->state_reason)
                return p->state_reason;
        switch (p->state) {
        case PATH_STATE_DEAD:
                return "no keepalive within the dead time";
        case PATH_STATE_PROBING:
                return "waiting for the other end to answer";
        case PATH_STATE_LISTENING:
                return "no Remote=: waiting for the other end to reach it";
        case PATH_STATE_PEER_DOWN:
                return peer_reason(p) ?: "the other end does not use it";
        case PATH_STATE_ADMIN_DOWN:
                return "taken down by mptctl";
        default:
                return NULL;
        }
}

/* What was measured before the path went away says nothing about it now. */
static void reset_rtt(Path *p) {
        p->rtt = p->rtt_var = 0;
        p->rtt_min[0] = p->rtt_min[1] = 0;
        p->rtt_min_since = 0;
}

void path_update_state(Path *p, const char *reason) {
        Tunnel *t = p->peer->tunnel;
        Peer *peer = p->peer;
        PathState s = compute_state(p), before = p->state;

        if (s == before)
                return;
        /* Keep why (the kernel-decided reasons are set by path_refresh() already). */
        if (reason != p->state_reason) {
                free(p->state_reason);
                p->state_reason = s != PATH_STATE_UP && reason ? strdup(reason) : NULL;
        }
        if (s == PATH_STATE_UP)
                log_path_info(p, "Up (was %s)%s%s.", path_state_to_string(before), reason ? ": " : "", strempty(reason));
        else
                log_path_notice(p, "%s%s%s.", path_state_to_string(s), reason ? ": " : "", strempty(reason));
        p->state = s;
        p->state_since = now_usec();
        if (s == PATH_STATE_UP) {
                reset_rtt(p); /* measured again at once: the probe flag asks for it */
                feedback_path_up(p);
        }

        if ((s == PATH_STATE_UP || before == PATH_STATE_UP) && peer->reorder_enabled) {
                /* Its packets stop: it must not hold back the receive side's loss inference (nor
                 * its stragglers make it count again) until it is up again. */
                if (s == PATH_STATE_UP)
                        rx_shared_path_up(peer->rx, p->index);
                else
                        rx_shared_path_down(peer->rx, p->index);
        }
        (void) tunnel_publish(t);
        notify_status(t);

        /* A path that cannot carry its own keepalives any more is reported over the others. */
        if (before == PATH_STATE_UP && s >= PATH_STATE_ADMIN_DOWN && s != PATH_STATE_PROBING)
                send_path_status(p);
        /* Tell the other end at once that we hear it again (it may be waiting in probing). */
        if (s == PATH_STATE_UP && p->config->keepalive_interval > 0)
                send_keepalive(p);
}

/* ---- keepalives ---- */

/* Sends one control frame (sealed in secure mode); false when it did not go (counted). */
static bool send_frame(Path *p, const uint8_t *buf, size_t len) {
        Tunnel *t = p->peer->tunnel;
        uint8_t sealed[MPT_SECURE_OVERHEAD + MAX(MAX(MPT_KEEPALIVE_EXT_SIZE, MPT_PATH_STATUS_SIZE), MPT_FEEDBACK_SIZE_MAX)];

        if (!path_can_send(p) || p->remote_len == 0)
                return false;
        if (t->secure) {
                /* Control frames are sealed like data: authenticated and encrypted. */
                assert(len <= sizeof sealed - MPT_SECURE_OVERHEAD);
                memcpy(sealed + MPT_SECURE_HEADER_SIZE, buf, len);
                int reason = peer_seal(p->peer, p->index, sealed, len, &len);
                if (reason >= 0) {
                        COUNTER_ADD(p->counters.drops[reason], 1);
                        return false;
                }
                buf = sealed;
        }
        if (sendto(p->fds[0], buf, len, MSG_DONTWAIT, &p->remote.sa, p->remote_len) < 0) {
                COUNTER_ADD(p->counters.drops[errno == EAGAIN || errno == ENOBUFS ? MPT_DROP_SEND_BUSY
                                                                                  : MPT_DROP_SEND_ERROR],
                            1);
                return false;
        }
        return true;
}

void path_send_feedback(Path *p, const MptFeedback *fb) {
        Tunnel *t = p->peer->tunnel;
        uint8_t buf[MPT_FEEDBACK_SIZE_MAX];
        size_t len = mpt_feedback_encode(buf, sizeof buf, t->ip_version == 6 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP, fb);

        if (len > 0 && send_frame(p, buf, len))
                p->peer->feedback_tx++;
}

void path_send_keepalive(Path *p) {
        send_keepalive(p);
}

static void send_keepalive(Path *p) {
        Tunnel *t = p->peer->tunnel;
        uint8_t buf[MPT_KEEPALIVE_EXT_SIZE];
        usec_t now = now_usec();
        MptKeepalive ka = {
                .ip_version = t->ip_version,
                .src_tun = t->ka_src,
                .dst_tun = t->ka_dst,
                .extended = true,
                .receive_weight = (uint16_t) p->config->receive_weight,
                .session = t->session,
                .echo_seq = p->peer_seq,
                .rx_count = p->ka_rx_count,
                .path_token = p->token,
        };
        size_t len;

        if (!path_can_send(p) || p->remote_len == 0)
                return;
        ka.seq = ++p->ka_seq;
        if (ka.seq == 0)
                ka.seq = p->ka_seq = 1;
        if (p->admin_down)
                ka.flags |= MPT_KA_FLAG_DOWN;
        if (p->dead || p->probing)
                ka.flags |= MPT_KA_FLAG_RX_DEAD;
        /* Also while no round trip was measured: the answer measures one at once, and the
         * receive side's delay equalisation needs it before the first flow (feedback.h). */
        if (p->probing || p->dead || p->rtt == 0)
                ka.flags |= MPT_KA_FLAG_PROBE;
        if (p->peer_seq != 0)
                ka.echo_delay_us = (uint32_t) MIN(now - p->peer_seq_time, (usec_t) UINT32_MAX);
        len = mpt_keepalive_encode(buf, sizeof buf, &ka);
        p->ka_sent[ka.seq % ELEMENTSOF(p->ka_sent)] = now;
        if (send_frame(p, buf, len))
                COUNTER_ADD(p->counters.keepalives_tx, 1);
}

static void send_path_status(Path *about) {
        Tunnel *t = about->peer->tunnel;
        Peer *peer = about->peer;
        uint8_t buf[MPT_PATH_STATUS_SIZE];
        MptPathStatus ps = {
                .ip_version = t->ip_version,
                .src_tun = t->ka_src,
                .dst_tun = t->ka_dst,
                .session = t->session,
                .path_token = about->token,
                .flags = MPT_KA_FLAG_DOWN,
        };
        size_t len;

        /* Only peers that speak our extension know what to do with it; the original would log it. */
        if (peer->peer_session == 0)
                return;
        len = mpt_path_status_encode(buf, sizeof buf, &ps);
        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *o = peer->paths[i];
                if (o == about || !locally_usable(o) || o->peer_session == 0)
                        continue;
                if (send_frame(o, buf, len))
                        COUNTER_ADD(o->counters.keepalives_tx, 1);
        }
}

static int on_keepalive_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Path *p = userdata;

        send_keepalive(p);
        (void) sd_event_source_set_time(s, usec + p->config->keepalive_interval);
        return 0;
}

static int on_dead_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Path *p = userdata;
        char buf[32];

        /* (A listening path has nobody to be dead to: it waits.) */
        if (p->dead || !locally_usable(p) || p->remote_len == 0)
                return 0;
        p->dead = true;
        p->probing = false;
        path_update_state(p, p->last_keepalive_rx == 0 ? "no keepalive received since start"
                                                       : "no keepalive for longer than the dead time");
        log_path_debug(p, "Dead time %s expired.", format_duration(p->config->dead_time, buf, sizeof buf));
        /* Tell the other end at once rather than at the next tick. */
        send_keepalive(p);
        return 0;
}

/* The keepalive and dead timers, as the configuration says (none without keepalives). */
static int start_timers(Path *p, usec_t now) {
        Tunnel *t = p->peer->tunnel;
        int r;

        if (p->config->keepalive_interval == 0)
                return 0;

        r = sd_event_add_time(t->event, &p->keepalive_timer, CLOCK_MONOTONIC, now, USEC_PER_MSEC,
                              on_keepalive_timer, p);
        if (r < 0)
                return log_path_error_errno(p, r, "Failed to add keepalive timer: %m");
        (void) sd_event_source_set_enabled(p->keepalive_timer, SD_EVENT_ON);

        if (p->config->dead_time > 0) {
                /* Start-up grace: a path that is usable at start is up, and gets one dead time to
                 * hear from the other end. One that is not waits for the kernel (and then probes). */
                r = sd_event_add_time(t->event, &p->dead_timer, CLOCK_MONOTONIC, now + p->config->dead_time,
                                      USEC_PER_MSEC, on_dead_timer, p);
                if (r < 0)
                        return log_path_error_errno(p, r, "Failed to add dead timer: %m");
                if (!locally_usable(p)) {
                        (void) sd_event_source_set_enabled(p->dead_timer, SD_EVENT_OFF);
                        p->probing = true;
                }
        }
        return 0;
}

int path_start(Path *p) {
        usec_t now = now_usec();
        int r;

        p->state = compute_state(p);
        p->state_since = now;
        r = start_timers(p, now);
        if (r < 0)
                return r;
        if (p->state != PATH_STATE_UP)
                log_path_notice(p, "%s: %s; waiting.", path_state_to_string(p->state), strna(path_reason(p)));
        return 0;
}

static bool addresses_match(Tunnel *t, const MptAddress *src_tun, const MptAddress *dst_tun) {
        /* Only what we know can be compared: the peer's tunnel address (Peer=) against the frame's
         * source, and our own addresses against its destination. */
        if (address_is_set(src_tun) && address_is_set(&t->ka_dst) && src_tun->family == t->ka_dst.family &&
            !address_equal(src_tun, &t->ka_dst))
                return false;
        if (address_is_set(dst_tun)) {
                const MptPrefixList *l = &t->profile->tunnel.addresses;
                bool any = false, match = false;
                for (size_t i = 0; i < l->n; i++) {
                        MptAddress a = { .family = l->items[i].family, .addr = l->items[i].addr };
                        if (a.family != dst_tun->family)
                                continue;
                        any = true;
                        if (address_equal(&a, dst_tun))
                                match = true;
                }
                if (any && !match)
                        return false;
        }
        return true;
}

usec_t path_rtt_min(const Path *p) {
        if (p->rtt_min[1] == 0)
                return p->rtt_min[0];
        return MIN(p->rtt_min[0], p->rtt_min[1]);
}

static void update_rtt(Path *p, const MptKeepalive *ka, usec_t now) {
        usec_t sent, sample;

        if (ka->echo_seq == 0 || mpt_seq_diff(p->ka_seq, ka->echo_seq) < 0 ||
            mpt_seq_diff(p->ka_seq, ka->echo_seq) >= (int32_t) ELEMENTSOF(p->ka_sent))
                return;
        sent = p->ka_sent[ka->echo_seq % ELEMENTSOF(p->ka_sent)];
        if (sent == 0 || now < sent + ka->echo_delay_us)
                return;
        sample = MAX(now - sent - ka->echo_delay_us, (usec_t) 1);
        if (p->rtt_min_since == 0 || now >= p->rtt_min_since + PATH_RTT_MIN_WINDOW_USEC / 2) {
                p->rtt_min[1] = p->rtt_min[0];
                p->rtt_min[0] = sample;
                p->rtt_min_since = now;
        } else
                p->rtt_min[0] = MIN(p->rtt_min[0], sample);
        /* RFC 6298 smoothing. */
        if (p->rtt == 0) {
                p->rtt = MAX(sample, (usec_t) 1);
                p->rtt_var = sample / 2;
        } else {
                usec_t diff = p->rtt > sample ? p->rtt - sample : sample - p->rtt;
                p->rtt_var = (3 * p->rtt_var + diff) / 4;
                p->rtt = MAX((7 * p->rtt + sample) / 8, (usec_t) 1);
        }
        peer_rtt_changed(p->peer);
}

/* Loss is judged on keepalives, both directions, counted with exponential decay: each new count
 * weighs 1 - LOSS_DECAY, so the counts cover roughly the last 1 / (1 - LOSS_DECAY) = 20
 * keepalives (20 s at the default KeepaliveInterval=). A path is judged only once LOSS_SAMPLES_MIN
 * of them count in one direction (one lost of fewer says little), and a demoted path comes back
 * once its loss is below LossThreshold= / LOSS_RECOVER_DIV: the gap between the two keeps a path
 * whose loss hovers at the threshold from flapping. */
#define LOSS_DECAY 0.95
#define LOSS_SAMPLES_MIN 10.0
#define LOSS_RECOVER_DIV 2.0

static void update_loss(Path *p, const MptKeepalive *ka) {
        if (p->peer_seq != 0) {
                int32_t gap = mpt_seq_diff(ka->seq, p->peer_seq);
                p->rx_loss_lost = p->rx_loss_lost * LOSS_DECAY + (gap - 1);
                p->rx_loss_total = p->rx_loss_total * LOSS_DECAY + gap;
        }
        /* Ours, as the other end counts them: between two of its keepalives it saw echo_seq move
         * by `sent` of ours and rx_count move by `got`. */
        if (p->peer_echo_prev != 0 && ka->echo_seq != 0) {
                int32_t sent = mpt_seq_diff(ka->echo_seq, p->peer_echo_prev);
                int32_t got = mpt_seq_diff(ka->rx_count, p->peer_rx_count_prev);
                if (sent > 0 && got >= 0 && got <= sent) {
                        p->tx_loss_lost = p->tx_loss_lost * LOSS_DECAY + (sent - got);
                        p->tx_loss_total = p->tx_loss_total * LOSS_DECAY + sent;
                }
        }
        p->peer_echo_prev = ka->echo_seq;
        p->peer_rx_count_prev = ka->rx_count;
}

static double loss_of(double lost, double total) {
        return total >= 1.0 ? lost / total : 0.0;
}

static void update_demotion(Path *p) {
        uint32_t th = p->config->loss_threshold;
        double loss, limit;
        bool was = p->demoted;

        if (th == 0)
                return;
        if (p->rx_loss_total < LOSS_SAMPLES_MIN && p->tx_loss_total < LOSS_SAMPLES_MIN)
                return;
        loss = MAX(loss_of(p->rx_loss_lost, p->rx_loss_total), loss_of(p->tx_loss_lost, p->tx_loss_total));
        limit = th / 1000.0; /* LossThreshold= is in tenths of a percent (MPT_CONF_PERCENT) */
        if (!p->demoted && loss > limit)
                p->demoted = true;
        else if (p->demoted && loss < limit / LOSS_RECOVER_DIV)
                p->demoted = false;
        if (p->demoted != was) {
                if (p->demoted)
                        log_path_notice(p, "Loss %.1f%% exceeds LossThreshold=%.1f%%: demoted to a backup path.",
                                        loss * 100, th / 10.0);
                else
                        log_path_info(p, "Loss %.1f%% is below half of LossThreshold=: a normal path again.", loss * 100);
                (void) tunnel_publish(p->peer->tunnel);
        }
}

static void handle_peer_session(Path *p, uint32_t session) {
        Peer *peer = p->peer;
        Tunnel *t = peer->tunnel;

        if (session != p->peer_session) {
                p->peer_seq = 0;
                p->rx_loss_lost = p->rx_loss_total = 0;
                p->tx_loss_lost = p->tx_loss_total = 0;
                p->peer_echo_prev = p->peer_rx_count_prev = 0;
                p->ka_rx_count = 0; /* counts the keepalives of the peer's current session */
                p->peer_session = session;
        }
        if (peer->peer_session != 0 && session != peer->peer_session) {
                log_tunnel_notice(t, "The other end restarted (new session %08x); resetting the reorder buffer.",
                                  session);
                peer->peer_restarts++;
                peer_reset_reorder(peer);
        } else if (peer->peer_session == 0 && peer_reorder_has_delivered(peer)) {
                /* Data arrived before the first keepalive told us who sends it: it may belong to a
                 * predecessor that has since restarted. Start the sequence space over rather than
                 * dropping the new session's packets as stale until the buffer notices. */
                peer_reset_reorder(peer);
        }
        peer->peer_session = session;
}

void path_note_peer(Path *p, const ControlEvent *ev) {
        if (ev->peer_id == 0 || (p->peer_id == ev->peer_id && p->peer_epoch == ev->peer_epoch))
                return;
        p->peer_id = ev->peer_id;
        p->peer_epoch = ev->peer_epoch;
        (void) tunnel_publish(p->peer->tunnel); /* the workers follow it by these */
}

static void handle_keepalive(Path *p, const ControlEvent *ev) {
        Tunnel *t = p->peer->tunnel;
        const MptKeepalive *ka = &ev->ka;
        uint32_t seq_before = p->ka_seq;
        bool changed = false, answer = false;

        if (!addresses_match(t, &ka->src_tun, &ka->dst_tun)) {
                COUNTER_ADD(p->counters.drops[MPT_DROP_TUNNEL_MISMATCH], 1);
                return;
        }

        p->last_keepalive_rx = ev->when;
        if (locally_usable(p))
                arm_dead_timer(p, ev->when);
        path_note_peer(p, ev);

        if (ka->extended) {
                handle_peer_session(p, ka->session);
                if (p->peer_seq != 0 && mpt_seq_diff(ka->seq, p->peer_seq) <= 0)
                        return; /* old or repeated keepalive */
                update_loss(p, ka);
                p->peer_seq = ka->seq;
                p->peer_seq_time = ev->when;
                p->peer_token = ka->path_token;
                p->ka_rx_count++;
                update_rtt(p, ka, ev->when);
                update_demotion(p);

                if (p->peer_receive_weight != ka->receive_weight) {
                        uint32_t before = path_effective_weight(p);
                        p->peer_receive_weight = ka->receive_weight;
                        if (path_effective_weight(p) != before)
                                changed = true;
                }
                if (p->peer_flags != (ka->flags & (MPT_KA_FLAG_DOWN | MPT_KA_FLAG_RX_DEAD))) {
                        p->peer_flags = ka->flags & (MPT_KA_FLAG_DOWN | MPT_KA_FLAG_RX_DEAD);
                        changed = true;
                }
                /* The other end is rejoining and asks for an answer now, not at our next tick. */
                answer = (ka->flags & MPT_KA_FLAG_PROBE) && ev->when >= p->probe_answered + PROBE_ANSWER_INTERVAL_USEC;
        } else {
                p->ka_rx_count++;
                if (p->peer_flags) {
                        p->peer_flags = 0;
                        changed = true;
                }
        }

        if ((p->dead || p->probing) && locally_usable(p)) {
                /* Back: what was missed while it was out says nothing about the path now. */
                p->dead = p->probing = false;
                p->rx_loss_lost = p->rx_loss_total = 0;
                p->tx_loss_lost = p->tx_loss_total = 0;
                if (p->demoted) {
                        p->demoted = false;
                        log_path_info(p, "Rejoined: loss measurement starts over, no longer demoted.");
                }
                changed = true;
        }
        if (changed) {
                PathState before = p->state, after = compute_state(p);
                path_update_state(p, after == PATH_STATE_PEER_DOWN ? peer_reason(p)
                                     : before == PATH_STATE_DEAD   ? "keepalives arrive again"
                                     : before == PATH_STATE_PROBING ? "the other end answers"
                                                                    : NULL);
                if (p->state == before)
                        (void) tunnel_publish(t); /* the weight changed */
        }
        /* Answer after our own state is up to date, unless path_update_state() just sent one. */
        if (answer && p->ka_seq == seq_before) {
                p->probe_answered = ev->when;
                send_keepalive(p);
        }
}

static void handle_path_status(Tunnel *t, const ControlEvent *ev) {
        Path *p;

        if (!addresses_match(t, &ev->ps.src_tun, &ev->ps.dst_tun) || ev->ps.session != t->peers[0]->peer_session)
                return;
        p = tunnel_path_by_peer_token(t, ev->ps.path_token);
        if (!p)
                return;
        if (p->peer_flags == (ev->ps.flags & (MPT_KA_FLAG_DOWN | MPT_KA_FLAG_RX_DEAD)))
                return;
        p->peer_flags = ev->ps.flags & (MPT_KA_FLAG_DOWN | MPT_KA_FLAG_RX_DEAD);
        path_update_state(p, peer_reason(p));
}

static void handle_endpoint(Path *p, const ControlEvent *ev) {
        char a[MPT_ADDRESS_STRLEN], b[MPT_ADDRESS_STRLEN];
        MptAddress addr;
        uint16_t port;

        if (p->config->pin_remote || sockaddr_to_address(&ev->source, &addr, &port) < 0)
                return;
        if (addr.family != path_config_family(p->config))
                return;
        {
                MptAddress cur;
                uint16_t cur_port;
                if (sockaddr_to_address(&p->remote, &cur, &cur_port) >= 0 && address_equal(&cur, &addr) &&
                    cur_port == port)
                        return;
        }
        if (p->remote_len == 0) {
                /* A listening path: the other end reached it (what came authenticated). */
                log_path_notice(p, "The other end reached it from %s; sending there from now on.",
                                sockaddr_to_string(&ev->source, b));
                p->remote_len = sockaddr_from_address(&addr, port, p->ifindex, &p->remote);
                p->remote_changes++;
                p->dead = p->probing = false;
                arm_dead_timer(p, ev->when);
                path_update_state(p, NULL);
                return;
        }
        log_path_notice(p, "The other end moved from %s to %s; following it.", sockaddr_to_string(&p->remote, a),
                        sockaddr_to_string(&ev->source, b));
        p->remote_len = sockaddr_from_address(&addr, port, p->ifindex, &p->remote);
        p->remote_changes++;
        (void) tunnel_publish(p->peer->tunnel);
}

void path_handle_event(Path *p, const ControlEvent *ev) {
        switch (ev->kind) {
        case CONTROL_EVENT_KEEPALIVE:
                handle_keepalive(p, ev);
                break;
        case CONTROL_EVENT_PATH_STATUS:
                handle_path_status(p->peer->tunnel, ev);
                break;
        case CONTROL_EVENT_ENDPOINT:
                handle_endpoint(p, ev);
                break;
        case CONTROL_EVENT_FEEDBACK:
        case CONTROL_EVENT_HANDSHAKE:
        case CONTROL_EVENT_SESSION:
                break; /* the tunnel's (feedback_handle(), session.c) */
        }
}

Path *tunnel_path_by_peer_token(Tunnel *t, uint32_t token) {
        Peer *peer = t->peers[0];

        if (token == 0)
                return NULL;
        for (size_t i = 0; i < peer->n_paths; i++)
                if (peer->paths[i]->peer_token == token)
                        return peer->paths[i];
        return NULL;
}

int path_set_admin(Path *p, bool down) {
        if (p->admin_down == down)
                return 0;
        p->admin_down = down;
        path_update_state(p, down ? "taken down by mptctl" : "brought up by mptctl");
        /* The peer learns it from the next keepalive; send one now. */
        if (p->config->keepalive_interval > 0)
                send_keepalive(p);
        return 1;
}

int path_set_weight(Path *p, uint32_t weight) {
        p->weight_runtime = weight;
        p->weight_runtime_set = true;
        log_path_info(p, "Weight set to %u by mptctl%s.", weight, weight == 0 ? " (backup)" : "");
        return tunnel_publish(p->peer->tunnel);
}

/* A reload (reload.c) gave the path a new configuration (same name and index): what mptd derived
 * from the old one follows. The remote is the configured one again only where Remote= or the
 * remote port changed (otherwise the path keeps following the other end); the timers start over
 * with new intervals; the interface, local address and route are looked at again as after a
 * kernel event. */
int path_apply_config(Path *p, const MptPathConfig *old, bool remote_changed) {
        const MptPathConfig *c = p->config;
        int r;

        p->name = c->name;
        if (remote_changed) {
                p->remote_port = path_config_remote_port(p->peer->tunnel->profile, c);
                p->remote_len = sockaddr_from_address(&c->remote, p->remote_port, 0, &p->remote);
                reset_rtt(p);
        }
        if (old->keepalive_interval != c->keepalive_interval || old->dead_time != c->dead_time) {
                p->keepalive_timer = sd_event_source_disable_unref(p->keepalive_timer);
                p->dead_timer = sd_event_source_disable_unref(p->dead_timer);
                p->dead = false;
                p->probing = false;
                r = start_timers(p, now_usec());
                if (r < 0)
                        return r;
        }
        r = path_refresh(p, false);
        if (r < 0)
                return r;
        path_update_state(p, p->state_reason);
        return 0;
}

/* A reload removed the path (the last one): it stops sending and receiving; its sockets close
 * once no worker can use them. The caller drops it from the tunnel and frees it. */
void path_retire(Path *p) {
        p->keepalive_timer = sd_event_source_disable_unref(p->keepalive_timer);
        p->dead_timer = sd_event_source_disable_unref(p->dead_timer);
        p->retry_timer = sd_event_source_disable_unref(p->retry_timer);
        unbind(p);
        if (p->peer->reorder_enabled) {
                rx_shared_path_down(p->peer->rx, p->index);
                /* A path added later in its place starts without the delay this one waited. */
                rx_shared_set_path_extra(p->peer->rx, p->index, 0);
        }
        log_path_info(p, "Removed by a reload.");
}
