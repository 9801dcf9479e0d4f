/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <signal.h>
#include <time.h>

#include "mptctl.h"
#include "parse-util.h"

typedef struct Sample {
        char name[16];
        uint64_t tx_bytes, rx_bytes, tx_packets, rx_packets;
} Sample;

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        stop = 1;
}

static double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static uint64_t field_u64(const CtlRecord *r, const char *key) {
        uint64_t v = 0;
        (void) safe_atou64(strempty(ctl_record_get(r, key)), &v);
        return v;
}

/* mptctl monitor TUNNEL [--interval=SECONDS] [--count=N]: live per-path rates. */
int verb_monitor(int argc, char **argv) {
        _cleanup_close_ int fd = -EBADF;
        const char *tunnel;
        Sample prev[64] = {};
        size_t n_prev = 0;
        double interval = arg_interval, t_prev = 0;
        unsigned count = arg_count, done = 0;
        int r;

        /* The options are parsed (main.c): what is left is the tunnel. */
        if (argc != 2) {
                fprintf(stderr, "mptctl: usage: mptctl monitor TUNNEL [--interval=SECONDS] [--count=N]\n");
                return -EINVAL;
        }
        tunnel = argv[1];

        r = client_connect(tunnel, &fd);
        if (r < 0)
                return r;
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);

        /* count N prints N rate lines; the first sample only sets the baseline. */
        while (!stop && (count == 0 || done < count)) {
                CtlRequest req = { .command = CTL_COMMAND_SHOW };
                CtlReply reply = {};
                Sample cur[64] = {};
                size_t n_cur = 0;
                double t = now_sec(), dt = t - t_prev;
                double sum_tx = 0, sum_rx = 0;
                char clock[16];
                time_t wall = time(NULL);
                unsigned up = 0, total = 0;

                r = client_call(fd, &req, &reply);
                if (r < 0)
                        return r;
                strftime(clock, sizeof clock, "%H:%M:%S", localtime(&wall));

                for (size_t i = 0; i < reply.n_records && n_cur < ELEMENTSOF(cur); i++) {
                        const CtlRecord *rec = &reply.records[i];
                        if (!streq(rec->type, "path"))
                                continue;
                        Sample *s = &cur[n_cur++];
                        snprintf(s->name, sizeof s->name, "%s", strempty(ctl_record_get(rec, "name")));
                        s->tx_bytes = field_u64(rec, "tx_bytes");
                        s->rx_bytes = field_u64(rec, "rx_bytes");
                        s->tx_packets = field_u64(rec, "tx_packets");
                        s->rx_packets = field_u64(rec, "rx_packets");
                }

                if (n_prev > 0 && n_prev == n_cur) {
                        if (arg_json)
                                printf("{\"time\": \"%s\", \"interval\": %.3f, \"paths\": [", clock, dt);
                        else
                                printf("%s  %s\n  %-15s %-12s %11s %11s %9s %13s\n", clock, tunnel, "path", "state",
                                       "tx Mbit/s", "rx Mbit/s", "rtt", "loss in/out");
                        for (size_t i = 0, k = 0; i < reply.n_records; i++) {
                                const CtlRecord *rec = &reply.records[i];
                                const char *loss;
                                char rtt[32], a[16], b[16];
                                double tx, rx;
                                if (!streq(rec->type, "path"))
                                        continue;
                                tx = (double) (cur[k].tx_bytes - prev[k].tx_bytes) * 8 / dt / 1e6;
                                rx = (double) (cur[k].rx_bytes - prev[k].rx_bytes) * 8 / dt / 1e6;
                                sum_tx += tx;
                                sum_rx += rx;
                                total++;
                                if (streq(strempty(ctl_record_get(rec, "state")), "up"))
                                        up++;
                                format_usec(ctl_record_get(rec, "rtt_us"), rtt, sizeof rtt);
                                loss = ctl_record_get(rec, "loss_rx");
                                if (arg_json) {
                                        printf("%s{\"name\": ", k ? ", " : "");
                                        json_string(stdout, cur[k].name);
                                        fputs(", \"state\": ", stdout);
                                        json_string(stdout, strempty(ctl_record_get(rec, "state")));
                                        printf(", \"tx_mbit\": %.3f, \"rx_mbit\": %.3f}", tx, rx);
                                } else {
                                        const char *loss_tx = ctl_record_get(rec, "loss_tx");
                                        char lossbuf[32];
                                        snprintf(lossbuf, sizeof lossbuf, "%s/%s",
                                                 isempty(loss) ? "-" : (snprintf(a, sizeof a, "%.1f%%", strtod(loss, NULL) * 100), a),
                                                 isempty(loss_tx) ? "-" : (snprintf(b, sizeof b, "%.1f%%", strtod(loss_tx, NULL) * 100), b));
                                        printf("  %-15s %-12s %11.1f %11.1f %9s %13s\n", cur[k].name,
                                               strempty(ctl_record_get(rec, "state")), tx, rx, rtt, lossbuf);
                                }
                                k++;
                        }
                        if (arg_json)
                                printf("], \"tx_mbit\": %.3f, \"rx_mbit\": %.3f}\n", sum_tx, sum_rx);
                        else
                                printf("  %-15s %-12s %11.1f %11.1f\n\n", "total",
                                       (char[16]) {}, sum_tx, sum_rx);
                        (void) up;
                        fflush(stdout);
                        done++;
                }
                memcpy(prev, cur, sizeof cur);
                n_prev = n_cur;
                t_prev = t;
                ctl_reply_done(&reply);

                if (count != 0 && done >= count)
                        break;
                {
                        struct timespec ts = { .tv_sec = (time_t) interval,
                                               .tv_nsec = (long) ((interval - (double) (time_t) interval) * 1e9) };
                        while (!stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                                ;
                }
        }
        return 0;
}
