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

/* The path records' counters, in the order of the reply. Returns how many (at most max). */
static size_t read_samples(const CtlReply *reply, Sample *samples, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < reply->n_records && n < max; i++) {
                const CtlRecord *rec = &reply->records[i];
                Sample *s;

                if (!streq(rec->type, "path"))
                        continue;
                s = &samples[n++];
                snprintf(s->name, sizeof s->name, "%s", strempty(ctl_record_get(rec, "name")));
                s->tx_bytes = field_u64(rec, "tx_bytes");
                s->rx_bytes = field_u64(rec, "rx_bytes");
                s->tx_packets = field_u64(rec, "tx_packets");
                s->rx_packets = field_u64(rec, "rx_packets");
        }
        return n;
}

/* A loss fraction as "1.5%", or "-" when the daemon gave none. */
static const char *format_loss(const char *loss, char *buf, size_t size) {
        if (isempty(loss))
                return "-";
        snprintf(buf, size, "%.1f%%", strtod(loss, NULL) * 100);
        return buf;
}

/* One path's line of the text output. */
static void print_path_text(const CtlRecord *rec, const Sample *s, double tx, double rx) {
        char rtt[32], in[16], out[16], loss[32];

        format_usec(ctl_record_get(rec, "rtt_us"), rtt, sizeof rtt);
        snprintf(loss, sizeof loss, "%s/%s", format_loss(ctl_record_get(rec, "loss_rx"), in, sizeof in),
                 format_loss(ctl_record_get(rec, "loss_tx"), out, sizeof out));
        printf("  %-15s %-12s %11.1f %11.1f %9s %13s\n", s->name, strempty(ctl_record_get(rec, "state")), tx, rx,
               rtt, loss);
}

/* One report: each path's rates over the dt seconds from prev to cur (samples of the same paths,
 * in the order of the reply's path records), and the tunnel's. */
static void print_rates(const char *tunnel, const char *clock, double dt, const CtlReply *reply, const Sample *prev,
                        const Sample *cur) {
        double sum_tx = 0, sum_rx = 0;

        if (arg_json)
                printf("{\"time\": \"%s\", \"interval\": %.3f, \"paths\": [", clock, dt);
        else
                printf("%s  %s\n  %-15s %-12s %11s %11s %9s %13s\n", clock, tunnel, "path", "state", "tx Mbit/s",
                       "rx Mbit/s", "rtt", "loss in/out");
        for (size_t i = 0, k = 0; i < reply->n_records; i++) {
                const CtlRecord *rec = &reply->records[i];
                double tx, rx;

                if (!streq(rec->type, "path"))
                        continue;
                tx = (double) (cur[k].tx_bytes - prev[k].tx_bytes) * 8 / dt / 1e6;
                rx = (double) (cur[k].rx_bytes - prev[k].rx_bytes) * 8 / dt / 1e6;
                sum_tx += tx;
                sum_rx += rx;
                if (arg_json) {
                        printf("%s{\"name\": ", k ? ", " : "");
                        json_string(stdout, cur[k].name);
                        fputs(", \"state\": ", stdout);
                        json_string(stdout, strempty(ctl_record_get(rec, "state")));
                        printf(", \"tx_mbit\": %.3f, \"rx_mbit\": %.3f}", tx, rx);
                } else
                        print_path_text(rec, &cur[k], tx, rx);
                k++;
        }
        if (arg_json)
                printf("], \"tx_mbit\": %.3f, \"rx_mbit\": %.3f}\n", sum_tx, sum_rx);
        else
                printf("  %-15s %-12s %11.1f %11.1f\n\n", "total", "", sum_tx, sum_rx);
        fflush(stdout);
}

/* Sleeps for seconds, or until SIGINT or SIGTERM. */
static void sleep_interval(double seconds) {
        struct timespec ts = {
                .tv_sec = (time_t) seconds,
                .tv_nsec = (long) ((seconds - (double) (time_t) seconds) * 1e9),
        };

        while (!stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* mptctl monitor TUNNEL [--interval=SECONDS] [--count=N]: live per-path rates. */
int verb_monitor(int argc, char **argv) {
        _cleanup_close_ int fd = -EBADF;
        const char *tunnel;
        Sample prev[64] = {};
        size_t n_prev = 0;
        double t_prev = 0;
        unsigned done = 0;
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
        while (!stop && (arg_count == 0 || done < arg_count)) {
                CtlRequest req = { .command = CTL_COMMAND_SHOW };
                CtlReply reply = {};
                Sample cur[64] = {};
                size_t n_cur;
                double t = now_sec();
                char clock[16];
                time_t wall = time(NULL);

                r = client_call(fd, &req, &reply);
                if (r < 0)
                        return r;
                strftime(clock, sizeof clock, "%H:%M:%S", localtime(&wall));

                n_cur = read_samples(&reply, cur, ELEMENTSOF(cur));
                if (n_prev > 0 && n_prev == n_cur) {
                        print_rates(tunnel, clock, t - t_prev, &reply, prev, cur);
                        done++;
                }
                memcpy(prev, cur, sizeof cur);
                n_prev = n_cur;
                t_prev = t;
                ctl_reply_done(&reply);

                if (arg_count != 0 && done >= arg_count)
                        break;
                sleep_interval(arg_interval);
        }
        return 0;
}
