/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* vpn.data/vpn.secrets <-> profile model (plugins/networkmanager/shared). */

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"

#include "mpt-nm-profile.h"

typedef struct KV {
        const char *key, *value;
} KV;

static NMSettingVpn *setting_new(const KV *data, const KV *secrets) {
        NMSettingVpn *s = NM_SETTING_VPN(nm_setting_vpn_new());

        g_object_set(s, NM_SETTING_VPN_SERVICE_TYPE, MPT_NM_DBUS_SERVICE, NULL);
        for (const KV *i = data; i && i->key; i++)
                nm_setting_vpn_add_data_item(s, i->key, i->value);
        for (const KV *i = secrets; i && i->key; i++)
                nm_setting_vpn_add_secret(s, i->key, i->value);
        return s;
}

static const KV good[] = {
        { "Name", "nm0" },
        { "Address", "10.9.0.1/24 fd00::1/64" },
        { "Peer", "10.9.0.2" },
        { "LocalPort", "7000" },
        { "Path0.Interface", "eth0" },
        { "Path0.Remote", "192.0.2.1" },
        { "Path1.Interface", "wlan0" },
        { "Path1.Remote", "198.51.100.1" },
        { "Path1.Weight", "3" },
        { "Path1.RemotePort", "7001" },
        {},
};

static void test_good(void) {
        g_autoptr(NMSettingVpn) s = setting_new(good, NULL);
        g_autoptr(MptProfile) p = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *text = NULL;

        g_assert_true(mpt_nm_profile_from_setting(s, &p, &error));
        g_assert_no_error(error);
        g_assert_cmpstr(mpt_nm_profile_get_name(p), ==, "nm0");
        g_assert_cmpuint(p->n_paths, ==, 2);
        g_assert_cmpstr(p->paths[0].interface, ==, "eth0");
        g_assert_cmpstr(p->paths[1].name, ==, "wlan0");
        g_assert_cmpuint(p->paths[1].weight, ==, 3);
        g_assert_cmpuint(p->paths[1].remote_port, ==, 7001);
        g_assert_cmpuint(p->tunnel.local_port, ==, 7000);
        g_assert_cmpuint(p->tunnel.addresses.n, ==, 2);
        g_assert_true(mpt_nm_validate(s, NULL));
        g_assert_null(mpt_nm_validate_all(s, NULL));

        text = mpt_nm_profile_to_text(p, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(text, ==,
                        "[Tunnel]\nName=nm0\nAddress=10.9.0.1/24\nAddress=fd00::1/64\nPeer=10.9.0.2\nLocalPort=7000\n"
                        "\n[Path]\nName=eth0\nInterface=eth0\nRemote=192.0.2.1\n"
                        "\n[Path]\nName=wlan0\nInterface=wlan0\nRemote=198.51.100.1\nRemotePort=7001\nWeight=3\n");
}

static void test_default_name(void) {
        static const KV data[] = { { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" }, {} };
        g_autoptr(NMSettingVpn) s = setting_new(data, NULL);
        g_autoptr(MptProfile) p = NULL;

        g_assert_true(mpt_nm_profile_from_setting(s, &p, NULL));
        g_assert_cmpstr(mpt_nm_profile_get_name(p), ==, MPT_NM_DEFAULT_NAME);
        g_assert_cmpstr(p->paths[0].name, ==, "eth0");
}

/* Gaps in the path numbers are allowed; the order is the numbers' order, not the text's. */
static void test_path_order(void) {
        static const KV data[] = {
                { "Path10.Interface", "b" }, { "Path10.Remote", "192.0.2.2" },
                { "Path2.Interface", "a" }, { "Path2.Remote", "192.0.2.1" }, {},
        };
        g_autoptr(NMSettingVpn) s = setting_new(data, NULL);
        g_autoptr(MptProfile) p = NULL;

        g_assert_true(mpt_nm_profile_from_setting(s, &p, NULL));
        g_assert_cmpuint(p->n_paths, ==, 2);
        g_assert_cmpstr(p->paths[0].interface, ==, "a");
        g_assert_cmpstr(p->paths[1].interface, ==, "b");
}

typedef struct BadCase {
        KV data[6];
        KV secrets[2];
        const char *messages[6];
        const char *items[6];
} BadCase;

static const BadCase bad_cases[] = {
        {
                .data = { { "Path0.Interface", "eth0" }, { "Path0.Remote", "not-an-ip" } },
                .messages = { "vpn.data: Path0.Remote: invalid Remote= 'not-an-ip': not an IPv4 or IPv6 address" },
                .items = { "Path0.Remote" },
        },
        {
                .data = { { "LocalPrt", "1" }, { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" } },
                .messages = { "vpn.data: LocalPrt: unknown key 'LocalPrt' in [Tunnel]; did you mean 'LocalPort'?" },
                .items = { "LocalPrt" },
        },
        {
                .data = { { "Path0.Interface", "eth0" } },
                .messages = { "vpn.data: Path0: path 'eth0' has no Remote= address (a path without one listens for the other end, and then needs LocalAddress=: the address it is reached at)" },
                .items = { "Path0" },
        },
        {
                .data = { { "MTU", "auto" } },
                .messages = { "vpn.data: no [Path] section: a tunnel needs at least one path" },
                .items = { "" },
        },
        {
                .data = { { "Path01.Remote", "192.0.2.1" }, { "Path64.Remote", "192.0.2.1" },
                          { "Path.Remote", "192.0.2.1" }, { "Path0.Interface", "e" }, { "Path0.Remote", "192.0.2.1" } },
                .messages = {
                        "vpn.data: Path.Remote: invalid item name 'Path.Remote': path keys are PathN.KEY with N from 0 to 63",
                        "vpn.data: Path01.Remote: invalid item name 'Path01.Remote': path keys are PathN.KEY with N from 0 to 63",
                        "vpn.data: Path64.Remote: invalid item name 'Path64.Remote': path keys are PathN.KEY with N from 0 to 63",
                },
                .items = { "Path.Remote", "Path01.Remote", "Path64.Remote" },
        },
        {
                .data = { { "Key", "abc" }, { "Key-flags", "x" }, { "Path0.Interface", "e" }, { "Path0.Remote", "192.0.2.1" } },
                .messages = {
                        "vpn.data: Key: Key is a secret: it belongs in vpn.secrets, not in vpn.data",
                        "vpn.data: Key-flags: invalid Key-flags 'x': expected secret flags 0..15",
                },
                .items = { "Key", "Key-flags" },
        },
        {
                /* Several problems: all of them, in item order; the verify pass's after the parse's. */
                .data = { { "MTU", "1" }, { "Path0.Interface", "e" }, { "Path0.Remote", "192.0.2.1" },
                          { "Path0.KeepaliveInterval", "1s" }, { "Path0.DeadTime", "500ms" }, { "Path1.Weight", "x" } },
                .messages = {
                        "vpn.data: MTU: invalid MTU= '1': expected \"auto\" or 576..65535",
                        "vpn.data: Path0.DeadTime: path 'e': DeadTime= must be longer than KeepaliveInterval=",
                        "vpn.data: Path1: path 'path1' has no Remote= address (a path without one listens for the other end, and then needs LocalAddress=: the address it is reached at)",
                        "vpn.data: Path1: path 'path1' needs Interface= or LocalAddress=",
                        "vpn.data: Path1.Weight: invalid Weight= 'x': expected 0..10000",
                },
                .items = { "MTU", "Path0.DeadTime", "Path1", "Path1", "Path1.Weight" },
        },
};

static void test_bad(gconstpointer data) {
        const BadCase *c = data;
        g_autoptr(NMSettingVpn) s = setting_new(c->data, c->secrets);
        g_auto(GStrv) msgs = NULL, items = NULL;
        g_autoptr(GError) error = NULL;
        MptProfile *p = NULL;
        guint n = 0;

        g_assert_false(mpt_nm_profile_from_setting(s, &p, &error));
        g_assert_null(p);
        g_assert_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS);
        g_assert_cmpstr(error->message, ==, c->messages[0]);

        msgs = mpt_nm_validate_all(s, &items);
        g_assert_nonnull(msgs);
        while (c->messages[n])
                n++;
        if (g_strv_length(msgs) != n) {
                g_autofree char *all = g_strjoinv("\n", msgs);
                g_test_message("got:\n%s", all);
        }
        g_assert_cmpuint(g_strv_length(msgs), ==, n);
        for (guint i = 0; i < n; i++) {
                g_assert_cmpstr(msgs[i], ==, c->messages[i]);
                g_assert_cmpstr(items[i], ==, c->items[i]);
        }
}

/* The messages are the native parser's, with the item in place of FILE:LINE. */
static void test_same_messages(void) {
        static const char conf[] =
                "[Tunnel]\nMode=compat\nScheduler=fastest\n[Path]\nInterface=eth0\nRemote=192.0.2.1\nWeight=-1\n";
        static const KV data[] = {
                { "Mode", "compat" }, { "Scheduler", "fastest" },
                { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" }, { "Path0.Weight", "-1" }, {},
        };
        g_autoptr(NMSettingVpn) s = setting_new(data, NULL);
        g_auto(GStrv) msgs = mpt_nm_validate_all(s, NULL);
        MptDiagnostics d = {};
        MptProfile *p = NULL;

        g_assert_cmpint(profile_load_buffer("x.conf", conf, strlen(conf), &p, &d), ==, -EINVAL);
        g_assert_cmpuint(d.n, ==, 2);
        g_assert_cmpuint(g_strv_length(msgs), ==, 2);
        g_assert_true(g_str_has_prefix(msgs[0], "vpn.data: Scheduler: "));
        g_assert_cmpstr(msgs[0] + strlen("vpn.data: Scheduler: "), ==, d.items[0].message);
        g_assert_true(g_str_has_prefix(msgs[1], "vpn.data: Path0.Weight: "));
        g_assert_cmpstr(msgs[1] + strlen("vpn.data: Path0.Weight: "), ==, d.items[1].message);
        diag_done(&d);
}

static void test_item_names(void) {
        const char *key;
        int n;

        g_assert_true(mpt_nm_item_parse("MTU", &n, &key));
        g_assert_cmpint(n, ==, -1);
        g_assert_cmpstr(key, ==, "MTU");
        g_assert_true(mpt_nm_item_parse("Path63.Remote", &n, &key));
        g_assert_cmpint(n, ==, 63);
        g_assert_cmpstr(key, ==, "Remote");
        g_assert_true(mpt_nm_item_parse("Path0.Remote", &n, &key));
        g_assert_cmpint(n, ==, 0);
        for (const char *const *b = (const char *const[]) { "Path", "Path.", "Path1", "Path1.", "Path01.X", "Path-1.X",
                                                            "Path64.X", "Path1000.X", "Pathx.X", NULL };
             *b; b++)
                g_assert_false(mpt_nm_item_parse(*b, &n, &key));
}

/* native file -> profile -> vpn.data -> profile -> text: the same text. */
static void test_round_trip(void) {
        static const char conf[] =
                "[Tunnel]\nName=rt0\nMode=compat\nAddress=10.9.0.1/24\nAddress=fd00::1/64\nRoute=10.10.0.0/16\nMTU=1400\n"
                "ReorderMaxDelay=50ms\nScheduler=flow\n"
                "Policy=proto udp port 5060 lowest-latency\nPolicy=to 10.10.0.0/16 pinned two\n"
                "\n[Path]\nName=one\nInterface=eth0\nRemote=192.0.2.1\nKeepaliveInterval=500ms\nBackup=yes\n"
                "LossThreshold=2.5%\n"
                "\n[Path]\nName=two\nLocalAddress=2001:db8::1\nRemote=2001:db8::2\nPinRemote=yes\n";
        g_autofree char *file = NULL, *text1 = NULL, *text2 = NULL, *all = NULL;
        g_autoptr(MptProfile) p1 = NULL, p2 = NULL;
        g_autoptr(NMSettingVpn) s = setting_new(NULL, NULL);
        g_autoptr(GError) error = NULL;
        int fd;

        fd = g_file_open_tmp("mpt-nm-XXXXXX.conf", &file, &error);
        g_assert_no_error(error);
        close(fd);
        g_assert_true(g_file_set_contents(file, conf, -1, &error));

        g_assert_true(mpt_nm_profile_from_file(file, &p1, &all, &error));
        g_assert_no_error(error);
        g_assert_null(all);
        nm_setting_vpn_add_data_item(s, "Stale", "x"); /* replaced */
        nm_setting_vpn_add_data_item(s, "Key-flags", "2"); /* kept: not ours */
        g_assert_true(mpt_nm_setting_from_profile(p1, s, &error));
        g_assert_null(nm_setting_vpn_get_data_item(s, "Stale"));
        g_assert_cmpstr(nm_setting_vpn_get_data_item(s, "Key-flags"), ==, "2");
        g_assert_cmpstr(nm_setting_vpn_get_data_item(s, "Address"), ==, "10.9.0.1/24 fd00::1/64");
        g_assert_cmpstr(nm_setting_vpn_get_data_item(s, "Path1.LocalAddress"), ==, "2001:db8::1");
        g_assert_cmpstr(nm_setting_vpn_get_data_item(s, "Path0.LossThreshold"), ==, "2.5%");
        /* Policy=: the rules in one item, in order, separated by ';'. */
        g_assert_cmpstr(nm_setting_vpn_get_data_item(s, "Policy"), ==,
                        "proto udp port 5060 lowest-latency; to 10.10.0.0/16 pinned two");
        g_assert_cmpstr(nm_setting_vpn_get_service_type(s), ==, MPT_NM_DBUS_SERVICE);

        g_assert_true(mpt_nm_profile_from_setting(s, &p2, &error));
        g_assert_no_error(error);
        text1 = mpt_nm_profile_to_text(p1, NULL);
        text2 = mpt_nm_profile_to_text(p2, NULL);
        g_assert_cmpstr(text1, ==, text2);
        g_assert_cmpstr(text1, ==, conf);
        unlink(file);
}

static void test_file_errors(void) {
        g_autofree char *file = NULL, *all = NULL, *expect = NULL;
        g_autoptr(GError) error = NULL;
        MptProfile *p = NULL;
        int fd;

        fd = g_file_open_tmp("mpt-nm-XXXXXX.conf", &file, &error);
        g_assert_no_error(error);
        close(fd);
        g_assert_true(g_file_set_contents(file, "[Tunnel]\nMode=compat\nMTU=x\n[Path]\nInterface=eth0\nRemot=1.2.3.4\n", -1, &error));
        g_assert_false(mpt_nm_profile_from_file(file, &p, &all, &error));
        g_assert_null(p);
        expect = g_strdup_printf("%s:3: invalid MTU= 'x': expected \"auto\" or 576..65535", file);
        g_assert_cmpstr(error->message, ==, expect);
        g_assert_nonnull(strstr(all, ":6: unknown key 'Remot' in [Path]; did you mean 'Remote'?\n"));
        g_assert_nonnull(strstr(all, ":4: path 'eth0' has no Remote= address (only a secure tunnel, Mode=secure, may leave it out and learn the other end's address)\n"));
        unlink(file);
        g_clear_error(&error);

        g_assert_false(mpt_nm_profile_from_file("/nonexistent/x.conf", &p, NULL, &error));
        g_assert_cmpstr(error->message, ==, "/nonexistent/x.conf: cannot read: No such file or directory");
}

/* The pre-shared key: a secret in vpn.secrets that lands in the profile (and so in the text mptd
 * reads). */
static void test_secret(void) {
        static const KV data[] = {
                { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" }, { "Key-flags", "1" }, {},
        };
        static const char key[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        g_autoptr(NMSettingVpn) s = setting_new(data, NULL);
        g_autoptr(NMSettingVpn) s2 = setting_new(NULL, NULL);
        g_autoptr(MptProfile) p = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *text = NULL, *line = NULL;

        g_assert_true(mpt_nm_key_is_secret("Key"));
        g_assert_false(mpt_nm_key_is_secret("KeyFile"));
        g_assert_nonnull(conf_key_lookup(MPT_SECTION_TUNNEL, MPT_NM_SECRET_KEY));
        nm_setting_vpn_add_data_item(s, "Mode", "secure");
        nm_setting_vpn_add_secret(s, MPT_NM_SECRET_KEY, key);
        g_assert_true(mpt_nm_profile_from_setting(s, &p, &error));
        g_assert_no_error(error);
        text = mpt_nm_profile_to_text(p, NULL);
        line = g_strdup_printf("\nKey=%s\n", key);
        g_assert_nonnull(strstr(text, line));

        /* Back: a secret, never a data item. */
        g_assert_true(mpt_nm_setting_from_profile(p, s2, &error));
        g_assert_cmpstr(nm_setting_vpn_get_secret(s2, MPT_NM_SECRET_KEY), ==, key);
        g_assert_null(nm_setting_vpn_get_data_item(s2, MPT_NM_SECRET_KEY));
}

/* With the handshake: the private key (and an optional pre-shared key) are secrets, the other
 * end's public key is data; a connection with PublicKey needs the secret PrivateKey, and lacks it
 * (NetworkManager asks) rather than being refused without it. */
static void test_handshake_secret(void) {
        static const KV data[] = {
                { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" },
                { "PublicKey", "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=" }, {},
        };
        static const char priv[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        static const char psk[] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        g_autoptr(NMSettingVpn) s = setting_new(data, NULL);
        g_autoptr(NMSettingVpn) s2 = setting_new(NULL, NULL);
        g_autoptr(NMSettingVpn) plain = setting_new(good, NULL);
        g_autoptr(MptProfile) p = NULL, lacking = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *text = NULL;

        g_assert_true(mpt_nm_key_is_secret("PrivateKey"));
        g_assert_true(mpt_nm_key_is_secret("PresharedKey"));
        g_assert_false(mpt_nm_key_is_secret("PublicKey"));
        g_assert_false(mpt_nm_key_is_secret("PrivateKeyFile"));
        g_assert_cmpstr(mpt_nm_secret_name(s), ==, MPT_NM_PRIVATE_KEY);
        g_assert_cmpstr(mpt_nm_secret_name(plain), ==, MPT_NM_SECRET_KEY);

        /* Without the private key: built, and it lacks its key. */
        g_assert_true(mpt_nm_profile_from_setting(s, &lacking, &error));
        g_assert_no_error(error);
        g_assert_true(mpt_nm_profile_lacks_key(lacking));

        nm_setting_vpn_add_secret(s, MPT_NM_PRIVATE_KEY, priv);
        nm_setting_vpn_add_secret(s, "PresharedKey", psk);
        g_assert_true(mpt_nm_profile_from_setting(s, &p, &error));
        g_assert_no_error(error);
        g_assert_false(mpt_nm_profile_lacks_key(p));
        g_assert_true(profile_uses_handshake(p));
        text = mpt_nm_profile_to_text(p, NULL);
        g_assert_nonnull(strstr(text, "\nPrivateKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"));
        g_assert_nonnull(strstr(text, "\nPublicKey=ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\n"));

        /* Back: the private and pre-shared keys are secrets, the public key data. */
        g_assert_true(mpt_nm_setting_from_profile(p, s2, &error));
        g_assert_cmpstr(nm_setting_vpn_get_secret(s2, MPT_NM_PRIVATE_KEY), ==, priv);
        g_assert_cmpstr(nm_setting_vpn_get_secret(s2, "PresharedKey"), ==, psk);
        g_assert_null(nm_setting_vpn_get_data_item(s2, MPT_NM_PRIVATE_KEY));
        g_assert_cmpstr(nm_setting_vpn_get_data_item(s2, "PublicKey"), ==, "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=");
        g_assert_null(nm_setting_vpn_get_secret(s2, "PublicKey"));

        /* A pre-shared Key beside the key pair: refused, with the reason. */
        nm_setting_vpn_add_secret(s, MPT_NM_SECRET_KEY, psk);
        g_assert_false(mpt_nm_validate(s, &error));
        g_assert_nonnull(strstr(error->message, "Key= is the pre-shared key of secure mode without a handshake"));
}

/* Whose a connection is: connection.permissions empty is the system's. */
static void test_owner(void) {
        g_autoptr(NMConnection) c = nm_simple_connection_new();
        NMSettingConnection *sc = NM_SETTING_CONNECTION(nm_setting_connection_new());
        const char *user = "x";

        nm_connection_add_setting(c, NM_SETTING(sc));
        g_assert_cmpint(mpt_nm_connection_owner(c, &user), ==, MPT_NM_OWNER_SYSTEM);
        g_assert_null(user);
        g_assert_true(nm_setting_connection_add_permission(sc, "user", "alice", NULL));
        g_assert_cmpint(mpt_nm_connection_owner(c, &user), ==, MPT_NM_OWNER_USER);
        g_assert_cmpstr(user, ==, "alice");
        g_assert_cmpint(mpt_nm_connection_owner(c, NULL), ==, MPT_NM_OWNER_USER);
}

/* A user's connection cannot make the service (root) read a file: KeyFile= is refused with one
 * message, whether the file exists or not, and the file is not opened (inotify would see it). A
 * key in vpn.secrets works; a system connection reads its key file. */
static void test_user_key_file(void) {
        static const char key[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        static const char want[] =
                "vpn.data: KeyFile: KeyFile= is refused: this connection belongs to user 'alice' "
                "(connection.permissions), and the VPN service, which runs as root, reads files only for "
                "system connections; put the key in vpn.secrets (Key) instead, or make the connection a system one";
        g_autofree char *dir = g_dir_make_tmp("mpt-test-nm-profile.XXXXXX", NULL);
        g_autofree char *file = g_build_filename(dir, "corp.key", NULL);
        g_autofree char *missing = g_build_filename(dir, "missing.key", NULL);
        g_autofree char *content = g_strdup_printf("%s\n", key);
        const char *files[] = { file, missing };
        char events[4096];
        int in;

        g_assert_nonnull(dir);
        g_assert_true(g_file_set_contents(file, content, -1, NULL));
        g_assert_cmpint(chmod(file, 0600), ==, 0);
        in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        g_assert_cmpint(in, >=, 0);
        g_assert_cmpint(inotify_add_watch(in, file, IN_OPEN | IN_ACCESS), >=, 0);

        for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
                KV data[] = {
                        { "KeyFile", files[i] }, { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" }, {},
                };
                g_autoptr(NMSettingVpn) s = setting_new(data, NULL);
                g_autoptr(MptProfile) p = NULL;
                g_autoptr(GError) error = NULL;

                g_assert_false(mpt_nm_profile_from_setting_for(s, MPT_NM_OWNER_USER, "alice", &p, &error));
                g_assert_cmpstr(error->message, ==, want);
                g_assert_null(p);
                g_clear_error(&error);
                /* Without a user name (a permission NetworkManager may add in future). */
                g_assert_false(mpt_nm_validate_for(s, MPT_NM_OWNER_USER, NULL, &error));
                g_assert_true(g_str_has_prefix(error->message, "vpn.data: KeyFile: KeyFile= is refused: this "
                                               "connection belongs to users (connection.permissions)"));
        }
        g_assert_cmpint(read(in, events, sizeof events), ==, -1);
        g_assert_cmpint(errno, ==, EAGAIN);

        {
                KV data[] = { { "KeyFile", file }, { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" }, {} };
                static const KV user_data[] = { { "Path0.Interface", "eth0" }, { "Path0.Remote", "192.0.2.1" }, {} };
                static const KV secrets[] = { { "Key", key }, {} };
                g_autoptr(NMSettingVpn) s = setting_new(data, NULL);
                g_autoptr(NMSettingVpn) u = setting_new(user_data, secrets);
                g_autoptr(MptProfile) p = NULL, q = NULL;
                g_autoptr(GError) error = NULL;

                g_assert_true(mpt_nm_profile_from_setting_for(u, MPT_NM_OWNER_USER, "alice", &q, &error));
                g_assert_no_error(error);
                g_assert_true(q->tunnel.psk.set);
                /* The system's connection reads its file (and the watch sees that). */
                g_assert_true(mpt_nm_profile_from_setting_for(s, MPT_NM_OWNER_SYSTEM, NULL, &p, &error));
                g_assert_no_error(error);
                g_assert_true(p->tunnel.psk.set);
                g_assert_cmpmem(p->tunnel.psk.bytes, MPT_KEY_SIZE, q->tunnel.psk.bytes, MPT_KEY_SIZE);
                g_assert_cmpint(read(in, events, sizeof events), >, 0);
        }
        close(in);
        g_assert_cmpint(unlink(file), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/nm-profile/good", test_good);
        g_test_add_func("/mpt/nm-profile/default-name", test_default_name);
        g_test_add_func("/mpt/nm-profile/path-order", test_path_order);
        for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
                g_autofree char *name = g_strdup_printf("/mpt/nm-profile/bad/%zu", i);
                g_test_add_data_func(name, &bad_cases[i], test_bad);
        }
        g_test_add_func("/mpt/nm-profile/same-messages", test_same_messages);
        g_test_add_func("/mpt/nm-profile/item-names", test_item_names);
        g_test_add_func("/mpt/nm-profile/round-trip", test_round_trip);
        g_test_add_func("/mpt/nm-profile/file-errors", test_file_errors);
        g_test_add_func("/mpt/nm-profile/secret", test_secret);
        g_test_add_func("/mpt/nm-profile/handshake-secret", test_handshake_secret);
        g_test_add_func("/mpt/nm-profile/owner", test_owner);
        g_test_add_func("/mpt/nm-profile/user-key-file", test_user_key_file);
        return g_test_run();
}
