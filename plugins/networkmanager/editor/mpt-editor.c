/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The mpt connection editor: one source, built twice, against GTK3 + libnma for
 * nm-connection-editor and against GTK4 + libnma-gtk4 for GNOME Settings. The widgets are built
 * in code; the few calls that differ between the two toolkits sit behind the helpers below.
 *
 * The editor shows a subset of the vpn.data keys (the profile key table's names) as widgets and
 * keeps every other key of the connection as it was. After each change it builds the vpn setting
 * the widgets describe and validates it with the same code as the service and `mptctl check`;
 * the first problem is shown under the widgets, and update_connection() fails with it, which
 * keeps Save disabled in both hosts. Every input widget has a stable widget name ("mpt-...")
 * and an accessible name, for tests and screen readers. */

#include <gtk/gtk.h>
#include <NetworkManager.h>
#include <nma-ui-utils.h>

#include "mpt-editor.h"
#include "mpt-nm-i18n.h"
#include "mpt-nm-profile.h"
#include "profile.h"
#include "parse-util.h"

#if GTK_CHECK_VERSION(4, 0, 0)
#define GTK4 1
#else
#define GTK4 0
#endif

/* ---- toolkit differences ---- */

static const char *entry_text(GtkWidget *e) {
#if GTK4
        return gtk_editable_get_text(GTK_EDITABLE(e));
#else
        return gtk_entry_get_text(GTK_ENTRY(e));
#endif
}

static void entry_set(GtkWidget *e, const char *text) {
#if GTK4
        gtk_editable_set_text(GTK_EDITABLE(e), text ?: "");
#else
        gtk_entry_set_text(GTK_ENTRY(e), text ?: "");
#endif
}

static gboolean check_active(GtkWidget *w) {
#if GTK4
        return gtk_check_button_get_active(GTK_CHECK_BUTTON(w));
#else
        return gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(w));
#endif
}

static void check_set(GtkWidget *w, gboolean active) {
#if GTK4
        gtk_check_button_set_active(GTK_CHECK_BUTTON(w), active);
#else
        gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(w), active);
#endif
}

static void box_add(GtkWidget *box, GtkWidget *child) {
#if GTK4
        gtk_box_append(GTK_BOX(box), child);
#else
        gtk_box_pack_start(GTK_BOX(box), child, FALSE, FALSE, 0);
#endif
}

static void set_child(GtkWidget *parent, GtkWidget *child) {
#if GTK4
        if (GTK_IS_FRAME(parent))
                gtk_frame_set_child(GTK_FRAME(parent), child);
        else
                gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(parent), child);
#else
        gtk_container_add(GTK_CONTAINER(parent), child);
#endif
}

static void entry_set_width(GtkWidget *e, int chars) {
#if GTK4
        gtk_editable_set_width_chars(GTK_EDITABLE(e), chars);
#else
        gtk_entry_set_width_chars(GTK_ENTRY(e), chars);
#endif
}

static void label_set_wrap(GtkWidget *l) {
#if GTK4
        gtk_label_set_wrap(GTK_LABEL(l), TRUE);
#else
        gtk_label_set_line_wrap(GTK_LABEL(l), TRUE);
#endif
}

/* A stable widget name and an accessible name (what AT-SPI clients such as the GUI tests see). */
static void name_widget(GtkWidget *w, const char *id, const char *label) {
        gtk_widget_set_name(w, id);
#if GTK4
        gtk_accessible_update_property(GTK_ACCESSIBLE(w), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
#else
        atk_object_set_name(gtk_widget_get_accessible(w), label);
#endif
}

/* ---- the editor object ---- */

/* A profile key's name (also its vpn.data name), by identity (profile.h). */
#define KEY(id) (conf_key(MPT_KEY_##id)->name)

typedef struct PathRow {
        GtkWidget *interface, *remote, *port, *weight, *backup, *local, *remove;
        /* This path's other vpn.data keys (Name, ReceiveWeight, ...), kept as they were. */
        GHashTable *other;
        /* Backup= was given explicitly (so "no" is written back, not dropped). */
        gboolean backup_set;
} PathRow;

typedef struct TunnelField {
        MptKeyId key; /* the profile key, also the vpn.data key */
        const char *id;
        const char *label;
        /* An example for a key without a default; NULL: the placeholder is the key's default, as
         * the key table has it (conf_key_default_text()). */
        const char *example;
        const char *tooltip;
} TunnelField;

/* The tunnel keys shown as entries, by page. */
static const TunnelField address_fields[] = {
        { MPT_KEY_TUNNEL_ADDRESS, "mpt-address", N_("Tunnel addresses"), "10.0.0.1/24 fd00::1/64",
          N_("Addresses of the tunnel interface, IPv4 and/or IPv6, with prefix lengths, separated by spaces") },
        { MPT_KEY_TUNNEL_PEER, "mpt-peer", N_("Peer addresses"), "10.0.0.2",
          N_("Tunnel address of the other end, at most one per family") },
        { MPT_KEY_TUNNEL_ROUTE, "mpt-route", N_("Routes"), NULL,
          N_("Networks routed into the tunnel, separated by spaces") },
};

static const TunnelField advanced_fields[] = {
        { MPT_KEY_TUNNEL_LOCAL_PORT, "mpt-local-port", N_("Local port"), NULL, N_("Local UDP port of every path") },
        { MPT_KEY_TUNNEL_REMOTE_PORT, "mpt-remote-port", N_("Remote port"), NULL, N_("UDP port of the other end") },
        { MPT_KEY_TUNNEL_MTU, "mpt-mtu", N_("MTU"), NULL, N_("MTU of the tunnel interface") },
        { MPT_KEY_TUNNEL_REORDER_WINDOW, "mpt-reorder-window", N_("Reorder window"), NULL,
          N_("Receive reorder window in packets; 0 turns reordering off") },
        { MPT_KEY_TUNNEL_REORDER_MAX_DELAY, "mpt-reorder-max-delay", N_("Reorder max delay"), NULL,
          N_("Longest time a packet waits for an earlier one") },
        { MPT_KEY_TUNNEL_POLICY, "mpt-policy", N_("Per-flow policy"), "proto udp dport 5060 lowest-latency",
          N_("Rules that choose how packets are sent, the first that matches decides; several separated by "
             "\";\" (Policy= in mpt.conf(5))") },
};

/* Path keys set on every path from the Advanced page (the model has them per path). */
static const TunnelField all_paths_fields[] = {
        { MPT_KEY_PATH_KEEPALIVE_INTERVAL, "mpt-keepalive", N_("Keepalive interval"), NULL,
          N_("How often keepalives are sent on each path; 0 turns them off") },
        { MPT_KEY_PATH_DEAD_TIME, "mpt-dead-time", N_("Dead time"), NULL,
          N_("A path without keepalives for this long is declared dead") },
};

#define N_ADDRESS G_N_ELEMENTS(address_fields)
#define N_ADVANCED G_N_ELEMENTS(advanced_fields)
#define N_ALL_PATHS G_N_ELEMENTS(all_paths_fields)

struct _MptEditor {
        GObject parent;

        GtkWidget *widget;
        GtkWidget *address[N_ADDRESS];
        GtkWidget *advanced[N_ADVANCED];
        GtkWidget *all_paths[N_ALL_PATHS];
        GtkWidget *paths_grid;
        GtkWidget *add_path;
        GPtrArray *rows; /* PathRow* */
        GtkWidget *mode;
        GtkWidget *private_key; /* secret PrivateKey (the handshake) */
        GtkWidget *public_key;  /* PublicKey: the other end's */
        GtkWidget *key;         /* secret Key (the pre-shared key alone) */
        GtkWidget *key_file;
        GtkWidget *error_label;

        /* The connection's vpn setting as it came in: keys the editor does not show. */
        NMSettingVpn *original;
        /* Per-path keys of the Advanced page that differed between paths: kept per path. */
        gboolean all_paths_mixed[N_ALL_PATHS];
        char *error;
        gboolean loading;
};

static void mpt_editor_interface_init(NMVpnEditorInterface *iface);

G_DEFINE_TYPE_EXTENDED(MptEditor, mpt_editor, G_TYPE_OBJECT, 0,
                       G_IMPLEMENT_INTERFACE(NM_TYPE_VPN_EDITOR, mpt_editor_interface_init))

static void path_row_free(PathRow *row) {
        if (!row)
                return;
        g_clear_pointer(&row->other, g_hash_table_unref);
        g_free(row);
}

static GtkWidget *new_entry(const char *id, const char *label, const char *placeholder, const char *tooltip) {
        GtkWidget *e = gtk_entry_new();

        if (id)
                name_widget(e, id, label);
        if (placeholder)
                gtk_entry_set_placeholder_text(GTK_ENTRY(e), placeholder);
        if (tooltip)
                gtk_widget_set_tooltip_text(e, tooltip);
        gtk_widget_set_hexpand(e, TRUE);
        return e;
}

static GtkWidget *new_label(const char *text, GtkWidget *mnemonic_for) {
        GtkWidget *l = gtk_label_new(text);

        gtk_label_set_xalign(GTK_LABEL(l), 0.0f);
        if (mnemonic_for)
                gtk_label_set_mnemonic_widget(GTK_LABEL(l), mnemonic_for);
        return l;
}

static GtkWidget *new_grid(void) {
        GtkWidget *g = gtk_grid_new();

        gtk_grid_set_row_spacing(GTK_GRID(g), 6);
        gtk_grid_set_column_spacing(GTK_GRID(g), 12);
        gtk_widget_set_margin_start(g, 12);
        gtk_widget_set_margin_end(g, 12);
        gtk_widget_set_margin_top(g, 12);
        gtk_widget_set_margin_bottom(g, 12);
        return g;
}

static GtkWidget *new_page(GtkWidget *notebook, const char *title, const char *id) {
        GtkWidget *g = new_grid();

        gtk_widget_set_name(g, id);
        gtk_notebook_append_page(GTK_NOTEBOOK(notebook), g, gtk_label_new(title));
        return g;
}

/* ---- widgets → vpn setting ---- */

static void add_item(NMSettingVpn *s, const char *key, const char *value) {
        g_autofree char *v = g_strstrip(g_strdup(value ?: ""));

        /* Empty means default: the key is left out. */
        if (*v)
                nm_setting_vpn_add_data_item(s, key, v);
}

/* A secret entry (with its storage menu) into s: the secret unless it is not to be saved, and its
 * flags when there is a key or the original had flags. */
static void write_secret(MptEditor *self, NMSettingVpn *s, GtkWidget *entry, const char *name) {
        NMSettingSecretFlags flags = nma_utils_menu_to_secret_flags(entry);
        g_autofree char *flags_item = g_strdup_printf("%s-flags", name);

        nm_setting_vpn_remove_secret(s, name);
        nm_setting_vpn_remove_data_item(s, flags_item);
        if (!(flags & (NM_SETTING_SECRET_FLAG_NOT_SAVED | NM_SETTING_SECRET_FLAG_NOT_REQUIRED))) {
                g_autofree char *key = g_strstrip(g_strdup(entry_text(entry)));
                if (*key)
                        nm_setting_vpn_add_secret(s, name, key);
        }
        /* Flags are only meaningful with a key, or when the original had them. */
        if (*entry_text(entry) || flags != NM_SETTING_SECRET_FLAG_NONE ||
            nm_setting_vpn_get_data_item(self->original, flags_item))
                nm_setting_set_secret_flags(NM_SETTING(s), name, flags, NULL);
}

/* Builds the vpn setting the widgets describe, on top of the original's other keys. */
static NMSettingVpn *editor_build_setting(MptEditor *self) {
        NMSettingVpn *s = NM_SETTING_VPN(nm_setting_duplicate(NM_SETTING(self->original)));
        g_autofree const char **keys = NULL;
        const char *v;

        g_object_set(s, NM_SETTING_VPN_SERVICE_TYPE, MPT_NM_DBUS_SERVICE, NULL);

        /* Drop everything the editor manages, then write the widgets' values. */
        keys = nm_setting_vpn_get_data_keys(s, NULL);
        for (size_t i = 0; keys && keys[i]; i++) {
                const char *k;
                int path;
                if (mpt_nm_item_parse(keys[i], &path, &k) && path >= 0)
                        nm_setting_vpn_remove_data_item(s, keys[i]);
        }
        for (size_t i = 0; i < N_ADDRESS; i++) {
                nm_setting_vpn_remove_data_item(s, conf_key(address_fields[i].key)->name);
                add_item(s, conf_key(address_fields[i].key)->name, entry_text(self->address[i]));
        }
        for (size_t i = 0; i < N_ADVANCED; i++) {
                nm_setting_vpn_remove_data_item(s, conf_key(advanced_fields[i].key)->name);
                add_item(s, conf_key(advanced_fields[i].key)->name, entry_text(self->advanced[i]));
        }

        for (guint i = 0; i < self->rows->len; i++) {
                PathRow *row = g_ptr_array_index(self->rows, i);
                GHashTableIter it;
                gpointer k, val;

                /* Keys kept from the original path first, then the widgets' keys win. */
                g_hash_table_iter_init(&it, row->other);
                while (g_hash_table_iter_next(&it, &k, &val)) {
                        g_autofree char *key = mpt_nm_item_name((int) i, k);
                        add_item(s, key, val);
                }

#define PATH_ITEM(name, value)                                                  \
                do {                                                            \
                        g_autofree char *key = mpt_nm_item_name((int) i, name);        \
                        nm_setting_vpn_remove_data_item(s, key);                \
                        add_item(s, key, value);                                \
                } while (0)
                PATH_ITEM(KEY(PATH_INTERFACE), entry_text(row->interface));
                PATH_ITEM(KEY(PATH_REMOTE), entry_text(row->remote));
                PATH_ITEM(KEY(PATH_REMOTE_PORT), entry_text(row->port));
                PATH_ITEM(KEY(PATH_WEIGHT), entry_text(row->weight));
                PATH_ITEM(KEY(PATH_LOCAL_ADDRESS), entry_text(row->local));
                if (check_active(row->backup))
                        PATH_ITEM(KEY(PATH_BACKUP), "yes");
                else if (row->backup_set)
                        PATH_ITEM(KEY(PATH_BACKUP), "no");
                for (size_t j = 0; j < N_ALL_PATHS; j++)
                        if (!self->all_paths_mixed[j])
                                PATH_ITEM(conf_key(all_paths_fields[j].key)->name, entry_text(self->all_paths[j]));
#undef PATH_ITEM
        }

        /* Security. Mode= is written only when it is not the default, so that profiles without
         * security settings stay valid for a service that does not know the key. */
        nm_setting_vpn_remove_data_item(s, KEY(TUNNEL_MODE));
        v = gtk_combo_box_get_active_id(GTK_COMBO_BOX(self->mode));
        if (v && (!g_str_equal(v, "secure") || nm_setting_vpn_get_data_item(self->original, KEY(TUNNEL_MODE))))
                add_item(s, KEY(TUNNEL_MODE), v);
        nm_setting_vpn_remove_data_item(s, KEY(TUNNEL_KEY_FILE));
        add_item(s, KEY(TUNNEL_KEY_FILE), entry_text(self->key_file));
        nm_setting_vpn_remove_data_item(s, KEY(TUNNEL_PUBLIC_KEY));
        {
                g_autofree char *pub = g_strstrip(g_strdup(entry_text(self->public_key)));
                add_item(s, KEY(TUNNEL_PUBLIC_KEY), pub);
        }
        write_secret(self, s, self->key, MPT_NM_SECRET_KEY);
        write_secret(self, s, self->private_key, MPT_NM_PRIVATE_KEY);
        return s;
}

static gboolean editor_check(MptEditor *self, NMSettingVpn **ret, GError **error) {
        g_autoptr(NMSettingVpn) s = editor_build_setting(self);

        if (!mpt_nm_validate(s, error))
                return FALSE;
        if (ret)
                *ret = g_steal_pointer(&s);
        return TRUE;
}

/* After every change: validate, show the first problem, tell the host. */
static void editor_changed(MptEditor *self) {
        g_autoptr(GError) error = NULL;

        if (self->loading)
                return;
        g_clear_pointer(&self->error, g_free);
        if (!editor_check(self, NULL, &error))
                self->error = g_strdup(error->message);
        gtk_label_set_text(GTK_LABEL(self->error_label), self->error ?: "");
        gtk_widget_set_visible(self->error_label, self->error != NULL);
        g_signal_emit_by_name(self, "changed");
}

static void on_changed(GtkWidget *w, gpointer user_data) {
        editor_changed(MPT_EDITOR(user_data));
}

/* ---- path rows ---- */

enum { COL_INTERFACE, COL_REMOTE, COL_PORT, COL_WEIGHT, COL_BACKUP, COL_LOCAL, COL_REMOVE };

/* Widget and accessible names carry the row number (from 1 in labels, from 0 in ids). */
static void row_name(PathRow *row, guint i) {
        static const struct {
                size_t offset;
                const char *id, *label;
        } cols[] = {
                { G_STRUCT_OFFSET(PathRow, interface), "interface", N_("interface") },
                { G_STRUCT_OFFSET(PathRow, remote), "remote", N_("remote address") },
                { G_STRUCT_OFFSET(PathRow, port), "port", N_("remote port") },
                { G_STRUCT_OFFSET(PathRow, weight), "weight", N_("weight") },
                { G_STRUCT_OFFSET(PathRow, backup), "backup", N_("backup") },
                { G_STRUCT_OFFSET(PathRow, local), "local", N_("local address") },
                { G_STRUCT_OFFSET(PathRow, remove), "remove", N_("remove") },
        };

        for (size_t c = 0; c < G_N_ELEMENTS(cols); c++) {
                GtkWidget *w = G_STRUCT_MEMBER(GtkWidget *, row, cols[c].offset);
                g_autofree char *id = g_strdup_printf("mpt-path-%u-%s", i, cols[c].id);
                g_autofree char *label = g_strdup_printf(_("Path %u %s"), i + 1, _(cols[c].label));
                name_widget(w, id, label);
        }
}

static void on_remove_path(GtkWidget *button, gpointer user_data) {
        MptEditor *self = MPT_EDITOR(user_data);
        PathRow *row = g_object_get_data(G_OBJECT(button), "mpt-row");
        guint idx;

        if (!g_ptr_array_find(self->rows, row, &idx))
                return;
        gtk_grid_remove_row(GTK_GRID(self->paths_grid), (int) idx + 1);
        g_ptr_array_remove_index(self->rows, idx);
        for (guint i = idx; i < self->rows->len; i++)
                row_name(g_ptr_array_index(self->rows, i), i);
        editor_changed(self);
}

static PathRow *editor_add_row(MptEditor *self) {
        PathRow *row = g_new0(PathRow, 1);
        int y = (int) self->rows->len + 1;

        row->other = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        row->interface = new_entry(NULL, NULL, "eth0", _("Network interface of the path"));
        row->remote = new_entry(NULL, NULL, "192.0.2.1", _("Address of the other end of this path"));
        row->port = new_entry(NULL, NULL, _("default"), _("UDP port of the other end of this path"));
        {
                const MptConfKey *k = conf_key(MPT_KEY_PATH_WEIGHT);
                g_autofree char *def = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64) k->def);
                g_autofree char *tip = g_strdup_printf(_("Share of the outgoing traffic (%u to %u)"), (unsigned) k->min,
                                                       (unsigned) k->max);
                row->weight = new_entry(NULL, NULL, def, tip);
        }
        row->local = new_entry(NULL, NULL, _("automatic"), _("Local address the path is bound to"));
        entry_set_width(row->interface, 8);
        entry_set_width(row->remote, 15);
        entry_set_width(row->local, 15);
        entry_set_width(row->port, 6);
        entry_set_width(row->weight, 6);
        gtk_widget_set_hexpand(row->interface, FALSE);
        gtk_widget_set_hexpand(row->port, FALSE);
        gtk_widget_set_hexpand(row->weight, FALSE);
        row->backup = gtk_check_button_new();
        gtk_widget_set_tooltip_text(row->backup, _("Carry traffic only while no normal path is up"));
        gtk_widget_set_halign(row->backup, GTK_ALIGN_CENTER);
        row->remove = gtk_button_new_with_label(_("Remove"));
        g_object_set_data(G_OBJECT(row->remove), "mpt-row", row);
        row_name(row, self->rows->len);

        gtk_grid_attach(GTK_GRID(self->paths_grid), row->interface, COL_INTERFACE, y, 1, 1);
        gtk_grid_attach(GTK_GRID(self->paths_grid), row->remote, COL_REMOTE, y, 1, 1);
        gtk_grid_attach(GTK_GRID(self->paths_grid), row->port, COL_PORT, y, 1, 1);
        gtk_grid_attach(GTK_GRID(self->paths_grid), row->weight, COL_WEIGHT, y, 1, 1);
        gtk_grid_attach(GTK_GRID(self->paths_grid), row->backup, COL_BACKUP, y, 1, 1);
        gtk_grid_attach(GTK_GRID(self->paths_grid), row->local, COL_LOCAL, y, 1, 1);
        gtk_grid_attach(GTK_GRID(self->paths_grid), row->remove, COL_REMOVE, y, 1, 1);

        g_signal_connect(row->interface, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(row->remote, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(row->port, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(row->weight, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(row->local, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(row->backup, "toggled", G_CALLBACK(on_changed), self);
        g_signal_connect(row->remove, "clicked", G_CALLBACK(on_remove_path), self);

        g_ptr_array_add(self->rows, row);
#if !GTK4
        gtk_widget_show_all(self->paths_grid);
#endif
        return row;
}

static void on_add_path(GtkWidget *button, gpointer user_data) {
        MptEditor *self = MPT_EDITOR(user_data);

        editor_add_row(self);
        editor_changed(self);
}

/* ---- vpn setting → widgets ---- */

static void editor_load(MptEditor *self) {
        NMSettingVpn *s = self->original;
        g_autofree const char **keys = NULL;
        int row_of[MPT_PATHS_MAX] = {}; /* path number -> row, or -1 */
        NMSettingSecretFlags flags = NM_SETTING_SECRET_FLAG_NONE;
        const char *mode;

        for (size_t i = 0; i < N_ADDRESS; i++)
                entry_set(self->address[i], nm_setting_vpn_get_data_item(s, conf_key(address_fields[i].key)->name));
        for (size_t i = 0; i < N_ADVANCED; i++)
                entry_set(self->advanced[i], nm_setting_vpn_get_data_item(s, conf_key(advanced_fields[i].key)->name));

        /* Paths: every item that names a path, one row per path number in increasing order
         * (the numbers may have gaps; rows are numbered from 0 again on save). */
        keys = nm_setting_vpn_get_data_keys(s, NULL);
        for (size_t i = 0; keys && keys[i]; i++) {
                const char *name;
                int path;
                if (mpt_nm_item_parse(keys[i], &path, &name) && path >= 0 && path < (int) G_N_ELEMENTS(row_of))
                        row_of[path] = 1;
        }
        for (size_t i = 0; i < G_N_ELEMENTS(row_of); i++)
                if (row_of[i]) {
                        row_of[i] = (int) self->rows->len;
                        editor_add_row(self);
                } else
                        row_of[i] = -1;
        for (size_t i = 0; keys && keys[i]; i++) {
                const char *value = nm_setting_vpn_get_data_item(s, keys[i]);
                const char *name;
                PathRow *row;
                int path;

                if (!mpt_nm_item_parse(keys[i], &path, &name) || path < 0 || path >= (int) G_N_ELEMENTS(row_of))
                        continue;
                row = g_ptr_array_index(self->rows, row_of[path]);
                if (g_str_equal(name, KEY(PATH_INTERFACE)))
                        entry_set(row->interface, value);
                else if (g_str_equal(name, KEY(PATH_REMOTE)))
                        entry_set(row->remote, value);
                else if (g_str_equal(name, KEY(PATH_REMOTE_PORT)))
                        entry_set(row->port, value);
                else if (g_str_equal(name, KEY(PATH_WEIGHT)))
                        entry_set(row->weight, value);
                else if (g_str_equal(name, KEY(PATH_LOCAL_ADDRESS)))
                        entry_set(row->local, value);
                else if (g_str_equal(name, KEY(PATH_BACKUP)) && parse_boolean(value) >= 0) {
                        check_set(row->backup, parse_boolean(value) > 0);
                        row->backup_set = TRUE;
                } else
                        /* Other keys, and a Backup= the check box cannot show, stay as they are. */
                        g_hash_table_insert(row->other, g_strdup(name), g_strdup(value));
        }
        /* Keepalive and dead time: one value on the Advanced page when all paths agree;
         * otherwise the entry is insensitive and each path keeps its own. */
        for (size_t j = 0; j < N_ALL_PATHS; j++) {
                const char *common = NULL;
                gboolean mixed = FALSE;

                for (guint i = 0; i < self->rows->len; i++) {
                        PathRow *row = g_ptr_array_index(self->rows, i);
                        const char *v = g_hash_table_lookup(row->other, conf_key(all_paths_fields[j].key)->name);
                        if (i == 0)
                                common = v;
                        else if (g_strcmp0(common, v) != 0)
                                mixed = TRUE;
                }
                self->all_paths_mixed[j] = mixed;
                if (mixed) {
                        gtk_entry_set_placeholder_text(GTK_ENTRY(self->all_paths[j]), _("differs per path"));
                        gtk_widget_set_sensitive(self->all_paths[j], FALSE);
                        continue;
                }
                entry_set(self->all_paths[j], common);
                for (guint i = 0; i < self->rows->len; i++)
                        g_hash_table_remove(((PathRow *) g_ptr_array_index(self->rows, i))->other,
                                            conf_key(all_paths_fields[j].key)->name);
        }

        mode = nm_setting_vpn_get_data_item(s, KEY(TUNNEL_MODE));
        if (!mode || !gtk_combo_box_set_active_id(GTK_COMBO_BOX(self->mode), mode))
                gtk_combo_box_set_active_id(GTK_COMBO_BOX(self->mode), "secure");
        entry_set(self->key_file, nm_setting_vpn_get_data_item(s, KEY(TUNNEL_KEY_FILE)));
        entry_set(self->public_key, nm_setting_vpn_get_data_item(s, KEY(TUNNEL_PUBLIC_KEY)));
        entry_set(self->key, nm_setting_vpn_get_secret(s, MPT_NM_SECRET_KEY));
        nm_setting_get_secret_flags(NM_SETTING(s), MPT_NM_SECRET_KEY, &flags, NULL);
        /* No setting: libnma would write the flags into it at once; update_connection() sets them. */
        nma_utils_setup_password_storage(self->key, flags, NULL, NULL, TRUE, FALSE);
        entry_set(self->private_key, nm_setting_vpn_get_secret(s, MPT_NM_PRIVATE_KEY));
        flags = NM_SETTING_SECRET_FLAG_NONE;
        nm_setting_get_secret_flags(NM_SETTING(s), MPT_NM_PRIVATE_KEY, &flags, NULL);
        nma_utils_setup_password_storage(self->private_key, flags, NULL, NULL, TRUE, FALSE);
}

/* ---- construction ---- */

static GtkWidget *field_row(GtkWidget *grid, int y, const TunnelField *f) {
        g_autofree char *def = NULL;
        GtkWidget *e;

        /* The default as the key table has it ("none" for a key without one). */
        if (!f->example && conf_key_default_text(conf_key(f->key), &def) < 0)
                def = NULL;
        e = new_entry(f->id, _(f->label), f->example ?: (def && *def ? def : _("none")), _(f->tooltip));

        gtk_grid_attach(GTK_GRID(grid), new_label(_(f->label), e), 0, y, 1, 1);
        gtk_grid_attach(GTK_GRID(grid), e, 1, y, 1, 1);
        return e;
}

static void editor_build(MptEditor *self) {
        static const char *const headers[] = { N_("Interface"), N_("Remote"), N_("Port"), N_("Weight"), N_("Backup"),
                                               N_("Local address") };
        GtkWidget *box, *notebook, *page, *scrolled, *paths_box;
        int y;

        box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        gtk_widget_set_name(box, "mpt-editor");
        self->widget = g_object_ref_sink(box);
        /* The problem, if any, on top: visible whatever page is shown and however the host
         * scrolls the editor. */
        self->error_label = gtk_label_new(NULL);
        gtk_widget_set_name(self->error_label, "mpt-error");
        label_set_wrap(self->error_label);
        gtk_label_set_xalign(GTK_LABEL(self->error_label), 0.0f);
        gtk_widget_set_margin_start(self->error_label, 6);
        gtk_widget_set_margin_end(self->error_label, 6);
        box_add(box, self->error_label);
        notebook = gtk_notebook_new();
        gtk_widget_set_name(notebook, "mpt-notebook");
        box_add(box, notebook);

        /* Tunnel and paths on the first page: what every connection needs. */
        page = new_page(notebook, _("Tunnel"), "mpt-page-tunnel");
        for (y = 0; y < (int) N_ADDRESS; y++)
                self->address[y] = field_row(page, y, &address_fields[y]);

        paths_box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
        gtk_grid_attach(GTK_GRID(page), new_label(_("Paths"), NULL), 0, y++, 2, 1);
        self->paths_grid = gtk_grid_new();
        gtk_widget_set_name(self->paths_grid, "mpt-paths");
        gtk_grid_set_row_spacing(GTK_GRID(self->paths_grid), 6);
        gtk_grid_set_column_spacing(GTK_GRID(self->paths_grid), 6);
        for (size_t c = 0; c < G_N_ELEMENTS(headers); c++)
                gtk_grid_attach(GTK_GRID(self->paths_grid), new_label(_(headers[c]), NULL), (int) c, 0, 1, 1);
        scrolled = gtk_scrolled_window_new(
#if !GTK4
                NULL, NULL
#endif
        );
        /* All columns always visible: the dialog grows sideways instead of scrolling. */
        gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(scrolled), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
        gtk_scrolled_window_set_min_content_height(GTK_SCROLLED_WINDOW(scrolled), 120);
        gtk_scrolled_window_set_propagate_natural_height(GTK_SCROLLED_WINDOW(scrolled), TRUE);
        gtk_scrolled_window_set_propagate_natural_width(GTK_SCROLLED_WINDOW(scrolled), TRUE);
        set_child(scrolled, self->paths_grid);
        box_add(paths_box, scrolled);
        self->add_path = gtk_button_new_with_label(_("Add path"));
        name_widget(self->add_path, "mpt-add-path", _("Add path"));
        gtk_widget_set_halign(self->add_path, GTK_ALIGN_START);
        box_add(paths_box, self->add_path);
        gtk_widget_set_hexpand(paths_box, TRUE);
        gtk_grid_attach(GTK_GRID(page), paths_box, 0, y++, 2, 1);
        g_signal_connect(self->add_path, "clicked", G_CALLBACK(on_add_path), self);

        /* Security. */
        page = new_page(notebook, _("Security"), "mpt-page-security");
        self->mode = gtk_combo_box_text_new();
        gtk_combo_box_text_append(GTK_COMBO_BOX_TEXT(self->mode), "secure", _("Secure (authenticated, encrypted)"));
        gtk_combo_box_text_append(GTK_COMBO_BOX_TEXT(self->mode), "compat", _("Compatible (original MPT, no protection)"));
        name_widget(self->mode, "mpt-mode", _("Mode"));
        gtk_grid_attach(GTK_GRID(page), new_label(_("Mode"), self->mode), 0, 0, 1, 1);
        gtk_grid_attach(GTK_GRID(page), self->mode, 1, 0, 1, 1);
        /* Either a key pair (the handshake: this end's private key, the other end's public key) or
         * a pre-shared key alone; mpt_nm_validate() says what is wrong with a mix. */
        self->private_key = new_entry("mpt-private-key", _("Private key"), _("base64, from mptctl genkey"),
                                      _("This computer's private key (mptctl genkey). With the other end's "
                                        "public key the two ends run a handshake that gives every session keys "
                                        "of its own."));
        gtk_entry_set_visibility(GTK_ENTRY(self->private_key), FALSE);
        gtk_grid_attach(GTK_GRID(page), new_label(_("Private key"), self->private_key), 0, 1, 1, 1);
        gtk_grid_attach(GTK_GRID(page), self->private_key, 1, 1, 1, 1);
        self->public_key = new_entry("mpt-public-key", _("Other end's public key"), _("base64, from mptctl pubkey"),
                                     _("The public key of the other end (mptctl pubkey there)"));
        gtk_grid_attach(GTK_GRID(page), new_label(_("Other end's public key"), self->public_key), 0, 2, 1, 1);
        gtk_grid_attach(GTK_GRID(page), self->public_key, 1, 2, 1, 1);
        self->key = new_entry("mpt-key", _("Pre-shared key"), _("base64, 32 bytes"),
                              _("Pre-shared key of the tunnel (32 bytes, base64), instead of a key pair"));
        gtk_entry_set_visibility(GTK_ENTRY(self->key), FALSE);
        gtk_grid_attach(GTK_GRID(page), new_label(_("Pre-shared key"), self->key), 0, 3, 1, 1);
        gtk_grid_attach(GTK_GRID(page), self->key, 1, 3, 1, 1);
        self->key_file = new_entry("mpt-key-file", _("Key file"), _("none"), _("File that holds the pre-shared key"));
        gtk_grid_attach(GTK_GRID(page), new_label(_("Key file"), self->key_file), 0, 4, 1, 1);
        gtk_grid_attach(GTK_GRID(page), self->key_file, 1, 4, 1, 1);

        /* Advanced. */
        page = new_page(notebook, _("Advanced"), "mpt-page-advanced");
        for (y = 0; y < (int) N_ADVANCED; y++)
                self->advanced[y] = field_row(page, y, &advanced_fields[y]);
        for (size_t j = 0; j < N_ALL_PATHS; j++, y++)
                self->all_paths[j] = field_row(page, y, &all_paths_fields[j]);

}

static void editor_connect_signals(MptEditor *self) {
        for (size_t i = 0; i < N_ADDRESS; i++)
                g_signal_connect(self->address[i], "changed", G_CALLBACK(on_changed), self);
        for (size_t i = 0; i < N_ADVANCED; i++)
                g_signal_connect(self->advanced[i], "changed", G_CALLBACK(on_changed), self);
        for (size_t i = 0; i < N_ALL_PATHS; i++)
                g_signal_connect(self->all_paths[i], "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(self->mode, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(self->private_key, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(self->public_key, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(self->key, "changed", G_CALLBACK(on_changed), self);
        g_signal_connect(self->key_file, "changed", G_CALLBACK(on_changed), self);
}

/* ---- NMVpnEditor ---- */

static GObject *get_widget(NMVpnEditor *editor) {
        return G_OBJECT(MPT_EDITOR(editor)->widget);
}

static gboolean update_connection(NMVpnEditor *editor, NMConnection *connection, GError **error) {
        MptEditor *self = MPT_EDITOR(editor);
        NMSettingVpn *s = NULL;
        g_autoptr(GError) e = NULL;

        if (!editor_check(self, &s, &e)) {
                g_set_error_literal(error, NM_CONNECTION_ERROR, NM_CONNECTION_ERROR_INVALID_PROPERTY, e->message);
                return FALSE;
        }
        nm_connection_add_setting(connection, NM_SETTING(s)); /* takes s, replaces the old one */
        return TRUE;
}

static void mpt_editor_interface_init(NMVpnEditorInterface *iface) {
        iface->get_widget = get_widget;
        iface->update_connection = update_connection;
}

static void mpt_editor_dispose(GObject *object) {
        MptEditor *self = MPT_EDITOR(object);

        g_clear_pointer(&self->rows, g_ptr_array_unref);
        g_clear_object(&self->widget);
        g_clear_object(&self->original);
        g_clear_pointer(&self->error, g_free);
        G_OBJECT_CLASS(mpt_editor_parent_class)->dispose(object);
}

static void mpt_editor_init(MptEditor *self) {
        self->rows = g_ptr_array_new_with_free_func((GDestroyNotify) path_row_free);
}

static void mpt_editor_class_init(MptEditorClass *klass) {
        G_OBJECT_CLASS(klass)->dispose = mpt_editor_dispose;
}

const char *mpt_editor_get_error(MptEditor *self) {
        return self->error;
}

NMVpnEditor *mpt_editor_new(NMConnection *connection, GError **error) {
        g_autoptr(MptEditor) self = g_object_new(MPT_TYPE_EDITOR, NULL);
        NMSettingVpn *s = connection ? nm_connection_get_setting_vpn(connection) : NULL;

        self->original = s ? NM_SETTING_VPN(nm_setting_duplicate(NM_SETTING(s)))
                           : NM_SETTING_VPN(nm_setting_vpn_new());
        self->loading = TRUE;
        editor_build(self);
        editor_load(self);
        /* A new connection starts with one empty path row to fill in. */
        if (self->rows->len == 0)
                editor_add_row(self);
        editor_connect_signals(self);
        self->loading = FALSE;
        editor_changed(self);
#if !GTK4
        gtk_widget_show_all(self->widget);
#endif
        gtk_widget_set_visible(self->error_label, self->error != NULL);
        return NM_VPN_EDITOR(g_steal_pointer(&self));
}

G_MODULE_EXPORT NMVpnEditor *nm_vpn_editor_factory_mpt(NMVpnEditorPlugin *plugin, NMConnection *connection,
                                                       GError **error);

G_MODULE_EXPORT NMVpnEditor *nm_vpn_editor_factory_mpt(NMVpnEditorPlugin *plugin, NMConnection *connection,
                                                       GError **error) {
        g_return_val_if_fail(!error || !*error, NULL);
        mpt_nm_i18n_init();
        return mpt_editor_new(connection, error);
}
