/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpt-pathemu: a user-space path emulator for the lab, because the lab's kernels have no netem.
 *
 *   mpt-pathemu [--stats FILE] IFACE_A IFACE_B SPEC
 *   mpt-pathemu --check [--frame BYTES] SPEC
 *
 * It runs in a router namespace between the two ends of one path and is an Ethernet "wire"
 * between its two interfaces (no addresses, no IP forwarding): every frame that arrives on
 * IFACE_A goes out on IFACE_B after the a->b direction's queue, rate, loss and delay (see
 * pathemu-link.h for the model, pathemu-spec.h for SPEC), and the other way round. The
 * bottleneck queue is here, not at the sending end: a sender's socket sees its frames leave at
 * once, as on a real link whose queue sits in a router.
 *
 * I/O, and why: one AF_PACKET socket per interface with
 *   - a TPACKET_V2 receive ring (PACKET_MMAP): the kernel writes frames into shared memory and
 *     one epoll wake-up collects all that arrived, with no system call per frame. (TPACKET_V3
 *     hands over blocks of frames only when a block fills or its timer, a millisecond or more,
 *     expires: that would add its own delay and jitter.)
 *   - sendmmsg() for releases, up to 64 frames per call, with PACKET_QDISC_BYPASS (the router
 *     side needs no qdisc) and PACKET_IGNORE_OUTGOING (we never see our own frames).
 *   - PACKET_VNET_HDR both ways: a frame whose checksum the sender left to "hardware"
 *     (veth keeps CHECKSUM_PARTIAL) comes with the offsets to finish it, and goes out with them,
 *     so the receiving end accepts it. A frame is copied once, from the ring into this direction's
 *     buffer (pathemu-link.c), and the kernel copies it once more on sending.
 * NFQUEUE with a verdict timer wheel was the alternative: it needs an IP hop in the router
 * (different addressing at the ends), libnetfilter_queue or hand-made netlink, and a verdict
 * per packet; a wire keeps the lab's addressing and links only libc.
 *
 * Segmentation: rate and loss work on real frames, so GSO super-frames must not reach us. The
 * lab (lab_emu_topology in tests/lib/netns.sh) turns TSO, USO and the other segmentation
 * offloads off on the ends' interfaces, leaving GSO on: the stack segments a 64 KiB TCP or UDP
 * GSO send in software just before the veth, like a NIC without TSO, and mptd's UDP GSO keeps
 * working. GRO stays off on our interfaces (veth's default) so frames are not merged again. A
 * GSO frame or one longer than the MTU that still arrives is dropped and counted (oversize),
 * with one warning.
 *
 * Timing: the event loop sleeps in epoll_pwait2() until the next frame is due (nanosecond
 * timeout, timer slack 1 ns) or a frame arrives; it never busy-waits. Wake-ups are at least
 * EMU_MIN_SLEEP_NS apart, so at high rates releases go out in small batches, each frame at most
 * that much late; serialisation uses a virtual clock, so the rate does not suffer from it.
 * Arrival times come from the kernel's receive timestamps.
 *
 * Counters (per direction: received, forwarded, dropped by the queue, lost, ...) go to the stats
 * file at start (the lab waits for it: the emulator is ready), on SIGUSR1 and at exit, replaced
 * atomically; each write increments "generation". SIGUSR2 restarts the traces at phase 0.
 * SIGTERM or SIGINT ends it. Exit status: 0, 1 on a run-time failure, 2 for a bad spec or usage.
 */

#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>

#include "pathemu-link.h"
#include "pathemu-spec.h"

#define EMU_MIN_SLEEP_NS (20 * EMU_NSEC_PER_USEC)
#define EMU_TX_BATCH 64
#define EMU_RX_RING_BYTES (4U << 20)
#define EMU_RX_BLOCK_BYTES (64U << 10)
#define EMU_SNDBUF (4 << 20)

static const char *arg_stats = NULL;
static bool arg_check = false;
static unsigned arg_frame = EMU_FRAME_DEFAULT;

typedef struct Port {
        const char *ifname;
        int ifindex;
        int fd;
        uint8_t *ring;
        size_t ring_bytes;
        unsigned frame_size, n_frames, next;
        unsigned mtu;
} Port;

typedef struct Dir {
        EmuLink *link;
        Port *in, *out;
        uint64_t oversize_drops, oversize_bytes; /* GSO or longer than the MTU */
        uint64_t kernel_drops;          /* the receive ring was full */
        uint64_t tx_errors, tx_error_bytes; /* sendmmsg() refused the frame */
        bool warned_oversize, warned_tx;
} Dir;

typedef struct Emu {
        EmuSpec spec;
        Port port[2];
        Dir dir[_EMU_DIR_MAX];
        unsigned max_frame;
        uint64_t seed;
        uint64_t start, trace_start;
        uint64_t generation;
} Emu;

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * EMU_NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* The interface's socket, set up for a receive ring (port_start() adds it once the largest
 * frame is known from the MTUs). */
static int port_open(Port *p, const char *ifname) {
        struct ifreq ifr = {};
        int one = 1, version = TPACKET_V2, sndbuf = EMU_SNDBUF, ifindex;
        _cleanup_close_ int fd = -EBADF;

        if (strlen(ifname) >= IFNAMSIZ)
                return -ENAMETOOLONG;
        ifindex = (int) if_nametoindex(ifname);
        if (ifindex == 0)
                return -errno;

        /* Protocol 0 receives nothing until bind() names the interface (and ETH_P_ALL). */
        fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void) strscpy_ok(ifr.ifr_name, sizeof(ifr.ifr_name), ifname);
        if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
                return -errno;

        if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
            setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) < 0 ||
            setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0 ||
            setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
        *p = (Port) {
                .ifname = ifname,
                .ifindex = ifindex,
                .mtu = (unsigned) ifr.ifr_mtu,
                .fd = TAKE_FD(fd),
                .ring = MAP_FAILED,
        };
        return 0;
}

/* The receive ring, for frames of up to MAX_FRAME bytes, then bind and promiscuous mode. */
static int port_start(Port *p, unsigned max_frame) {
        struct tpacket_req req = {};
        struct sockaddr_ll sll = {
                .sll_family = AF_PACKET,
                .sll_protocol = htons(ETH_P_ALL),
                .sll_ifindex = p->ifindex,
        };
        struct packet_mreq mr = { .mr_ifindex = p->ifindex, .mr_type = PACKET_MR_PROMISC };
        unsigned fs = 2048;

        /* tpacket2_hdr, sockaddr_ll, the vnet header and alignment fit in 128 bytes. */
        while (fs < max_frame + 128)
                fs <<= 1;
        p->frame_size = fs;
        req.tp_frame_size = fs;
        req.tp_block_size = MAX(EMU_RX_BLOCK_BYTES, fs);
        req.tp_block_nr = MAX(EMU_RX_RING_BYTES / req.tp_block_size, 4U);
        req.tp_frame_nr = req.tp_block_size / fs * req.tp_block_nr;
        p->n_frames = req.tp_frame_nr;
        if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
                return -errno;
        p->ring_bytes = (size_t) req.tp_block_size * req.tp_block_nr;
        p->ring = mmap(NULL, p->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
        if (p->ring == MAP_FAILED)
                return -errno;
        if (bind(p->fd, (struct sockaddr *) &sll, sizeof(sll)) < 0)
                return -errno;
        /* Frames for the other end's MAC address are ours too (dropped when the socket closes). */
        if (setsockopt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
                return -errno;
        return 0;
}

static void port_close(Port *p) {
        if (p->ring != MAP_FAILED && p->ring)
                (void) munmap(p->ring, p->ring_bytes);
        p->ring = MAP_FAILED;
        p->fd = safe_close(p->fd);
}

/* Everything the receive ring holds for direction D, at most one ring's worth per call. */
static void dir_receive(Emu *e, Dir *d, uint64_t mono, uint64_t real) {
        Port *p = d->in;

        for (unsigned n = 0; n < p->n_frames; n++) {
                struct tpacket2_hdr *h = (struct tpacket2_hdr *) (void *) (p->ring + (size_t) p->next * p->frame_size);
                const struct virtio_net_hdr *vh;
                const uint8_t *data;
                uint64_t ts, arrival;

                if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
                        break;
                data = (const uint8_t *) h + h->tp_mac;
                vh = (const struct virtio_net_hdr *) (const void *) (data - sizeof(struct virtio_net_hdr));
                if (h->tp_snaplen < h->tp_len || h->tp_len > e->max_frame || vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
                        d->oversize_drops++;
                        d->oversize_bytes += h->tp_len;
                        if (!d->warned_oversize) {
                                fprintf(stderr, "mpt-pathemu: %s: dropping a %u-byte %sframe (limit %u): turn "
                                        "segmentation offloads off at the ends (ethtool -K DEV tso off "
                                        "tx-udp-segmentation off ...); counted as oversize, not warned again\n",
                                        p->ifname, h->tp_len, vh->gso_type != VIRTIO_NET_HDR_GSO_NONE ? "GSO " : "",
                                        e->max_frame);
                                d->warned_oversize = true;
                        }
                } else {
                        /* The kernel's receive time (wall clock) on our monotonic clock: how long
                         * ago it was, trusted when it is within a second. */
                        ts = (uint64_t) h->tp_sec * EMU_NSEC_PER_SEC + h->tp_nsec;
                        arrival = ts <= real && real - ts < EMU_NSEC_PER_SEC ? mono - (real - ts) : mono;
                        (void) emu_link_arrive(d->link, arrival, vh, sizeof(*vh), data, h->tp_len);
                }
                __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
                p->next = (p->next + 1) % p->n_frames;
        }
}

static void dir_send(Dir *d, uint64_t now) {
        struct mmsghdr msgs[EMU_TX_BATCH];
        struct iovec iov[EMU_TX_BATCH][2];

        for (;;) {
                const EmuFrame *f;
                unsigned n = 0, i = 0;

                while (n < EMU_TX_BATCH && (f = emu_link_pop(d->link, now))) {
                        iov[n][0] = (struct iovec) { (void *) f->meta, f->meta_len };
                        iov[n][1] = (struct iovec) { (void *) f->data, f->len };
                        msgs[n] = (struct mmsghdr) { .msg_hdr = { .msg_iov = iov[n], .msg_iovlen = 2 } };
                        n++;
                }
                while (i < n) {
                        int r = sendmmsg(d->out->fd, msgs + i, n - i, MSG_DONTWAIT);

                        if (r > 0) {
                                i += (unsigned) r;
                                continue;
                        }
                        if (r < 0 && errno == EINTR)
                                continue;
                        /* The frame at i was refused (the peer's backlog was full, ...): count
                         * it as lost and go on with the next. */
                        if (!d->warned_tx) {
                                fprintf(stderr, "mpt-pathemu: %s: sending failed: %s; counted as tx_errors, "
                                        "not warned again\n", d->out->ifname, strerror(errno));
                                d->warned_tx = true;
                        }
                        d->tx_errors++;
                        d->tx_error_bytes += iov[i][1].iov_len;
                        i++;
                }
                if (n < EMU_TX_BATCH)
                        break;
        }
}

static void collect_kernel_drops(Emu *e) {
        for (EmuDir i = 0; i < _EMU_DIR_MAX; i++) {
                struct tpacket_stats st = {};
                socklen_t len = sizeof(st);

                /* Reading resets them: accumulate. */
                if (getsockopt(e->dir[i].in->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
                        e->dir[i].kernel_drops += st.tp_drops;
        }
}

static void write_counters(Emu *e, FILE *f, uint64_t now) {
        static const char *const prefix[] = { "ab", "ba" };

        fprintf(f, "generation %" PRIu64 "\n", e->generation);
        fprintf(f, "seed %" PRIu64 "\n", e->seed);
        fprintf(f, "uptime_ms %" PRIu64 "\n", (now - e->start) / EMU_NSEC_PER_MSEC);
        fprintf(f, "trace_ms %" PRIu64 "\n", (now - e->trace_start) / EMU_NSEC_PER_MSEC);
        for (EmuDir i = 0; i < _EMU_DIR_MAX; i++) {
                const Dir *d = &e->dir[i];
                const EmuCounters *c = emu_link_counters(d->link);
                const char *x = prefix[i];

                fprintf(f, "%s_phase %zu\n", x, emu_link_phase(d->link, now));
                fprintf(f, "%s_rx_packets %" PRIu64 "\n", x, c->rx_packets + d->oversize_drops);
                fprintf(f, "%s_rx_bytes %" PRIu64 "\n", x, c->rx_bytes + d->oversize_bytes);
                fprintf(f, "%s_forwarded_packets %" PRIu64 "\n", x, c->released_packets - d->tx_errors);
                fprintf(f, "%s_forwarded_bytes %" PRIu64 "\n", x, c->released_bytes - d->tx_error_bytes);
                fprintf(f, "%s_queue_drops %" PRIu64 "\n", x, c->queue_drops);
                fprintf(f, "%s_queue_drop_bytes %" PRIu64 "\n", x, c->queue_drop_bytes);
                fprintf(f, "%s_loss_drops %" PRIu64 "\n", x, c->loss_drops);
                fprintf(f, "%s_loss_drop_bytes %" PRIu64 "\n", x, c->loss_drop_bytes);
                fprintf(f, "%s_loss_bursts %" PRIu64 "\n", x, c->loss_bursts);
                fprintf(f, "%s_overflow_drops %" PRIu64 "\n", x, c->overflow_drops);
                fprintf(f, "%s_oversize_drops %" PRIu64 "\n", x, d->oversize_drops);
                fprintf(f, "%s_kernel_drops %" PRIu64 "\n", x, d->kernel_drops);
                fprintf(f, "%s_tx_errors %" PRIu64 "\n", x, d->tx_errors);
                fprintf(f, "%s_queue_bytes %" PRIu64 "\n", x, c->queue_bytes);
                fprintf(f, "%s_queue_max_bytes %" PRIu64 "\n", x, c->queue_max_bytes);
        }
}

/* The stats file, replaced atomically (readers never see half of it). */
static int write_stats(Emu *e) {
        _cleanup_free_ char *tmp = NULL;
        FILE *f;
        int r = 0;

        collect_kernel_drops(e);
        e->generation++;
        if (!arg_stats)
                return 0;
        if (asprintf(&tmp, "%s.tmp", arg_stats) < 0)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        write_counters(e, f, now_ns(CLOCK_MONOTONIC));
        if (fflush(f) != 0 || ferror(f))
                r = -errno ?: -EIO;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, arg_stats) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

static int run(Emu *e) {
        _cleanup_close_ int ep = -EBADF, sfd = -EBADF;
        struct epoll_event ev = { .events = EPOLLIN };
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGUSR1);
        sigaddset(&mask, SIGUSR2);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        ep = epoll_create1(EPOLL_CLOEXEC);
        if (sfd < 0 || ep < 0)
                return -errno;
        ev.data.u32 = 2;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev) < 0)
                return -errno;
        for (uint32_t i = 0; i < 2; i++) {
                ev.data.u32 = i;
                if (epoll_ctl(ep, EPOLL_CTL_ADD, e->port[i].fd, &ev) < 0)
                        return -errno;
        }
        /* Sleep exactly as long as asked: the default 50 us slack would be most of a short delay. */
        (void) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

        r = write_stats(e);
        if (r < 0) {
                fprintf(stderr, "mpt-pathemu: cannot write '%s': %s\n", arg_stats, strerror(-r));
                return r;
        }

        for (;;) {
                struct epoll_event events[4];
                struct timespec timeout, *tp = &timeout;
                uint64_t mono = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME), next;
                int n;

                for (EmuDir i = 0; i < _EMU_DIR_MAX; i++)
                        dir_receive(e, &e->dir[i], mono, real);
                mono = now_ns(CLOCK_MONOTONIC);
                next = EMU_TIME_INFINITY;
                for (EmuDir i = 0; i < _EMU_DIR_MAX; i++) {
                        emu_link_advance(e->dir[i].link, mono);
                        dir_send(&e->dir[i], mono);
                        next = MIN(next, emu_link_next_wake(e->dir[i].link));
                }

                if (next == EMU_TIME_INFINITY)
                        tp = NULL;
                else {
                        uint64_t now = now_ns(CLOCK_MONOTONIC);
                        uint64_t wait = next <= now ? 0 : MAX(next - now, EMU_MIN_SLEEP_NS);

                        timeout = (struct timespec) { .tv_sec = (time_t) (wait / EMU_NSEC_PER_SEC),
                                                      .tv_nsec = (long) (wait % EMU_NSEC_PER_SEC) };
                }
                n = epoll_pwait2(ep, events, (int) ELEMENTSOF(events), tp, NULL);
                if (n < 0) {
                        r = -errno;
                        if (r == -EINTR)
                                continue;
                        fprintf(stderr, "mpt-pathemu: epoll_pwait2: %s\n", strerror(-r));
                        return r;
                }
                for (int i = 0; i < n; i++) {
                        struct signalfd_siginfo si;

                        if (events[i].data.u32 != 2)
                                continue;
                        while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                switch (si.ssi_signo) {
                                case SIGUSR2:
                                        e->trace_start = now_ns(CLOCK_MONOTONIC);
                                        for (EmuDir k = 0; k < _EMU_DIR_MAX; k++)
                                                emu_link_restart_trace(e->dir[k].link, e->trace_start);
                                        _fallthrough_;
                                case SIGUSR1:
                                        r = write_stats(e);
                                        if (r < 0)
                                                fprintf(stderr, "mpt-pathemu: cannot write '%s': %s\n", arg_stats,
                                                        strerror(-r));
                                        break;
                                default:
                                        return 0;
                                }
                        }
                }
        }
}

static void print_summary(Emu *e) {
        for (EmuDir i = 0; i < _EMU_DIR_MAX; i++) {
                const Dir *d = &e->dir[i];
                const EmuCounters *c = emu_link_counters(d->link);

                fprintf(stderr,
                        "mpt-pathemu: %s: %" PRIu64 " frames in, %" PRIu64 " forwarded; dropped: queue %" PRIu64
                        ", loss %" PRIu64 ", overflow %" PRIu64 ", oversize %" PRIu64 ", kernel %" PRIu64
                        ", send %" PRIu64 "; largest queue %" PRIu64 " bytes\n",
                        emu_dir_to_string(i), c->rx_packets + d->oversize_drops, c->released_packets - d->tx_errors,
                        c->queue_drops, c->loss_drops, c->overflow_drops, d->oversize_drops, d->kernel_drops,
                        d->tx_errors, c->queue_max_bytes);
        }
}

static void help(void) {
        printf("Usage: mpt-pathemu [--stats FILE] IFACE_A IFACE_B SPEC\n"
               "       mpt-pathemu --check [--frame BYTES] SPEC\n"
               "\n"
               "Forwards Ethernet frames between IFACE_A and IFACE_B (run it in the namespace that holds\n"
               "both), with a queue, rate, delay, jitter and loss per direction.\n"
               "\n"
               "  --stats FILE   write the counters to FILE at start, on SIGUSR1 and at exit\n"
               "  --check        only check SPEC and print what it does in each direction\n"
               "  --frame BYTES  with --check: the largest frame (default %u, a 1500-byte MTU)\n"
               "  -h, --help     show this help\n"
               "\n"
               "SIGUSR2 restarts the traces at their first phase (and writes the counters).\n"
               "\n%s",
               EMU_FRAME_DEFAULT, emu_spec_help);
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "stats", required_argument, NULL, 's' },
                { "check", no_argument, NULL, 'c' },
                { "frame", required_argument, NULL, 'f' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        arg_stats = optarg;
                        break;
                case 'c':
                        arg_check = true;
                        break;
                case 'f': {
                        char *end;
                        unsigned long v;

                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno || *end || end == optarg || v < 64 || v > 65535) {
                                fprintf(stderr, "mpt-pathemu: invalid --frame '%s': bytes from 64 to 65535\n", optarg);
                                return -EINVAL;
                        }
                        arg_frame = (unsigned) v;
                        break;
                }
                case 'h':
                        help();
                        return 0;
                default:
                        return -EINVAL;
                }
        if (argc - optind != (arg_check ? 1 : 3)) {
                fprintf(stderr, "mpt-pathemu: expected %s (try --help)\n",
                        arg_check ? "one SPEC after --check" : "IFACE_A IFACE_B SPEC");
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char *argv[]) {
        Emu e = { .port = { { .fd = -EBADF, .ring = MAP_FAILED }, { .fd = -EBADF, .ring = MAP_FAILED } } };
        char err[EMU_ERROR_MAX];
        const char *spec_text;
        int r, ret = 1;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        if (arg_check) {
                r = emu_spec_parse(argv[optind], arg_frame, &e.spec, err, sizeof(err));
                if (r < 0) {
                        fprintf(stderr, "mpt-pathemu: %s\n", r == -ENOMEM ? "out of memory" : err);
                        return 2;
                }
                emu_spec_print(&e.spec, stdout);
                emu_spec_done(&e.spec);
                return 0;
        }

        spec_text = argv[optind + 2];
        if (streq(argv[optind], argv[optind + 1])) {
                fprintf(stderr, "mpt-pathemu: IFACE_A and IFACE_B are both '%s'\n", argv[optind]);
                return 2;
        }
        for (int i = 0; i < 2; i++) {
                r = port_open(&e.port[i], argv[optind + i]);
                if (r < 0) {
                        fprintf(stderr, "mpt-pathemu: interface '%s': %s\n", argv[optind + i], strerror(-r));
                        goto finish;
                }
        }
        /* Ethernet header and a VLAN tag on top of the larger MTU. */
        e.max_frame = MAX(e.port[0].mtu, e.port[1].mtu) + 18;
        r = emu_spec_parse(spec_text, e.max_frame, &e.spec, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "mpt-pathemu: %s\n", r == -ENOMEM ? "out of memory" : err);
                ret = 2;
                goto finish;
        }
        if (e.spec.seed_set)
                e.seed = e.spec.seed;
        else if (getrandom(&e.seed, sizeof(e.seed), 0) != sizeof(e.seed))
                e.seed = now_ns(CLOCK_REALTIME);

        e.start = e.trace_start = now_ns(CLOCK_MONOTONIC);
        for (EmuDir i = 0; i < _EMU_DIR_MAX; i++) {
                Dir *d = &e.dir[i];

                d->in = &e.port[i == EMU_DIR_AB ? 0 : 1];
                d->out = &e.port[i == EMU_DIR_AB ? 1 : 0];
                /* Each direction its own streams, both from the one seed. */
                r = emu_link_new(&e.spec.dir[i], e.seed + i * 0x9e3779b97f4a7c15ULL, e.start, &d->link);
                if (r < 0) {
                        fprintf(stderr, "mpt-pathemu: cannot allocate the %s buffer: %s\n", emu_dir_to_string(i),
                                strerror(-r));
                        goto finish;
                }
        }
        for (int i = 0; i < 2; i++) {
                r = port_start(&e.port[i], e.max_frame);
                if (r < 0) {
                        fprintf(stderr, "mpt-pathemu: interface '%s': cannot set up its packet socket: %s\n",
                                e.port[i].ifname, strerror(-r));
                        goto finish;
                }
        }

        r = run(&e);
        if (r < 0)
                goto finish;
        ret = 0;
        r = write_stats(&e);
        if (r < 0)
                fprintf(stderr, "mpt-pathemu: cannot write '%s': %s\n", arg_stats, strerror(-r));
        print_summary(&e);

finish:
        for (int i = 0; i < 2; i++)
                port_close(&e.port[i]);
        for (EmuDir i = 0; i < _EMU_DIR_MAX; i++)
                e.dir[i].link = emu_link_free(e.dir[i].link);
        emu_spec_done(&e.spec);
        return ret;
}
