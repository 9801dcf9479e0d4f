/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>

#include "profile.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include "mpt-nm-profile.h"

#define FLAGS_SUFFIX "-flags"
/* What a FLAGS_SUFFIX item may hold: any value of the four low bits of NMSettingSecretFlags, whose
 * flags (NM_SETTING_SECRET_FLAG_*: 1, 2, 4) live there. */
#define SECRET_FLAGS_MAX 15u

gboolean mpt_nm_key_is_secret(const char *key) {
        /* The key table says which keys are secrets (MPT_CONF_SECRET: the pre-shared key, Key=,
         * which is MPT_NM_SECRET_KEY); only tunnel keys can be. */
        const MptConfKey *k = key ? conf_key_lookup(MPT_SECTION_TUNNEL, key) : NULL;

        return k && (k->flags & MPT_CONF_SECRET);
}

char *mpt_nm_item_name(int path, const char *key) {
        if (path < 0)
                return g_strdup(key);
        return g_strdup_printf(MPT_NM_PATH_PREFIX "%d.%s", path, key);
}

gboolean mpt_nm_item_parse(const char *item, int *ret_path, const char **ret_key) {
        const char *p, *dot;
        guint64 n;

        if (!g_str_has_prefix(item, MPT_NM_PATH_PREFIX)) {
                *ret_path = -1;
                *ret_key = item;
                return TRUE;
        }
        p = item + strlen(MPT_NM_PATH_PREFIX);
        dot = strchr(p, '.');
        /* "PathN.KEY": N decimal, no sign, no leading zero, below the path limit. */
        if (!dot || dot == p || dot[1] == 0 || (p[0] == '0' && dot - p > 1))
                return FALSE;
        for (const char *c = p; c < dot; c++)
                if (!g_ascii_isdigit(*c))
                        return FALSE;
        n = g_ascii_strtoull(p, NULL, 10);
        if (dot - p > 3 || n >= MPT_PATHS_MAX)
                return FALSE;
        *ret_path = (int) n;
        *ret_key = dot + 1;
        return TRUE;
}

gboolean mpt_nm_profile_lacks_key(const MptProfile *p) {
        return profile_lacks_key(p);
}

const char *mpt_nm_secret_name(NMSettingVpn *s) {
        /* A connection with the other end's public key runs the handshake: its own private key is
         * the secret (PrivateKeyFile= may name a file instead, for a system connection). */
        return nm_setting_vpn_get_data_item(s, conf_key(MPT_KEY_TUNNEL_PUBLIC_KEY)->name) ? MPT_NM_PRIVATE_KEY
                                                                                         : MPT_NM_SECRET_KEY;
}

const char *mpt_nm_profile_get_name(const MptProfile *p) {
        return p->tunnel.name;
}

void mpt_nm_profile_free(MptProfile *p) {
        profile_free(p);
}

MptNmOwner mpt_nm_connection_owner(NMConnection *c, const char **ret_user) {
        NMSettingConnection *sc = nm_connection_get_setting_connection(c);
        const char *user = NULL;

        if (sc && nm_setting_connection_get_num_permissions(sc) > 0) {
                /* A permission that is not "user:NAME" still makes the connection a user's. */
                if (!nm_setting_connection_get_permission(sc, 0, NULL, &user, NULL))
                        user = NULL;
                if (ret_user)
                        *ret_user = user;
                return MPT_NM_OWNER_USER;
        }
        if (ret_user)
                *ret_user = NULL;
        return MPT_NM_OWNER_SYSTEM;
}

/* ---- vpn.data -> profile ---- */

typedef struct Item {
        int path;
        const char *name;  /* the vpn.data item */
        const char *key;   /* points into name */
        const char *value;
} Item;

typedef struct Problem {
        char *item;
        char *message;
} Problem;

typedef struct Builder {
        MptNmOwner owner;
        const char *user; /* for messages; may be NULL */
        MptProfile *profile;
        MptDiagnostics diag;
        /* Synthetic line numbers: profile_assign() and profile_verify() tie every problem to a
         * line; line N means locations[N] ("vpn.data: Path1.Remote"), items[N] is the item. */
        GPtrArray *locations;
        GPtrArray *items;
} Builder;

static unsigned builder_line(Builder *b, const char *where, const char *item) {
        g_ptr_array_add(b->locations, g_strdup_printf("%s: %s", where, item));
        g_ptr_array_add(b->items, g_strdup(item));
        return b->locations->len - 1;
}

/* Assigns an item, unless it names a file and the connection is a user's: then the key is
 * refused (and marked so, so that verification does not ask for what it would have given)
 * without looking at the file. */
static void builder_assign(Builder *b, MptSection section, MptPathConfig *path, const char *key, const char *value,
                           const char *where, const char *item) {
        const MptConfKey *k = conf_key_lookup(section, key);
        unsigned line = builder_line(b, where, item);

        if (k && k->type == MPT_CONF_PATH && b->owner == MPT_NM_OWNER_USER) {
                uint32_t *rejected = section == MPT_SECTION_TUNNEL ? &b->profile->tunnel.key_rejected
                                                                    : &path->key_rejected;
                *rejected |= UINT32_C(1) << conf_key_index(k);
                diag_add(&b->diag, where, line,
                         "%s= is refused: this connection belongs to %s%s%s (connection.permissions), and the "
                         "VPN service, which runs as root, reads files only for system connections; put the key "
                         "in vpn.secrets (%.*s) instead, or make the connection a system one", key,
                         b->user ? "user '" : "users", b->user ?: "", b->user ? "'" : "",
                         /* The secret of KeyFile= is Key, of PrivateKeyFile= PrivateKey, ... */
                         (int) (g_str_has_suffix(key, "File") ? strlen(key) - STRLEN("File") : strlen(key)), key);
                return;
        }
        (void) profile_assign(b->profile, section, path, key, value, where, line, &b->diag);
}

static int item_cmp(gconstpointer a, gconstpointer b) {
        const Item *x = a, *y = b;

        if (x->path != y->path)
                return x->path < y->path ? -1 : 1;
        return strcmp(x->key, y->key);
}

static void problem_clear(gpointer data) {
        Problem *p = data;
        g_free(p->item);
        g_free(p->message);
}

/* Builds the profile; returns the problems (empty when none), sorted by item. */
static GArray *build(NMSettingVpn *s, MptNmOwner owner, const char *user, MptProfile **ret) {
        g_autoptr(GArray) problems = g_array_new(FALSE, TRUE, sizeof(Problem));
        g_autoptr(GArray) items = g_array_new(FALSE, TRUE, sizeof(Item));
        g_autofree const char **data_keys = NULL, **secret_keys = NULL;
        Builder b = {
                .owner = owner,
                .user = user,
                .locations = g_ptr_array_new_with_free_func(g_free),
                .items = g_ptr_array_new_with_free_func(g_free),
        };
        guint n_data = 0, n_secrets = 0;
        const MptConfKey *name_key;
        MptPathConfig *path = NULL;
        int path_no = -1;

        g_array_set_clear_func(problems, problem_clear);
        b.profile = profile_new();
        g_assert(b.profile);
        b.profile->filename = strdup("vpn.data");
        g_assert(b.profile->filename);
        /* Line 0 is "no line": the whole tunnel. */
        g_ptr_array_add(b.locations, g_strdup("vpn.data"));
        g_ptr_array_add(b.items, g_strdup(""));

        data_keys = nm_setting_vpn_get_data_keys(s, &n_data);
        for (guint i = 0; i < n_data; i++) {
                const char *name = data_keys[i], *value = nm_setting_vpn_get_data_item(s, name);
                Item it = { .name = name, .value = value };

                if (g_str_has_suffix(name, FLAGS_SUFFIX)) {
                        g_autofree char *base = g_strndup(name, strlen(name) - strlen(FLAGS_SUFFIX));
                        if (mpt_nm_key_is_secret(base)) {
                                guint64 v;
                                if (!g_ascii_string_to_unsigned(value, 10, 0, SECRET_FLAGS_MAX, &v, NULL))
                                        diag_add(&b.diag, "vpn.data", builder_line(&b, "vpn.data", name),
                                                 "invalid %s '%s': expected secret flags 0..%u", name, value,
                                                 SECRET_FLAGS_MAX);
                                continue;
                        }
                }
                if (!mpt_nm_item_parse(name, &it.path, &it.key)) {
                        diag_add(&b.diag, "vpn.data", builder_line(&b, "vpn.data", name),
                                 "invalid item name '%s': path keys are " MPT_NM_PATH_PREFIX "N.KEY with N "
                                 "from 0 to %u", name, MPT_PATHS_MAX - 1);
                        continue;
                }
                if (mpt_nm_key_is_secret(it.key)) {
                        diag_add(&b.diag, "vpn.data", builder_line(&b, "vpn.data", name),
                                 "%s is a secret: it belongs in vpn.secrets, not in vpn.data", name);
                        continue;
                }
                g_array_append_val(items, it);
        }
        g_array_sort(items, item_cmp);

        /* Tunnel keys, then the secrets, then the paths in the order of their numbers. */
        for (guint i = 0; i < items->len; i++) {
                const Item *it = &g_array_index(items, Item, i);
                if (it->path >= 0)
                        continue;
                builder_assign(&b, MPT_SECTION_TUNNEL, NULL, it->key, it->value, "vpn.data", it->name);
        }
        secret_keys = nm_setting_vpn_get_secret_keys(s, &n_secrets);
        for (guint i = 0; i < n_secrets; i++) {
                const char *name = secret_keys[i];
                /* Secrets the table does not know (yet) are not ours to judge. */
                if (!mpt_nm_key_is_secret(name) || !conf_key_lookup(MPT_SECTION_TUNNEL, name))
                        continue;
                (void) profile_assign(b.profile, MPT_SECTION_TUNNEL, NULL, name, nm_setting_vpn_get_secret(s, name),
                                      "vpn.secrets", builder_line(&b, "vpn.secrets", name), &b.diag);
        }
        for (guint i = 0; i < items->len; i++) {
                const Item *it = &g_array_index(items, Item, i);
                if (it->path < 0)
                        continue;
                if (it->path != path_no) {
                        g_autofree char *pname = g_strdup_printf(MPT_NM_PATH_PREFIX "%d", it->path);
                        path_no = it->path;
                        path = profile_add_path(b.profile, builder_line(&b, "vpn.data", pname));
                        g_assert(path);
                }
                builder_assign(&b, MPT_SECTION_PATH, path, it->key, it->value, "vpn.data", it->name);
        }

        /* A connection has no file name to take the tunnel name from. */
        name_key = conf_key(MPT_KEY_TUNNEL_NAME);
        if (!b.profile->tunnel.name &&
            !(b.profile->tunnel.key_rejected & (UINT32_C(1) << conf_key_index(name_key)))) {
                b.profile->tunnel.name = strdup(MPT_NM_DEFAULT_NAME);
                g_assert(b.profile->tunnel.name);
        }
        (void) profile_verify(b.profile, &b.diag);
        g_assert(!b.diag.oom);

        /* In item order: a line is an item (builder_line()). */
        diag_sort_by_line(&b.diag, 0, NULL, NULL);
        for (size_t i = 0; i < b.diag.n; i++) {
                const MptDiag *di = &b.diag.items[i];
                unsigned line = di->line < b.locations->len ? di->line : 0;
                Problem pr = {
                        .item = g_strdup(b.items->pdata[line]),
                        .message = g_strdup_printf("%s: %s", (char *) b.locations->pdata[line], di->message),
                };
                g_array_append_val(problems, pr);
        }
        if (b.diag.n_dropped > 0) {
                Problem pr = {
                        .item = g_strdup(""),
                        .message = g_strdup_printf("vpn.data: ... and %zu more problems", b.diag.n_dropped),
                };
                g_array_append_val(problems, pr);
        }

        diag_done(&b.diag);
        g_ptr_array_unref(b.locations);
        g_ptr_array_unref(b.items);
        if (problems->len == 0 && ret)
                *ret = b.profile;
        else
                profile_free(b.profile);
        return g_steal_pointer(&problems);
}

gboolean mpt_nm_profile_from_setting_for(NMSettingVpn *s, MptNmOwner owner, const char *user, MptProfile **ret,
                                         GError **error) {
        g_autoptr(GArray) problems = NULL;
        MptProfile *p = NULL;

        g_return_val_if_fail(NM_IS_SETTING_VPN(s), FALSE);

        problems = build(s, owner, user, &p);
        if (problems->len > 0) {
                g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                                    g_array_index(problems, Problem, 0).message);
                return FALSE;
        }
        if (ret)
                *ret = p;
        else
                profile_free(p);
        return TRUE;
}

gboolean mpt_nm_profile_from_setting(NMSettingVpn *s, MptProfile **ret, GError **error) {
        return mpt_nm_profile_from_setting_for(s, MPT_NM_OWNER_SYSTEM, NULL, ret, error);
}

gboolean mpt_nm_validate_for(NMSettingVpn *s, MptNmOwner owner, const char *user, GError **error) {
        return mpt_nm_profile_from_setting_for(s, owner, user, NULL, error);
}

gboolean mpt_nm_validate(NMSettingVpn *s, GError **error) {
        return mpt_nm_validate_for(s, MPT_NM_OWNER_SYSTEM, NULL, error);
}

char **mpt_nm_validate_all(NMSettingVpn *s, char ***ret_items) {
        g_autoptr(GArray) problems = NULL;
        GStrvBuilder *msgs, *items;
        char **r;

        g_return_val_if_fail(NM_IS_SETTING_VPN(s), NULL);

        problems = build(s, MPT_NM_OWNER_SYSTEM, NULL, NULL);
        if (problems->len == 0) {
                if (ret_items)
                        *ret_items = NULL;
                return NULL;
        }
        msgs = g_strv_builder_new();
        items = g_strv_builder_new();
        for (guint i = 0; i < problems->len; i++) {
                g_strv_builder_add(msgs, g_array_index(problems, Problem, i).message);
                g_strv_builder_add(items, g_array_index(problems, Problem, i).item);
        }
        r = g_strv_builder_end(msgs);
        if (ret_items)
                *ret_items = g_strv_builder_end(items);
        g_strv_builder_unref(msgs);
        g_strv_builder_unref(items);
        return r;
}

/* ---- profile -> vpn.data ---- */

typedef struct ItemWriter {
        NMSettingVpn *setting;
        int path_no;
} ItemWriter;

/* What was set explicitly, and the tunnel's name (mptd needs one); a path's name only when it is
 * set (a derived one follows its Interface= as the user edits it). */
static int add_item(const MptConfKey *k, const void *config, const char *value, void *userdata) {
        ItemWriter *w = userdata;
        g_autofree char *item = NULL;

        if (isempty(value))
                return 0;
        item = mpt_nm_item_name(w->path_no, k->name);
        if (k->section == MPT_SECTION_TUNNEL && mpt_nm_key_is_secret(k->name))
                nm_setting_vpn_add_secret(w->setting, item, value);
        else
                nm_setting_vpn_add_data_item(w->setting, item, value);
        return 0;
}

gboolean mpt_nm_setting_from_profile(const MptProfile *p, NMSettingVpn *s, GError **error) {
        g_autofree const char **data_keys = NULL, **secret_keys = NULL;
        g_autoptr(GPtrArray) drop = g_ptr_array_new_with_free_func(g_free);
        guint n = 0;

        g_return_val_if_fail(NM_IS_SETTING_VPN(s), FALSE);

        data_keys = nm_setting_vpn_get_data_keys(s, &n);
        for (guint i = 0; i < n; i++)
                if (!g_str_has_suffix(data_keys[i], FLAGS_SUFFIX))
                        g_ptr_array_add(drop, g_strdup(data_keys[i]));
        for (guint i = 0; i < drop->len; i++)
                nm_setting_vpn_remove_data_item(s, drop->pdata[i]);
        g_ptr_array_set_size(drop, 0);
        secret_keys = nm_setting_vpn_get_secret_keys(s, &n);
        for (guint i = 0; i < n; i++)
                if (mpt_nm_key_is_secret(secret_keys[i]))
                        g_ptr_array_add(drop, g_strdup(secret_keys[i]));
        for (guint i = 0; i < drop->len; i++)
                nm_setting_vpn_remove_secret(s, drop->pdata[i]);

        g_object_set(s, NM_SETTING_VPN_SERVICE_TYPE, MPT_NM_DBUS_SERVICE, NULL);
        for (size_t i = 0; i <= p->n_paths; i++) {
                /* The tunnel first (-1), then each path. */
                ItemWriter w = { .setting = s, .path_no = (int) i - 1 };
                if (profile_foreach_key(p, i == 0 ? SIZE_MAX : i - 1, 0, add_item, &w) < 0) {
                        g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_FAILED, "out of memory");
                        return FALSE;
                }
        }
        return TRUE;
}

char *mpt_nm_profile_to_text(const MptProfile *p, GError **error) {
        char *text = NULL, *r;

        if (profile_to_text(p, &text) < 0) {
                g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_FAILED, "out of memory");
                return NULL;
        }
        r = g_strdup(text);
        explicit_bzero(text, strlen(text));
        free(text);
        return r;
}

gboolean mpt_nm_profile_from_file(const char *filename, MptProfile **ret, char **ret_all, GError **error) {
        MptDiagnostics d = {};
        MptProfile *p = NULL;
        int r;

        r = profile_load_file(filename, &p, &d);
        if (r == -EINVAL || (r < 0 && diag_has_errors(&d))) {
                g_autoptr(GString) all = g_string_new(NULL);
                g_autofree char *first = NULL;

                for (size_t i = 0; i < d.n; i++) {
                        char *m = NULL;
                        if (diag_format(&d.items[i], &m) < 0)
                                continue;
                        if (!first)
                                first = g_strdup(m);
                        g_string_append_printf(all, "%s\n", m);
                        free(m);
                }
                if (d.n_dropped > 0)
                        g_string_append_printf(all, "... and %zu more problems\n", d.n_dropped);
                g_set_error(error, NM_CONNECTION_ERROR, NM_CONNECTION_ERROR_FAILED, "%s",
                            first ?: "invalid profile");
                if (ret_all)
                        *ret_all = g_string_free(g_steal_pointer(&all), FALSE);
                diag_done(&d);
                return FALSE;
        }
        diag_done(&d);
        if (r < 0) {
                g_set_error(error, NM_CONNECTION_ERROR, NM_CONNECTION_ERROR_FAILED, "%s: cannot read: %s",
                            filename, g_strerror(-r));
                return FALSE;
        }
        *ret = p;
        if (ret_all)
                *ret_all = NULL;
        return TRUE;
}
