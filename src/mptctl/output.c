/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <inttypes.h>

#include "mptctl.h"
#include "parse-util.h"
#include "show-fields.h"

/* value in the largest of the n units (each base times the one before) that it reaches: in the
 * first as a whole number, in the others with `decimals` decimals. */
static void format_scaled(uint64_t value, unsigned base, const char *const *units, size_t n, int decimals,
                          char *buf, size_t size) {
        double v = (double) value;
        size_t u = 0;

        while (v >= base && u + 1 < n) {
                v /= base;
                u++;
        }
        if (u == 0)
                snprintf(buf, size, "%" PRIu64 " %s", value, units[0]);
        else
                snprintf(buf, size, "%.*f %s", decimals, v, units[u]);
}

void format_bytes(uint64_t b, char *buf, size_t size) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };

        format_scaled(b, 1024, units, ELEMENTSOF(units), 2, buf, size);
}

/* Bits per second as "86.1 Mbit/s". */
void format_rate(uint64_t bps, char *buf, size_t size) {
        static const char *const units[] = { "bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s" };

        format_scaled(bps, 1000, units, ELEMENTSOF(units), 1, buf, size);
}

/* A microsecond count as "1.25s", "37ms", "250us"; "-" when empty. */
void format_usec(const char *v, char *buf, size_t size) {
        uint64_t u;

        if (isempty(v) || safe_atou64(v, &u) < 0) {
                snprintf(buf, size, "-");
                return;
        }
        if (u > 0 && u % USEC_PER_SEC == 0)
                snprintf(buf, size, "%" PRIu64 "s", u / USEC_PER_SEC);
        else if (u > 0 && u < USEC_PER_SEC && u % USEC_PER_MSEC == 0)
                snprintf(buf, size, "%" PRIu64 "ms", u / USEC_PER_MSEC);
        else if (u >= 10 * USEC_PER_SEC)
                snprintf(buf, size, "%.0fs", (double) u / USEC_PER_SEC);
        else if (u >= USEC_PER_SEC)
                snprintf(buf, size, "%.2fs", (double) u / USEC_PER_SEC);
        else if (u >= 10 * USEC_PER_MSEC)
                snprintf(buf, size, "%.0fms", (double) u / USEC_PER_MSEC);
        else if (u >= USEC_PER_MSEC)
                snprintf(buf, size, "%.2fms", (double) u / USEC_PER_MSEC);
        else
                snprintf(buf, size, "%" PRIu64 "us", u);
}

/* ---- JSON ---- */

void json_string(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p < 0x20)
                        fprintf(f, "\\u%04x", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

/* A value as its field's type says (show-fields.h); a field the table does not know (from a newer
 * mptd), or a value not of its type, is a string: text is never taken for a number. */
static void json_value(FILE *f, const char *record, const char *key, const char *v) {
        const ShowField *field = show_field_lookup(record, key);
        ShowType type = field && show_value_valid(field->type, v) ? field->type : SHOW_STRING;

        if (isempty(v)) {
                fputs(type == SHOW_LIST ? "[]" : "null", f);
                return;
        }
        switch (type) {
        case SHOW_INTEGER:
        case SHOW_DECIMAL:
                fputs(v, f);
                break;
        case SHOW_BOOLEAN:
                fputs(streq(v, "yes") ? "true" : "false", f);
                break;
        case SHOW_LIST:
                fputc('[', f);
                for (const char *p = v; p;) {
                        const char *comma = strchr(p, ',');
                        _cleanup_free_ char *item = comma ? strndup(p, (size_t) (comma - p)) : strdup(p);

                        if (!item)
                                break; /* out of memory: the array ends early */
                        if (p != v)
                                fputs(", ", f);
                        json_string(f, item);
                        p = comma ? comma + 1 : NULL;
                }
                fputc(']', f);
                break;
        default:
                json_string(f, v);
        }
}

/* Fields named "group.key" are collected into an object "group" (drops, reorder). The object is
 * left open when close is false, so that the caller can append members. */
/* Whether field i's key is "GROUP.MEMBER" with a group that an earlier field had already. */
static bool group_seen(const CtlRecord *rec, size_t i, size_t glen) {
        for (size_t j = 0; j < i; j++) {
                const char *k = rec->fields[j].key;
                if (strlen(k) > glen && k[glen] == '.' && strneq(k, rec->fields[i].key, glen))
                        return true;
        }
        return false;
}

static void json_record(FILE *f, const CtlRecord *rec, const char *indent, bool close) {
        bool first = true;

        fputs("{", f);
        for (size_t i = 0; i < rec->n_fields; i++) {
                const char *k = rec->fields[i].key;
                if (strchr(k, '.'))
                        continue;
                fprintf(f, "%s\n%s  ", first ? "" : ",", indent);
                json_string(f, k);
                fputs(": ", f);
                json_value(f, rec->type, k, rec->fields[i].value);
                first = false;
        }
        /* "GROUP.MEMBER" fields: an object per group, in the order of the groups' first members. */
        for (size_t i = 0; i < rec->n_fields; i++) {
                const char *group = rec->fields[i].key, *dot = strchr(group, '.');
                size_t glen;
                bool gfirst = true;
                char name[64];

                if (!dot)
                        continue;
                glen = (size_t) (dot - group);
                if (group_seen(rec, i, glen))
                        continue;
                snprintf(name, sizeof name, "%.*s", (int) glen, group);
                /* drop.* becomes "drops" */
                if (streq(name, "drop"))
                        strcpy(name, "drops");
                fprintf(f, "%s\n%s  ", first ? "" : ",", indent);
                json_string(f, name);
                fputs(": {", f);
                for (size_t j = i; j < rec->n_fields; j++) {
                        const char *k = rec->fields[j].key;
                        if (strlen(k) <= glen || k[glen] != '.' || !strneq(k, group, glen))
                                continue;
                        fprintf(f, "%s ", gfirst ? "" : ",");
                        json_string(f, k + glen + 1);
                        fputs(": ", f);
                        json_value(f, rec->type, k, rec->fields[j].value);
                        gfirst = false;
                }
                fputs(" }", f);
                first = false;
        }
        if (close)
                fprintf(f, "\n%s}", indent);
}

void output_json_records(FILE *f, const CtlRecord *records, size_t n) {
        bool first_tunnel = true;

        /* A "tunnel" record followed by its "path" records becomes one object with "paths". */
        fputs("[", f);
        for (size_t i = 0; i < n; i++) {
                size_t j;
                bool first_path = true;

                if (!streq(records[i].type, "tunnel"))
                        continue;
                fprintf(f, "%s\n  ", first_tunnel ? "" : ",");
                first_tunnel = false;
                json_record(f, &records[i], "  ", false);
                fputs(",\n    \"paths\": [", f);
                for (j = i + 1; j < n && !streq(records[j].type, "tunnel"); j++) {
                        if (!streq(records[j].type, "path"))
                                continue;
                        fprintf(f, "%s\n      ", first_path ? "" : ",");
                        json_record(f, &records[j], "      ", true);
                        first_path = false;
                }
                fprintf(f, "%s]\n  }", first_path ? "" : "\n    ");
        }
        fputs(first_tunnel ? "]\n" : "\n]\n", f);
}

/* ---- text ---- */

static const char *get(const CtlRecord *r, const char *key) {
        return strempty(ctl_record_get(r, key));
}

static uint64_t get_u64(const CtlRecord *r, const char *key) {
        uint64_t v = 0;
        (void) safe_atou64(get(r, key), &v);
        return v;
}

static void print_drops(FILE *f, const CtlRecord *r) {
        bool any = false;

        for (size_t i = 0; i < r->n_fields; i++) {
                const char *k = startswith(r->fields[i].key, "drop.");
                if (!k || streq(r->fields[i].value, "0"))
                        continue;
                fprintf(f, "%s%s %s", any ? ", " : "  drops: ", k, r->fields[i].value);
                any = true;
        }
        if (any)
                fputc('\n', f);
}

/* Member k of a numbered group of fields ("worker_rx.1"); NULL when there is none. */
static const char *get_member(const CtlRecord *r, const char *group, unsigned k) {
        char key[64];

        snprintf(key, sizeof key, "%s.%u", group, k);
        return ctl_record_get(r, key);
}

/* Policy=, a class's counters: "sent 12, 12 copies; received 11, 10 duplicates; delay 12ms". */
static void print_policy_counters(FILE *f, const char *hits, const char *copies, const char *received,
                                  const char *duplicates, const char *delay) {
        char a[32];

        fprintf(f, "sent %s", strna(hits));
        if (copies && !streq(copies, "0"))
                fprintf(f, ", %s cop%s", copies, streq(copies, "1") ? "y" : "ies");
        fprintf(f, "; received %s", strna(received));
        if (duplicates && !streq(duplicates, "0"))
                fprintf(f, ", %s duplicate%s dropped", duplicates, streq(duplicates, "1") ? "" : "s");
        if (delay && !isempty(delay)) {
                format_usec(delay, a, sizeof a);
                fprintf(f, "; delay ~%s", a);
        }
}

/* Policy=: "  policy 0: proto udp dport 5060 lowest-latency (sent 12; received 11; delay ~21ms)",
 * a line per rule, one for the traffic no rule matches, and the path lowest-latency rules use. */
static void print_policy(FILE *f, const CtlRecord *r) {
        const char *fastest = ctl_record_get(r, "policy_fastest");

        for (unsigned k = 0;; k++) {
                const char *rule = get_member(r, "policy", k);
                if (!rule)
                        break;
                fprintf(f, "  policy %u: %s (", k, rule);
                print_policy_counters(f, get_member(r, "policy_hits", k), get_member(r, "policy_copies", k),
                                      get_member(r, "policy_received", k), get_member(r, "policy_duplicates", k),
                                      get_member(r, "policy_delay_us", k));
                fputs(")\n", f);
        }
        if (ctl_record_get(r, "policy_hits.other")) {
                fputs("  other traffic (", f);
                print_policy_counters(f, ctl_record_get(r, "policy_hits.other"), NULL,
                                      ctl_record_get(r, "policy_received.other"),
                                      ctl_record_get(r, "policy_duplicates.other"),
                                      ctl_record_get(r, "policy_delay_us.other"));
                fputs(")\n", f);
        }
        if (fastest)
                fprintf(f, "  lowest-latency path: %s\n", isempty(fastest) ? "none (no path up)" : fastest);
}

/* "  workers: 0 received 1200 sent 3, 1 received 0 sent 1180" (data packets), with several. */
static void print_workers(FILE *f, const CtlRecord *r) {
        if (!ctl_record_get(r, "worker_rx.1"))
                return;
        fputs("  workers (data packets):", f);
        for (unsigned k = 0;; k++) {
                const char *rx = get_member(r, "worker_rx", k), *tx = get_member(r, "worker_tx", k);
                if (!rx || !tx)
                        break;
                fprintf(f, "%s %u received %s sent %s", k ? "," : "", k, rx, tx);
        }
        fputc('\n', f);
        fputs("  workers (waits for shared locks):", f);
        for (unsigned k = 0;; k++) {
                const char *n = get_member(r, "worker_lock_waits", k), *us = get_member(r, "worker_lock_wait_us", k);
                if (!n || !us)
                        break;
                fprintf(f, "%s %u %s (%.1f ms)", k ? "," : "", k, n, strtoull(us, NULL, 10) / 1000.0);
        }
        fputc('\n', f);
}

void output_show_text(FILE *f, const CtlRecord *records, size_t n) {
        char a[64], b[64], c[64];

        for (size_t i = 0; i < n; i++) {
                const CtlRecord *r = &records[i];

                if (streq(r->type, "tunnel")) {
                        if (i > 0)
                                fputc('\n', f);
                        format_usec(get(r, "uptime_us"), a, sizeof a);
                        fprintf(f, "tunnel: %s  (pid %s, up %s)\n", get(r, "name"), get(r, "pid"), a);
                        fprintf(f, "  interface: %s (%s, ifindex %s), mtu %s\n", get(r, "ifname"), get(r, "device"),
                                get(r, "ifindex"), get(r, "mtu"));
                        if (!isempty(get(r, "addresses")))
                                fprintf(f, "  addresses: %s\n", get(r, "addresses"));
                        fprintf(f, "  paths: %s of %s up, scheduler %s, %s worker%s\n", get(r, "paths_up"),
                                get(r, "paths_total"), get(r, "scheduler"), get(r, "workers"),
                                streq(get(r, "workers"), "1") ? "" : "s");
                        fprintf(f, "  ports: local %s, remote %s\n", get(r, "local_port"), get(r, "remote_port"));
                        if (streq(get(r, "mode"), "secure") && streq(get(r, "keys"), "handshake")) {
                                fprintf(f, "  mode: secure (%s), handshake; public key %s\n", get(r, "cipher"),
                                        get(r, "public_key"));
                                if (isempty(get(r, "session_age_us")))
                                        fprintf(f, "  session: none yet (%s initiations sent, %s sessions so far)\n",
                                                get(r, "handshakes"), get(r, "sessions"));
                                else {
                                        format_usec(get(r, "session_age_us"), a, sizeof a);
                                        fprintf(f, "  session: %s, ids %s here, %s there (%s sessions, %s initiations "
                                                "sent)\n", a, get(r, "epoch"), get(r, "peer_epoch"), get(r, "sessions"),
                                                get(r, "handshakes"));
                                }
                        } else if (streq(get(r, "mode"), "secure"))
                                fprintf(f, "  mode: secure (%s), epoch %s, peer epoch %s (%s seen)\n", get(r, "cipher"),
                                        get(r, "epoch"), streq(get(r, "peer_epochs"), "0") ? "none" : get(r, "peer_epoch"),
                                        get(r, "peer_epochs"));
                        else
                                fprintf(f, "  mode: %s (no authentication, no encryption)\n", get(r, "mode"));
                        if (!streq(get(r, "reorder_window"), "0")) {
                                format_usec(get(r, "reorder_max_delay_us"), a, sizeof a);
                                fprintf(f, "  reorder: window %s, max delay %s; delivered %s, held %s, lost %s, "
                                        "late %s, timeouts %s, duplicates %s, resyncs %s\n",
                                        get(r, "reorder_window"), a, get(r, "reorder.delivered"), get(r, "reorder.held"),
                                        get(r, "reorder.lost"), get(r, "reorder.late"), get(r, "reorder.timeouts"),
                                        get(r, "reorder.duplicates"), get(r, "reorder.resyncs"));
                        } else
                                fprintf(f, "  reorder: off\n");
                        if (!isempty(get(r, "split"))) {
                                format_rate(get_u64(r, "load_bps"), a, sizeof a);
                                fprintf(f, "  learned: split by %s, %s load of %s; feedback %s received, %s sent\n",
                                        streq(get(r, "split"), "rates") ? "the paths' rates" : "filling by Weight=",
                                        get(r, "load"), a, get(r, "feedback_rx"), get(r, "feedback_tx"));
                        }
                        if (!isempty(get(r, "repair.asked")))
                                fprintf(f, "  loss repair: asked the other end for %s datagrams; it asked for %s, "
                                        "%s sent again, %s no longer kept\n",
                                        get(r, "repair.asked"), get(r, "repair.requested"), get(r, "repair.sent"),
                                        get(r, "repair.missed"));
                        if (!isempty(get(r, "reorder_hold_us"))) {
                                format_usec(get(r, "reorder_hold_us"), a, sizeof a);
                                format_usec(get(r, "reorder_spread_us"), b, sizeof b);
                                fprintf(f, "  reorder hold: %s now (paths' delay spread %s)\n", a, b);
                        }
                        print_policy(f, r);
                        print_workers(f, r);
                        print_drops(f, r);
                } else if (streq(r->type, "path")) {
                        const char *loss_rx = get(r, "loss_rx"), *loss_tx = get(r, "loss_tx");
                        format_usec(get(r, "state_age_us"), a, sizeof a);
                        fprintf(f, "\n  path: %s  %s for %s", get(r, "name"), get(r, "state"), a);
                        if (!isempty(get(r, "reason")))
                                fprintf(f, " (%s)", get(r, "reason"));
                        fputc('\n', f);
                        if (!isempty(get(r, "interface")))
                                fprintf(f, "    interface: %s (%s)\n", get(r, "interface"), get(r, "class"));
                        fprintf(f, "    local: %s  remote: %s%s\n", isempty(get(r, "local")) ? "-" : get(r, "local"),
                                get(r, "remote"),
                                streq(get(r, "pin_remote"), "yes") ? " (pinned)"
                                : !streq(get(r, "listens"), "yes") ? ""
                                : streq(get(r, "remote"), "-")   ? " (listens: none yet)"
                                                                  : " (learned)");
                        if (get_u64(r, "remote_changes") > 0)
                                fprintf(f, "    remote followed the other end %s time%s\n", get(r, "remote_changes"),
                                        streq(get(r, "remote_changes"), "1") ? "" : "s");
                        fprintf(f, "    weight: %s (%s)%s%s", get(r, "weight"), get(r, "weight_source"),
                                streq(get(r, "backup"), "yes") ? ", backup" : "",
                                streq(get(r, "demoted"), "yes") ? " (demoted: too much loss)" : "");
                        if (!streq(get(r, "receive_weight"), "0"))
                                fprintf(f, ", receive weight %s", get(r, "receive_weight"));
                        fputc('\n', f);
                        if (streq(get(r, "queued_locally"), "yes"))
                                fprintf(f, "    queues locally: short sends, short runs\n");
                        if (streq(get(r, "keepalive_interval_us"), "0"))
                                fprintf(f, "    keepalive: off\n");
                        else {
                                format_usec(get(r, "keepalive_interval_us"), a, sizeof a);
                                format_usec(get(r, "dead_time_us"), b, sizeof b);
                                format_usec(get(r, "last_keepalive_us"), c, sizeof c);
                                fprintf(f, "    keepalive: every %s, dead after %s, last received %s%s", a,
                                        streq(get(r, "dead_time_us"), "0") ? "never" : b, c,
                                        isempty(get(r, "last_keepalive_us")) ? "" : " ago");
                                format_usec(get(r, "rtt_us"), a, sizeof a);
                                format_usec(get(r, "rtt_var_us"), b, sizeof b);
                                if (!isempty(get(r, "rtt_us")))
                                        fprintf(f, ", rtt %s ± %s", a, b);
                                if (!isempty(loss_rx) || !isempty(loss_tx))
                                        fprintf(f, ", loss in %s out %s",
                                                isempty(loss_rx) ? "-" : (snprintf(b, sizeof b, "%.1f%%", strtod(loss_rx, NULL) * 100), b),
                                                isempty(loss_tx) ? "-" : (snprintf(c, sizeof c, "%.1f%%", strtod(loss_tx, NULL) * 100), c));
                                fputc('\n', f);
                        }
                        if (!isempty(get(r, "learned_rate_bps"))) {
                                format_rate(get_u64(r, "learned_rate_bps"), a, sizeof a);
                                format_rate(get_u64(r, "delivered_bps"), b, sizeof b);
                                fprintf(f, "    learned: rate %s, delivered %s, share %.1f%%", a, b,
                                        get_u64(r, "share_permille") / 10.0);
                                if (get_u64(r, "pace_rate_bps") > 0) {
                                        format_rate(get_u64(r, "pace_rate_bps"), a, sizeof a);
                                        fprintf(f, ", paced at %s", a);
                                }
                                if (!isempty(get(r, "one_way_delay_us"))) {
                                        format_usec(get(r, "one_way_delay_us"), a, sizeof a);
                                        fprintf(f, ", one-way delay %s", a);
                                }
                                format_usec(get(r, "queue_delay_us"), a, sizeof a);
                                fprintf(f, ", queue %s%s\n", a, streq(get(r, "saturated"), "yes") ? ", saturated" : "");
                        }
                        format_bytes(get_u64(r, "tx_bytes"), a, sizeof a);
                        format_bytes(get_u64(r, "rx_bytes"), b, sizeof b);
                        fprintf(f, "    transfer: %s sent (%s packets), %s received (%s packets)\n", a,
                                get(r, "tx_packets"), b, get(r, "rx_packets"));
                        print_drops(f, r);
                }
        }
}
