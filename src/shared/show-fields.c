/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "show-fields.h"

#include <ctype.h>
#include <string.h>

#include "macro.h"

#define T(name, type, unit) { "tunnel", name, type, unit }
#define P(name, type, unit) { "path", name, type, unit }

/* In the order ctl_write_show() writes them. */
const ShowField show_fields[] = {
        T("name", SHOW_STRING, NULL),
        T("ifname", SHOW_STRING, NULL),
        T("ifindex", SHOW_INTEGER, NULL),
        T("device", SHOW_STRING, NULL),
        T("vnet_hdr", SHOW_BOOLEAN, NULL),
        T("offloads", SHOW_STRING, NULL),
        T("udp_gso", SHOW_BOOLEAN, NULL),
        T("udp_gro", SHOW_BOOLEAN, NULL),
        T("batch", SHOW_INTEGER, "packets"),
        T("pid", SHOW_INTEGER, NULL),
        T("profile", SHOW_STRING, NULL),
        T("mtu", SHOW_INTEGER, "bytes"),
        T("workers", SHOW_INTEGER, NULL),
        T("scheduler", SHOW_STRING, NULL),
        T("mode", SHOW_STRING, NULL),
        T("cipher", SHOW_STRING, NULL),
        T("keys", SHOW_STRING, NULL),
        T("public_key", SHOW_STRING, NULL),
        T("epoch", SHOW_STRING, NULL),
        T("peer_epoch", SHOW_STRING, NULL),
        T("peer_epochs", SHOW_INTEGER, NULL),
        T("handshakes", SHOW_INTEGER, NULL),
        T("sessions", SHOW_INTEGER, NULL),
        T("session_age_us", SHOW_INTEGER, "us"),
        T("local_port", SHOW_INTEGER, NULL),
        T("remote_port", SHOW_INTEGER, NULL),
        T("reorder_window", SHOW_INTEGER, "packets"),
        T("reorder_max_delay_us", SHOW_INTEGER, "us"),
        T("paths_total", SHOW_INTEGER, NULL),
        T("paths_up", SHOW_INTEGER, NULL),
        T("session", SHOW_STRING, NULL),
        T("peer_session", SHOW_STRING, NULL),
        T("control_queue_overflows", SHOW_INTEGER, NULL),
        T("peer_restarts", SHOW_INTEGER, NULL),
        T("feedback_rx", SHOW_INTEGER, NULL),
        T("feedback_tx", SHOW_INTEGER, NULL),
        T("split", SHOW_STRING, NULL),
        T("load", SHOW_STRING, NULL),
        T("load_bps", SHOW_INTEGER, "bit/s"),
        T("reorder_hold_us", SHOW_INTEGER, "us"),
        T("reorder_spread_us", SHOW_INTEGER, "us"),
        T("uptime_us", SHOW_INTEGER, "us"),
        T("addresses", SHOW_LIST, NULL),
        T("reorder.*", SHOW_INTEGER, "packets"),
        T("repair.*", SHOW_INTEGER, "packets"),
        T("policy.*", SHOW_STRING, NULL),
        T("policy_hits.*", SHOW_INTEGER, "packets"),
        T("policy_copies.*", SHOW_INTEGER, "packets"),
        T("policy_received.*", SHOW_INTEGER, "packets"),
        T("policy_duplicates.*", SHOW_INTEGER, "packets"),
        T("policy_delay_us.*", SHOW_INTEGER, "us"),
        T("policy_fastest", SHOW_STRING, NULL),
        T("worker_rx.*", SHOW_INTEGER, "packets"),
        T("worker_tx.*", SHOW_INTEGER, "packets"),
        T("worker_lock_waits.*", SHOW_INTEGER, NULL),
        T("worker_lock_wait_us.*", SHOW_INTEGER, "us"),
        T("drop.*", SHOW_INTEGER, "packets"),

        P("name", SHOW_STRING, NULL),
        P("state", SHOW_STRING, NULL),
        P("state_age_us", SHOW_INTEGER, "us"),
        P("reason", SHOW_STRING, NULL),
        P("interface", SHOW_STRING, NULL),
        P("ifindex", SHOW_INTEGER, NULL),
        P("class", SHOW_STRING, NULL),
        P("local", SHOW_STRING, NULL),
        P("remote", SHOW_STRING, NULL),
        P("remote_changes", SHOW_INTEGER, NULL),
        P("pin_remote", SHOW_BOOLEAN, NULL),
        P("listens", SHOW_BOOLEAN, NULL),
        P("weight", SHOW_INTEGER, NULL),
        P("weight_source", SHOW_STRING, NULL),
        P("receive_weight", SHOW_INTEGER, NULL),
        P("peer_receive_weight", SHOW_INTEGER, NULL),
        P("backup", SHOW_BOOLEAN, NULL),
        P("demoted", SHOW_BOOLEAN, NULL),
        P("loss_threshold_permille", SHOW_INTEGER, "permille"),
        P("keepalive_interval_us", SHOW_INTEGER, "us"),
        P("dead_time_us", SHOW_INTEGER, "us"),
        P("last_keepalive_us", SHOW_INTEGER, "us"),
        P("rtt_us", SHOW_INTEGER, "us"),
        P("rtt_var_us", SHOW_INTEGER, "us"),
        P("loss_rx", SHOW_DECIMAL, "ratio"),
        P("loss_tx", SHOW_DECIMAL, "ratio"),
        P("peer_flags", SHOW_INTEGER, NULL),
        P("queued_locally", SHOW_BOOLEAN, NULL),
        P("learned_rate_bps", SHOW_INTEGER, "bit/s"),
        P("delivered_bps", SHOW_INTEGER, "bit/s"),
        P("pace_rate_bps", SHOW_INTEGER, "bit/s"),
        P("burst_rate_bps", SHOW_INTEGER, "bit/s"),
        P("queue_delay_us", SHOW_INTEGER, "us"),
        P("one_way_delay_us", SHOW_INTEGER, "us"),
        P("saturated", SHOW_BOOLEAN, NULL),
        P("share_permille", SHOW_INTEGER, "permille"),
        P("reorder_extra_us", SHOW_INTEGER, "us"),
        P("tx_packets", SHOW_INTEGER, "packets"),
        P("tx_bytes", SHOW_INTEGER, "bytes"),
        P("rx_packets", SHOW_INTEGER, "packets"),
        P("rx_bytes", SHOW_INTEGER, "bytes"),
        P("keepalives_tx", SHOW_INTEGER, "packets"),
        P("keepalives_rx", SHOW_INTEGER, "packets"),
        P("drop.*", SHOW_INTEGER, "packets"),
};
const size_t show_fields_n = ELEMENTSOF(show_fields);

const ShowField *show_field_lookup(const char *record, const char *name) {
        if (!record || !name)
                return NULL;
        for (size_t i = 0; i < show_fields_n; i++) {
                const ShowField *f = &show_fields[i];
                size_t len = strlen(f->name);

                if (!streq(f->record, record))
                        continue;
                if (len >= 2 && streq(f->name + len - 2, ".*")) {
                        /* a group: "group." and at least one character */
                        if (strncmp(name, f->name, len - 1) == 0 && name[len - 1] != 0)
                                return f;
                } else if (streq(f->name, name))
                        return f;
        }
        return NULL;
}

const char *show_type_to_string(ShowType t) {
        static const char *const names[_SHOW_TYPE_MAX] = {
                [SHOW_STRING] = "string",
                [SHOW_INTEGER] = "integer",
                [SHOW_DECIMAL] = "decimal",
                [SHOW_BOOLEAN] = "boolean",
                [SHOW_LIST] = "list",
        };
        return t >= 0 && t < _SHOW_TYPE_MAX ? names[t] : NULL;
}

static bool digits(const char *s, size_t n) {
        if (n == 0 || (s[0] == '0' && n > 1))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char) s[i]))
                        return false;
        return true;
}

bool show_value_valid(ShowType type, const char *value) {
        const char *dot;

        if (!value || value[0] == 0)
                return true;
        switch (type) {
        case SHOW_INTEGER:
                return digits(value, strlen(value));
        case SHOW_DECIMAL:
                dot = strchr(value, '.');
                if (!dot)
                        return digits(value, strlen(value));
                return digits(value, (size_t) (dot - value)) && dot[1] != 0 &&
                       strspn(dot + 1, "0123456789") == strlen(dot + 1);
        case SHOW_BOOLEAN:
                return streq(value, "yes") || streq(value, "no");
        case SHOW_STRING:
        case SHOW_LIST:
                return true;
        default:
                return false;
        }
}
