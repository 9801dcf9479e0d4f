/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "tunnel.h"
#include "worker.h"

#define SOCKET_BUFFER_SIZE (4 * 1024 * 1024)

static int pick_local_address(Path *p) {
        _cleanup_free_ RtnlAddress *addrs = NULL;
        const RtnlAddress *best = NULL;
        int family = p->config->remote.family;
        size_t n = 0;
        int r;

        r = rtnl_addr_list(p->tunnel->rtnl, p->ifindex, family, &addrs, &n);
        if (r < 0)
                return log_path_error_errno(p, r, "Failed to list addresses of '%s': %m", p->config->interface);
        for (size_t i = 0; i < n; i++) {
                const RtnlAddress *a = &addrs[i];
                if (a->flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED))
                        continue;
                /* Prefer global addresses, then anything usable (link-local with a scope). */
                if (!best || (best->scope != RT_SCOPE_UNIVERSE && a->scope == RT_SCOPE_UNIVERSE) ||
                    ((best->flags & IFA_F_DEPRECATED) && !(a->flags & IFA_F_DEPRECATED) &&
                     a->scope == best->scope))
                        best = a;
        }
        if (!best)
                return log_path_error_errno(p, SYNTHETIC_ERRNO(EADDRNOTAVAIL),
                                            "Interface '%s' has no %s address; set LocalAddress= or configure one.",
                                            p->config->interface, family == AF_INET ? "IPv4" : "IPv6");
        p->local = best->address;
        return 0;
}

static int find_interface_of_address(Path *p) {
        _cleanup_free_ RtnlAddress *addrs = NULL;
        size_t n = 0;
        int r;

        r = rtnl_addr_list(p->tunnel->rtnl, 0, p->local.family, &addrs, &n);
        if (r < 0)
                return log_path_error_errno(p, r, "Failed to list addresses: %m");
        for (size_t i = 0; i < n; i++)
                if (address_equal(&addrs[i].address, &p->local)) {
                        p->ifindex = addrs[i].ifindex;
                        return 0;
                }
        {
                char buf[MPT_ADDRESS_STRLEN];
                return log_path_error_errno(p, SYNTHETIC_ERRNO(EADDRNOTAVAIL),
                                            "LocalAddress=%s is not an address of this host.",
                                            address_to_string(&p->local, buf));
        }
}

int path_new(Tunnel *t, unsigned index, const MptPathConfig *config, Path **ret) {
        Path *p;
        RtnlLink link;
        int r;

        p = calloc(1, sizeof(Path));
        if (!p)
                return log_oom();
        p->tunnel = t;
        p->index = index;
        p->config = config;
        p->name = config->name;
        p->remote_port = path_config_remote_port(t->profile, config);
        p->remote_len = sockaddr_from_address(&config->remote, p->remote_port, 0, &p->remote);
        *ret = p; /* owned by the tunnel from here on, also on failure */

        if (config->interface) {
                r = rtnl_link_get_by_name(t->rtnl, config->interface, &link);
                if (r == -ENODEV)
                        return log_path_error_errno(p, r, "Interface '%s' does not exist.", config->interface);
                if (r < 0)
                        return log_path_error_errno(p, r, "Failed to look up interface '%s': %m", config->interface);
                p->ifindex = link.ifindex;
                p->link_mtu = link.mtu;
                if (streq(config->interface, t->name))
                        return log_path_error_errno(p, SYNTHETIC_ERRNO(ELOOP),
                                                    "Interface '%s' is the tunnel itself.", config->interface);
        }

        if (address_is_set(&config->local))
                p->local = config->local;
        else {
                r = pick_local_address(p);
                if (r < 0)
                        return r;
        }
        if (!config->interface) {
                r = find_interface_of_address(p);
                if (r < 0)
                        return r;
                if (rtnl_link_get_by_index(t->rtnl, p->ifindex, &link) >= 0)
                        p->link_mtu = link.mtu;
        }
        if (p->remote.sa.sa_family == AF_INET6 && address_is_link_local(&config->remote))
                p->remote.in6.sin6_scope_id = (uint32_t) p->ifindex;

        p->state = PATH_STATE_UP;
        return 0;
}

Path *path_free(Path *p) {
        if (!p)
                return NULL;
        sd_event_source_disable_unref(p->keepalive_timer);
        sd_event_source_disable_unref(p->dead_timer);
        if (p->fds) {
                for (unsigned i = 0; i < p->tunnel->n_workers; i++)
                        safe_close(p->fds[i]);
                free(p->fds);
        }
        return mfree(p);
}

static int set_buffer(int fd, int force_opt, int opt, int size) {
        if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof size) >= 0)
                return 0;
        return setsockopt(fd, SOL_SOCKET, opt, &size, sizeof size) < 0 ? -errno : 0;
}

static int open_socket(Path *p, bool reuseport) {
        _cleanup_close_ int fd = -EBADF;
        const MptPathConfig *c = p->config;
        MptSockaddr sa;
        socklen_t len;
        int one = 1;

        fd = socket(p->local.family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
        if (fd < 0)
                return -errno;
        if (p->local.family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0)
                return -errno;
        if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
                return -errno;
        if (c->interface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, c->interface, strlen(c->interface)) < 0)
                return -errno;
        if (reuseport) {
                (void) set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, SOCKET_BUFFER_SIZE);
                (void) set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, SOCKET_BUFFER_SIZE);
        }
        len = sockaddr_from_address(&p->local, p->tunnel->profile->tunnel.local_port, p->ifindex, &sa);
        if (bind(fd, &sa.sa, len) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int path_open_sockets(Path *p) {
        Tunnel *t = p->tunnel;
        char buf[MPT_ADDRESS_STRLEN];
        MptSockaddr sa;
        int r;

        sockaddr_from_address(&p->local, t->profile->tunnel.local_port, p->ifindex, &sa);

        /* Paths that share a local socket address share the socket group that the first of them
         * opened (the receive side tells them apart by source address). */
        for (unsigned i = 0; i < p->index; i++) {
                Path *o = t->paths[i];
                if (o->fds && o->ifindex == p->ifindex && address_equal(&o->local, &p->local)) {
                        p->fds = calloc(t->n_workers, sizeof(int));
                        if (!p->fds)
                                return log_oom();
                        for (unsigned w = 0; w < t->n_workers; w++) {
                                p->fds[w] = fcntl(o->fds[w], F_DUPFD_CLOEXEC, 3);
                                if (p->fds[w] < 0)
                                        return log_path_error_errno(p, errno, "Failed to duplicate socket: %m");
                        }
                        return 0;
                }
        }

        /* SO_REUSEPORT lets our workers share the address, but would also let another process of
         * the same user share it silently. Bind once without it to find out whether the port is
         * free. */
        r = open_socket(p, false);
        if (r < 0) {
                const char *hint = "";
                if (r == -EADDRINUSE)
                        hint = " (another mptd or another program uses this port)";
                else if (r == -EADDRNOTAVAIL)
                        hint = " (the address is not configured on this host)";
                else if (r == -EPERM)
                        hint = " (binding to an interface needs CAP_NET_RAW)";
                return log_path_error_errno(p, r, "Cannot bind %s%s%s: %m%s", sockaddr_to_string(&sa, buf),
                                            p->config->interface ? " on " : "", strempty(p->config->interface), hint);
        }
        safe_close(r);

        p->fds = calloc(t->n_workers, sizeof(int));
        if (!p->fds)
                return log_oom();
        for (unsigned w = 0; w < t->n_workers; w++)
                p->fds[w] = -EBADF;
        for (unsigned w = 0; w < t->n_workers; w++) {
                r = open_socket(p, true);
                if (r < 0)
                        return log_path_error_errno(p, r, "Cannot bind %s: %m", sockaddr_to_string(&sa, buf));
                p->fds[w] = r;
        }
        log_path_info(p, "Bound %s%s%s, sending to %s.", sockaddr_to_string(&sa, buf),
                      p->config->interface ? " on " : "", strempty(p->config->interface),
                      sockaddr_to_string(&p->remote, (char[MPT_ADDRESS_STRLEN]) {}));
        return 0;
}

static void notify_status(Tunnel *t) {
        (void) sd_notifyf(false, "STATUS=%s: %u of %zu paths up", t->name, t->paths_up, t->n_paths);
}

void path_update_state(Path *p, const char *reason) {
        Tunnel *t = p->tunnel;
        PathState s;

        if (p->admin_down)
                s = PATH_STATE_ADMIN_DOWN;
        else if (p->dead)
                s = PATH_STATE_DEAD;
        else if (p->peer_flags & (MPT_KA_FLAG_DOWN | MPT_KA_FLAG_RX_DEAD))
                s = PATH_STATE_PEER_DOWN;
        else
                s = PATH_STATE_UP;

        if (s == p->state)
                return;
        if (s == PATH_STATE_UP)
                log_path_info(p, "Up (was %s)%s%s.", path_state_to_string(p->state), reason ? ": " : "", strempty(reason));
        else
                log_path_notice(p, "%s%s%s.", path_state_to_string(s), reason ? ": " : "", strempty(reason));
        p->state = s;
        p->state_since = now_usec();

        if (s != PATH_STATE_UP && t->reorder_enabled) {
                /* Its packets stop: it must not hold back the receive side's loss inference. */
                pthread_mutex_lock(&t->reorder_lock);
                reorder_path_inactive(t->reorder, p->index);
                pthread_mutex_unlock(&t->reorder_lock);
        }
        (void) tunnel_publish(t);
        notify_status(t);
}

static void send_keepalive(Path *p) {
        Tunnel *t = p->tunnel;
        uint8_t buf[MPT_KEEPALIVE_EXT_SIZE];
        usec_t now = now_usec();
        MptKeepalive ka = {
                .ip_version = t->ip_version,
                .src_tun = t->ka_src,
                .dst_tun = t->ka_dst,
                .extended = true,
                .receive_weight = (uint16_t) p->config->receive_weight,
                .session = t->session,
                .seq = ++p->ka_seq,
                .echo_seq = p->peer_seq,
                .rx_count = p->ka_rx_count,
        };
        size_t len;

        if (p->ka_seq == 0)
                ka.seq = p->ka_seq = 1;
        if (p->admin_down)
                ka.flags |= MPT_KA_FLAG_DOWN;
        if (p->dead)
                ka.flags |= MPT_KA_FLAG_RX_DEAD;
        if (p->peer_seq != 0)
                ka.echo_delay_us = (uint32_t) MIN(now - p->peer_seq_time, (usec_t) UINT32_MAX);
        len = mpt_keepalive_encode(buf, sizeof buf, &ka);
        p->ka_sent[ka.seq % ELEMENTSOF(p->ka_sent)] = now;
        if (sendto(p->fds[0], buf, len, MSG_DONTWAIT, &p->remote.sa, p->remote_len) < 0) {
                COUNTER_ADD(p->counters.drops[errno == EAGAIN || errno == ENOBUFS ? MPT_DROP_SEND_BUSY
                                                                                  : MPT_DROP_SEND_ERROR],
                            1);
                return;
        }
        COUNTER_ADD(p->counters.keepalives_tx, 1);
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

        if (p->dead)
                return 0;
        p->dead = true;
        path_update_state(p, p->last_keepalive_rx == 0 ? "no keepalive received since start"
                                                       : "no keepalive for longer than the dead time");
        log_path_debug(p, "Dead time %s expired.", format_duration(p->config->dead_time, buf, sizeof buf));
        /* Tell the peer at once rather than at the next tick. */
        if (p->config->keepalive_interval > 0)
                send_keepalive(p);
        return 0;
}

int path_start(Path *p) {
        Tunnel *t = p->tunnel;
        usec_t now = now_usec();
        int r;

        p->state_since = now;
        if (p->config->keepalive_interval == 0)
                return 0;

        r = sd_event_add_time(t->event, &p->keepalive_timer, CLOCK_MONOTONIC, now, USEC_PER_MSEC,
                              on_keepalive_timer, p);
        if (r < 0)
                return log_path_error_errno(p, r, "Failed to add keepalive timer: %m");
        (void) sd_event_source_set_enabled(p->keepalive_timer, SD_EVENT_ON);

        if (p->config->dead_time > 0) {
                /* Start-up grace: the path starts up and gets one dead time to hear from the peer. */
                r = sd_event_add_time(t->event, &p->dead_timer, CLOCK_MONOTONIC, now + p->config->dead_time,
                                      USEC_PER_MSEC, on_dead_timer, p);
                if (r < 0)
                        return log_path_error_errno(p, r, "Failed to add dead timer: %m");
        }
        return 0;
}

static bool keepalive_addresses_match(Tunnel *t, const MptKeepalive *ka) {
        /* Only what we know can be compared: the peer's tunnel address (Peer=) against the frame's
         * source, and our own addresses against its destination. */
        if (address_is_set(&ka->src_tun) && address_is_set(&t->ka_dst) && ka->src_tun.family == t->ka_dst.family &&
            !address_equal(&ka->src_tun, &t->ka_dst))
                return false;
        if (address_is_set(&ka->dst_tun)) {
                const MptPrefixList *l = &t->profile->tunnel.addresses;
                bool any = false, match = false;
                for (size_t i = 0; i < l->n; i++) {
                        MptAddress a = { .family = l->items[i].family, .addr = l->items[i].addr };
                        if (a.family != ka->dst_tun.family)
                                continue;
                        any = true;
                        if (address_equal(&a, &ka->dst_tun))
                                match = true;
                }
                if (any && !match)
                        return false;
        }
        return true;
}

static void update_rtt(Path *p, const MptKeepalive *ka, usec_t now) {
        usec_t sent, sample;

        if (ka->echo_seq == 0 || mpt_seq_diff(p->ka_seq, ka->echo_seq) < 0 ||
            mpt_seq_diff(p->ka_seq, ka->echo_seq) >= (int32_t) ELEMENTSOF(p->ka_sent))
                return;
        sent = p->ka_sent[ka->echo_seq % ELEMENTSOF(p->ka_sent)];
        if (sent == 0 || now < sent + ka->echo_delay_us)
                return;
        sample = now - sent - ka->echo_delay_us;
        /* RFC 6298 smoothing. */
        if (p->rtt == 0) {
                p->rtt = sample;
                p->rtt_var = sample / 2;
        } else {
                usec_t diff = p->rtt > sample ? p->rtt - sample : sample - p->rtt;
                p->rtt_var = (3 * p->rtt_var + diff) / 4;
                p->rtt = (7 * p->rtt + sample) / 8;
        }
}

void path_handle_keepalive(Path *p, const KeepaliveEvent *ev) {
        Tunnel *t = p->tunnel;
        const MptKeepalive *ka = &ev->ka;
        bool changed = false;

        if (!keepalive_addresses_match(t, ka)) {
                COUNTER_ADD(p->counters.drops[MPT_DROP_TUNNEL_MISMATCH], 1);
                return;
        }

        p->last_keepalive_rx = ev->when;
        if (p->dead_timer)
                (void) sd_event_source_set_time(p->dead_timer, ev->when + p->config->dead_time),
                        (void) sd_event_source_set_enabled(p->dead_timer, SD_EVENT_ONESHOT);

        if (ka->extended) {
                if (ka->session != p->peer_session) {
                        p->peer_seq = 0;
                        p->rx_loss_lost = p->rx_loss_total = 0;
                        p->peer_session = ka->session;
                }
                if (t->peer_session != 0 && ka->session != t->peer_session) {
                        log_tunnel_notice(t, "The other end restarted (new session %08x); resetting the reorder buffer.",
                                          ka->session);
                        t->peer_restarts++;
                        tunnel_reset_reorder(t);
                }
                t->peer_session = ka->session;

                if (p->peer_seq != 0) {
                        int32_t gap = mpt_seq_diff(ka->seq, p->peer_seq);
                        if (gap <= 0)
                                return; /* old or repeated keepalive */
                        p->rx_loss_lost = p->rx_loss_lost * 0.95 + (gap - 1);
                        p->rx_loss_total = p->rx_loss_total * 0.95 + gap;
                }
                p->peer_seq = ka->seq;
                p->peer_seq_time = ev->when;
                p->ka_rx_count++;
                update_rtt(p, ka, ev->when);

                if (p->peer_receive_weight != ka->receive_weight) {
                        uint32_t before = path_effective_weight(p);
                        p->peer_receive_weight = ka->receive_weight;
                        if (path_effective_weight(p) != before)
                                changed = true;
                }
                if (p->peer_flags != ka->flags) {
                        p->peer_flags = ka->flags;
                        changed = true;
                }
        } else {
                p->ka_rx_count++;
                if (p->peer_flags) {
                        p->peer_flags = 0;
                        changed = true;
                }
        }

        if (p->dead) {
                p->dead = false;
                changed = true;
        }
        if (changed) {
                PathState before = p->state;
                path_update_state(p, p->state == PATH_STATE_DEAD ? "keepalives arrive again"
                                     : (p->peer_flags & MPT_KA_FLAG_DOWN) ? "the other end took it down"
                                     : (p->peer_flags & MPT_KA_FLAG_RX_DEAD) ? "the other end hears nothing on it"
                                                                             : NULL);
                if (p->state == before)
                        (void) tunnel_publish(t); /* the weight changed */
        }
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
        return tunnel_publish(p->tunnel);
}
