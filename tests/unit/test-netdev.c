/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <sys/stat.h>

#include "conf-parser.h"
#include "netdev.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>
#include <glib/gstdio.h>

#ifndef MPT_TEST_DATA
#error "MPT_TEST_DATA must point to tests/data"
#endif

#define NETDEV_DIR MPT_TEST_DATA "/netdev"
#define EXAMPLES_DIR MPT_TEST_DATA "/../../data/examples"
#define TEST_FILE "test.netdev"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(MptProfile, profile_free)

/* ---- helpers ---- */

static char *diag_text(const MptDiagnostics *d, const char *strip_prefix) {
        GString *s = g_string_new(NULL);

        for (size_t i = 0; i < d->n; i++) {
                char *l = NULL;
                g_assert_cmpint(diag_format(&d->items[i], &l), ==, 0);
                if (strip_prefix) {
                        g_assert_true(g_str_has_prefix(l, strip_prefix));
                        g_string_append_printf(s, "%s\n", l + strlen(strip_prefix));
                } else
                        g_string_append_printf(s, "%s\n", l);
                free(l);
        }
        return g_string_free(s, false);
}

static char *to_text(const MptProfile *p) {
        char *t = NULL;
        g_autofree char *copy = NULL;

        g_assert_cmpint(profile_to_text(p, &t), ==, 0);
        copy = g_strdup(t);
        free(t);
        return g_steal_pointer(&copy);
}

static MptProfile *load_ok(const char *text, MptNetdevInfo *ret_info) {
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        int r;

        r = netdev_load_buffer(TEST_FILE, text, strlen(text), &p, ret_info, &d);
        if (r != 1) {
                g_autofree char *e = diag_text(&d, NULL);
                g_test_message("netdev:\n%s\nerrors:\n%s", text, e);
        }
        g_assert_cmpint(r, ==, 1);
        g_assert_cmpuint(d.n, ==, 0);
        g_assert_nonnull(p);
        diag_done(&d);
        return p;
}

/* The messages of a file that must be refused, one per line. */
static char *load_errors(const char *text) {
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        char *e;

        g_assert_cmpint(netdev_load_buffer(TEST_FILE, text, strlen(text), &p, NULL, &d), ==, -EINVAL);
        g_assert_null(p);
        g_assert_false(d.oom);
        e = diag_text(&d, NULL);
        diag_done(&d);
        return e;
}

#define HEAD "[NetDev]\nName=mpt0\nKind=tun\n\n[Tun]\nMultiQueue=yes\n\n"
#define PATH "[X-MPTPath]\nInterface=eth0\nRemote=192.0.2.1\n"

/* ---- the basics ---- */

static void test_minimal(void) {
        MptNetdevInfo info = {};
        g_autoptr(MptProfile) p = load_ok(HEAD "[X-MPT]\nMode=compat\n" PATH, &info);

        g_assert_cmpstr(p->tunnel.name, ==, "mpt0");
        g_assert_true(p->from_netdev);
        g_assert_true(p->section_names == netdev_section_names);
        g_assert_cmpstr(p->filename, ==, TEST_FILE);
        g_assert_cmpuint(p->n_paths, ==, 1);
        g_assert_cmpstr(p->paths[0].interface, ==, "eth0");
        g_assert_cmpstr(p->paths[0].name, ==, "eth0");
        g_assert_cmpuint(p->paths[0].line, ==, 10);
        g_assert_cmpuint(p->tunnel.line, ==, 8);
        g_assert_cmpstr(info.ifname, ==, "mpt0");
        g_assert_cmpstr(info.kind, ==, "tun");
        g_assert_null(info.user);
        g_assert_null(info.group);
        g_assert_true(info.has_mpt);
        netdev_info_done(&info);
        g_assert_null(info.ifname);
}

/* The same keys mean the same as in a native profile: one key table, one set of parsers. */
static void test_same_as_native(void) {
        static const char keys_t[] = "Mode=compat\nScheduler=flow\nWorkers=3\nReorderWindow=512\nReorderMaxDelay=50ms\n"
                                     "MTU=1400\nLocalPort=7000\nAddress=10.1.0.1/24\nPeer=10.1.0.2\n";
        static const char keys_p[] = "Name=a\nInterface=eth0\nRemote=192.0.2.1\nWeight=7\nKeepaliveInterval=200ms\n"
                                     "DeadTime=1s\nPinRemote=yes\nLossThreshold=5%\n";
        g_autofree char *netdev = g_strdup_printf(HEAD "[X-MPT]\n%s\n[X-MPTPath]\n%s", keys_t, keys_p);
        g_autofree char *native = g_strdup_printf("[Tunnel]\nName=mpt0\n%s\n[Path]\n%s", keys_t, keys_p);
        g_autoptr(MptProfile) a = load_ok(netdev, NULL);
        g_autoptr(MptProfile) b = NULL;
        g_autofree char *ta = NULL, *tb = NULL;
        MptDiagnostics d = {};

        g_assert_cmpint(profile_load_buffer("native.conf", native, strlen(native), &b, &d), ==, 0);
        ta = to_text(a);
        tb = to_text(b);
        g_assert_cmpstr(ta, ==, tb);
        g_assert_cmpuint(a->paths[0].dead_time, ==, b->paths[0].dead_time);
        diag_done(&d);
}

static void test_info(void) {
        MptNetdevInfo info = {};
        g_autoptr(MptProfile) p =
                load_ok("[NetDev]\nName=mpt0\nKind=tun\n[Tun]\nMultiQueue=yes\nUser=mpt\nGroup=mpt\nGroup=\n"
                        "User=nobody\n[X-MPT]\nMode=compat\n" PATH,
                        &info);

        g_assert_cmpstr(p->tunnel.name, ==, "mpt0");
        g_assert_cmpstr(info.user, ==, "nobody");
        g_assert_null(info.group); /* an empty value resets */
        netdev_info_done(&info);
}

static void test_x_mpt_name(void) {
        g_autoptr(MptProfile) p = load_ok(HEAD "[X-MPT]\nMode=compat\nName=mpt0\n" PATH, NULL);
        g_autoptr(MptProfile) q = load_ok(HEAD "[X-MPT]\nMode=compat\nName=other\nName=\n" PATH, NULL);

        g_assert_cmpstr(p->tunnel.name, ==, "mpt0");
        g_assert_cmpstr(q->tunnel.name, ==, "mpt0");
}

/* networkd's sections and keys are networkd's: not checked, not reported. */
static void test_networkd_sections_ignored(void) {
        g_autoptr(MptProfile) p =
                load_ok("[Match]\nHost=foo\nBogus=1\n[NetDev]\nName=mpt0\nKind=tun\nMTUBytes=1400\n"
                        "MACAddress=none\nX-Foo=bar\n[Tun]\nMultiQueue=yes\nKeepCarrier=yes\nFoo=1\n"
                        "[Tunnel]\nRemote=1.2.3.4\n[Peer]\nFoo=bar\n[X-Other]\nA=b\n[X-MPT]\nMode=compat\n" PATH,
                        NULL);

        g_assert_cmpuint(p->n_paths, ==, 1);
}

/* Repeated [NetDev]/[Tun] sections merge, later assignments win, as in networkd. */
static void test_networkd_merge(void) {
        g_autoptr(MptProfile) p =
                load_ok("[NetDev]\nName=old\n[Tun]\nMultiQueue=no\n[NetDev]\nName=mpt0\nKind=tun\n[Tun]\n"
                        "MultiQueue=yes\nPacketInfo=yes\nPacketInfo=\n[X-MPT]\nMode=compat\n" PATH,
                        NULL);

        g_assert_cmpstr(p->tunnel.name, ==, "mpt0");
}

/* ---- what is not an mpt netdev ---- */

static void test_not_mpt(void) {
        static const char *const texts[] = {
                "",
                "# nothing\n",
                "[NetDev]\nName=wg0\nKind=wireguard\n[WireGuard]\nListenPort=51820\n",
                "[NetDev]\nName=tun0\nKind=tun\n[Tun]\nMultiQueue=no\nPacketInfo=yes\n",
                /* structural problems of networkd's files are networkd's to report */
                "[NetDev]\nName=br0\nKind=bridge\nno equals sign\n[Broken\n",
                "[X-Other]\nName=x\n",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
                MptDiagnostics d = {};
                MptNetdevInfo info = {};
                MptProfile *p = NULL;

                diag_add(&d, "earlier.conf", 1, "an earlier problem");
                g_assert_cmpint(netdev_load_buffer(TEST_FILE, texts[i], strlen(texts[i]), &p, &info, &d), ==, 0);
                g_assert_null(p);
                g_assert_false(info.has_mpt);
                /* Earlier problems stay, and nothing is added. */
                g_assert_cmpuint(d.n, ==, 1);
                g_assert_cmpstr(d.items[0].file, ==, "earlier.conf");
                netdev_info_done(&info);
                diag_done(&d);
        }
}

/* ---- messages: exact text, FILE:LINE ---- */

typedef struct ErrorCase {
        const char *name;
        const char *text;
        const char *messages;
} ErrorCase;

static const ErrorCase error_cases[] = {
        { "kind",
          "[NetDev]\nName=mpt0\nKind=wireguard\n[Tun]\nMultiQueue=yes\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":3: Kind=wireguard: mpt needs Kind=tun (a multi-queue TUN device)\n" },
        { "no-kind",
          "[NetDev]\nName=mpt0\n[Tun]\nMultiQueue=yes\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":1: missing Kind= in [NetDev]: mpt needs Kind=tun\n" },
        { "no-name",
          "[NetDev]\nKind=tun\n[Tun]\nMultiQueue=yes\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":1: missing Name= in [NetDev]: it names the TUN device and the tunnel\n" },
        { "name-invalid",
          "[NetDev]\nName=mpt 0\nKind=tun\n[Tun]\nMultiQueue=yes\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":2: invalid Name= 'mpt 0': use 1 to 15 letters, digits, '_', '.' or '-', not starting with "
                    "'-' or '.'\n" },
        { "name-too-long",
          "[NetDev]\nName=mpt0123456789abc\nKind=tun\n[Tun]\nMultiQueue=yes\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":2: invalid Name= 'mpt0123456789abc': use 1 to 15 letters, digits, '_', '.' or '-', not "
                    "starting with '-' or '.'\n" },
        { "name-differs",
          HEAD "[X-MPT]\nMode=compat\nName=mpt1\n" PATH,
          TEST_FILE ":10: Name= 'mpt1' differs from Name= 'mpt0' in [NetDev] (line 2): leave it out, or make them "
                    "the same\n" },
        { "no-netdev",
          "[Tun]\nMultiQueue=yes\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ": no [NetDev] section: networkd needs Name= and Kind=tun there\n" },
        { "no-tun",
          "[NetDev]\nName=mpt0\nKind=tun\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ": no [Tun] section with MultiQueue=yes: mptd attaches one queue per worker thread\n" },
        { "no-multiqueue",
          "[NetDev]\nName=mpt0\nKind=tun\n[Tun]\nUser=nobody\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":4: missing MultiQueue=yes in [Tun]: mptd attaches one queue per worker thread\n" },
        { "multiqueue-no",
          "[NetDev]\nName=mpt0\nKind=tun\n[Tun]\nMultiQueue=no\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":5: MultiQueue=no: mptd needs MultiQueue=yes (it attaches one queue per worker thread)\n" },
        { "multiqueue-reset",
          "[NetDev]\nName=mpt0\nKind=tun\n[Tun]\nMultiQueue=yes\nMultiQueue=\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":4: missing MultiQueue=yes in [Tun]: mptd attaches one queue per worker thread\n" },
        { "multiqueue-invalid",
          "[NetDev]\nName=mpt0\nKind=tun\n[Tun]\nMultiQueue=maybe\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":5: invalid MultiQueue= 'maybe' in [Tun]: expected yes or no\n" },
        { "packet-info",
          HEAD "[Tun]\nPacketInfo=true\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":9: PacketInfo=yes: mptd needs PacketInfo=no (packets without the packet information "
                    "header)\n" },
        { "no-x-mpt",
          HEAD PATH,
          TEST_FILE ": no [X-MPT] section: an mpt .netdev needs one (it may be empty)\n" },
        { "no-path",
          HEAD "[X-MPT]\nMode=compat\n",
          TEST_FILE ": no [X-MPTPath] section: a tunnel needs at least one path\n" },
        { "second-x-mpt",
          HEAD "[X-MPT]\nMode=compat\n" PATH "[X-MPT]\nWorkers=2\n",
          TEST_FILE ":13: second [X-MPT] section (the first is at line 8); a .netdev describes one tunnel\n" },
        { "section-typo",
          HEAD "[X-MPT]\nMode=compat\n" PATH "[X-MPTPaths]\nInterface=eth1\n[X-Mpt]\nWorkers=2\n[x-mptpath]\nA=b\n",
          TEST_FILE ":13: unknown section [X-MPTPaths]; did you mean [X-MPTPath]?\n"
          TEST_FILE ":15: unknown section [X-Mpt]; did you mean [X-MPT]?\n"
          TEST_FILE ":17: unknown section [x-mptpath]; did you mean [X-MPTPath]?\n" },
        { "section-without-x",
          HEAD "[MPT]\nWorkers=2\n[MPTPath]\nInterface=eth0\n[X-MTP]\n[X-MPT]\nMode=compat\n" PATH,
          TEST_FILE ":8: unknown section [MPT]; did you mean [X-MPT]?\n"
          TEST_FILE ":10: unknown section [MPTPath]; did you mean [X-MPTPath]?\n"
          TEST_FILE ":12: unknown section [X-MTP]; did you mean [X-MPT]?\n" },
        { "only-lookalike",
          "[NetDev]\nName=mpt0\nKind=tun\n[MPT]\nWorkers=2\n",
          TEST_FILE ":4: unknown section [MPT]; did you mean [X-MPT]?\n"
          TEST_FILE ": no [Tun] section with MultiQueue=yes: mptd attaches one queue per worker thread\n"
          TEST_FILE ": no [X-MPT] section: an mpt .netdev needs one (it may be empty)\n" },
        { "key-typo",
          HEAD "[X-MPT]\nMode=compat\n"
               "Adress=10.0.0.1/24\nFrobnicate=1\n[X-MPTPath]\nInterface=eth0\nRemote=192.0.2.1\n"
               "Wieght=2\n",
          TEST_FILE ":10: unknown key 'Adress' in [X-MPT]; did you mean 'Address'?\n"
          TEST_FILE ":11: unknown key 'Frobnicate' in [X-MPT]\n"
          TEST_FILE ":15: unknown key 'Wieght' in [X-MPTPath]; did you mean 'Weight'?\n" },
        { "values",
          HEAD "[X-MPT]\nMode=compat\n"
               "Workers=0\nScheduler=fast\n[X-MPTPath]\nInterface=eth0\nRemote=192.0.2.1\nWeight=-1\n"
               "DeadTime=1h\nKeepaliveInterval=2h\n",
          TEST_FILE ":10: invalid Workers= '0': expected \"auto\" or 1..64\n"
          TEST_FILE ":11: invalid Scheduler= 'fast': expected learned|weighted|flow\n"
          TEST_FILE ":15: invalid Weight= '-1': expected 0..10000\n"
          TEST_FILE ":17: invalid KeepaliveInterval= '2h': expected a duration of 0 or 100ms..3600s (e.g. \"500ms\", "
                    "\"2s\")\n" },
        { "verify",
          HEAD "[X-MPT]\nMode=compat\n"
               "Peer=10.0.0.2\nPeer=10.0.0.3\n[X-MPTPath]\nInterface=eth0\n[X-MPTPath]\nName=eth0\n"
               "LocalAddress=192.0.2.9\nRemote=2001:db8::1\n",
          TEST_FILE ":11: more than one IPv4 Peer= address\n"
          TEST_FILE ":12: path 'eth0' has no Remote= address (only a secure tunnel, Mode=secure, may leave it out and learn the other end's address)\n"
          TEST_FILE ":15: duplicate path name 'eth0' (first at line 12); set a unique Name=\n"
          TEST_FILE ":16: path 'eth0': LocalAddress= is IPv4 but Remote= is IPv6\n" },
        { "syntax",
          HEAD "[X-MPT]\nMode=compat\nno equals\n" PATH "[X-MPTPath\nRemote=192.0.2.2\n",
          TEST_FILE ":10: missing '=' in 'no equals'\n"
          TEST_FILE ":14: invalid section header '[X-MPTPath'\n" },
        { "peer",
          HEAD "[X-MPT]\nPrivateKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n[X-MPTPath]\nLocalAddress=192.0.2.100\n"
               "[X-MPTPeer]\nPublicKey=ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\nAllowedIPs=10.8.0.2\nAllowedIP=1\n"
               "[X-MPTPeers]\n",
          TEST_FILE ":12: [X-MPTPeer] sections (a hub: many peers on one tunnel) are not supported yet: this version "
                    "checks them but cannot run them\n"
          TEST_FILE ":15: unknown key 'AllowedIP' in [X-MPTPeer]; did you mean 'AllowedIPs'?\n"
          TEST_FILE ":16: unknown section [X-MPTPeers]; did you mean [X-MPTPeer]?\n" },
        { "everything",
          "[X-MPT]\nMode=compat\nName=a\n[Tun]\nMultiQueue=0\nPacketInfo=on\n[NetDev]\nKind=tap\nName=b\n",
          TEST_FILE ":3: Name= 'a' differs from Name= 'b' in [NetDev] (line 9): leave it out, or make them the "
                    "same\n"
          TEST_FILE ":5: MultiQueue=no: mptd needs MultiQueue=yes (it attaches one queue per worker thread)\n"
          TEST_FILE ":6: PacketInfo=yes: mptd needs PacketInfo=no (packets without the packet information "
                    "header)\n"
          TEST_FILE ":8: Kind=tap: mpt needs Kind=tun (a multi-queue TUN device)\n"
          TEST_FILE ": no [X-MPTPath] section: a tunnel needs at least one path\n" },
};

static void test_error(const void *data) {
        const ErrorCase *c = data;
        g_autofree char *got = load_errors(c->text);

        g_assert_cmpstr(got, ==, c->messages);
}

/* A broken file still tells the generator its interface name. */
static void test_info_of_broken_file(void) {
        static const char text[] = "[NetDev]\nName=mpt0\nKind=tap\n[Tun]\nUser=mpt\n[X-MPT]\n";
        MptDiagnostics d = {};
        MptNetdevInfo info = {};
        MptProfile *p = NULL;

        g_assert_cmpint(netdev_load_buffer(TEST_FILE, text, strlen(text), &p, &info, &d), ==, -EINVAL);
        g_assert_null(p);
        g_assert_cmpstr(info.ifname, ==, "mpt0");
        g_assert_cmpstr(info.kind, ==, "tap");
        g_assert_cmpstr(info.user, ==, "mpt");
        g_assert_true(info.has_mpt);
        netdev_info_done(&info);
        diag_done(&d);
}

/* ---- files ---- */

static void test_files(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp("test-netdev-XXXXXX", &error);
        g_autofree char *fifo = NULL, *empty = NULL, *missing = NULL, *big = NULL;
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        MptNetdevInfo info = {};

        g_assert_no_error(error);
        fifo = g_build_filename(dir, "fifo.netdev", NULL);
        empty = g_build_filename(dir, "empty.netdev", NULL);
        missing = g_build_filename(dir, "missing.netdev", NULL);
        big = g_build_filename(dir, "big.netdev", NULL);

        /* A FIFO without a writer: refused at once, never waited on. */
        g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
        g_assert_cmpint(netdev_load_file(fifo, &p, &info, &d), ==, -EBADFD);
        g_assert_cmpint(netdev_load_file("/dev/null", &p, &info, &d), ==, -EBADFD);
        g_assert_cmpint(netdev_load_file(dir, &p, &info, &d), ==, -EISDIR);
        g_assert_cmpint(netdev_load_file(missing, &p, &info, &d), ==, -ENOENT);
        g_assert_null(p);
        g_assert_null(info.ifname);

        g_assert_true(g_file_set_contents(empty, "", 0, NULL));
        g_assert_cmpint(netdev_load_file(empty, &p, &info, &d), ==, 0);
        netdev_info_done(&info);

        {
                g_autofree char *text = g_strnfill(CONF_FILE_MAX + 1, '#');
                g_assert_true(g_file_set_contents(big, text, CONF_FILE_MAX + 1, NULL));
                g_assert_cmpint(netdev_load_file(big, &p, NULL, &d), ==, -EFBIG);
        }
        g_assert_cmpuint(d.n, ==, 0);

        g_unlink(fifo);
        g_unlink(empty);
        g_unlink(big);
        g_rmdir(dir);
}

/* Key= in a .netdev: networkd reads the file through its group (systemd-network), so only a file
 * that others can read is reported. */
static void test_key_private(void) {
        static const struct {
                mode_t mode;
                bool reported;
        } modes[] = {
                { 0600, false },
                { 0640, false },
                { 0604, true },
                { 0644, true },
        };
        static const char text[] = HEAD "[X-MPT]\nKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n" PATH;
        g_autoptr(GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp("test-netdev-XXXXXX", &error);
        g_autofree char *file = NULL;

        g_assert_no_error(error);
        file = g_build_filename(dir, "mpt0.netdev", NULL);
        g_assert_true(g_file_set_contents(file, text, -1, NULL));
        for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
                g_autoptr(MptProfile) p = NULL;
                MptDiagnostics d = {};

                g_assert_cmpint(chmod(file, modes[i].mode), ==, 0);
                g_assert_cmpint(netdev_load_file(file, &p, NULL, &d), ==, 1);
                g_assert_cmpuint(p->file_mode, ==, modes[i].mode);
                g_assert_cmpint(profile_check_key_private(p, &d), ==, modes[i].reported);
                g_assert_cmpuint(d.n, ==, modes[i].reported ? 1 : 0);
                if (modes[i].reported) {
                        g_assert_cmpuint(d.items[0].line, ==, 9);
                        g_assert_true(g_str_has_prefix(d.items[0].message, "Key= holds the tunnel's secret key, and others"));
                        g_assert_nonnull(strstr(d.items[0].message, "group systemd-network"));
                }
                diag_done(&d);
        }
        g_unlink(file);
        g_rmdir(dir);
}

static void test_filename(void) {
        g_assert_true(netdev_filename("mpt0.netdev"));
        g_assert_true(netdev_filename("/etc/systemd/network/10-mpt0.netdev"));
        g_assert_false(netdev_filename(".netdev"));
        g_assert_false(netdev_filename("mpt0.conf"));
        g_assert_false(netdev_filename("mpt0.netdev.d"));
        g_assert_false(netdev_filename("mpt0.network"));
}

static void test_key_docs(void) {
        const MptConfKey *name = conf_key_lookup(MPT_SECTION_TUNNEL, "Name");
        const MptConfKey *weight = conf_key_lookup(MPT_SECTION_PATH, "Weight");

        g_assert_nonnull(netdev_key_default_doc(name));
        g_assert_nonnull(netdev_key_doc(name));
        g_assert_null(netdev_key_default_doc(weight));
        g_assert_null(netdev_key_note(weight));
        g_assert_null(netdev_key_doc(weight));
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const char *note = netdev_key_note(&mpt_conf_keys[i]), *doc = netdev_key_doc(&mpt_conf_keys[i]);
                if (note)
                        g_assert_cmpuint(strlen(note), >=, 30);
                if (doc)
                        g_assert_cmpuint(strlen(doc), >=, 30);
                g_assert_true(!note || !doc);
        }
}

/* ---- golden files: tests/data/netdev/{good,bad,not-mpt}-*.netdev with *.expected ---- */

static void test_golden(const void *data) {
        const char *name = data;
        g_autofree char *path = g_build_filename(NETDEV_DIR, name, NULL);
        g_autofree char *base = g_strndup(name, strlen(name) - STRLEN(".netdev"));
        g_autofree char *expected_path = g_strdup_printf("%s/%s.expected", NETDEV_DIR, base);
        g_autofree char *prefix = g_strdup_printf("%s/", NETDEV_DIR);
        g_autofree char *expect = NULL, *got = NULL;
        g_autoptr(GError) error = NULL;
        MptDiagnostics d = {};
        MptNetdevInfo info = {};
        MptProfile *p = NULL;
        int r;

        g_file_get_contents(expected_path, &expect, NULL, &error);
        g_assert_no_error(error);

        r = netdev_load_file(path, &p, &info, &d);
        if (g_str_has_prefix(name, "good-")) {
                g_assert_cmpint(r, ==, 1);
                got = to_text(p);
                profile_free(p);
        } else if (g_str_has_prefix(name, "bad-")) {
                g_assert_cmpint(r, ==, -EINVAL);
                g_assert_null(p);
                /* Messages name the file as given; the expected lines use the bare name. */
                got = diag_text(&d, prefix);
        } else {
                g_assert_cmpint(r, ==, 0);
                g_assert_null(p);
                g_assert_false(info.has_mpt);
                got = diag_text(&d, prefix);
        }
        g_assert_cmpstr(got, ==, expect);
        netdev_info_done(&info);
        diag_done(&d);
}

static void test_golden_full_info(void) {
        MptDiagnostics d = {};
        MptNetdevInfo info = {};
        MptProfile *p = NULL;

        g_assert_cmpint(netdev_load_file(NETDEV_DIR "/good-full.netdev", &p, &info, &d), ==, 1);
        g_assert_cmpstr(info.ifname, ==, "mpt-lab");
        g_assert_cmpstr(info.user, ==, "nobody");
        g_assert_cmpstr(info.group, ==, "nogroup");
        profile_free(p);
        netdev_info_done(&info);
}

/* The shipped examples (mpt.netdev(5)) are valid and mirror each other. */
static void test_examples(void) {
        static const char *const files[] = { EXAMPLES_DIR "/mpt0.netdev", EXAMPLES_DIR "/mpt0-peer.netdev" };
        g_autofree char *dir = g_dir_make_tmp("mpt-test-netdev.XXXXXX", NULL);
        g_autofree char *key = g_build_filename(dir, "mpt0.key", NULL);
        g_autoptr(GError) error = NULL;

        /* They name their private key file PrivateKeyFile=mpt0.key, next to them: load copies
         * from a directory that has one (a checked-out file would be readable by everyone, and
         * refused). */
        g_assert_nonnull(dir);
        g_file_set_contents(key, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", -1, &error);
        g_assert_no_error(error);
        g_assert_cmpint(g_chmod(key, 0600), ==, 0);

        for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
                MptDiagnostics d = {};
                MptProfile *p = NULL;
                g_autofree char *text = NULL, *base = g_path_get_basename(files[i]);
                g_autofree char *copy = g_build_filename(dir, base, NULL);
                int r;

                g_file_get_contents(files[i], &text, NULL, &error);
                g_assert_no_error(error);
                g_file_set_contents(copy, text, -1, &error);
                g_assert_no_error(error);
                r = netdev_load_file(copy, &p, NULL, &d);
                (void) g_unlink(copy);

                if (r != 1) {
                        g_autofree char *e = diag_text(&d, NULL);
                        g_test_message("%s:\n%s", files[i], e);
                }
                g_assert_cmpint(r, ==, 1);
                g_assert_cmpstr(p->tunnel.name, ==, "mpt0");
                g_assert_cmpuint(p->n_paths, ==, 2);
                g_assert_cmpstr(p->paths[0].name, ==, "fiber");
                g_assert_cmpstr(p->paths[1].name, ==, "lte");
                g_assert_true(profile_uses_handshake(p));
                g_assert_true(p->tunnel.public_key.set);
                profile_free(p);
                diag_done(&d);
        }
        (void) g_unlink(key);
        (void) g_rmdir(dir);
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void add_golden_tests(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        GDir *dir = g_dir_open(NETDEV_DIR, 0, &error);
        const char *n;
        unsigned good = 0, bad = 0, other = 0;

        g_assert_no_error(error);
        while ((n = g_dir_read_name(dir)))
                if (g_str_has_suffix(n, ".netdev"))
                        g_ptr_array_add(names, g_strdup(n)); /* kept for the test's lifetime */
        g_dir_close(dir);
        g_ptr_array_sort(names, compare_names);
        for (size_t i = 0; i < names->len; i++) {
                const char *name = names->pdata[i];
                g_autofree char *tp = g_strdup_printf("/mpt/netdev/golden/%s", name);

                if (g_str_has_prefix(name, "good-"))
                        good++;
                else if (g_str_has_prefix(name, "bad-"))
                        bad++;
                else
                        other++;
                g_test_add_data_func(tp, name, test_golden);
        }
        /* A missing data directory must not pass as "no tests". */
        g_assert_cmpuint(good, >=, 2);
        g_assert_cmpuint(bad, >=, 4);
        g_assert_cmpuint(other, >=, 1);
}

/* [X-MPT...] sections in networkd's drop-ins of a .netdev are warned about (mpt does not read
 * them), each at its FILE:LINE; other sections there, and other files, are not. */
static void test_dropin_warnings(void) {
        g_autofree char *tmp = g_dir_make_tmp("mpt-netdev-dropins-XXXXXX", NULL);
        g_autofree char *netdev = g_build_filename(tmp, "mpt0.netdev", NULL);
        g_autofree char *dir = g_build_filename(tmp, "mpt0.netdev.d", NULL);
        g_autofree char *a = g_build_filename(dir, "10-mtu.conf", NULL), *b = g_build_filename(dir, "20-path.conf", NULL);
        g_autofree char *c = g_build_filename(dir, "30-notes.txt", NULL);
        MptDiagnostics w = {};

        g_assert_true(g_file_set_contents(netdev, "[NetDev]\nName=mpt0\nKind=tun\n", -1, NULL));
        /* No drop-in directory: nothing. */
        g_assert_cmpint(netdev_dropin_warnings(netdev, &w), ==, 0);
        g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
        g_assert_true(g_file_set_contents(a, "[NetDev]\nMTUBytes=1400\n", -1, NULL));
        g_assert_true(g_file_set_contents(b, "# a path\n\n  [X-MPTPath]\nName=lte\n[X-MPT]\nMode=compat\n", -1, NULL));
        g_assert_true(g_file_set_contents(c, "[X-MPT]\n", -1, NULL));
        g_assert_cmpint(netdev_dropin_warnings(netdev, &w), ==, 2);
        g_assert_cmpuint(w.n, ==, 2);
        g_assert_cmpstr(w.items[0].file, ==, b);
        g_assert_cmpuint(w.items[0].line, ==, 3);
        g_assert_cmpuint(w.items[1].line, ==, 5);
        g_assert_nonnull(strstr(w.items[0].message, "not from networkd's drop-ins"));
        diag_done(&w);
        g_assert_cmpint(g_unlink(a), ==, 0);
        g_assert_cmpint(g_unlink(b), ==, 0);
        g_assert_cmpint(g_unlink(c), ==, 0);
        g_assert_cmpint(g_rmdir(dir), ==, 0);
        g_assert_cmpint(g_unlink(netdev), ==, 0);
        g_assert_cmpint(g_rmdir(tmp), ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/mpt/netdev/minimal", test_minimal);
        g_test_add_func("/mpt/netdev/same-as-native", test_same_as_native);
        g_test_add_func("/mpt/netdev/info", test_info);
        g_test_add_func("/mpt/netdev/x-mpt-name", test_x_mpt_name);
        g_test_add_func("/mpt/netdev/networkd-sections-ignored", test_networkd_sections_ignored);
        g_test_add_func("/mpt/netdev/networkd-merge", test_networkd_merge);
        g_test_add_func("/mpt/netdev/not-mpt", test_not_mpt);
        for (size_t i = 0; i < G_N_ELEMENTS(error_cases); i++) {
                g_autofree char *tp = g_strdup_printf("/mpt/netdev/error/%s", error_cases[i].name);
                g_test_add_data_func(tp, &error_cases[i], test_error);
        }
        g_test_add_func("/mpt/netdev/info-of-broken-file", test_info_of_broken_file);
        g_test_add_func("/mpt/netdev/files", test_files);
        g_test_add_func("/mpt/netdev/filename", test_filename);
        g_test_add_func("/mpt/netdev/key-private", test_key_private);
        g_test_add_func("/mpt/netdev/key-docs", test_key_docs);
        g_test_add_func("/mpt/netdev/golden-full-info", test_golden_full_info);
        g_test_add_func("/mpt/netdev/examples", test_examples);
        g_test_add_func("/mpt/netdev/dropin-warnings", test_dropin_warnings);
        add_golden_tests();

        return g_test_run();
}
