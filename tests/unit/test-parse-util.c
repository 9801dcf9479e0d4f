/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <limits.h>

#include "parse-util.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

/* "/mpt/parse-util/<group>/<index>-<input with odd characters replaced>" */
static void add_vector(const char *group, size_t i, const char *input, const void *data, GTestDataFunc fn) {
        g_autofree char *name = g_strdup(input ?: "NULL");
        g_autofree char *path = NULL;

        for (char *p = name; *p; p++)
                if (!g_ascii_isalnum(*p) && !strchr("._-", *p))
                        *p = '_';
        if (strlen(name) > 40)
                name[40] = 0;
        path = g_strdup_printf("/mpt/parse-util/%s/%02zu-%s", group, i, name);
        g_test_add_data_func(path, data, fn);
}

/* ---- safe_atou(), safe_atou64(), safe_atou_full() ---- */

typedef struct {
        const char *s;
        int r;
        uint64_t v;
} NumberVector;

static const NumberVector atou_vectors[] = {
        { "0", 0, 0 },
        { "7", 0, 7 },
        { "010", 0, 10 },   /* decimal, not octal (the original read 8) */
        { "0008", 0, 8 },   /* "08" is not even valid octal */
        { "4294967295", 0, UINT_MAX },
        { "4294967296", -ERANGE, 0 },
        { "99999999999999999999999", -ERANGE, 0 },
        { "", -EINVAL, 0 },
        { "-1", -EINVAL, 0 },
        { "+1", -EINVAL, 0 },
        { " 1", -EINVAL, 0 },
        { "1 ", -EINVAL, 0 },
        { "0x10", -EINVAL, 0 },
        { "1e3", -EINVAL, 0 },
        { "1.0", -EINVAL, 0 },
        { "١", -EINVAL, 0 }, /* a non-ASCII digit */
};

static void test_safe_atou(const void *data) {
        const NumberVector *v = data;
        unsigned u = 4242;
        int r;

        r = safe_atou(v->s, &u);
        g_assert_cmpint(r, ==, v->r);
        /* Failure must not touch the result. */
        g_assert_cmpuint(u, ==, v->r == 0 ? v->v : 4242);

        u = 4242;
        g_assert_cmpint(safe_atou_full(v->s, 10, &u), ==, v->r);
        g_assert_cmpuint(u, ==, v->r == 0 ? v->v : 4242);
}

static void test_safe_atou_base(void) {
        unsigned u = 1;

        /* Only base 10 exists: there is no octal or hexadecimal door. */
        g_assert_cmpint(safe_atou_full("10", 8, &u), ==, -EINVAL);
        g_assert_cmpint(safe_atou_full("10", 16, &u), ==, -EINVAL);
        g_assert_cmpint(safe_atou_full("10", 0, &u), ==, -EINVAL);
        g_assert_cmpuint(u, ==, 1);
}

static const NumberVector atou64_vectors[] = {
        { "0", 0, 0 },
        { "007", 0, 7 },
        { "4294967296", 0, UINT64_C(4294967296) },
        { "18446744073709551615", 0, UINT64_MAX },
        { "18446744073709551616", -ERANGE, 0 },
        { "18446744073709551620", -ERANGE, 0 },
        { "184467440737095516150", -ERANGE, 0 },
        { "", -EINVAL, 0 },
        { "-0", -EINVAL, 0 },
        { "12a", -EINVAL, 0 },
};

static void test_safe_atou64(const void *data) {
        const NumberVector *v = data;
        uint64_t u = 4242;

        g_assert_cmpint(safe_atou64(v->s, &u), ==, v->r);
        g_assert_cmpuint(u, ==, v->r == 0 ? v->v : 4242);
}

/* ---- parse_boolean() ---- */

typedef struct {
        const char *s;
        int r;
} BoolVector;

static const BoolVector bool_vectors[] = {
        { "1", 1 }, { "yes", 1 }, { "y", 1 }, { "true", 1 }, { "t", 1 }, { "on", 1 },
        { "YES", 1 }, { "On", 1 }, { "True", 1 },
        { "0", 0 }, { "no", 0 }, { "n", 0 }, { "false", 0 }, { "f", 0 }, { "off", 0 },
        { "NO", 0 }, { "Off", 0 },
        { "", -EINVAL }, { "2", -EINVAL }, { "yess", -EINVAL }, { " yes", -EINVAL }, { "yes ", -EINVAL },
        { "enable", -EINVAL }, { "01", -EINVAL }, { NULL, -EINVAL },
};

static void test_parse_boolean(const void *data) {
        const BoolVector *v = data;

        g_assert_cmpint(parse_boolean(v->s), ==, v->r);
}

/* ---- parse_duration() ---- */

#define MS USEC_PER_MSEC
#define S USEC_PER_SEC

static const NumberVector duration_vectors[] = {
        { "0", 0, 0 },
        { "5", 0, 5 * S },          /* a bare number is seconds */
        { "010", 0, 10 * S },       /* decimal */
        { "1.5", 0, 1500 * MS },
        { "1.5s", 0, 1500 * MS },
        { "100ms", 0, 100 * MS },
        { "2min", 0, 120 * S },
        { "2m", 0, 120 * S },
        { "500us", 0, 500 },
        { "1h", 0, 3600 * S },
        { "3sec", 0, 3 * S },
        { "10msec", 0, 10 * MS },
        { "7usec", 0, 7 },
        { "0.5ms", 0, 500 },
        { "0.25s", 0, 250 * MS },
        { "1.0000009s", 0, 1 * S }, /* fraction digits beyond microseconds are ignored */
        { "2.5min", 0, 150 * S },
        /* 5124095576 h = 18446744073600000000 us fits in 64 bits; one hour more does not. */
        { "5124095576h", 0, UINT64_C(18446744073600000000) },
        { "5124095577h", -ERANGE, 0 },
        { "5124095576.9h", -ERANGE, 0 }, /* + 3240000000 us overflows */
        { "6000000000h", -ERANGE, 0 },
        { "42949672959h", -ERANGE, 0 },
        { "99999999999999999999s", -ERANGE, 0 },
        { "43200000001us", 0, UINT64_C(43200000001) }, /* what format_duration() prints for 12h + 1us */
        { "18446744073709551614us", 0, UINT64_MAX - 1 },
        { "18446744073709551615us", -ERANGE, 0 },      /* USEC_INFINITY is not a duration */
        { "", -EINVAL, 0 },
        { "s", -EINVAL, 0 },
        { ".5s", -EINVAL, 0 },
        { "1.", -EINVAL, 0 },
        { "1.s", -EINVAL, 0 },
        { "-1s", -EINVAL, 0 },
        { "+1s", -EINVAL, 0 },
        { "1 s", -EINVAL, 0 },
        { " 1s", -EINVAL, 0 },
        { "1s ", -EINVAL, 0 },
        { "1S", -EINVAL, 0 }, /* units are case-sensitive */
        { "1sx", -EINVAL, 0 },
        { "1d", -EINVAL, 0 },
        { "1s2ms", -EINVAL, 0 },
        { "infinity", -EINVAL, 0 },
};

static void test_parse_duration(const void *data) {
        const NumberVector *v = data;
        usec_t u = 4242;

        g_assert_cmpint(parse_duration(v->s, &u), ==, v->r);
        g_assert_cmpuint(u, ==, v->r == 0 ? v->v : 4242);
}

/* ---- format_duration() ---- */

typedef struct {
        usec_t u;
        const char *s;
} FormatVector;

static const FormatVector format_vectors[] = {
        { 0, "0" },
        { 1, "1us" },
        { 500, "500us" },
        { 1 * MS, "1ms" },
        { 100 * MS, "100ms" },
        { 250 * MS, "250ms" },
        { 1 * S, "1s" },
        { 1500 * MS, "1.5s" },
        { 1250 * MS, "1250ms" }, /* not "1.25s": one decimal at most */
        { 10500 * MS, "10.5s" },
        { 60 * S, "60s" },
        { 3600 * S, "3600s" },
        { 1 * S + 1, "1000001us" },
        { 1 * S + 1 * MS, "1001ms" },
        { USEC_INFINITY, "infinity" },
};

static void test_format_duration(const void *data) {
        const FormatVector *v = data;
        char buf[64];
        usec_t u = 0;

        g_assert_cmpstr(format_duration(v->u, buf, sizeof buf), ==, v->s);
        if (v->u == USEC_INFINITY)
                return; /* the one value without a parseable form, see the report */
        g_assert_cmpint(parse_duration(buf, &u), ==, 0);
        g_assert_cmpuint(u, ==, v->u);
}

static void test_format_duration_roundtrip(void) {
        GRand *rand = g_rand_new_with_seed(1982);
        char buf[64];

        /* Any value the parser can produce must come back unchanged through the formatter. */
        for (unsigned i = 0; i < 20000; i++) {
                usec_t u, back = 0;

                switch (i % 4) {
                case 0: /* small, odd microseconds */
                        u = g_rand_int_range(rand, 0, 5000000);
                        break;
                case 1: /* whole milliseconds */
                        u = (usec_t) g_rand_int_range(rand, 0, 10000000) * MS;
                        break;
                case 2: /* tenths of seconds */
                        u = (usec_t) g_rand_int_range(rand, 0, 1000000) * 100 * MS;
                        break;
                default: /* large values */
                        u = ((usec_t) g_rand_int(rand) << 32 | g_rand_int(rand)) >> 2;
                        break;
                }
                format_duration(u, buf, sizeof buf);
                g_assert_cmpint(parse_duration(buf, &back), ==, 0);
                g_assert_cmpuint(back, ==, u);
        }
        g_rand_free(rand);
}

/* ---- ifname_valid(), object_name_valid() ---- */

typedef struct {
        const char *s;
        bool valid;
} NameVector;

static const NameVector ifname_vectors[] = {
        { "eth0", true },
        { "wlp2s0", true },
        { "eth0.100", true },
        { "br-lan", true },
        { "wan+1", true },   /* the kernel allows it */
        { "...", true },
        { "123456789012345", true },   /* 15 bytes: the longest */
        { "1234567890123456", false }, /* 16 bytes */
        { "", false },
        { NULL, false },
        { ".", false },
        { "..", false },
        { "a/b", false },
        { "a:b", false },
        { "a b", false },
        { "a\tb", false },
        { "a\nb", false },
        { "a\x01", false },
        { "a\x7f", false },
};

static void test_ifname_valid(const void *data) {
        const NameVector *v = data;

        g_assert_cmpint(ifname_valid(v->s), ==, v->valid);
}

static const NameVector object_name_vectors[] = {
        { "mpt0", true },
        { "a_b.c-d", true },
        { "_x", true },
        { "x-", true },
        { "x.", true },
        { "0", true },
        { "ABCDEFGHIJKLMNO", true },  /* 15 */
        { "ABCDEFGHIJKLMNOP", false }, /* 16 */
        { "", false },
        { NULL, false },
        { "-a", false },
        { ".a", false },
        { "a+b", false },
        { "a b", false },
        { "a/b", false },
        { "a:b", false },
        { "wän", false },
};

static void test_object_name_valid(const void *data) {
        const NameVector *v = data;

        g_assert_cmpint(object_name_valid(v->s), ==, v->valid);
}

/* ---- parse_port() ---- */

static const NumberVector port_vectors[] = {
        { "1", 0, 1 },
        { "4754", 0, 4754 },
        { "65535", 0, 65535 },
        { "080", 0, 80 },
        { "0", -ERANGE, 0 },
        { "65536", -ERANGE, 0 },
        { "4294967296", -ERANGE, 0 },
        { "", -EINVAL, 0 },
        { "http", -EINVAL, 0 },
        { "-1", -EINVAL, 0 },
        { "1 ", -EINVAL, 0 },
};

static void test_parse_port(const void *data) {
        const NumberVector *v = data;
        uint16_t p = 4242;

        g_assert_cmpint(parse_port(v->s, &p), ==, v->r);
        g_assert_cmpuint(p, ==, v->r == 0 ? v->v : 4242);
}

/* ---- parse_size() ---- */

static const NumberVector size_vectors[] = {
        { "0", 0, 0 },
        { "1500", 0, 1500 },
        { "1K", 0, 1024 },
        { "2M", 0, 2 * 1024 * 1024 },
        { "3G", 0, UINT64_C(3) * 1024 * 1024 * 1024 },
        { "17179869183G", 0, UINT64_MAX - (UINT64_C(1) << 30) + 1 }, /* (2^34 - 1) * 2^30 */
        { "17179869184G", -ERANGE, 0 },                              /* 2^64 */
        { "", -EINVAL, 0 },
        { "K", -EINVAL, 0 },
        { "1k", -EINVAL, 0 },
        { "1KB", -EINVAL, 0 },
        { "1T", -EINVAL, 0 },
        { "-1K", -EINVAL, 0 },
};

static void test_parse_size(const void *data) {
        const NumberVector *v = data;
        uint64_t u = 4242;

        g_assert_cmpint(parse_size(v->s, &u), ==, v->r);
        g_assert_cmpuint(u, ==, v->r == 0 ? v->v : 4242);
}

/* ---- string_distance() ---- */

typedef struct {
        const char *a, *b;
        unsigned d;
} DistanceVector;

static const DistanceVector distance_vectors[] = {
        { "", "", 0 },
        { "abc", "", 3 },
        { "", "abc", 3 },
        { "Weight", "Weight", 0 },
        { "weight", "WEIGHT", 0 }, /* case-insensitive */
        { "Wieght", "Weight", 2 }, /* a transposition costs two edits */
        { "Weigh", "Weight", 1 },
        { "Weightt", "Weight", 1 },
        { "Xeight", "Weight", 1 },
        { "kitten", "sitting", 3 },
        { "flaw", "lawn", 2 },
        { "Paht", "Path", 2 },
        { "Tunel", "Tunnel", 1 },
};

static void test_string_distance(const void *data) {
        const DistanceVector *v = data;

        g_assert_cmpuint(string_distance(v->a, v->b), ==, v->d);
        /* A metric: symmetric. */
        g_assert_cmpuint(string_distance(v->b, v->a), ==, v->d);
}

static void test_string_distance_long(void) {
        char a[65], b[65];

        /* Up to 63 characters are compared; longer strings count as far apart. */
        memset(a, 'x', 63);
        a[63] = 0;
        memset(b, 'x', 63);
        b[63] = 0;
        b[10] = 'y';
        g_assert_cmpuint(string_distance(a, b), ==, 1);
        memset(a, 'x', 64);
        a[64] = 0;
        g_assert_cmpuint(string_distance(a, "x"), ==, UINT_MAX);
        g_assert_cmpuint(string_distance("x", a), ==, UINT_MAX);
}

#define ADD_VECTORS(group, table, field, fn)                                            \
        for (size_t _i = 0; _i < G_N_ELEMENTS(table); _i++)                             \
                add_vector(group, _i, table[_i].field, &table[_i], fn)

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        ADD_VECTORS("safe_atou", atou_vectors, s, test_safe_atou);
        g_test_add_func("/mpt/parse-util/safe_atou_full/base", test_safe_atou_base);
        ADD_VECTORS("safe_atou64", atou64_vectors, s, test_safe_atou64);
        ADD_VECTORS("parse_boolean", bool_vectors, s, test_parse_boolean);
        ADD_VECTORS("parse_duration", duration_vectors, s, test_parse_duration);
        for (size_t i = 0; i < G_N_ELEMENTS(format_vectors); i++) {
                g_autofree char *n = g_strdup_printf("%" PRIu64, format_vectors[i].u);
                add_vector("format_duration", i, n, &format_vectors[i], test_format_duration);
        }
        g_test_add_func("/mpt/parse-util/format_duration/roundtrip", test_format_duration_roundtrip);
        ADD_VECTORS("ifname_valid", ifname_vectors, s, test_ifname_valid);
        ADD_VECTORS("object_name_valid", object_name_vectors, s, test_object_name_valid);
        ADD_VECTORS("parse_port", port_vectors, s, test_parse_port);
        ADD_VECTORS("parse_size", size_vectors, s, test_parse_size);
        ADD_VECTORS("string_distance", distance_vectors, a, test_string_distance);
        g_test_add_func("/mpt/parse-util/string_distance/long", test_string_distance_long);

        return g_test_run();
}
