/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <strings.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>

#include "parse-util.h"

int safe_atou64(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (isempty(s))
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *ret = v;
        return 0;
}

int safe_atou_full(const char *s, unsigned base, unsigned *ret) {
        uint64_t v;
        int r;

        if (base != 10)
                return -EINVAL;
        r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        return safe_atou_full(s, 10, ret);
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

static const struct {
        const char *suffix;
        usec_t usec;
} duration_units[] = {
        /* Longest first, so that "ms" is not read as "m" followed by junk. */
        { "usec", 1 },
        { "msec", USEC_PER_MSEC },
        { "sec", USEC_PER_SEC },
        { "min", 60 * USEC_PER_SEC },
        { "us", 1 },
        { "ms", USEC_PER_MSEC },
        { "s", USEC_PER_SEC },
        { "m", 60 * USEC_PER_SEC },
        { "h", 3600 * USEC_PER_SEC },
        { "", USEC_PER_SEC },
};

int parse_duration(const char *s, usec_t *ret) {
        uint64_t whole = 0, frac = 0, frac_div = 1;
        const char *p = s, *unit;
        usec_t total;

        if (isempty(s))
                return -EINVAL;
        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++)
                if (__builtin_mul_overflow(whole, 10, &whole) ||
                    __builtin_add_overflow(whole, (uint64_t) (*p - '0'), &whole))
                        return -ERANGE;
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++)
                        if (frac_div < 1000000) {
                                frac = frac * 10 + (uint64_t) (*p - '0');
                                frac_div *= 10;
                        }
        }
        unit = p;
        for (size_t i = 0; i < ELEMENTSOF(duration_units); i++) {
                if (!streq(unit, duration_units[i].suffix))
                        continue;
                /* "6000000000h" does not fit in 64 bits: refuse instead of wrapping around. */
                if (__builtin_mul_overflow(whole, duration_units[i].usec, &total) ||
                    __builtin_add_overflow(total, frac * duration_units[i].usec / frac_div, &total) ||
                    total == USEC_INFINITY)
                        return -ERANGE;
                *ret = total;
                return 0;
        }
        return -EINVAL;
}

const char *format_duration(usec_t u, char *buf, size_t size) {
        if (u == USEC_INFINITY)
                snprintf(buf, size, "infinity");
        else if (u == 0)
                snprintf(buf, size, "0");
        else if (u % USEC_PER_SEC == 0)
                snprintf(buf, size, "%" PRIu64 "s", u / USEC_PER_SEC);
        else if (u >= USEC_PER_SEC && u % (USEC_PER_SEC / 10) == 0)
                snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "s", u / USEC_PER_SEC,
                         (u % USEC_PER_SEC) / (USEC_PER_SEC / 10));
        else if (u % USEC_PER_MSEC == 0)
                snprintf(buf, size, "%" PRIu64 "ms", u / USEC_PER_MSEC);
        else
                snprintf(buf, size, "%" PRIu64 "us", u);
        return buf;
}

/* 1 to 15 bytes: what fits the kernel's interface names (IFNAMSIZ with the terminating NUL). */
static bool name_length_valid(const char *s) {
        return !isempty(s) && strlen(s) < IFNAMSIZ;
}

bool ifname_valid(const char *s) {
        if (!name_length_valid(s))
                return false;
        if (streq(s, ".") || streq(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (*p == '/' || *p == ':' || isspace((unsigned char) *p) || !isprint((unsigned char) *p))
                        return false;
        return true;
}

bool object_name_valid(const char *s) {
        /* Tunnels name TUN devices, and paths may take their names from interfaces. */
        if (!name_length_valid(s))
                return false;
        if (s[0] == '-' || s[0] == '.')
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_.-", *p))
                        return false;
        return true;
}

int parse_port(const char *s, uint16_t *ret) {
        unsigned v;
        int r;

        r = safe_atou(s, &v);
        if (r < 0)
                return r;
        if (v < 1 || v > 65535)
                return -ERANGE;
        *ret = (uint16_t) v;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        _cleanup_free_ char *num = NULL;
        uint64_t mult = 1, v;
        size_t n;
        int r;

        if (isempty(s))
                return -EINVAL;
        n = strlen(s);
        switch (s[n - 1]) {
        case 'K':
                mult = 1024;
                break;
        case 'M':
                mult = 1024 * 1024;
                break;
        case 'G':
                mult = 1024 * 1024 * 1024;
                break;
        default:
                break;
        }
        num = strndup(s, mult > 1 ? n - 1 : n);
        if (!num)
                return -ENOMEM;
        r = safe_atou64(num, &v);
        if (r < 0)
                return r;
        if (v > UINT64_MAX / mult)
                return -ERANGE;
        *ret = v * mult;
        return 0;
}

unsigned string_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        unsigned row[64];

        /* Names here are short; longer strings simply count as far apart. */
        if (la >= ELEMENTSOF(row) || lb >= ELEMENTSOF(row))
                return UINT_MAX;
        for (size_t j = 0; j <= lb; j++)
                row[j] = (unsigned) j;
        for (size_t i = 1; i <= la; i++) {
                unsigned prev = row[0];
                row[0] = (unsigned) i;
                for (size_t j = 1; j <= lb; j++) {
                        unsigned cur = row[j];
                        unsigned cost = tolower((unsigned char) a[i - 1]) == tolower((unsigned char) b[j - 1]) ? 0 : 1;
                        row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), prev + cost);
                        prev = cur;
                }
        }
        return row[lb];
}
