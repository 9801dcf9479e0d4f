/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "devclass.h"
#include "profile.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

#ifndef MPT_TEST_DATA
#error "MPT_TEST_DATA must point to tests/data"
#endif

#define TEST_FILE "test.conf"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(MptProfile, profile_free)

/* ---- helpers ---- */

static char **diag_strv(const MptDiagnostics *d) {
        GPtrArray *a = g_ptr_array_new();

        for (size_t i = 0; i < d->n; i++) {
                char *s = NULL;
                g_assert_cmpint(diag_format(&d->items[i], &s), ==, 0);
                g_ptr_array_add(a, g_strdup(s));
                free(s);
        }
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, false);
}

static void assert_strv(char **got, const char *const *expect) {
        size_t n_got = g_strv_length(got), n_expect = g_strv_length((char **) expect);

        if (n_got != n_expect) {
                g_autofree char *s = g_strjoinv("\n", got);
                g_test_message("got:\n%s", s);
        }
        for (size_t i = 0; i < MIN(n_got, n_expect); i++)
                g_assert_cmpstr(got[i], ==, expect[i]);
        g_assert_cmpuint(n_got, ==, n_expect);
}

static MptProfile *load_ok_as(const char *filename, const char *text) {
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        int r;

        r = profile_load_buffer(filename, text, strlen(text), &p, &d);
        if (r < 0 || d.n > 0) {
                g_auto(GStrv) e = diag_strv(&d);
                g_autofree char *s = g_strjoinv("\n", e);
                g_test_message("profile:\n%s\nerrors:\n%s", text, s);
        }
        g_assert_cmpint(r, ==, 0);
        g_assert_cmpuint(d.n, ==, 0);
        g_assert_nonnull(p);
        diag_done(&d);
        return p;
}

static MptProfile *load_ok(const char *text) {
        return load_ok_as(TEST_FILE, text);
}

/* Loads a profile that must be refused; returns its messages. */
static char **load_errors_as(const char *filename, const char *text) {
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        char **e;
        int r;

        r = profile_load_buffer(filename, text, strlen(text), &p, &d);
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_null(p);
        g_assert_false(d.oom);
        g_assert_cmpuint(d.n, >, 0);
        e = diag_strv(&d);
        diag_done(&d);
        return e;
}

static char **load_errors(const char *text) {
        return load_errors_as(TEST_FILE, text);
}

static void assert_errors(const char *text, const char *const *expect) {
        g_auto(GStrv) e = load_errors(text);

        assert_strv(e, expect);
}

static const void *config_of(const MptProfile *p, const MptConfKey *k, size_t path) {
        if (k->section == MPT_SECTION_TUNNEL)
                return &p->tunnel;
        if (k->section == MPT_SECTION_PEER) {
                g_assert_cmpuint(path, <, p->n_peers);
                return &p->peers[path];
        }
        g_assert_cmpuint(path, <, p->n_paths);
        return &p->paths[path];
}

static char *format_key(const MptProfile *p, const MptConfKey *k, size_t path) {
        char *v = NULL, *ret;

        g_assert_cmpint(profile_format_value(k, config_of(p, k, path), &v), ==, 0);
        g_assert_nonnull(v);
        ret = g_strdup(v);
        free(v);
        return ret;
}

static const char *format_named(const MptProfile *p, MptSection section, const char *key, size_t path) {
        static char *last = NULL;
        const MptConfKey *k = conf_key_lookup(section, key);

        g_assert_nonnull(k);
        g_free(last);
        last = format_key(p, k, path);
        return last;
}
#define TUNNEL_VALUE(p, key) format_named((p), MPT_SECTION_TUNNEL, (key), 0)
#define PATH_VALUE(p, i, key) format_named((p), MPT_SECTION_PATH, (key), (i))

/* Every key of every object has the same formatted value in a and b. */
static void assert_profiles_equal(const MptProfile *a, const MptProfile *b) {
        g_assert_cmpuint(a->n_paths, ==, b->n_paths);
        g_assert_cmpuint(a->n_peers, ==, b->n_peers);
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                size_t n = k->section == MPT_SECTION_TUNNEL ? 1 : k->section == MPT_SECTION_PEER ? a->n_peers : a->n_paths;

                for (size_t j = 0; j < n; j++) {
                        g_autofree char *va = format_key(a, k, j), *vb = format_key(b, k, j);
                        if (!g_str_equal(va, vb))
                                g_test_message("%s.%s differs (object %zu)", mpt_section_to_string(k->section),
                                               k->name, j);
                        g_assert_cmpstr(va, ==, vb);
                }
        }
}

static char *to_text(const MptProfile *p) {
        char *t = NULL, *ret;

        g_assert_cmpint(profile_to_text(p, &t), ==, 0);
        ret = g_strdup(t);
        free(t);
        return ret;
}

/* ---- per-key vectors ---- */

/* A minimal valid profile is built around the line under test:
 *
 *   1 [Tunnel]
 *     <tunnel test lines>
 *     Name=t0
 *     Mode=compat      (unless the test lines name Mode=, a key or a key file)
 *
 *     [Path]
 *     <path test lines>
 *     Interface=eth0
 *     LocalAddress=192.0.2.100
 *     Remote=192.0.2.1
 *
 * Base lines come after the test lines, so that for a bad value they restore a valid setting
 * (exactly one message is expected); for a good value the base line of the same key is left
 * out. Both Interface= and LocalAddress= are in the base, so either may be under test. Without
 * Mode=compat the profile would be in secure mode, which needs a key the test lines do not give. */
typedef struct {
        const char *key;
        const char *value;
} BaseLine;

static const BaseLine tunnel_base[] = { { "Name", "t0" } };
static const BaseLine path_base[] = {
        { "Interface", "eth0" },
        { "LocalAddress", "192.0.2.100" },
        { "Remote", "192.0.2.1" },
};

static char *build_profile(const MptConfKey *k, const char *const *test_lines, bool keep_base,
                           unsigned *ret_line) {
        GString *s = g_string_new(NULL);
        unsigned line = 0;
        bool compat = true;

        for (size_t i = 0; test_lines && test_lines[i]; i++)
                if (strstr(test_lines[i], "Mode=") || strstr(test_lines[i], "Key=") ||
                    strstr(test_lines[i], "KeyFile="))
                        compat = false;

        /* Not [Peer]: a profile with one is refused ("not supported yet"); its keys have the
         * tests of test_peer_key(). */
        for (MptSection sec = 0; sec <= MPT_SECTION_PATH; sec++) {
                const BaseLine *base = sec == MPT_SECTION_TUNNEL ? tunnel_base : path_base;
                size_t n_base = sec == MPT_SECTION_TUNNEL ? G_N_ELEMENTS(tunnel_base) : G_N_ELEMENTS(path_base);

                if (sec > 0) {
                        g_string_append(s, "\n");
                        line++;
                }
                g_string_append_printf(s, "[%s]\n", mpt_section_to_string(sec));
                line++;
                if (k && k->section == sec)
                        for (size_t i = 0; test_lines && test_lines[i]; i++) {
                                g_string_append_printf(s, "%s\n", test_lines[i]);
                                line++;
                                if (i == 0 && ret_line)
                                        *ret_line = line;
                        }
                for (size_t i = 0; i < n_base; i++) {
                        if (!keep_base && k && k->section == sec && g_str_equal(k->name, base[i].key))
                                continue;
                        g_string_append_printf(s, "%s=%s\n", base[i].key, base[i].value);
                        line++;
                }
                if (sec == MPT_SECTION_TUNNEL && compat) {
                        g_string_append(s, "Mode=compat\n");
                        line++;
                }
        }
        return g_string_free(s, false);
}

#define N_VALUES 6

typedef struct {
        const char *key;                        /* "Section.Key" */
        const char *good[N_VALUES];             /* accepted values */
        const char *formatted[N_VALUES];        /* profile_format_value() after good[i]; NULL: good[i] */
        const char *bad[N_VALUES];              /* refused values */
        const char *message[N_VALUES];          /* the message for bad[i] */
} KeyVector;

#define NAME_MSG(key, v) \
        "invalid " key "= '" v "': use 1 to 15 letters, digits, '_', '.' or '-', not starting with '-' or '.'"
#define PORT_MSG(key, v) "invalid " key "= '" v "': expected a port number 1..65535"
#define DURATION_MSG(key, v, range) \
        "invalid " key "= '" v "': expected a duration " range " (e.g. \"500ms\", \"2s\")"

#define KEY0 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define KEY1 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define KEY_MSG "invalid Key=: expected the base64 text of 32 bytes (44 characters), as `mptctl genkey` prints it"
#define HS_KEY_MSG(k) "invalid " k "=: expected the base64 text of 32 bytes (44 characters), as `mptctl genkey` prints it"
/* A public key: the X25519 public key of KEY1 is not it (a profile whose PublicKey= is its own is refused). */
#define KEY2 "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="

/* KeyFile= vectors name files that main() writes into the temporary directory it changes to
 * (TEST_FILE has no directory, so relative key files are taken from there). */
static const KeyVector key_vectors[] = {
        { "Peer.Name",
          .good = { "car-17", "p0", "a.b_c" },
          .bad = { "-x", "waytoolongnameforapeer" },
          .message = { NAME_MSG("Name", "-x"), NAME_MSG("Name", "waytoolongnameforapeer") } },
        { "Peer.PublicKey",
          .good = { KEY2 },
          .bad = { "abc" },
          .message = { HS_KEY_MSG("PublicKey") } },
        { "Peer.AllowedIPs",
          .good = { "10.8.0.2", "10.8.1.0/24 2001:db8:8::/64", "0.0.0.0/0" },
          .formatted = { NULL, NULL, NULL },
          .bad = { "10.8.0.0/33", "10.8.0.1 10.8.0.1", "224.0.0.1", "host.example" },
          .message = { "invalid AllowedIPs= '10.8.0.0/33': prefix length out of range",
                       "duplicate AllowedIPs= '10.8.0.1'",
                       "invalid AllowedIPs= '224.0.0.1': multicast addresses are not allowed",
                       "invalid AllowedIPs= 'host.example': expected PREFIX[/LENGTH]..." } },
        { "Peer.PresharedKey",
          .good = { KEY1 },
          .bad = { "abc" },
          .message = { HS_KEY_MSG("PresharedKey") } },
        { "Peer.PresharedKeyFile",
          .good = { "test.key", "./test.key" },
          .bad = { "missing.key", "public.key" },
          .message = { "PresharedKeyFile=missing.key: cannot open 'missing.key': No such file or directory",
                       "PresharedKeyFile=public.key: 'public.key' is readable by everyone; make it private (chmod "
                       "600 or 640)" } },
        { "Tunnel.Mode",
          /* Mode=secure is tested with Key= (a profile needs both); see the key tests. */
          .good = { "compat" },
          .bad = { "Secure", "strict", "1" },
          .message = { "invalid Mode= 'Secure': expected secure|compat",
                       "invalid Mode= 'strict': expected secure|compat",
                       "invalid Mode= '1': expected secure|compat" } },
        { "Tunnel.Key",
          .good = { KEY0, KEY1 },
          .bad = { "abc", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
                   "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g", KEY1 " " KEY0, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh*=" },
          .message = { KEY_MSG, KEY_MSG, KEY_MSG, KEY_MSG, KEY_MSG } },
        { "Tunnel.KeyFile",
          .good = { "test.key", "./test.key" },
          .bad = { "missing.key", "public.key", "notakey.key" },
          .message = { "KeyFile=missing.key: cannot open 'missing.key': No such file or directory",
                       "KeyFile=public.key: 'public.key' is readable by everyone; make it private (chmod 600 or 640)",
                       "KeyFile=notakey.key: 'notakey.key' does not hold a key: expected one line with the base64 "
                       "text of 32 bytes, as `mptctl genpsk` prints it" } },
        /* The handshake's keys: test_key_good() adds what each needs (key_companions()). */
        { "Tunnel.PrivateKey",
          .good = { KEY0, KEY1 },
          .bad = { "abc", KEY1 " " KEY0 },
          .message = { HS_KEY_MSG("PrivateKey"), HS_KEY_MSG("PrivateKey") } },
        { "Tunnel.PrivateKeyFile",
          .good = { "test.key", "./test.key" },
          .bad = { "missing.key", "public.key", "notakey.key" },
          .message = { "PrivateKeyFile=missing.key: cannot open 'missing.key': No such file or directory",
                       "PrivateKeyFile=public.key: 'public.key' is readable by everyone; make it private (chmod 600 or 640)",
                       "PrivateKeyFile=notakey.key: 'notakey.key' does not hold a key: expected one line with the "
                       "base64 text of 32 bytes, as `mptctl genkey` prints it" } },
        { "Tunnel.PublicKey",
          .good = { KEY2, KEY0 },
          .bad = { "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" },
          .message = { HS_KEY_MSG("PublicKey") } },
        { "Tunnel.PresharedKey",
          .good = { KEY0, KEY1 },
          .bad = { "not base64" },
          .message = { HS_KEY_MSG("PresharedKey") } },
        { "Tunnel.PresharedKeyFile",
          .good = { "test.key" },
          .bad = { "missing.key", "notakey.key" },
          .message = { "PresharedKeyFile=missing.key: cannot open 'missing.key': No such file or directory",
                       "PresharedKeyFile=notakey.key: 'notakey.key' does not hold a key: expected one line with the "
                       "base64 text of 32 bytes, as `mptctl genpsk` prints it" } },
        { "Tunnel.Name",
          .good = { "t1", "a.b-c_9", "ABCDEFGHIJKLMNO", "0" },
          .bad = { "-t", ".t", "a b", "ABCDEFGHIJKLMNOP", "a/b" },
          .message = { NAME_MSG("Name", "-t"), NAME_MSG("Name", ".t"), NAME_MSG("Name", "a b"),
                       NAME_MSG("Name", "ABCDEFGHIJKLMNOP"), NAME_MSG("Name", "a/b") } },
        { "Tunnel.Address",
          .good = { "10.0.0.2/24", "fd00::2/64", "10.0.0.2", "10.0.0.2/32", "fd00::2/128" },
          .formatted = { NULL, NULL, NULL, "10.0.0.2", "fd00::2" }, /* host prefixes print bare */
          .bad = { "10.0.0.2/33", "fd00::2/129", "foo", "10.0.0.2/x", "224.0.0.1", "ff02::1/16" },
          .message = { "invalid Address= '10.0.0.2/33': prefix length out of range",
                       "invalid Address= 'fd00::2/129': prefix length out of range",
                       "invalid Address= 'foo': expected ADDRESS[/PREFIXLEN]",
                       "invalid Address= '10.0.0.2/x': expected ADDRESS[/PREFIXLEN]",
                       "invalid Address= '224.0.0.1': multicast addresses are not allowed",
                       "invalid Address= 'ff02::1/16': multicast addresses are not allowed" } },
        { "Tunnel.Peer",
          .good = { "10.0.0.3", "fd00::3" },
          .bad = { "foo", "ff02::1", "10.0.0.3/" },
          .message = { "invalid Peer= 'foo': expected ADDRESS",
                       "invalid Peer= 'ff02::1': multicast addresses are not allowed",
                       "invalid Peer= '10.0.0.3/': takes an address without a prefix length" } },
        { "Tunnel.Route",
          .good = { "192.168.0.0/16", "2001:db8::/32", "0.0.0.0/0", "10.9.9.9" },
          .bad = { "10.0.0.0/40", "route", "239.0.0.0/8" },
          .message = { "invalid Route= '10.0.0.0/40': prefix length out of range",
                       "invalid Route= 'route': expected PREFIX/LENGTH",
                       "invalid Route= '239.0.0.0/8': multicast addresses are not allowed" } },
        { "Tunnel.Policy",
          .good = { "proto udp dport 5060 lowest-latency", "dscp EF aggregate", "to 10.0.0.0/8 aggregate",
                    "port 22 proto tcp aggregate" },
          .formatted = { NULL, "dscp 46 aggregate", NULL, "proto tcp port 22 aggregate" },
          .bad = { "udp lowest-latency", "proto udp", "dport 0 aggregate" },
          .message = { "invalid Policy= 'udp lowest-latency': unknown word 'udp' (expected proto, sport, dport, port, "
                       "dscp, from, to, then one of aggregate, pinned, lowest-latency, redundant)",
                       "invalid Policy= 'proto udp': no mode (aggregate, pinned NAMES, lowest-latency or redundant [COPIES]) at the end",
                       "invalid Policy= 'dport 0 aggregate': 'dport 0': expected a port 1..65535 or a range A-B" } },
        { "Tunnel.MTU",
          .good = { "1400", "auto", "576", "65535", "01400" },
          .formatted = { NULL, NULL, NULL, NULL, "1400" },
          .bad = { "575", "65536", "Auto", "1e3", "-1", "0" },
          .message = { "invalid MTU= '575': expected \"auto\" or 576..65535",
                       "invalid MTU= '65536': expected \"auto\" or 576..65535",
                       "invalid MTU= 'Auto': expected \"auto\" or 576..65535",
                       "invalid MTU= '1e3': expected \"auto\" or 576..65535",
                       "invalid MTU= '-1': expected \"auto\" or 576..65535",
                       "invalid MTU= '0': expected \"auto\" or 576..65535" } },
        { "Tunnel.LocalPort",
          .good = { "4754", "1", "65535", "080" },
          .formatted = { NULL, NULL, NULL, "80" },
          .bad = { "0", "65536", "http" },
          .message = { PORT_MSG("LocalPort", "0"), PORT_MSG("LocalPort", "65536"),
                       PORT_MSG("LocalPort", "http") } },
        { "Tunnel.RemotePort",
          .good = { "4754", "1", "65535" },
          .bad = { "0", "65536", "-5" },
          .message = { PORT_MSG("RemotePort", "0"), PORT_MSG("RemotePort", "65536"),
                       PORT_MSG("RemotePort", "-5") } },
        { "Tunnel.ReorderWindow",
          .good = { "0", "1024", "65536", "010" },
          .formatted = { NULL, NULL, NULL, "10" },
          .bad = { "65537", "-1", "big" },
          .message = { "invalid ReorderWindow= '65537': expected 0..65536",
                       "invalid ReorderWindow= '-1': expected 0..65536",
                       "invalid ReorderWindow= 'big': expected 0..65536" } },
        { "Tunnel.ReorderMaxDelay",
          .good = { "100ms", "1ms", "10s", "0.5s", "1.5", "1000us" },
          .formatted = { NULL, NULL, NULL, "500ms", "1.5s", "1ms" },
          .bad = { "0", "999us", "11s", "10.000001s", "1x" },
          .message = { DURATION_MSG("ReorderMaxDelay", "0", "1ms..10s"),
                       DURATION_MSG("ReorderMaxDelay", "999us", "1ms..10s"),
                       DURATION_MSG("ReorderMaxDelay", "11s", "1ms..10s"),
                       DURATION_MSG("ReorderMaxDelay", "10.000001s", "1ms..10s"),
                       DURATION_MSG("ReorderMaxDelay", "1x", "1ms..10s") } },
        { "Tunnel.Scheduler",
          .good = { "weighted", "flow" },
          .bad = { "Flow", "round-robin", "weighted " "x" },
          .message = { "invalid Scheduler= 'Flow': expected learned|weighted|flow",
                       "invalid Scheduler= 'round-robin': expected learned|weighted|flow",
                       "invalid Scheduler= 'weighted x': expected learned|weighted|flow" } },
        { "Tunnel.Workers",
          .good = { "auto", "1", "64" },
          .bad = { "0", "65", "many" },
          .message = { "invalid Workers= '0': expected \"auto\" or 1..64",
                       "invalid Workers= '65': expected \"auto\" or 1..64",
                       "invalid Workers= 'many': expected \"auto\" or 1..64" } },
        { "Tunnel.Firewall",
          .good = { "yes", "no", "off" },
          .formatted = { NULL, NULL, "no" },
          .bad = { "sometimes", "2" },
          .message = { "invalid Firewall= 'sometimes': expected yes or no",
                       "invalid Firewall= '2': expected yes or no" } },
        { "Tunnel.FirewallMark",
          .good = { "0", "65536", "4294967295" },
          .bad = { "4294967296", "0x10", "-1" },
          .message = { "invalid FirewallMark= '4294967296': expected 0..4294967295",
                       "invalid FirewallMark= '0x10': expected 0..4294967295",
                       "invalid FirewallMark= '-1': expected 0..4294967295" } },

        { "Path.Name",
          .good = { "wan", "a.b-c_1", "ABCDEFGHIJKLMNO" },
          .bad = { "-wan", "w an", "ABCDEFGHIJKLMNOP", "wan+1" },
          .message = { NAME_MSG("Name", "-wan"), NAME_MSG("Name", "w an"), NAME_MSG("Name", "ABCDEFGHIJKLMNOP"),
                       NAME_MSG("Name", "wan+1") } },
        { "Path.Interface",
          .good = { "eth1", "wlp2s0", "eth0.100", "123456789012345" },
          .bad = { "1234567890123456", "a/b", "a:b", ".." },
          .message = { "invalid interface name '1234567890123456' in Interface=",
                       "invalid interface name 'a/b' in Interface=",
                       "invalid interface name 'a:b' in Interface=",
                       "invalid interface name '..' in Interface=" } },
        { "Path.LocalAddress",
          .good = { "192.0.2.55", "10.1.2.3" },
          .bad = { "0.0.0.0", "192.0.2.55/24", "224.0.0.5", "eth0" },
          .message = { "invalid LocalAddress= '0.0.0.0': a unicast address is needed",
                       "invalid LocalAddress= '192.0.2.55/24': not an IPv4 or IPv6 address",
                       "invalid LocalAddress= '224.0.0.5': a unicast address is needed",
                       "invalid LocalAddress= 'eth0': not an IPv4 or IPv6 address" } },
        { "Path.Remote",
          .good = { "192.0.2.7", "198.51.100.1" },
          .bad = { "host.example", "::", "ff05::2", "192.0.2.256" },
          .message = { "invalid Remote= 'host.example': not an IPv4 or IPv6 address",
                       "invalid Remote= '::': a unicast address is needed",
                       "invalid Remote= 'ff05::2': a unicast address is needed",
                       "invalid Remote= '192.0.2.256': not an IPv4 or IPv6 address" } },
        { "Path.RemotePort",
          .good = { "4755", "65535" },
          .bad = { "0", "65536" },
          .message = { PORT_MSG("RemotePort", "0"), PORT_MSG("RemotePort", "65536") } },
        { "Path.Weight",
          .good = { "0", "1", "10000", "010" },
          .formatted = { NULL, NULL, NULL, "10" },
          .bad = { "10001", "-1", "1.5", "0x10" },
          .message = { "invalid Weight= '10001': expected 0..10000", "invalid Weight= '-1': expected 0..10000",
                       "invalid Weight= '1.5': expected 0..10000",
                       "invalid Weight= '0x10': expected 0..10000" } },
        { "Path.ReceiveWeight",
          .good = { "0", "5", "10000" },
          .bad = { "10001", "auto" },
          .message = { "invalid ReceiveWeight= '10001': expected 0..10000",
                       "invalid ReceiveWeight= 'auto': expected 0..10000" } },
        { "Path.KeepaliveInterval",
          .good = { "1s", "0", "100ms", "3600s", "2.5", "1h" },
          .formatted = { NULL, NULL, NULL, NULL, "2.5s", "3600s" },
          .bad = { "50ms", "3601s", "1x", "-1" },
          .message = { DURATION_MSG("KeepaliveInterval", "50ms", "of 0 or 100ms..3600s"),
                       DURATION_MSG("KeepaliveInterval", "3601s", "of 0 or 100ms..3600s"),
                       DURATION_MSG("KeepaliveInterval", "1x", "of 0 or 100ms..3600s"),
                       DURATION_MSG("KeepaliveInterval", "-1", "of 0 or 100ms..3600s") } },
        { "Path.DeadTime",
          .good = { "5s", "0", "1.5s", "86400s", "43200.000001s" },
          .formatted = { NULL, NULL, NULL, NULL, "43200000001us" },
          .bad = { "100ms", "86401s", "forever" },
          .message = { DURATION_MSG("DeadTime", "100ms", "of 0 or 300ms..86400s"),
                       DURATION_MSG("DeadTime", "86401s", "of 0 or 300ms..86400s"),
                       DURATION_MSG("DeadTime", "forever", "of 0 or 300ms..86400s") } },
        { "Path.Backup",
          .good = { "yes", "no", "1", "off", "TRUE" },
          .formatted = { NULL, NULL, "yes", "no", "yes" },
          .bad = { "maybe", "2" },
          .message = { "invalid Backup= 'maybe': expected yes or no",
                       "invalid Backup= '2': expected yes or no" } },
        { "Path.PinRemote",
          .good = { "yes", "no", "on" },
          .formatted = { NULL, NULL, "yes" },
          .bad = { "pinned" },
          .message = { "invalid PinRemote= 'pinned': expected yes or no" } },
        { "Path.LossThreshold",
          .good = { "20%", "2.5%", "0", "100%", "7" },
          .formatted = { NULL, NULL, "0%", NULL, "7%" },
          .bad = { "101%", "2.55%", "-1%", "20%%", "abc" },
          .message = { "invalid LossThreshold= '101%': expected a percentage 0%..100%",
                       "invalid LossThreshold= '2.55%': expected a percentage like \"20%\" (one decimal at most)",
                       "invalid LossThreshold= '-1%': expected a percentage 0%..100%",
                       "invalid LossThreshold= '20%%': expected a percentage like \"20%\"",
                       "invalid LossThreshold= 'abc': expected a percentage 0%..100%" } },
};

static const KeyVector *find_vector(const MptConfKey *k) {
        g_autofree char *name = g_strdup_printf("%s.%s", mpt_section_to_string(k->section), k->name);

        for (size_t i = 0; i < G_N_ELEMENTS(key_vectors); i++)
                if (g_str_equal(key_vectors[i].key, name))
                        return &key_vectors[i];
        g_test_message("no test vector for key %s: add one to key_vectors[]", name);
        return NULL;
}

static void test_key_table_covered(void) {
        /* Every key of the table has vectors (a new key without test data fails here)... */
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const KeyVector *v = find_vector(&mpt_conf_keys[i]);
                g_assert_nonnull(v);
                g_assert_nonnull(v->good[0]);
                g_assert_nonnull(v->bad[0]);
                for (size_t j = 0; j < N_VALUES; j++)
                        g_assert_true(!v->bad[j] == !v->message[j]);
        }
        /* ...and every vector names a key that exists. */
        for (size_t i = 0; i < G_N_ELEMENTS(key_vectors); i++) {
                g_auto(GStrv) parts = g_strsplit(key_vectors[i].key, ".", 2);
                MptSection sec = mpt_section_from_string(parts[0]);
                g_assert_cmpint(sec, >=, 0);
                g_assert_nonnull(conf_key_lookup(sec, parts[1]));
        }
}

/* What a key of the handshake needs beside it for a good profile: the rest of a key pair. */
static void key_companions(const MptConfKey *k, const char *lines[static 3]) {
        lines[0] = lines[1] = NULL;
        if (k == conf_key(MPT_KEY_TUNNEL_PRIVATE_KEY) || k == conf_key(MPT_KEY_TUNNEL_PRIVATE_KEY_FILE))
                lines[0] = "PublicKey=" KEY2;
        else if (k == conf_key(MPT_KEY_TUNNEL_PUBLIC_KEY))
                lines[0] = "PrivateKey=" KEY1;
        else if (k == conf_key(MPT_KEY_TUNNEL_PRESHARED_KEY) || k == conf_key(MPT_KEY_TUNNEL_PRESHARED_KEY_FILE)) {
                lines[0] = "PrivateKey=" KEY1;
                lines[1] = "PublicKey=" KEY2;
        }
}

static void test_key_good(const void *data) {
        const MptConfKey *k = data;
        const KeyVector *v = find_vector(k);

        g_assert_nonnull(v);
        for (size_t i = 0; i < N_VALUES && v->good[i]; i++) {
                g_autofree char *line = g_strdup_printf("%s=%s", k->name, v->good[i]);
                const char *lines[4] = { line };

                key_companions(k, lines + 1);
                g_autofree char *text = build_profile(k, lines, false, NULL);
                g_autoptr(MptProfile) p = load_ok(text);
                g_autofree char *value = format_key(p, k, 0);
                g_autofree char *line2 = NULL, *text2 = NULL, *value2 = NULL;
                g_autoptr(MptProfile) p2 = NULL;

                g_assert_cmpstr(value, ==, v->formatted[i] ?: v->good[i]);

                /* What the formatter prints, the parser reads back to the same value. */
                line2 = g_strdup_printf("%s=%s", k->name, value);
                lines[0] = line2;
                text2 = build_profile(k, lines, false, NULL);
                p2 = load_ok(text2);
                value2 = format_key(p2, k, 0);
                g_assert_cmpstr(value2, ==, value);
                assert_profiles_equal(p, p2);
        }
}

static void test_key_bad(const void *data) {
        const MptConfKey *k = data;
        const KeyVector *v = find_vector(k);

        g_assert_nonnull(v);
        for (size_t i = 0; i < N_VALUES && v->bad[i]; i++) {
                g_autofree char *line = g_strdup_printf("%s=%s", k->name, v->bad[i]);
                const char *lines[4] = { line };
                unsigned n = 0;

                key_companions(k, lines + 1);
                g_autofree char *text = build_profile(k, lines, true, &n);
                g_autofree char *expect = g_strdup_printf(TEST_FILE ":%u: %s", n, v->message[i]);
                const char *const expect_v[] = { expect, NULL };

                g_assert_cmpuint(n, >, 0);
                assert_errors(text, expect_v);
        }
}

/* "test.conf:12: text" -> "text" */
static const char *message_of(const char *diag) {
        const char *p = diag;

        g_assert_true(g_str_has_prefix(p, TEST_FILE ":"));
        p += STRLEN(TEST_FILE ":");
        while (g_ascii_isdigit(*p))
                p++;
        g_assert_true(g_str_has_prefix(p, ": "));
        return p + 2;
}

/* ---- [Peer] sections (a hub) ---- */

/* What every hub profile gets from this version, at its first [Peer] header. */
#define HUB_REFUSED(line) \
        TEST_FILE ":" #line ": [Peer] sections (a hub: many peers on one tunnel) are not supported yet: " \
                  "this version checks them but cannot run them"

/* The [Tunnel] and [Path] of a hub: 5 lines, then a blank one; the first [Peer] is line 7. */
#define HUB_HEAD                        \
        "[Tunnel]\n"                    \
        "Name=hub\n"                    \
        "PrivateKey=" KEY1 "\n"         \
        "[Path]\n"                      \
        "LocalAddress=192.0.2.100\n"    \
        "\n"

static const BaseLine peer_base[] = {
        { "Name", "p" },
        { "PublicKey", KEY2 },
        { "AllowedIPs", "10.8.0.2" },
};

/* A hub whose one [Peer] (line 7) has the test line first (line 8), then the base lines. */
static char *build_hub(const MptConfKey *k, const char *line, bool keep_base) {
        GString *s = g_string_new(HUB_HEAD "[Peer]\n");

        g_string_append_printf(s, "%s\n", line);
        for (size_t i = 0; i < G_N_ELEMENTS(peer_base); i++)
                if (keep_base || !g_str_equal(k->name, peer_base[i].key))
                        g_string_append_printf(s, "%s=%s\n", peer_base[i].key, peer_base[i].value);
        return g_string_free(s, false);
}

/* A [Peer] key's vectors: a good value reads back as its vector says, and a hub with it has no
 * problem but being a hub; a bad value is reported at its line. */
static void test_peer_key(const void *data) {
        const MptConfKey *k = data;
        const KeyVector *v = find_vector(k);

        g_assert_nonnull(v);
        for (size_t i = 0; i < N_VALUES && v->good[i]; i++) {
                g_autoptr(MptProfile) p = profile_new();
                g_autofree char *line = g_strdup_printf("%s=%s", k->name, v->good[i]);
                g_autofree char *text = build_hub(k, line, false);
                g_auto(GStrv) e = NULL;
                MptPeerConfig *peer = p ? profile_add_peer(p, 1) : NULL;
                MptDiagnostics d = {};
                char *value = NULL;
                const char *const expect[] = { HUB_REFUSED(7), NULL };

                g_assert_nonnull(peer);
                g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, peer, k->name, v->good[i], TEST_FILE, 1, &d), ==, 0);
                g_assert_cmpuint(d.n, ==, 0);
                g_assert_cmpint(profile_format_value(k, peer, &value), ==, 0);
                g_assert_cmpstr(value, ==, v->formatted[i] ?: v->good[i]);
                free(value);

                e = load_errors(text);
                assert_strv(e, expect);
        }
        for (size_t i = 0; i < N_VALUES && v->bad[i]; i++) {
                g_autofree char *line = g_strdup_printf("%s=%s", k->name, v->bad[i]);
                g_autofree char *text = build_hub(k, line, true);
                g_autofree char *msg = g_strdup_printf(TEST_FILE ":8: %s", v->message[i]);
                const char *const expect[] = { HUB_REFUSED(7), msg, NULL };
                g_auto(GStrv) e = load_errors(text);

                assert_strv(e, expect);
        }
}

#define KEY3 "MDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk8="
#define KEY4 "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8="
/* The public key of KEY1 (a hub's own key, which no peer may have). */
#define KEY1_PUBLIC "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8="

static void test_hub_verify(void) {
        static const struct {
                const char *name, *text;
                const char *errors[6];
        } vectors[] = {
                { "good",
                  HUB_HEAD
                  "[Peer]\n"                            /* 7 */
                  "PublicKey=" KEY2 "\n"
                  "AllowedIPs=10.8.0.2 2001:db8:8::2\n"
                  "[Peer]\n"                            /* 10 */
                  "Name=car-2\n"
                  "PublicKey=" KEY3 "\n"
                  "AllowedIPs=10.8.0.3\n"
                  "AllowedIPs=10.9.0.0/16\n",
                  { HUB_REFUSED(7) } },
                { "overlap",
                  HUB_HEAD
                  "[Peer]\n"                            /* 7 */
                  "Name=a\n"
                  "PublicKey=" KEY2 "\n"
                  "AllowedIPs=10.8.0.0/24\n"            /* 10 */
                  "[Peer]\n"
                  "Name=b\n"
                  "PublicKey=" KEY3 "\n"
                  "AllowedIPs=10.8.0.77 10.7.0.1\n"     /* 14 */
                  "[Peer]\n"
                  "Name=c\n"
                  "PublicKey=" KEY4 "\n"
                  "AllowedIPs=10.0.0.0/8\n",            /* 18 */
                  { HUB_REFUSED(7),
                    TEST_FILE ":14: peer 'b': AllowedIPs= 10.8.0.77 overlaps the AllowedIPs= of peer 'a' "
                              "(line 10): an address belongs to one peer",
                    /* 10.7.0.1 of b, the first overlap in address order. */
                    TEST_FILE ":18: peer 'c': AllowedIPs= 10.0.0.0/8 overlaps the AllowedIPs= of peer 'b' "
                              "(line 14): an address belongs to one peer" } },
                { "duplicate-key-and-name",
                  HUB_HEAD
                  "[Peer]\n"                            /* 7 */
                  "Name=a\n"
                  "PublicKey=" KEY2 "\n"
                  "AllowedIPs=10.8.0.2\n"
                  "[Peer]\n"                            /* 11 */
                  "Name=a\n"
                  "PublicKey=" KEY2 "\n"                /* 13 */
                  "AllowedIPs=10.8.0.3\n",
                  { HUB_REFUSED(7),
                    TEST_FILE ":12: duplicate peer name 'a' (first at line 7); set a unique Name=",
                    TEST_FILE ":13: peer 'a' has the PublicKey= of peer 'a' (line 9): a key identifies one peer" } },
                { "own-key-and-missing",
                  HUB_HEAD
                  "[Peer]\n"                            /* 7 */
                  "PublicKey=" KEY1_PUBLIC "\n"
                  "AllowedIPs=10.8.0.2\n"
                  "[Peer]\n",                           /* 10 */
                  { HUB_REFUSED(7),
                    TEST_FILE ":8: peer 'peer0': PublicKey= is this end's own public key: give the peer's (each "
                              "end has a key pair of its own)",
                    TEST_FILE ":10: peer 'peer1' needs PublicKey=, its public key (`mptctl pubkey` prints it "
                              "from the peer's private key)",
                    TEST_FILE ":10: peer 'peer1' needs AllowedIPs=, the inner addresses it sends from and is "
                              "reached at" } },
                { "single-peer-keys-in-tunnel",
                  "[Tunnel]\n"
                  "Name=hub\n"
                  "PrivateKey=" KEY1 "\n"
                  "PublicKey=" KEY2 "\n"                /* 4 */
                  "PresharedKey=" KEY1 "\n"             /* 5 */
                  "Peer=10.8.0.1\n"                     /* 6 */
                  "[Path]\n"
                  "LocalAddress=192.0.2.100\n"
                  "[Peer]\n"                            /* 9 */
                  "PublicKey=" KEY3 "\n"
                  "AllowedIPs=10.8.0.2\n",
                  { TEST_FILE ":4: PublicKey= names the key of the one other end of a tunnel; this tunnel has "
                              "[Peer] sections (a hub): give each peer's PublicKey= in its [Peer] section",
                    TEST_FILE ":5: PresharedKey= names the key of the one other end of a tunnel; this tunnel has "
                              "[Peer] sections (a hub): give each peer's PresharedKey= in its [Peer] section",
                    TEST_FILE ":6: Peer= is the tunnel address of the one other end of a tunnel; in a hub "
                              "([Peer] sections) each peer's addresses are its AllowedIPs=",
                    HUB_REFUSED(9) } },
                { "shared-key",
                  "[Tunnel]\n"
                  "Name=hub\n"
                  "Key=" KEY1 "\n"                      /* 3 */
                  "[Path]\n"
                  "LocalAddress=192.0.2.100\n"
                  "[Peer]\n"                            /* 6 */
                  "PublicKey=" KEY3 "\n"
                  "AllowedIPs=10.8.0.2\n",
                  { TEST_FILE ":3: Key= is a key that every end shares; a hub ([Peer] sections) tells its peers "
                              "apart by their key pairs: set PrivateKey= here and each peer's PublicKey= in its "
                              "[Peer]",
                    HUB_REFUSED(6) } },
                { "no-private-key",
                  "[Tunnel]\n"
                  "Name=hub\n"
                  "Mode=secure\n"
                  "[Path]\n"
                  "LocalAddress=192.0.2.100\n"
                  "[Peer]\n"                            /* 6 */
                  "PublicKey=" KEY3 "\n"
                  "AllowedIPs=10.8.0.2\n",
                  { TEST_FILE ":6: [Peer] sections (a hub) need PrivateKey= or PrivateKeyFile= in [Tunnel], this "
                              "end's private key (create one with `mptctl genkey`)",
                    HUB_REFUSED(6) } },
                { "path-with-remote",
                  "[Tunnel]\n"
                  "Name=hub\n"
                  "PrivateKey=" KEY1 "\n"
                  "[Path]\n"
                  "Interface=wan\n"                    /* its name: wan */
                  "LocalAddress=192.0.2.100\n"
                  "Remote=198.51.100.7\n"              /* 7 */
                  "[Peer]\n"                            /* 8 */
                  "PublicKey=" KEY3 "\n"
                  "AllowedIPs=10.8.0.2\n",
                  { TEST_FILE ":7: path 'wan': a hub's paths listen (no Remote=): each peer's paths reach them "
                              "from wherever they are",
                    HUB_REFUSED(8) } },
                { "compat",
                  "[Tunnel]\n"
                  "Name=hub\n"
                  "Mode=compat\n"
                  "[Path]\n"
                  "LocalAddress=192.0.2.100\n"
                  "Remote=192.0.2.1\n"
                  "[Peer]\n"                            /* 7 */
                  "PublicKey=" KEY3 "\n"
                  "AllowedIPs=10.8.0.2\n",
                  { TEST_FILE ":7: [Peer] sections (a hub) need Mode=secure: the hub knows its peers by their "
                              "keys",
                    HUB_REFUSED(7) } },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(vectors); i++) {
                g_auto(GStrv) e = NULL;

                g_test_message("%s", vectors[i].name);
                e = load_errors(vectors[i].text);
                assert_strv(e, vectors[i].errors);
        }
}

/* A [Peer] of a drop-in changes the peer of its Name=, or adds one; profile_to_text() writes the
 * peers after the paths. Both through the parts that a hub's refusal leaves testable: the
 * parser's objects (profile_load_buffer() refuses, so the text is parsed here by hand). */
static void test_hub_objects(void) {
        g_autoptr(MptProfile) p = profile_new();
        MptPeerConfig *a, *b;
        MptDiagnostics d = {};
        char *text = NULL;

        g_assert_nonnull(p);
        g_assert_nonnull(profile_add_path(p, 4));
        a = profile_add_peer(p, 7);
        g_assert_nonnull(a);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_TUNNEL, NULL, "Name", "hub", TEST_FILE, 2, &d), ==, 0);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PATH, &p->paths[0], "LocalAddress", "192.0.2.100", TEST_FILE, 5,
                                       &d), ==, 0);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, a, "Name", "car-1", TEST_FILE, 8, &d), ==, 0);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, a, "AllowedIPs", "10.8.0.2", TEST_FILE, 9, &d), ==, 0);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, a, "AllowedIPs", "2001:db8:8::/64", TEST_FILE, 10, &d), ==, 0);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, a, "PublicKey", KEY2, TEST_FILE, 11, &d), ==, 0);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, a, "PresharedKey", KEY1, TEST_FILE, 12, &d), ==, 0);
        b = profile_add_peer(p, 14);
        g_assert_nonnull(b);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, b, "Remote", "192.0.2.1", TEST_FILE, 15, &d), ==, -ENOENT);
        g_assert_cmpint(profile_assign(p, MPT_SECTION_PEER, b, "AllowedIP", "10.8.0.3", TEST_FILE, 16, &d), ==, -ENOENT);
        {
                g_auto(GStrv) e = diag_strv(&d);
                const char *const expect[] = {
                        TEST_FILE ":15: unknown key 'Remote' in [Peer]",
                        TEST_FILE ":16: unknown key 'AllowedIP' in [Peer]; did you mean 'AllowedIPs'?",
                        NULL,
                };
                assert_strv(e, expect);
        }
        diag_done(&d);
        g_assert_true(profile_is_hub(p));
        /* (a moved when b was added.) */
        g_assert_true(profile_find_peer(p, "car-1") == &p->peers[0]);
        g_assert_null(profile_find_peer(p, "car-2"));

        g_assert_cmpint(profile_to_text(p, &text), ==, 0);
        g_assert_cmpstr(text, ==,
                        "[Tunnel]\nName=hub\n\n"
                        "[Path]\nLocalAddress=192.0.2.100\n\n"
                        "[Peer]\nName=car-1\nPublicKey=" KEY2 "\nAllowedIPs=10.8.0.2\nAllowedIPs=2001:db8:8::/64\n"
                        "PresharedKey=" KEY1 "\n\n"
                        "[Peer]\n");
        explicit_bzero(text, strlen(text));
        free(text);
}

static void test_hub_dropins(void) {
        /* Drop-ins go through the files: a profile with a peer, one drop-in that changes it
         * (by Name=), one that adds a peer. The peers' problems show that both were read. */
        g_autofree char *dir = g_dir_make_tmp("mpt-test-hub.XXXXXX", NULL);
        g_autofree char *conf = g_build_filename(dir, "hub.conf", NULL);
        g_autofree char *ddir = g_build_filename(dir, "hub.conf.d", NULL);
        g_autofree char *d1 = g_build_filename(ddir, "10-car1.conf", NULL);
        g_autofree char *d2 = g_build_filename(ddir, "20-car2.conf", NULL);
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        g_auto(GStrv) e = NULL;
        g_autofree char *x1 = NULL, *x2 = NULL, *x3 = NULL;

        g_assert_cmpint(mkdir(ddir, 0700), ==, 0);
        g_assert_true(g_file_set_contents(conf, HUB_HEAD "[Peer]\nName=car-1\nPublicKey=" KEY2 "\n", -1, NULL));
        g_assert_true(g_file_set_contents(d1, "[Peer]\nName=car-1\nAllowedIPs=10.8.0.0/24\n", -1, NULL));
        g_assert_true(g_file_set_contents(d2, "[Peer]\nName=car-2\nPublicKey=" KEY3 "\nAllowedIPs=10.8.0.9\n", -1,
                                          NULL));
        g_assert_cmpint(profile_load_file_dirs(conf, (const char *const[]) { dir, NULL }, &p, &d), ==, -EINVAL);
        g_assert_null(p);
        e = diag_strv(&d);
        x1 = g_strdup_printf("%s:7: [Peer] sections (a hub: many peers on one tunnel) are not supported yet: this "
                             "version checks them but cannot run them", conf);
        x2 = g_strdup_printf("%s:4: peer 'car-2': AllowedIPs= 10.8.0.9 overlaps the AllowedIPs= of peer 'car-1' "
                             "(%s:3): an address belongs to one peer", d2, d1);
        {
                const char *const expect[] = { x1, x2, NULL };
                assert_strv(e, expect);
        }
        diag_done(&d);
        (void) unlink(d1);
        (void) unlink(d2);
        (void) rmdir(ddir);
        (void) unlink(conf);
        (void) rmdir(dir);
}

/* "Key=" resets the key to its default: the result equals a profile that never set it. */
static void test_key_reset(const void *data) {
        const MptConfKey *k = data;
        const KeyVector *v = find_vector(k);
        g_autofree char *set = NULL, *text = NULL, *text_none = NULL, *reset = NULL;
        const char *lines[4] = {}, *none[2] = {};

        g_assert_nonnull(v);
        set = g_strdup_printf("%s=%s", k->name, v->good[0]);
        reset = g_strdup_printf("%s=", k->name);
        lines[0] = set;
        lines[1] = reset;
        /* After resetting the mode or the key, the profile needs the other one to be good. */
        if (k->type == MPT_CONF_MODE)
                lines[2] = none[0] = "Key=" KEY1;
        else if (k->type == MPT_CONF_KEY || (k->type == MPT_CONF_PATH && g_str_has_suffix(k->name, "KeyFile")))
                lines[2] = none[0] = "Mode=compat";
        text = build_profile(k, lines, false, NULL);
        text_none = build_profile(k, none[0] ? none : NULL, false, NULL);

        if (k->flags & MPT_CONF_REQUIRED) {
                /* Without the key the profile is refused, and for the same reason. */
                g_auto(GStrv) e = load_errors(text), e_none = load_errors(text_none);
                g_assert_cmpuint(g_strv_length(e), ==, g_strv_length(e_none));
                for (size_t i = 0; e[i]; i++)
                        g_assert_cmpstr(message_of(e[i]), ==, message_of(e_none[i]));
        } else {
                g_autoptr(MptProfile) p = load_ok(text), p_none = load_ok(text_none);
                g_autofree char *t = to_text(p), *t_none = to_text(p_none);

                assert_profiles_equal(p, p_none);
                /* The key counts as not set again: it is not written out. */
                g_assert_cmpstr(t, ==, t_none);
        }
}

/* ---- the key table itself ---- */

static void test_key_table(void) {
        size_t per_section[_MPT_SECTION_MAX] = {};

        g_assert_cmpuint(mpt_conf_keys_n, >, 0);
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];

                g_assert_cmpint(k->section, >=, 0);
                g_assert_cmpint(k->section, <, _MPT_SECTION_MAX);
                g_assert_cmpint(k->type, <, _MPT_CONF_TYPE_MAX);
                /* PascalCase ASCII, as the parser compares exactly. */
                g_assert_true(g_ascii_isupper(k->name[0]));
                for (const char *c = k->name; *c; c++)
                        g_assert_true(g_ascii_isalpha(*c));
                /* Documented: man page text and a syntax line. */
                g_assert_nonnull(k->doc);
                g_assert_cmpuint(strlen(k->doc), >, 20);
                g_assert_nonnull(k->syntax);
                g_assert_cmpstr(k->syntax, !=, "");
                /* Exact-case lookup finds this very entry; other spellings find nothing. */
                g_assert_true(conf_key_lookup(k->section, k->name) == k);
                {
                        g_autofree char *lower = g_ascii_strdown(k->name, -1);
                        if (!g_str_equal(lower, k->name))
                                g_assert_null(conf_key_lookup(k->section, lower));
                }
                g_assert_cmpuint(conf_key_index(k), ==, per_section[k->section]);
                per_section[k->section]++;
                g_assert_cmpuint(per_section[k->section], <=, MPT_KEYS_PER_SECTION_MAX);

                /* Numeric defaults lie in the range, unless the flags give 0 a meaning. */
                if (k->type == MPT_CONF_UINT32 || k->type == MPT_CONF_DURATION) {
                        g_assert_cmpuint(k->min, <=, k->max);
                        if (!(k->def == 0 && (k->flags & (MPT_CONF_AUTO | MPT_CONF_ZERO_OFF))))
                                g_assert_true(k->def >= k->min && k->def <= k->max);
                }
                if (k->type == MPT_CONF_PORT && k->def != 0)
                        g_assert_cmpuint(k->def, <=, 65535);
        }
        g_assert_cmpuint(per_section[MPT_SECTION_TUNNEL], >, 0);
        g_assert_cmpuint(per_section[MPT_SECTION_PATH], >, 0);
        g_assert_cmpuint(per_section[MPT_SECTION_PEER], >, 0);
        g_assert_null(conf_key_lookup(MPT_SECTION_TUNNEL, "Weight"));
        g_assert_null(conf_key_lookup(MPT_SECTION_PEER, "Remote"));
        g_assert_null(conf_key_lookup(MPT_SECTION_TUNNEL, "AllowedIPs"));
        g_assert_null(conf_key_lookup(MPT_SECTION_PATH, "MTU"));
        g_assert_null(conf_key_lookup(MPT_SECTION_PATH, ""));

        /* Keys by identity: every MptKeyId names its own entry, which lookup by name finds again,
         * and the identities say what the code means by them. */
        g_assert_cmpuint(mpt_conf_keys_n, ==, _MPT_KEY_MAX);
        for (MptKeyId id = 0; id < _MPT_KEY_MAX; id++) {
                const MptConfKey *k = conf_key(id);
                g_assert_true(conf_key_lookup(k->section, k->name) == k);
        }
        g_assert_cmpstr(conf_key(MPT_KEY_TUNNEL_KEY_FILE)->name, ==, "KeyFile");
        g_assert_cmpstr(conf_key(MPT_KEY_TUNNEL_MTU)->name, ==, "MTU");
        g_assert_cmpstr(conf_key(MPT_KEY_PATH_WEIGHT)->name, ==, "Weight");
        g_assert_cmpint(conf_key(MPT_KEY_PATH_REMOTE_PORT)->section, ==, MPT_SECTION_PATH);
        g_assert_cmpint(conf_key(MPT_KEY_TUNNEL_REMOTE_PORT)->section, ==, MPT_SECTION_TUNNEL);
        g_assert_cmpstr(conf_key(MPT_KEY_PATH_LOSS_THRESHOLD)->name, ==, "LossThreshold");
        /* The secrets: the pre-shared keys and the private key (not the other end's public key). */
        for (MptKeyId id = 0; id < _MPT_KEY_MAX; id++)
                g_assert_cmpint(!!(conf_key(id)->flags & MPT_CONF_SECRET), ==,
                                id == MPT_KEY_TUNNEL_KEY || id == MPT_KEY_TUNNEL_PRIVATE_KEY ||
                                        id == MPT_KEY_TUNNEL_PRESHARED_KEY || id == MPT_KEY_PEER_PRESHARED_KEY);
}

static void test_key_suggest(void) {
        g_assert_cmpstr(conf_key_suggest(MPT_SECTION_PATH, "Wieght"), ==, "Weight");
        g_assert_cmpstr(conf_key_suggest(MPT_SECTION_PATH, "weight"), ==, "Weight");
        g_assert_cmpstr(conf_key_suggest(MPT_SECTION_PATH, "Remte"), ==, "Remote");
        g_assert_cmpstr(conf_key_suggest(MPT_SECTION_TUNNEL, "Adress"), ==, "Address");
        g_assert_cmpstr(conf_key_suggest(MPT_SECTION_TUNNEL, "mtu"), ==, "MTU");
        g_assert_cmpstr(conf_key_suggest(MPT_SECTION_TUNNEL, "Nme"), ==, "Name");
        /* Short names need a close match. */
        g_assert_null(conf_key_suggest(MPT_SECTION_TUNNEL, "N"));
        g_assert_null(conf_key_suggest(MPT_SECTION_TUNNEL, "Frobnicate"));
        /* Keys of the other section are not suggested. */
        g_assert_null(conf_key_suggest(MPT_SECTION_TUNNEL, "Wieght"));
}

static void test_enums(void) {
        for (int i = 0; i < _MPT_SECTION_MAX; i++) {
                const char *s = mpt_section_to_string(i);
                g_assert_nonnull(s);
                g_assert_cmpint(mpt_section_from_string(s), ==, i);
        }
        g_assert_null(mpt_section_to_string(_MPT_SECTION_MAX));
        g_assert_null(mpt_section_to_string(-1));
        g_assert_cmpint(mpt_section_from_string("tunnel"), ==, -EINVAL);
        g_assert_cmpint(mpt_section_from_string(NULL), ==, -EINVAL);
        g_assert_cmpstr(mpt_section_to_string(MPT_SECTION_TUNNEL), ==, "Tunnel");
        g_assert_cmpstr(mpt_section_to_string(MPT_SECTION_PATH), ==, "Path");

        for (int i = 0; i < _MPT_SCHEDULER_MAX; i++) {
                const char *s = mpt_scheduler_to_string(i);
                g_assert_nonnull(s);
                g_assert_cmpint(mpt_scheduler_from_string(s), ==, i);
        }
        g_assert_null(mpt_scheduler_to_string(_MPT_SCHEDULER_MAX));
        g_assert_cmpint(mpt_scheduler_from_string("Weighted"), ==, -EINVAL);
        g_assert_cmpint(mpt_scheduler_from_string(""), ==, -EINVAL);
}

/* ---- defaults ---- */

static const char minimal[] =
        "[Tunnel]\n"
        "Mode=compat\n"
        "\n"
        "[Path]\n"
        "Interface=eth0\n"
        "Remote=192.0.2.1\n";

static void test_defaults(void) {
        g_autoptr(MptProfile) p = load_ok_as("/etc/mpt/mpt0.conf", minimal);
        const MptPathConfig *path = &p->paths[0];

        g_assert_cmpstr(p->tunnel.name, ==, "mpt0");
        g_assert_cmpuint(p->tunnel.addresses.n, ==, 0);
        g_assert_cmpuint(p->tunnel.mtu, ==, 0);
        g_assert_cmpuint(p->tunnel.local_port, ==, MPT_DEFAULT_PORT);
        g_assert_cmpuint(p->tunnel.remote_port, ==, 4754);
        g_assert_cmpuint(p->tunnel.reorder_window, ==, 4096);
        g_assert_cmpuint(p->tunnel.reorder_max_delay, ==, 500 * USEC_PER_MSEC);
        g_assert_cmpint(p->tunnel.scheduler, ==, MPT_SCHEDULER_WEIGHTED);
        g_assert_cmpuint(p->tunnel.workers, ==, 0);
        g_assert_cmpuint(p->tunnel.line, ==, 1);

        g_assert_cmpuint(p->n_paths, ==, 1);
        g_assert_cmpstr(path->name, ==, "eth0");
        g_assert_cmpuint(path->line, ==, 4);
        g_assert_cmpuint(path->weight, ==, 1);
        g_assert_cmpuint(path->receive_weight, ==, 0);
        g_assert_cmpuint(path->keepalive_interval, ==, USEC_PER_SEC);
        g_assert_cmpuint(path->dead_time, ==, 3 * USEC_PER_SEC);
        g_assert_cmpuint(path->remote_port, ==, 0);
        g_assert_false(path->backup);
        g_assert_false(address_is_set(&path->local));

        g_assert_cmpuint(path_config_remote_port(p, path), ==, 4754);
        g_assert_false(path_config_is_backup(path, MPT_DEVCLASS_ETHERNET));
        /* IPv4 underlay with sequence numbers: 20 + 8 + 4 + 4 (spec 2.8). */
        g_assert_cmpuint(profile_path_overhead(p, path), ==, 36);
        g_assert_true(profile_find_path(p, "eth0") == path);
        g_assert_null(profile_find_path(p, "eth1"));

        g_assert_cmpstr(TUNNEL_VALUE(p, "MTU"), ==, "auto");
        g_assert_cmpstr(TUNNEL_VALUE(p, "Workers"), ==, "auto");
        g_assert_cmpstr(TUNNEL_VALUE(p, "Address"), ==, "");
        g_assert_cmpstr(PATH_VALUE(p, 0, "LocalAddress"), ==, "");
        g_assert_cmpstr(PATH_VALUE(p, 0, "RemotePort"), ==, "");
        g_assert_cmpstr(PATH_VALUE(p, 0, "DeadTime"), ==, "3s");
        g_assert_cmpstr(PATH_VALUE(p, 0, "Backup"), ==, "no");
}

static void test_path_helpers(void) {
        g_autoptr(MptProfile) p = load_ok(
                "[Tunnel]\nMode=compat\nRemotePort=5000\nReorderWindow=0\n"
                "[Path]\nInterface=a\nRemote=2001:db8::1\nRemotePort=6000\n"
                "[Path]\nInterface=b\nRemote=192.0.2.1\nWeight=0\n"
                "[Path]\nInterface=c\nRemote=192.0.2.2\nBackup=yes\nWeight=3\n");

        g_assert_cmpuint(path_config_remote_port(p, &p->paths[0]), ==, 6000);
        g_assert_cmpuint(path_config_remote_port(p, &p->paths[1]), ==, 5000);
        /* IPv6 underlay without sequence numbers: 40 + 8 + 4. */
        g_assert_cmpuint(profile_path_overhead(p, &p->paths[0]), ==, 52);
        g_assert_cmpuint(profile_path_overhead(p, &p->paths[1]), ==, 32);
        g_assert_false(path_config_is_backup(&p->paths[0], MPT_DEVCLASS_ETHERNET));
        g_assert_true(path_config_is_backup(&p->paths[1], MPT_DEVCLASS_ETHERNET)); /* Weight=0 */
        g_assert_true(path_config_is_backup(&p->paths[2], MPT_DEVCLASS_ETHERNET)); /* Backup=yes */
}

/* A cellular path is a backup path unless the profile says otherwise (Backup= or Weight=). */
static void test_path_backup_by_class(void) {
        g_autoptr(MptProfile) p = load_ok(
                "[Tunnel]\nMode=compat\n"
                "[Path]\nInterface=a\nRemote=192.0.2.1\n"
                "[Path]\nInterface=b\nRemote=192.0.2.2\nBackup=no\n"
                "[Path]\nInterface=c\nRemote=192.0.2.3\nWeight=5\n"
                "[Path]\nInterface=d\nRemote=192.0.2.4\nWeight=0\n");

        g_assert_true(path_config_is_backup(&p->paths[0], MPT_DEVCLASS_WWAN));
        g_assert_false(path_config_is_backup(&p->paths[0], MPT_DEVCLASS_WLAN));
        g_assert_false(path_config_is_backup(&p->paths[0], MPT_DEVCLASS_ETHERNET));
        g_assert_false(path_config_is_backup(&p->paths[0], MPT_DEVCLASS_UNKNOWN));
        g_assert_false(path_config_is_backup(&p->paths[1], MPT_DEVCLASS_WWAN)); /* Backup=no */
        g_assert_false(path_config_is_backup(&p->paths[2], MPT_DEVCLASS_WWAN)); /* Weight=5 */
        g_assert_true(path_config_is_backup(&p->paths[3], MPT_DEVCLASS_ETHERNET)); /* Weight=0 */
        g_assert_true(profile_find_path(p, "c") == &p->paths[2]);
}

typedef struct {
        const char *filename;
        const char *name; /* NULL: refused */
} FileNameVector;

static const FileNameVector file_name_vectors[] = {
        { "/x/y/mpt7.conf", "mpt7" },
        { "mpt7.conf", "mpt7" },
        { "mpt7", "mpt7" },
        { "/etc/mpt/office.v2.conf", "office.v2" },
        { "/etc/mpt/.conf", NULL },
        { "/etc/mpt/bad name.conf", NULL },
        { "/etc/mpt/sixteen-chars-xx.conf", NULL },
};

static void test_default_tunnel_name(void) {
        for (size_t i = 0; i < G_N_ELEMENTS(file_name_vectors); i++) {
                const FileNameVector *v = &file_name_vectors[i];

                if (v->name) {
                        g_autoptr(MptProfile) p = load_ok_as(v->filename, minimal);
                        g_assert_cmpstr(p->tunnel.name, ==, v->name);
                } else {
                        g_autofree char *expect = g_strdup_printf(
                                "%s:1: no tunnel name: set Name= in [Tunnel] (the file name is not a valid name)",
                                v->filename);
                        const char *const e[] = { expect, NULL };
                        g_auto(GStrv) got = load_errors_as(v->filename, minimal);
                        assert_strv(got, e);
                }
        }

        /* Name= wins over the file name, whatever the file is called. */
        {
                g_autoptr(MptProfile) p = load_ok_as("/etc/mpt/bad name.conf",
                                                     "[Tunnel]\nMode=compat\nName=office\n"
                                                     "[Path]\nInterface=eth0\nRemote=192.0.2.1\n");
                g_assert_cmpstr(p->tunnel.name, ==, "office");
        }
        /* Without a file name, messages say "<input>". */
        {
                MptDiagnostics d = {};
                MptProfile *p = NULL;
                g_auto(GStrv) e = NULL;
                g_assert_cmpint(profile_load_buffer(NULL, minimal, strlen(minimal), &p, &d), ==, -EINVAL);
                e = diag_strv(&d);
                g_assert_cmpuint(g_strv_length(e), ==, 1);
                g_assert_cmpstr(e[0], ==,
                                "<input>:1: no tunnel name: set Name= in [Tunnel] (the file name is not a valid name)");
                diag_done(&d);
        }
}

static void test_default_path_names(void) {
        g_autoptr(MptProfile) p = load_ok(
                "[Tunnel]\nMode=compat\n"
                "[Path]\nLocalAddress=192.0.2.10\nRemote=192.0.2.1\n"
                "[Path]\nInterface=wan\nRemote=192.0.2.2\n"
                "[Path]\nLocalAddress=192.0.2.12\nRemote=192.0.2.3\n"
                "[Path]\nName=lte\nInterface=wwan0\nRemote=192.0.2.4\n");

        /* Interface=, else "pathN" with N the path's index counting from 0. */
        g_assert_cmpuint(p->n_paths, ==, 4);
        g_assert_cmpstr(p->paths[0].name, ==, "path0");
        g_assert_cmpstr(p->paths[1].name, ==, "wan");
        g_assert_cmpstr(p->paths[2].name, ==, "path2");
        g_assert_cmpstr(p->paths[3].name, ==, "lte");
}

static void test_dead_time_default(void) {
        g_autoptr(MptProfile) p = load_ok(
                "[Tunnel]\nMode=compat\n"
                "[Path]\nInterface=a\nRemote=192.0.2.1\n"
                "[Path]\nInterface=b\nRemote=192.0.2.2\nKeepaliveInterval=2s\n"
                "[Path]\nInterface=c\nRemote=192.0.2.3\nKeepaliveInterval=0\n"
                "[Path]\nInterface=d\nRemote=192.0.2.4\nKeepaliveInterval=2s\nDeadTime=10s\n"
                "[Path]\nInterface=e\nRemote=192.0.2.5\nKeepaliveInterval=250ms\nDeadTime=5s\nDeadTime=\n");

        /* DeadTime defaults to 3 x KeepaliveInterval; keepalives off: never dead. */
        g_assert_cmpuint(p->paths[0].dead_time, ==, 3 * USEC_PER_SEC);
        g_assert_cmpuint(p->paths[1].dead_time, ==, 6 * USEC_PER_SEC);
        g_assert_cmpuint(p->paths[2].dead_time, ==, 0);
        g_assert_cmpuint(p->paths[3].dead_time, ==, 10 * USEC_PER_SEC);
        /* An empty value brings back the derived default. */
        g_assert_cmpuint(p->paths[4].dead_time, ==, 750 * USEC_PER_MSEC);
}

static void test_decimal_not_octal(void) {
        g_autoptr(MptProfile) p = load_ok(
                "[Tunnel]\nMode=compat\nReorderWindow=010\nLocalPort=0080\nMTU=01400\n"
                "[Path]\nInterface=a\nRemote=192.0.2.1\nWeight=010\nReceiveWeight=09\nKeepaliveInterval=010\n");

        g_assert_cmpuint(p->tunnel.reorder_window, ==, 10);
        g_assert_cmpuint(p->tunnel.local_port, ==, 80);
        g_assert_cmpuint(p->tunnel.mtu, ==, 1400);
        g_assert_cmpuint(p->paths[0].weight, ==, 10);
        g_assert_cmpuint(p->paths[0].receive_weight, ==, 9);
        g_assert_cmpuint(p->paths[0].keepalive_interval, ==, 10 * USEC_PER_SEC);
}

static void test_empty_value_resets(void) {
        g_autoptr(MptProfile) p = load_ok(
                "[Tunnel]\nMode=compat\nMTU=1400\nMTU=\nScheduler=flow\nScheduler=\nName=x\nName=\n"
                "[Path]\nInterface=a\nRemote=192.0.2.1\nWeight=5\nWeight=\nBackup=yes\nBackup=\n"
                "RemotePort=99\nRemotePort=\n");

        g_assert_cmpuint(p->tunnel.mtu, ==, 0);
        g_assert_cmpint(p->tunnel.scheduler, ==, MPT_SCHEDULER_WEIGHTED);
        g_assert_cmpstr(p->tunnel.name, ==, "test"); /* back to the file name */
        g_assert_cmpuint(p->paths[0].weight, ==, 1);
        g_assert_false(p->paths[0].backup);
        g_assert_cmpuint(p->paths[0].remote_port, ==, 0);
}

static void test_address_list(void) {
        g_autoptr(MptProfile) p = NULL;
        char buf[MPT_ADDRESS_STRLEN];

        /* Repeated Address= accumulates. */
        p = load_ok("[Tunnel]\nMode=compat\n"
                    "Address=10.0.0.2/24\nAddress=fd00::2/64\nRoute=10.1.0.0/16\nRoute=10.2.0.0/16\n"
                    "[Path]\nInterface=a\nRemote=192.0.2.1\n");
        g_assert_cmpuint(p->tunnel.addresses.n, ==, 2);
        g_assert_cmpstr(prefix_to_string(&p->tunnel.addresses.items[0], buf), ==, "10.0.0.2/24");
        g_assert_cmpstr(prefix_to_string(&p->tunnel.addresses.items[1], buf), ==, "fd00::2/64");
        g_assert_cmpstr(TUNNEL_VALUE(p, "Address"), ==, "10.0.0.2/24 fd00::2/64");
        g_assert_cmpuint(p->tunnel.routes.n, ==, 2);
        g_clear_pointer(&p, profile_free);

        /* An empty value clears what came before; later values start a new list. */
        p = load_ok("[Tunnel]\nMode=compat\n"
                    "Address=10.0.0.2/24\nAddress=fd00::2/64\nAddress=\nAddress=10.0.0.9/30\n"
                    "[Path]\nInterface=a\nRemote=192.0.2.1\n");
        g_assert_cmpuint(p->tunnel.addresses.n, ==, 1);
        g_assert_cmpstr(TUNNEL_VALUE(p, "Address"), ==, "10.0.0.9/30");
        g_clear_pointer(&p, profile_free);

        p = load_ok("[Tunnel]\nMode=compat\n"
                    "Address=10.0.0.2/24\nAddress=\n[Path]\nInterface=a\nRemote=192.0.2.1\n");
        g_assert_cmpuint(p->tunnel.addresses.n, ==, 0);
        g_assert_null(p->tunnel.addresses.items);
        g_clear_pointer(&p, profile_free);

        /* The same entry twice is a mistake. */
        {
                const char *const e[] = { TEST_FILE ":4: duplicate Address= '10.0.0.2/24'", NULL };
                assert_errors("[Tunnel]\nMode=compat\nAddress=10.0.0.2/24\nAddress=10.0.0.2/24\n"
                              "[Path]\nInterface=a\nRemote=192.0.2.1\n", e);
        }
}

static void test_list_limits(void) {
        GString *s = g_string_new("[Tunnel]\nMode=compat\n");
        g_autofree char *text = NULL;
        unsigned line = 2;

        /* MPT_ADDRESSES_MAX addresses are fine, one more is refused. */
        for (unsigned i = 0; i <= MPT_ADDRESSES_MAX; i++) {
                g_string_append_printf(s, "Address=10.0.%u.1/24\n", i);
                line++;
        }
        for (unsigned i = 0; i <= MPT_ROUTES_MAX; i++)
                g_string_append_printf(s, "Route=10.%u.%u.0/24\n", 100 + i / 256, i % 256);
        g_string_append(s, "[Path]\nInterface=a\nRemote=192.0.2.1\n");
        text = g_string_free(s, false);
        {
                g_autofree char *e1 = g_strdup_printf(TEST_FILE ":%u: too many Address= entries (at most %u)",
                                                       line, MPT_ADDRESSES_MAX);
                g_autofree char *e2 = g_strdup_printf(TEST_FILE ":%u: too many Route= entries (at most %u)",
                                                       line + MPT_ROUTES_MAX + 1, MPT_ROUTES_MAX);
                const char *const e[] = { e1, e2, NULL };
                assert_errors(text, e);
        }
}

/* ---- verification ---- */

typedef struct {
        const char *name;
        const char *text;
        const char *errors[8];
} VerifyVector;

#define P_OK "[Path]\nInterface=eth0\nRemote=192.0.2.1\n"

static const VerifyVector verify_vectors[] = {
        /* Secure mode and its key. */
        { "secure-without-key",
          "[Tunnel]\nMode=secure\n" P_OK,
          { TEST_FILE ":2: secure mode needs keys: PrivateKey= and PublicKey= (a key pair per end: `mptctl "
                      "genkey`, `mptctl pubkey`), or a pre-shared Key= or KeyFile= (`mptctl genpsk`); or Mode=compat "
                      "for original MPT peers" } },
        /* The handshake's keys. */
        { "handshake-with-key",
          "[Tunnel]\nKey=" KEY1 "\nPrivateKey=" KEY0 "\nPublicKey=" KEY2 "\n" P_OK,
          { TEST_FILE ":2: Key= is the pre-shared key of secure mode without a handshake, and PrivateKey= asks for "
                      "the handshake: remove Key=, or give it as PresharedKey= (mixed into the handshake)" } },
        { "handshake-without-public-key",
          "[Tunnel]\nPrivateKey=" KEY0 "\n" P_OK,
          { TEST_FILE ":2: PrivateKey= needs PublicKey=, the other end's public key (`mptctl pubkey` prints it "
                      "from that end's private key)" } },
        { "handshake-without-private-key",
          "[Tunnel]\nPublicKey=" KEY2 "\nPresharedKey=" KEY1 "\n" P_OK,
          { TEST_FILE ":2: PublicKey= needs PrivateKey= or PrivateKeyFile=, this end's private key (create one "
                      "with `mptctl genkey`)" } },
        { "handshake-own-public-key",
          /* KEY0's public key is X25519's base point times the clamped zero key. */
          "[Tunnel]\nPrivateKey=" KEY0 "\nPublicKey=L+V9o0fNYkMVKNqsX7spBzD/9oSvxM/C7ZCZX1jLO3Q=\n" P_OK,
          { TEST_FILE ":3: PublicKey= is this end's own public key: give the other end's (each end has a key pair "
                      "of its own)" } },
        { "handshake-private-key-twice",
          "[Tunnel]\nPrivateKey=" KEY0 "\nPrivateKeyFile=test.key\nPublicKey=" KEY2 "\n" P_OK,
          { TEST_FILE ":3: PrivateKey= and PrivateKeyFile= are both set; use one of them" } },
        { "handshake-psk-twice",
          "[Tunnel]\nPrivateKey=" KEY0 "\nPublicKey=" KEY2 "\nPresharedKey=" KEY1 "\nPresharedKeyFile=test.key\n" P_OK,
          { TEST_FILE ":5: PresharedKey= and PresharedKeyFile= are both set; use one of them" } },
        { "compat-with-private-key",
          "[Tunnel]\nMode=compat\nPrivateKey=" KEY0 "\n" P_OK,
          { TEST_FILE ":3: Mode=compat sends everything in the clear and takes no key; remove PrivateKey= or use "
                      "Mode=secure" } },
        { "compat-with-key",
          "[Tunnel]\nMode=compat\nKey=" KEY1 "\n" P_OK,
          { TEST_FILE ":3: Mode=compat sends everything in the clear and takes no key; remove Key= or use "
                      "Mode=secure" } },
        { "compat-with-key-file",
          "[Tunnel]\nKeyFile=test.key\nMode=compat\n" P_OK,
          { TEST_FILE ":2: Mode=compat sends everything in the clear and takes no key; remove KeyFile= or use "
                      "Mode=secure" } },
        { "key-and-key-file",
          "[Tunnel]\nKey=" KEY1 "\nKeyFile=test.key\n" P_OK,
          { TEST_FILE ":3: Key= and KeyFile= are both set; use one of them" } },
        { "bad-key-no-follow-up",
          "[Tunnel]\nKey=short\n" P_OK,
          { TEST_FILE ":2: " KEY_MSG } },
        { "bad-mode-no-follow-up",
          "[Tunnel]\nMode=strict\n" P_OK,
          { TEST_FILE ":2: invalid Mode= 'strict': expected secure|compat" } },
        { "unknown-key-hint",
          "[Tunnel]\nMode=compat\n" P_OK "Wieght=2\n",
          { TEST_FILE ":6: unknown key 'Wieght' in [Path]; did you mean 'Weight'?" } },
        { "unknown-key-case",
          "[Tunnel]\nMode=compat\nmtu=1400\n" P_OK,
          { TEST_FILE ":3: unknown key 'mtu' in [Tunnel]; did you mean 'MTU'?" } },
        { "unknown-key-no-hint",
          "[Tunnel]\nMode=compat\nFrobnicate=yes\n" P_OK,
          { TEST_FILE ":3: unknown key 'Frobnicate' in [Tunnel]" } },
        { "path-key-in-tunnel",
          "[Tunnel]\nMode=compat\nWeight=3\n" P_OK,
          { TEST_FILE ":3: unknown key 'Weight' in [Tunnel]" } },
        { "unknown-section-hint",
          "[Tunnel]\nMode=compat\n" P_OK "[Paht]\nInterface=eth1\n",
          { TEST_FILE ":6: unknown section [Paht]; did you mean [Path]?" } },
        { "unknown-section-case",
          "[tunnel]\nName=x\n[Tunnel]\nMode=compat\n" P_OK,
          { TEST_FILE ":1: unknown section [tunnel]; did you mean [Tunnel]?" } },
        { "unknown-section-no-hint",
          "[Tunnel]\nMode=compat\n[Network]\nAddress=10.0.0.1/24\n" P_OK,
          { TEST_FILE ":3: unknown section [Network]; expected [Tunnel], [Path] or [Peer]" } },
        { "second-tunnel",
          "[Tunnel]\nMode=compat\nName=one\n" P_OK "[Tunnel]\nName=two\nBogus=1\n",
          { TEST_FILE ":7: second [Tunnel] section (the first is at line 1); a profile describes one tunnel" } },
        { "no-path",
          "[Tunnel]\nMode=compat\nName=t\n",
          { TEST_FILE ": no [Path] section: a tunnel needs at least one path" } },
        { "no-tunnel",
          P_OK,
          { TEST_FILE ": no [Tunnel] section" } },
        { "empty-file",
          "",
          { TEST_FILE ": no [Tunnel] and no [Path] section: not an mpt profile" } },
        { "comments-only",
          "# nothing\n\n",
          { TEST_FILE ": no [Tunnel] and no [Path] section: not an mpt profile" } },
        { "missing-remote",
          "[Tunnel]\nMode=compat\n\n[Path]\nInterface=eth0\n",
          { TEST_FILE ":4: path 'eth0' has no Remote= address (only a secure tunnel, Mode=secure, may leave it out and learn the other end's address)" } },
        /* A rejected value is one problem, not also a missing key. */
        /* Without Remote= a path listens: secure mode, with LocalAddress=, not pinned. */
        { "listening-without-local-address",
          "[Tunnel]\nKey=" KEY1 "\n[Path]\nInterface=eth0\n",
          { TEST_FILE ":3: path 'eth0' has no Remote= address (a path without one listens for the other end, and then "
                      "needs LocalAddress=: the address it is reached at)" } },
        { "listening-pinned",
          "[Tunnel]\nKey=" KEY1 "\n[Path]\nLocalAddress=192.0.2.10\nPinRemote=yes\n",
          { TEST_FILE ":5: path 'path0': PinRemote=yes needs Remote= (a path without it learns where the other end is)" } },
        { "bad-remote-once",
          "[Tunnel]\nMode=compat\n\n[Path]\nInterface=eth0\nRemote=10.77.300.2\n",
          { TEST_FILE ":6: invalid Remote= '10.77.300.2': not an IPv4 or IPv6 address" } },
        { "bad-name-once",
          "[Tunnel]\nMode=compat\nName=-x\n[Path]\nInterface=eth0\nRemote=192.0.2.1\n",
          { TEST_FILE ":3: invalid Name= '-x': use 1 to 15 letters, digits, '_', '.' or '-', not starting with '-' or '.'" } },
        { "missing-interface-and-local",
          "[Tunnel]\nMode=compat\n[Path]\nRemote=192.0.2.1\n",
          { TEST_FILE ":3: path 'path0' needs Interface= or LocalAddress=" } },
        { "missing-everything",
          "[Tunnel]\nMode=compat\n[Path]\n",
          { TEST_FILE ":3: path 'path0' has no Remote= address (only a secure tunnel, Mode=secure, may leave it out and learn the other end's address)",
            TEST_FILE ":3: path 'path0' needs Interface= or LocalAddress=" } },
        { "family-mismatch",
          "[Tunnel]\nMode=compat\n[Path]\nInterface=eth0\nLocalAddress=192.0.2.10\nRemote=2001:db8::1\n",
          { TEST_FILE ":5: path 'eth0': LocalAddress= is IPv4 but Remote= is IPv6" } },
        { "family-mismatch-v6",
          "[Tunnel]\nMode=compat\n[Path]\nName=p\nRemote=192.0.2.1\nLocalAddress=2001:db8::5\n",
          { TEST_FILE ":6: path 'p': LocalAddress= is IPv6 but Remote= is IPv4" } },
        { "duplicate-name",
          "[Tunnel]\nMode=compat\n[Path]\nName=a\nInterface=eth0\nRemote=192.0.2.1\n"
          "[Path]\nInterface=eth1\nName=a\nRemote=192.0.2.2\n",
          { TEST_FILE ":9: duplicate path name 'a' (first at line 3); set a unique Name=" } },
        { "duplicate-name-from-interface",
          "[Tunnel]\nMode=compat\n[Path]\nInterface=eth0\nRemote=192.0.2.1\n"
          "[Path]\nInterface=eth0\nRemote=192.0.2.2\n",
          { TEST_FILE ":6: duplicate path name 'eth0' (first at line 3); set a unique Name=" } },
        { "duplicate-path",
          "[Tunnel]\nMode=compat\n[Path]\nName=a\nInterface=eth0\nRemote=192.0.2.1\n"
          "[Path]\nName=b\nInterface=eth0\nRemote=192.0.2.1\n",
          { TEST_FILE ":7: path 'b' duplicates path 'a' (same interface, local and remote address and port)" } },
        { "dead-time-equal",
          "[Tunnel]\nMode=compat\n" P_OK "KeepaliveInterval=2s\nDeadTime=2s\n",
          { TEST_FILE ":7: path 'eth0': DeadTime= must be longer than KeepaliveInterval=" } },
        { "dead-time-shorter-than-default-interval",
          "[Tunnel]\nMode=compat\n" P_OK "DeadTime=500ms\n",
          { TEST_FILE ":6: path 'eth0': DeadTime= must be longer than KeepaliveInterval=" } },
        { "dead-time-without-keepalives",
          "[Tunnel]\nMode=compat\n" P_OK "DeadTime=5s\nKeepaliveInterval=0\n",
          { TEST_FILE ":6: path 'eth0': DeadTime= needs keepalives, but KeepaliveInterval=0" } },
        { "mtu-ipv6",
          "[Tunnel]\nMode=compat\nAddress=10.0.0.1/24\nMTU=1000\nAddress=fd00::1/64\n" P_OK,
          { TEST_FILE ":4: MTU=1000 is below 1280, the minimum for a tunnel with an IPv6 address" } },
        { "two-ipv4-peers",
          "[Tunnel]\nMode=compat\nPeer=10.0.0.3\nPeer=fd00::3\nPeer=10.0.0.4\n" P_OK,
          { TEST_FILE ":5: more than one IPv4 Peer= address" } },
        { "two-ipv6-peers",
          "[Tunnel]\nMode=compat\nPeer=fd00::3\nPeer=fd00::4\n" P_OK,
          { TEST_FILE ":4: more than one IPv6 Peer= address" } },
        { "peer-prefix",
          "[Tunnel]\nMode=compat\nPeer=10.0.0.0/24\n" P_OK,
          { TEST_FILE ":3: invalid Peer= '10.0.0.0/24': takes an address without a prefix length" } },
        /* Parse and verify problems together, reported in line order. */
        { "all-errors-in-order",
          "[Tunnel]\n"                 /* 1 */
          "Mode=compat\n"              /* 2 */
          "MTU=1000\n"                 /* 3: below 1280 (verify) */
          "Address=fd00::1/64\n"       /* 4 */
          "Workers=0\n"                /* 5: bad value (parse) */
          "[Path]\n"                   /* 6: no Remote (verify) */
          "Interface=eth0\n"           /* 7 */
          "Weight=-3\n"                /* 8: bad value (parse) */
          "[Bogus]\n"                  /* 9: unknown section (parse) */
          "[Path]\n"                   /* 10 */
          "Name=eth0\n"                /* 11: duplicate name (verify) */
          "LocalAddress=192.0.2.9\n"   /* 12 */
          "Remote=192.0.2.1\n"         /* 13 */
          "Colour=blue\n",             /* 14: unknown key (parse) */
          { TEST_FILE ":3: MTU=1000 is below 1280, the minimum for a tunnel with an IPv6 address",
            TEST_FILE ":5: invalid Workers= '0': expected \"auto\" or 1..64",
            TEST_FILE ":6: path 'eth0' has no Remote= address (only a secure tunnel, Mode=secure, may leave it out and learn the other end's address)",
            TEST_FILE ":8: invalid Weight= '-3': expected 0..10000",
            TEST_FILE ":9: unknown section [Bogus]; expected [Tunnel], [Path] or [Peer]",
            TEST_FILE ":11: duplicate path name 'eth0' (first at line 6); set a unique Name=",
            TEST_FILE ":14: unknown key 'Colour' in [Path]" } },
};

static void test_verify(const void *data) {
        const VerifyVector *v = data;

        assert_errors(v->text, v->errors);
}

static void test_verify_ok_cases(void) {
        g_autoptr(MptProfile) a = NULL, b = NULL, c = NULL, d = NULL;

        /* One peer per family is fine; MTU below 1280 is fine without an IPv6 address. */
        a = load_ok("[Tunnel]\nMode=compat\n"
                    "Peer=10.0.0.3\nPeer=fd00::3\nMTU=1000\nAddress=10.0.0.2/24\n" P_OK);
        g_assert_cmpuint(a->tunnel.peers.n, ==, 2);
        /* DeadTime=0 with keepalives off, and 0 with keepalives on, are both allowed. */
        b = load_ok("[Tunnel]\nMode=compat\n" P_OK "KeepaliveInterval=0\nDeadTime=0\n");
        c = load_ok("[Tunnel]\nMode=compat\n" P_OK "DeadTime=0\n");
        g_assert_cmpuint(c->paths[0].dead_time, ==, 0);
        /* Two paths may share a remote address when their interfaces differ. */
        d = load_ok("[Tunnel]\nMode=compat\n"
                    "[Path]\nInterface=eth0\nRemote=192.0.2.1\n"
                    "[Path]\nInterface=eth1\nRemote=192.0.2.1\n");
        g_assert_cmpuint(d->n_paths, ==, 2);
}

/* A secure tunnel's paths without Remote= listen; several may share LocalAddress= (a server's
 * one address) without being duplicates; nothing writes a Remote= for them. */
static void test_listening_paths(void) {
        g_autoptr(MptProfile) p = NULL;
        g_autofree char *text = NULL;

        p = load_ok("[Tunnel]\nKey=" KEY1 "\n"
                    "[Path]\nName=in0\nLocalAddress=192.0.2.10\n"
                    "[Path]\nName=in1\nLocalAddress=192.0.2.10\n"
                    "[Path]\nName=out\nInterface=eth0\nRemote=2001:db8::1\n");
        g_assert_cmpuint(p->n_paths, ==, 3);
        g_assert_true(path_config_listens(&p->paths[0]));
        g_assert_true(path_config_listens(&p->paths[1]));
        g_assert_false(path_config_listens(&p->paths[2]));
        g_assert_cmpint(path_config_family(&p->paths[0]), ==, AF_INET);
        g_assert_cmpint(path_config_family(&p->paths[2]), ==, AF_INET6);
        /* Outer IPv4 (20) + UDP (8) + secure header and tag (36) + GRE (4) + sequence (4). */
        g_assert_cmpuint(profile_path_overhead(p, &p->paths[0]), ==, 20 + 8 + 36 + 4 + 4);
        g_assert_cmpint(profile_to_text(p, &text), ==, 0);
        /* The one Remote= written is out's. */
        g_assert_nonnull(strstr(text, "Remote=2001:db8::1\n"));
        g_assert_null(strstr(strstr(text, "Remote=") + 1, "Remote="));
}

/* Keys in base64: GLib's codec is the reference (every byte value at every position, and random
 * keys), and only the one canonical spelling of a key is accepted. */
static void test_key_base64(void) {
        MptKey k = {}, back = {};
        char text[MPT_KEY_BASE64_LEN + 1];

        for (unsigned pos = 0; pos < MPT_KEY_SIZE; pos++)
                for (unsigned v = 0; v < 256; v += (pos % 3 == 0 ? 1 : 17)) {
                        g_autofree char *want = NULL;

                        memset(k.bytes, (int) (pos * 7 + 1), sizeof k.bytes);
                        k.bytes[pos] = (uint8_t) v;
                        want = g_base64_encode(k.bytes, MPT_KEY_SIZE);
                        g_assert_cmpstr(mpt_key_to_base64(&k, text), ==, want);
                        g_assert_cmpint(mpt_key_from_base64(want, &back), ==, 0);
                        g_assert_true(back.set);
                        g_assert_cmpmem(back.bytes, MPT_KEY_SIZE, k.bytes, MPT_KEY_SIZE);
                }
        for (unsigned i = 0; i < 200; i++) {
                g_autofree char *want = NULL;
                for (size_t j = 0; j < MPT_KEY_SIZE; j++)
                        k.bytes[j] = (uint8_t) g_random_int();
                want = g_base64_encode(k.bytes, MPT_KEY_SIZE);
                g_assert_cmpstr(mpt_key_to_base64(&k, text), ==, want);
                g_assert_cmpint(mpt_key_from_base64(want, &back), ==, 0);
                g_assert_cmpmem(back.bytes, MPT_KEY_SIZE, k.bytes, MPT_KEY_SIZE);
        }
        /* Surrounding blanks are fine; everything else about the text is not. */
        g_assert_cmpint(mpt_key_from_base64(" \t" KEY1 "\n", &back), ==, 0);
        static const char *const bad[] = {
                "",
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=", /* unused bits set: not canonical */
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh==", /* 31 bytes */
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8A", /* no padding */
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=A",
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd-h8=", /* URL-safe alphabet */
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd_h8=",
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX GBkaGxwdHh8=",
                "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\x80",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                MptKey none = {};
                g_assert_cmpint(mpt_key_from_base64(bad[i], &none), ==, -EINVAL);
                g_assert_false(none.set);
        }
}

/* The key in use (psk) comes from Key= or from KeyFile=, and secure mode is the default. */
static void test_secure_keys(void) {
        g_autoptr(MptProfile) a = NULL, b = NULL, c = NULL;
        MptKey want = {};
        g_autofree char *shown = NULL, *written = NULL;
        const MptConfKey *k = conf_key_lookup(MPT_SECTION_TUNNEL, "Key");

        g_assert_cmpint(mpt_key_from_base64(KEY1, &want), ==, 0);
        a = load_ok("[Tunnel]\nKey=" KEY1 "\n" P_OK);
        g_assert_cmpint(a->tunnel.mode, ==, MPT_MODE_SECURE);
        g_assert_true(a->tunnel.psk.set);
        g_assert_cmpmem(a->tunnel.psk.bytes, MPT_KEY_SIZE, want.bytes, MPT_KEY_SIZE);
        b = load_ok("[Tunnel]\nKeyFile=test.key\n" P_OK);
        g_assert_true(b->tunnel.psk.set);
        g_assert_cmpmem(b->tunnel.psk.bytes, MPT_KEY_SIZE, want.bytes, MPT_KEY_SIZE);
        g_assert_false(b->tunnel.key.set);
        c = load_ok("[Tunnel]\nMode=compat\n" P_OK);
        g_assert_false(c->tunnel.psk.set);

        /* mptctl shows "(hidden)", never the key; a file written from the profile keeps it. */
        g_assert_true(k->flags & MPT_CONF_SECRET);
        g_assert_cmpint(profile_format_value_shown(k, &a->tunnel, &shown), ==, 0);
        g_assert_cmpstr(shown, ==, "(hidden)");
        g_assert_cmpint(profile_to_text(a, &written), ==, 0);
        g_assert_nonnull(strstr(written, "Key=" KEY1 "\n"));
}

/* KeyFile= naming something that is not a regular file is refused before anything opens it:
 * opening a device can have effects of its own (a tape rewinds, a modem hangs up), and opening a
 * FIFO is visible to its writer. inotify sees every real open (IN_OPEN), none of the type check. */
static void test_key_file_not_opened(void) {
        static const char *const targets[] = { "fifo.key", "/dev/null", "." };
        char events[4096];
        int in;

        g_assert_cmpint(mkfifo("fifo.key", 0600), ==, 0);
        in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        g_assert_cmpint(in, >=, 0);
        g_assert_cmpint(inotify_add_watch(in, "fifo.key", IN_OPEN | IN_ACCESS), >=, 0);
        g_assert_cmpint(inotify_add_watch(in, "/dev/null", IN_OPEN | IN_ACCESS), >=, 0);

        for (size_t i = 0; i < G_N_ELEMENTS(targets); i++) {
                g_autofree char *text = g_strdup_printf("[Tunnel]\nKeyFile=%s\n" P_OK, targets[i]);
                g_autofree char *want = g_strdup_printf(TEST_FILE ":2: KeyFile=%s: '%s' is not a regular file",
                                                        targets[i], targets[i]);
                g_auto(GStrv) e = load_errors(text);

                g_assert_cmpuint(g_strv_length(e), ==, 1);
                g_assert_cmpstr(e[0], ==, want);
        }
        /* The watch works: a real open of the FIFO is seen. */
        g_assert_cmpint(read(in, events, sizeof events), ==, -1);
        g_assert_cmpint(errno, ==, EAGAIN);
        safe_close(open("fifo.key", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
        g_assert_cmpint(read(in, events, sizeof events), >, 0);
        close(in);
        g_assert_cmpint(unlink("fifo.key"), ==, 0);
}

/* Scheduler=learned needs secure mode's feedback: it is the default there, and compat mode falls
 * back to weighted, or refuses it when the profile asks for it. */
static void test_scheduler_by_mode(void) {
        g_autoptr(MptProfile) a = NULL, b = NULL, c = NULL;
        static const char *const want[] = {
                TEST_FILE ":3: Scheduler=learned needs the other end's feedback, which only secure mode carries: "
                          "use Scheduler=weighted (with Weight=) in compat mode",
                NULL,
        };

        a = load_ok("[Tunnel]\nKey=" KEY1 "\n" P_OK);
        g_assert_cmpint(a->tunnel.scheduler, ==, MPT_SCHEDULER_LEARNED);
        g_assert_true(profile_uses_sequence(a));
        b = load_ok("[Tunnel]\nKey=" KEY1 "\nScheduler=weighted\n" P_OK);
        g_assert_cmpint(b->tunnel.scheduler, ==, MPT_SCHEDULER_WEIGHTED);
        c = load_ok("[Tunnel]\nMode=compat\n" P_OK);
        g_assert_cmpint(c->tunnel.scheduler, ==, MPT_SCHEDULER_WEIGHTED);
        assert_errors("[Tunnel]\nMode=compat\nScheduler=learned\n" P_OK, want);
}

static void write_key_file(const char *name, const char *content, mode_t mode) {
        g_autoptr(GError) error = NULL;

        g_file_set_contents(name, content, -1, &error);
        g_assert_no_error(error);
        g_assert_cmpint(chmod(name, mode), ==, 0);
}

/* Policy=: rules in order, several per value with ';', each with its own line; a pinned rule's
 * paths by index; FILE:LINE for a bad rule and for a path the tunnel does not have; written back
 * one rule per line; an empty value clears. */
static void test_policy(void) {
        static const char paths[] = "[Path]\nName=p0\nInterface=eth0\nRemote=192.0.2.1\n"
                                    "[Path]\nName=p1\nInterface=eth1\nRemote=192.0.2.2\n";
        g_autofree char *good = g_strconcat("[Tunnel]\nMode=compat\nPolicy=proto udp dport 5060 pinned p1,p0\n"
                                            "Policy=dscp EF lowest-latency; proto tcp port 22 pinned p1\n", paths, NULL);
        g_autoptr(MptProfile) p = load_ok(good);
        g_autofree char *text = NULL;
        const MptPolicyList *l = &p->tunnel.policy;

        g_assert_cmpuint(l->n, ==, 3);
        g_assert_cmpuint(l->items[0].line, ==, 3);
        g_assert_cmpuint(l->items[1].line, ==, 4);
        g_assert_cmpuint(l->items[2].line, ==, 4);
        g_assert_cmpuint(l->items[0].paths, ==, 3);
        g_assert_cmpint(l->items[1].mode, ==, MPT_POLICY_LOWEST_LATENCY);
        g_assert_cmpuint(l->items[2].paths, ==, 2);
        g_assert_cmpint(profile_to_text(p, &text), ==, 0);
        g_assert_nonnull(strstr(text, "Policy=proto udp dport 5060 pinned p1,p0\nPolicy=dscp 46 lowest-latency\n"
                                      "Policy=proto tcp port 22 pinned p1\n"));

        {
                g_autofree char *bad = g_strconcat("[Tunnel]\nMode=compat\nPolicy=proto tcp pinned p0\n"
                                                   "Policy=to 10.0.0.0/8 pinned lte,p1\nPolicy=foo lowest-latency\n",
                                                   paths, NULL);
                const char *const want[] = {
                        TEST_FILE ":4: Policy= names path 'lte', which this tunnel does not have",
                        TEST_FILE ":5: invalid Policy= 'foo lowest-latency': unknown word 'foo' (expected proto, "
                                  "sport, dport, port, dscp, from, to, then one of aggregate, pinned, lowest-latency, redundant)",
                        NULL,
                };
                assert_errors(bad, want);
        }
        {
                g_autofree char *cleared = g_strconcat("[Tunnel]\nMode=compat\nPolicy=proto tcp pinned p0\nPolicy=\n"
                                                       "Policy=lowest-latency\n", paths, NULL);
                g_autoptr(MptProfile) c = load_ok(cleared);
                g_assert_cmpuint(c->tunnel.policy.n, ==, 1);
                g_assert_cmpint(c->tunnel.policy.items[0].mode, ==, MPT_POLICY_LOWEST_LATENCY);
        }
}

/* Key= in a file that more than its owner can read: one diagnostic at Key=, whatever the caller
 * makes of it; never for KeyFile= (its file is checked itself), a private file or a buffer. */
static void test_key_private(void) {
        static const struct {
                mode_t mode;
                const char *who; /* NULL: no diagnostic */
                bool service_group; /* the file's group is mptd's (user mpt's) */
        } modes[] = {
                { 0600, NULL },
                { 0400, NULL },
                { 0640, "its group" },
                { 0604, "others" },
                { 0644, "its group and others" },
                { 0660, "its group" },
                { 0640, NULL, true },
                { 0644, "others", true },
        };
        struct stat st;
        static const char text[] = "[Tunnel]\nAddress=10.0.0.1/30\n\nKey=" KEY1 "\n" P_OK;

        for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
                g_autoptr(MptProfile) p = NULL;
                MptDiagnostics d = {};

                write_key_file("inline.conf", text, modes[i].mode);
                /* mptd's group: the file's own group, or one that is not it. */
                g_assert_cmpint(stat("inline.conf", &st), ==, 0);
                profile_set_service_gid(modes[i].service_group ? st.st_gid : st.st_gid + 1);
                g_assert_cmpint(profile_load_file("inline.conf", &p, &d), ==, 0);
                g_assert_cmpuint(p->file_mode & 07777, ==, modes[i].mode);
                g_assert_cmpuint(!!(p->file_mode & MPT_FILE_SERVICE_GROUP), ==, modes[i].service_group);
                g_assert_cmpint(profile_check_key_private(p, &d), ==, !!modes[i].who);
                if (modes[i].who) {
                        g_autofree char *want = g_strdup_printf(
                                "inline.conf:4: Key= holds the tunnel's secret key, and %s can read this file "
                                "(mode %04o): make it private (chmod 600; or chmod 640 and chown root:mpt, for "
                                "mptd@.service, which runs mptd as user mpt), or move the key to KeyFile=",
                                modes[i].who, (unsigned) modes[i].mode);
                        char *got = NULL;

                        g_assert_cmpuint(d.n, ==, 1);
                        g_assert_cmpint(diag_format(&d.items[0], &got), ==, 0);
                        g_assert_cmpstr(got, ==, want);
                        free(got);
                } else
                        g_assert_cmpuint(d.n, ==, 0);
                diag_done(&d);
        }

        /* KeyFile=: the profile itself holds nothing secret. */
        {
                g_autoptr(MptProfile) p = NULL;
                MptDiagnostics d = {};

                write_key_file("keyfile.conf", "[Tunnel]\nKeyFile=test.key\n" P_OK, 0644);
                g_assert_cmpint(profile_load_file("keyfile.conf", &p, &d), ==, 0);
                g_assert_false(profile_check_key_private(p, &d));
                g_assert_cmpuint(d.n, ==, 0);
        }
        /* From a buffer (NetworkManager's vpn.data, a test): no file, nothing to say. */
        {
                g_autoptr(MptProfile) p = NULL;
                MptDiagnostics d = {};

                g_assert_cmpint(profile_load_buffer("buffer.conf", text, strlen(text), &p, &d), ==, 0);
                g_assert_cmpuint(p->file_mode, ==, 0);
                g_assert_false(profile_check_key_private(p, &d));
                g_assert_cmpuint(d.n, ==, 0);
        }
        g_assert_cmpint(unlink("inline.conf"), ==, 0);
        g_assert_cmpint(unlink("keyfile.conf"), ==, 0);
}

static void test_too_many_paths(void) {
        GString *s = g_string_new("[Tunnel]\nMode=compat\n");
        g_autofree char *text = NULL, *expect = NULL;
        unsigned line = 2, line_65 = 0;

        for (unsigned i = 0; i < MPT_PATHS_MAX + 2; i++) {
                g_string_append_printf(s, "[Path]\nLocalAddress=192.0.2.%u\nRemote=198.51.100.1\n", i + 1);
                if (i == MPT_PATHS_MAX)
                        line_65 = line + 1;
                line += 3;
        }
        text = g_string_free(s, false);
        expect = g_strdup_printf(TEST_FILE ":%u: too many paths (at most %u)", line_65, MPT_PATHS_MAX);
        {
                const char *const e[] = { expect, NULL };
                assert_errors(text, e);
        }
}

static void test_diagnostics_reused(void) {
        static const char bad[] = "[Tunnel]\nMode=compat\nWorkers=0\n" P_OK;
        static const char good[] = "[Tunnel]\nMode=compat\n" P_OK;
        MptDiagnostics d = {};
        MptProfile *p = NULL;

        /* A collector that is already full (say, after checking many files) must not make a broken
         * profile look good: problems beyond the bound still count. */
        for (unsigned i = 0; i < 1000; i++)
                diag_add(&d, "earlier.conf", i + 1, "earlier problem");
        g_assert_cmpint(profile_load_buffer(TEST_FILE, bad, strlen(bad), &p, &d), ==, -EINVAL);
        g_assert_null(p);
        g_assert_cmpuint(d.n, ==, 1000);
        g_assert_cmpuint(d.n_dropped, ==, 1);
        /* Earlier messages are neither lost nor reordered. */
        for (unsigned i = 0; i < 1000; i++)
                g_assert_cmpuint(d.items[i].line, ==, i + 1);

        /* A good profile still loads with the same collector. */
        g_assert_cmpint(profile_load_buffer(TEST_FILE, good, strlen(good), &p, &d), ==, 0);
        g_assert_nonnull(p);
        profile_free(p);
        diag_done(&d);
}

/* ---- profile_to_text() ---- */

static const char rich[] =
        "[Tunnel]\n"
        "Mode=compat\n"
        "Name=office\n"
        "Address=10.0.0.2/24\n"
        "Address=fd00::2/64\n"
        "Peer=10.0.0.3\n"
        "Peer=fd00::3\n"
        "Route=192.168.10.0/24\n"
        "Route=2001:db8:10::/48\n"
        "MTU=1400\n"
        "LocalPort=65060\n"
        "RemotePort=4754\n"
        "ReorderWindow=0\n"
        "ReorderMaxDelay=0.05s\n"
        "Scheduler=flow\n"
        "Workers=auto\n"
        "\n"
        "[Path]\n"
        "Name=dsl\n"
        "Interface=eth0\n"
        "LocalAddress=192.0.2.10\n"
        "Remote=198.51.100.1\n"
        "Weight=3\n"
        "ReceiveWeight=2\n"
        "KeepaliveInterval=500ms\n"
        "DeadTime=43200.000001s\n"
        "\n"
        "[Path]\n"
        "Interface=wwan0\n"
        "Remote=2001:db8::1\n"
        "RemotePort=4755\n"
        "Weight=0\n"
        "KeepaliveInterval=0\n"
        "Backup=yes\n"
        "\n"
        "[Path]\n"
        "LocalAddress=203.0.113.5\n"
        "Remote=198.51.100.9\n"
        "Backup=no\n";

static void test_to_text_roundtrip(void) {
        g_autoptr(MptProfile) p = load_ok(rich), p2 = NULL, p3 = NULL;
        g_autofree char *t = to_text(p), *t2 = NULL;

        /* What profile_to_text() writes loads back to an equal profile... */
        p2 = load_ok(t);
        assert_profiles_equal(p, p2);
        /* ...and is a fixed point. */
        t2 = to_text(p2);
        g_assert_cmpstr(t2, ==, t);

        /* Loaded under another file name it stays the same tunnel (Name= is always written). */
        p3 = load_ok_as("/elsewhere/other.conf", t);
        assert_profiles_equal(p, p3);
}

static void test_to_text_exact(void) {
        g_autoptr(MptProfile) p = load_ok_as("/etc/mpt/mpt0.conf",
                                             "[Tunnel]\nMode=compat\n"
                                             "Address=10.0.0.2/30\nReorderMaxDelay=250ms\n\n"
                                             "[Path]\nRemote=192.0.2.1\nInterface=eth0\nWeight=2\nWeight=\n"
                                             "KeepaliveInterval=2s\n");
        g_autofree char *t = to_text(p);

        /* Keys in table order; only what was set, plus the (derived) names; lists one per line. */
        g_assert_cmpstr(t, ==,
                        "[Tunnel]\n"
                        "Name=mpt0\n"
                        "Mode=compat\n"
                        "Address=10.0.0.2/30\n"
                        "ReorderMaxDelay=250ms\n"
                        "\n"
                        "[Path]\n"
                        "Name=eth0\n"
                        "Interface=eth0\n"
                        "Remote=192.0.2.1\n"
                        "KeepaliveInterval=2s\n");
}

/* profile_foreach_key(): the keys a profile sets, "KEY=VALUE" each (NULL values left out). */
static int collect_key(const MptConfKey *k, const void *config, const char *value, void *userdata) {
        if (value)
                g_string_append_printf(userdata, "%s=%s\n", k->name, value);
        return 0;
}

static char *foreach_text(const MptProfile *p, size_t path_index, unsigned flags) {
        GString *s = g_string_new(NULL);

        g_assert_cmpint(profile_foreach_key(p, path_index, flags, collect_key, s), ==, 0);
        return g_string_free(s, false);
}

static void test_foreach_key(void) {
        g_autoptr(MptProfile) p = load_ok_as("/etc/mpt/mpt0.conf",
                                             "[Tunnel]\nMode=compat\nAddress=10.0.0.2/30\n\n"
                                             "[Path]\nRemote=192.0.2.1\nInterface=eth0\nWeight=2\nWeight=\n");
        g_autofree char *tunnel = foreach_text(p, SIZE_MAX, 0), *path = foreach_text(p, 0, 0);
        g_autofree char *named = foreach_text(p, 0, PROFILE_KEYS_PATH_NAMES);

        /* The tunnel's name always; a path's derived name only when asked for. */
        g_assert_cmpstr(tunnel, ==, "Name=mpt0\nMode=compat\nAddress=10.0.0.2/30\n");
        g_assert_cmpstr(path, ==, "Interface=eth0\nRemote=192.0.2.1\n");
        g_assert_cmpstr(named, ==, "Name=eth0\nInterface=eth0\nRemote=192.0.2.1\n");
}

/* ---- drop-ins ---- */

static void write_file(const char *dir, const char *name, const char *text) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autoptr(GError) error = NULL;

        g_file_set_contents(path, text, -1, &error);
        g_assert_no_error(error);
}

static char *diag_text(const MptDiagnostics *d, const char *strip) {
        GString *got = g_string_new(NULL);

        for (size_t i = 0; i < d->n; i++) {
                char *s = NULL;
                g_assert_cmpint(diag_format(&d->items[i], &s), ==, 0);
                g_string_append_printf(got, "%s\n", g_str_has_prefix(s, strip) ? s + strlen(strip) : s);
                free(s);
        }
        return g_string_free(got, false);
}

/* Drop-ins: the .conf files in FILE.d/ of each directory given, most important first; a name in an earlier
 * directory hides it in a later one; read in the order of their names; [Tunnel] keys override
 * (lists add, an empty value clears); a [Path] with the Name= of a path changes it, a new one is
 * added; problems are FILE:LINE of the drop-in. */
static void test_dropins(void) {
        g_autofree char *tmp = g_dir_make_tmp("mpt-dropins-XXXXXX", NULL);
        g_autofree char *etc = g_build_filename(tmp, "etc", NULL), *run = g_build_filename(tmp, "run", NULL);
        g_autofree char *etc_d = g_build_filename(etc, "t.conf.d", NULL), *run_d = g_build_filename(run, "t.conf.d", NULL);
        g_autofree char *main_file = g_build_filename(etc, "t.conf", NULL), *prefix = g_strdup_printf("%s/", tmp);
        const char *const dirs[] = { etc, run, NULL };
        MptDiagnostics d = {};
        g_autoptr(MptProfile) p = NULL;
        g_autofree char *got = NULL;

        g_assert_nonnull(tmp);
        g_assert_cmpint(g_mkdir_with_parents(etc_d, 0700), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(run_d, 0700), ==, 0);
        write_file(etc, "t.conf",
                   "[Tunnel]\nName=t\nMode=compat\nAddress=10.0.0.1/24\nMTU=1400\n"
                   "[Path]\nName=a\nInterface=eth0\nRemote=192.0.2.1\n"
                   "[Path]\nInterface=wlan0\nRemote=192.0.2.2\n");
        /* 10-: MTU back to its default, one more address; path a gets a weight. */
        write_file(etc_d, "10-mtu.conf", "[Tunnel]\nMTU=\nAddress=fd00::1/64\n[Path]\nWeight=7\nName=a\n");
        /* 20- in /run: hidden by /etc's 20- (empty: adds nothing). */
        write_file(run_d, "20-hidden.conf", "[Tunnel]\nMTU=1300\n");
        write_file(etc_d, "20-hidden.conf", "");
        /* 30- in /run only: a new path, and wlan0 (named by its interface) becomes a backup. */
        write_file(run_d, "30-lte.conf", "[Path]\nName=lte\nInterface=wwan0\nRemote=192.0.2.3\n[Path]\nName=wlan0\nBackup=yes\n");
        /* Not a drop-in. */
        write_file(etc_d, "40-notes.txt", "[Tunnel]\nMTU=1200\n");

        g_assert_cmpint(profile_load_file_dirs(main_file, dirs, &p, &d), ==, 0);
        g_assert_cmpuint(d.n, ==, 0);
        g_assert_cmpuint(p->n_dropins, ==, 3);
        g_assert_true(g_str_has_suffix(p->dropins[0], "/etc/t.conf.d/10-mtu.conf"));
        g_assert_true(g_str_has_suffix(p->dropins[1], "/etc/t.conf.d/20-hidden.conf"));
        g_assert_true(g_str_has_suffix(p->dropins[2], "/run/t.conf.d/30-lte.conf"));
        g_assert_cmpuint(p->tunnel.mtu, ==, 0);
        g_assert_cmpuint(p->tunnel.addresses.n, ==, 2);
        g_assert_cmpuint(p->n_paths, ==, 3);
        g_assert_cmpstr(p->paths[0].name, ==, "a");
        g_assert_cmpuint(p->paths[0].weight, ==, 7);
        g_assert_cmpstr(p->paths[1].name, ==, "wlan0");
        g_assert_true(p->paths[1].backup);
        g_assert_cmpstr(p->paths[2].name, ==, "lte");
        g_assert_cmpstr(p->paths[2].interface, ==, "wwan0");
        /* Where each key came from. */
        g_assert_cmpstr(profile_file_name(p, p->paths[0].key_src[conf_key_index(conf_key(MPT_KEY_PATH_WEIGHT))]), ==,
                        p->dropins[0]);
        g_assert_cmpuint(p->paths[0].key_line[conf_key_index(conf_key(MPT_KEY_PATH_WEIGHT))], ==, 5);
        g_assert_cmpstr(profile_file_name(p, p->paths[2].line_src), ==, p->dropins[2]);
        profile_free(TAKE_PTR(p));

        /* Problems name the drop-in, in file order: a bad value, a cross-key problem of a key
         * set there (DeadTime= without keepalives), an unknown section. */
        write_file(etc_d, "50-bad.conf", "[Path]\nName=a\nWeight=lots\nKeepaliveInterval=0\nDeadTime=5s\n[Nonsense]\n");
        write_file(etc_d, "05-bad.conf", "[Tunnel]\nMTU=1\n");
        g_assert_cmpint(profile_load_file_dirs(main_file, dirs, &p, &d), ==, -EINVAL);
        g_assert_null(p);
        got = diag_text(&d, prefix);
        g_assert_cmpstr(got, ==,
                        "etc/t.conf.d/05-bad.conf:2: invalid MTU= '1': expected \"auto\" or 576..65535\n"
                        "etc/t.conf.d/50-bad.conf:3: invalid Weight= 'lots': expected 0..10000\n"
                        "etc/t.conf.d/50-bad.conf:5: path 'a': DeadTime= needs keepalives, but KeepaliveInterval=0\n"
                        "etc/t.conf.d/50-bad.conf:6: unknown section [Nonsense]; expected [Tunnel], [Path] or [Peer]\n");
        diag_done(&d);

        /* A link to /dev/null hides a drop-in without adding one. */
        {
                g_autofree char *a = g_build_filename(etc_d, "50-bad.conf", NULL);
                g_autofree char *b = g_build_filename(etc_d, "05-bad.conf", NULL);
                g_autofree char *c = g_build_filename(etc_d, "30-lte.conf", NULL);
                g_assert_cmpint(unlink(a), ==, 0);
                g_assert_cmpint(unlink(b), ==, 0);
                g_assert_cmpint(symlink("/dev/null", c), ==, 0);
        }
        g_assert_cmpint(profile_load_file_dirs(main_file, dirs, &p, &d), ==, 0);
        g_assert_cmpuint(p->n_paths, ==, 2);
        g_assert_false(p->paths[1].backup);

        /* profile_load_file(): next to the file, outside MPT_SYSCONFDIR. */
        profile_free(TAKE_PTR(p));
        g_assert_cmpint(profile_load_file(main_file, &p, &d), ==, 0);
        g_assert_cmpuint(p->n_dropins, ==, 3); /* etc's 10-, 20- and 30- (/dev/null, nothing) */
        g_assert_cmpuint(p->tunnel.addresses.n, ==, 2);
        g_assert_cmpuint(p->n_paths, ==, 2);
        profile_free(TAKE_PTR(p));

        /* A relative KeyFile= is relative to the drop-in that says it. */
        {
                guchar key[32];
                for (size_t i = 0; i < sizeof key; i++)
                        key[i] = (guchar) (i + 1);
                g_autofree char *b64 = g_base64_encode(key, sizeof key);
                g_autofree char *line = g_strdup_printf("%s\n", b64);
                write_file(etc_d, "k.key", line);
                {
                        g_autofree char *kp = g_build_filename(etc_d, "k.key", NULL);
                        g_assert_cmpint(chmod(kp, 0600), ==, 0);
                }
                write_file(etc_d, "60-key.conf", "[Tunnel]\nMode=secure\nKeyFile=k.key\n");
                if (profile_load_file_dirs(main_file, dirs, &p, &d) != 0) {
                        g_autofree char *t = diag_text(&d, prefix);
                        g_error("drop-in with KeyFile=: %s", t);
                }
                g_assert_true(p->tunnel.psk.set);
                g_assert_cmpmem(p->tunnel.psk.bytes, sizeof key, key, sizeof key);
        }

        profile_free(TAKE_PTR(p));

        /* A FIFO, as the profile or as a drop-in, is refused at once, never waited on (mptd reads
         * both again in its event loop on a reload). */
        {
                g_autofree char *fifo = g_build_filename(etc_d, "70-fifo.conf", NULL);
                g_autofree char *main_fifo = g_build_filename(tmp, "fifo.conf", NULL);
                g_autofree char *got2 = NULL;

                diag_done(&d);
                g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
                g_assert_cmpint(profile_load_file_dirs(main_file, dirs, &p, &d), ==, -EINVAL);
                got2 = diag_text(&d, prefix);
                g_assert_cmpstr(got2, ==, "etc/t.conf.d/70-fifo.conf: cannot read this drop-in: not a regular file\n");
                g_assert_cmpint(unlink(fifo), ==, 0);
                g_assert_cmpint(mkfifo(main_fifo, 0600), ==, 0);
                g_assert_cmpint(profile_load_file(main_fifo, &p, &d), ==, -EBADFD);
                g_assert_cmpint(unlink(main_fifo), ==, 0);
        }

        diag_done(&d);
        {
                g_autofree char *rm = g_strdup_printf("rm -rf '%s'", tmp);
                g_assert_true(system(rm) == 0);
        }
}

/* ---- golden files: tests/data/profiles/{good,bad}-*.conf with *.expected ---- */

#define PROFILE_DIR MPT_TEST_DATA "/profiles"

static char *read_expected(const char *conf) {
        g_autofree char *base = g_strndup(conf, strlen(conf) - STRLEN(".conf"));
        g_autofree char *path = g_strdup_printf("%s/%s.expected", PROFILE_DIR, base);
        g_autoptr(GError) error = NULL;
        char *content = NULL;

        g_file_get_contents(path, &content, NULL, &error);
        g_assert_no_error(error);
        return content;
}

static void test_golden(const void *data) {
        const char *name = data;
        g_autofree char *path = g_strdup_printf("%s/%s", PROFILE_DIR, name);
        g_autofree char *expect = read_expected(name);
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        int r;

        r = profile_load_file(path, &p, &d);
        if (g_str_has_prefix(name, "good-")) {
                g_autofree char *t = NULL;
                g_autoptr(MptProfile) p2 = NULL;

                g_assert_cmpint(r, ==, 0);
                g_assert_cmpuint(d.n, ==, 0);
                t = to_text(p);
                g_assert_cmpstr(t, ==, expect);
                /* The canonical text loads to the same profile. */
                p2 = load_ok_as(path, t);
                assert_profiles_equal(p, p2);
                profile_free(p);
        } else {
                g_autoptr(GString) got = g_string_new(NULL);
                g_autofree char *prefix = g_strdup_printf("%s/", PROFILE_DIR);

                g_assert_cmpint(r, ==, -EINVAL);
                g_assert_null(p);
                /* Messages name the file as given; the expected lines use the bare name. */
                for (size_t i = 0; i < d.n; i++) {
                        char *s = NULL;
                        g_assert_cmpint(diag_format(&d.items[i], &s), ==, 0);
                        g_assert_true(g_str_has_prefix(s, prefix));
                        g_string_append_printf(got, "%s\n", s + strlen(prefix));
                        free(s);
                }
                g_assert_cmpstr(got->str, ==, expect);
        }
        diag_done(&d);
}

static void test_golden_missing_file(void) {
        MptDiagnostics d = {};
        MptProfile *p = NULL;

        g_assert_cmpint(profile_load_file(PROFILE_DIR "/does-not-exist.conf", &p, &d), ==, -ENOENT);
        g_assert_null(p);
        g_assert_cmpuint(d.n, ==, 0);
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void add_golden_tests(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        GDir *dir = g_dir_open(PROFILE_DIR, 0, &error);
        const char *n;
        size_t good = 0, bad = 0;

        g_assert_no_error(error);
        while ((n = g_dir_read_name(dir)))
                if (g_str_has_suffix(n, ".conf"))
                        g_ptr_array_add(names, g_strdup(n)); /* kept for the test's lifetime */
        g_dir_close(dir);
        g_ptr_array_sort(names, compare_names);
        for (size_t i = 0; i < names->len; i++) {
                const char *name = names->pdata[i];
                g_autofree char *tp = g_strdup_printf("/mpt/profile/golden/%s", name);

                if (g_str_has_prefix(name, "good-"))
                        good++;
                else if (g_str_has_prefix(name, "bad-"))
                        bad++;
                else
                        g_error("%s/%s: golden profiles are named good-*.conf or bad-*.conf",
                                PROFILE_DIR, name);
                g_test_add_data_func(tp, name, test_golden);
        }
        /* The directory must not be empty by accident. */
        if (good < 3 || bad < 3)
                g_error("expected at least 3 good and 3 bad profiles in %s", PROFILE_DIR);
        g_test_add_func("/mpt/profile/golden/missing-file", test_golden_missing_file);
}

/* A list key takes several entries on one line too, so that profile_format_value() output
 * (space-separated) reads back to the same list. */
static void test_list_one_line(void) {
        MptProfile *p = load_ok("[Tunnel]\nMode=compat\nAddress=10.0.0.1/24 fd00::1/64\nAddress=10.1.0.1\n\n"
                                "[Path]\nInterface=eth0\nRemote=192.0.2.1\n");
        const MptConfKey *k = conf_key_lookup(MPT_SECTION_TUNNEL, "Address");
        MptProfile *q;
        char *v = NULL, *text;

        g_assert_cmpuint(p->tunnel.addresses.n, ==, 3);
        g_assert_cmpint(p->tunnel.addresses.items[1].family, ==, AF_INET6);
        g_assert_cmpint(profile_format_value(k, &p->tunnel, &v), ==, 0);
        g_assert_cmpstr(v, ==, "10.0.0.1/24 fd00::1/64 10.1.0.1");
        text = g_strdup_printf("[Tunnel]\nMode=compat\n"
                               "Address=%s\n\n[Path]\nInterface=eth0\nRemote=192.0.2.1\n", v);
        q = load_ok(text);
        g_assert_cmpuint(q->tunnel.addresses.n, ==, 3);
        /* Field by field: the struct's padding is not part of the value. */
        for (size_t i = 0; i < 3; i++) {
                char a[MPT_ADDRESS_STRLEN], b[MPT_ADDRESS_STRLEN];

                g_assert_cmpint(q->tunnel.addresses.items[i].family, ==, p->tunnel.addresses.items[i].family);
                g_assert_cmpuint(q->tunnel.addresses.items[i].prefixlen, ==, p->tunnel.addresses.items[i].prefixlen);
                g_assert_cmpstr(prefix_to_string(&q->tunnel.addresses.items[i], a), ==,
                                prefix_to_string(&p->tunnel.addresses.items[i], b));
        }
        g_free(text);
        free(v);
        profile_free(q);
        profile_free(p);
}

int main(int argc, char *argv[]) {
        g_autofree char *dir = NULL;
        int r;

        g_test_init(&argc, &argv, NULL);

        /* Key files for the KeyFile= vectors, in a private directory of this run. */
        dir = g_dir_make_tmp("mpt-test-profile.XXXXXX", NULL);
        g_assert_nonnull(dir);
        g_assert_cmpint(chdir(dir), ==, 0);
        write_key_file("test.key", KEY1 "\n", 0600);
        write_key_file("public.key", KEY1 "\n", 0644);
        write_key_file("notakey.key", "hello\n", 0600);

        g_test_add_func("/mpt/profile/keys/table", test_key_table);
        g_test_add_func("/mpt/profile/keys/base64", test_key_base64);
        g_test_add_func("/mpt/profile/keys/covered", test_key_table_covered);
        g_test_add_func("/mpt/profile/keys/suggest", test_key_suggest);
        g_test_add_func("/mpt/profile/enums", test_enums);
        g_test_add_func("/mpt/profile/list-one-line", test_list_one_line);
        g_test_add_func("/mpt/profile/backup-by-class", test_path_backup_by_class);
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                const char *sec = mpt_section_to_string(k->section);
                g_autofree char *good = g_strdup_printf("/mpt/profile/key/%s.%s/good", sec, k->name);
                g_autofree char *bad = g_strdup_printf("/mpt/profile/key/%s.%s/bad", sec, k->name);
                g_autofree char *reset = g_strdup_printf("/mpt/profile/key/%s.%s/reset", sec, k->name);

                if (k->section == MPT_SECTION_PEER) {
                        g_autofree char *assign = g_strdup_printf("/mpt/profile/key/%s.%s/assign", sec, k->name);
                        g_test_add_data_func(assign, k, test_peer_key);
                        continue;
                }
                g_test_add_data_func(good, k, test_key_good);
                g_test_add_data_func(bad, k, test_key_bad);
                g_test_add_data_func(reset, k, test_key_reset);
        }
        g_test_add_func("/mpt/profile/defaults", test_defaults);
        g_test_add_func("/mpt/profile/path-helpers", test_path_helpers);
        g_test_add_func("/mpt/profile/default-tunnel-name", test_default_tunnel_name);
        g_test_add_func("/mpt/profile/default-path-names", test_default_path_names);
        g_test_add_func("/mpt/profile/dead-time-default", test_dead_time_default);
        g_test_add_func("/mpt/profile/decimal-not-octal", test_decimal_not_octal);
        g_test_add_func("/mpt/profile/empty-value-resets", test_empty_value_resets);
        g_test_add_func("/mpt/profile/address-list", test_address_list);
        g_test_add_func("/mpt/profile/list-limits", test_list_limits);
        for (size_t i = 0; i < G_N_ELEMENTS(verify_vectors); i++) {
                g_autofree char *tp = g_strdup_printf("/mpt/profile/verify/%s", verify_vectors[i].name);
                g_test_add_data_func(tp, &verify_vectors[i], test_verify);
        }
        g_test_add_func("/mpt/profile/verify/ok-cases", test_verify_ok_cases);
        g_test_add_func("/mpt/profile/verify/listening-paths", test_listening_paths);
        g_test_add_func("/mpt/profile/secure-keys", test_secure_keys);
        g_test_add_func("/mpt/profile/scheduler-by-mode", test_scheduler_by_mode);
        g_test_add_func("/mpt/profile/key-file-not-opened", test_key_file_not_opened);
        g_test_add_func("/mpt/profile/key-private", test_key_private);
        g_test_add_func("/mpt/profile/policy", test_policy);
        g_test_add_func("/mpt/profile/dropins", test_dropins);
        g_test_add_func("/mpt/profile/verify/too-many-paths", test_too_many_paths);
        g_test_add_func("/mpt/profile/diagnostics-reused", test_diagnostics_reused);
        g_test_add_func("/mpt/profile/to-text/roundtrip", test_to_text_roundtrip);
        g_test_add_func("/mpt/profile/to-text/exact", test_to_text_exact);
        g_test_add_func("/mpt/profile/foreach-key", test_foreach_key);
        g_test_add_func("/mpt/profile/hub/verify", test_hub_verify);
        g_test_add_func("/mpt/profile/hub/objects", test_hub_objects);
        g_test_add_func("/mpt/profile/hub/dropins", test_hub_dropins);
        add_golden_tests();

        r = g_test_run();
        (void) unlink("test.key");
        (void) unlink("public.key");
        (void) unlink("notakey.key");
        (void) rmdir(dir);
        return r;
}
