/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libnm-vpn-plugin-mpt.so: the GTK-free NMVpnEditorPlugin that libnm clients (nmcli,
 * nm-connection-editor, GNOME Settings) load through the .name file's [libnm] plugin=.
 *
 * Import reads a native profile (mpt.conf(5)) with the project's parser (problems as
 * FILE:LINE: message) and turns it into vpn.data/vpn.secrets; export writes the profile text
 * that mptd reads. get_editor() loads the GTK editor from the directory of this .so: the GTK4
 * build (libnm-gtk4-vpn-plugin-mpt-editor.so) when the hosting process runs GTK4, else the GTK3
 * one (libnm-vpn-plugin-mpt-editor.so); both export nm_vpn_editor_factory_mpt(). */

#include <dlfcn.h>
#include <errno.h>

#include "mpt-nm-i18n.h"
#include "mpt-nm-profile.h"

#include <gmodule.h>

#define EDITOR_GTK3 "libnm-vpn-plugin-mpt-editor.so"
#define EDITOR_GTK4 "libnm-gtk4-vpn-plugin-mpt-editor.so"
#define EDITOR_FACTORY "nm_vpn_editor_factory_mpt"

typedef NMVpnEditor *(*EditorFactory)(NMVpnEditorPlugin *plugin, NMConnection *connection, GError **error);

typedef struct MptEditorPlugin {
        GObject parent;
} MptEditorPlugin;

typedef struct MptEditorPluginClass {
        GObjectClass parent;
} MptEditorPluginClass;

static void editor_plugin_iface_init(NMVpnEditorPluginInterface *iface);
GType mpt_editor_plugin_get_type(void);

G_DEFINE_TYPE_WITH_CODE(MptEditorPlugin, mpt_editor_plugin, G_TYPE_OBJECT,
                        G_IMPLEMENT_INTERFACE(NM_TYPE_VPN_EDITOR_PLUGIN, editor_plugin_iface_init))

enum {
        PROP_0,
        PROP_NAME,
        PROP_DESC,
        PROP_SERVICE,
};

static guint32 get_capabilities(NMVpnEditorPlugin *plugin) {
        return NM_VPN_EDITOR_PLUGIN_CAPABILITY_IMPORT | NM_VPN_EDITOR_PLUGIN_CAPABILITY_EXPORT |
               NM_VPN_EDITOR_PLUGIN_CAPABILITY_IPV6;
}

/* The directory this .so was loaded from. */
static char *module_dir(void) {
        Dl_info info;

        if (dladdr((void *) module_dir, &info) == 0 || !info.dli_fname)
                return NULL;
        return g_path_get_dirname(info.dli_fname);
}

static gboolean process_runs_gtk3(void) {
        GModule *self = g_module_open(NULL, 0);
        gpointer sym = NULL;
        gboolean r;

        /* gtk_container_add() exists in GTK3 and is gone in GTK4. */
        r = self && g_module_symbol(self, "gtk_container_add", &sym) && sym;
        if (self)
                g_module_close(self);
        return r;
}

static NMVpnEditor *get_editor(NMVpnEditorPlugin *plugin, NMConnection *connection, GError **error) {
        static GModule *modules[2]; /* loaded once, never unloaded (GTypes live in them) */
        const gboolean gtk3 = process_runs_gtk3();
        g_autofree char *dir = module_dir(), *path = NULL;
        GModule **module = &modules[gtk3 ? 0 : 1];
        EditorFactory factory = NULL;

        if (!*module) {
                /* The build tree keeps the editors in another directory than this .so. */
                if (g_getenv("MPT_NM_EDITOR_DIR")) {
                        g_free(dir);
                        dir = g_strdup(g_getenv("MPT_NM_EDITOR_DIR"));
                }
                if (!dir) {
                        g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_FAILED,
                                            "cannot find the directory of the mpt VPN plugin");
                        return NULL;
                }
                path = g_build_filename(dir, gtk3 ? EDITOR_GTK3 : EDITOR_GTK4, NULL);
                *module = g_module_open(path, G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
                if (!*module) {
                        g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_FAILED,
                                    "cannot load the mpt editor %s: %s", path, g_module_error());
                        return NULL;
                }
        }
        if (!g_module_symbol(*module, EDITOR_FACTORY, (gpointer *) &factory) || !factory) {
                g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_FAILED,
                            "the mpt editor %s has no %s()", g_module_name(*module), EDITOR_FACTORY);
                return NULL;
        }
        return factory(plugin, connection, error);
}

static NMConnection *import_from_file(NMVpnEditorPlugin *plugin, const char *path, GError **error) {
        g_autoptr(MptProfile) profile = NULL;
        g_autoptr(NMConnection) connection = NULL;
        g_autofree char *all = NULL;
        NMSettingVpn *s;

        if (!mpt_nm_profile_from_file(path, &profile, &all, error)) {
                /* nmcli shows the message: all the problems, not only the first. */
                if (all && error && *error) {
                        g_strchomp(all);
                        g_free((*error)->message);
                        (*error)->message = g_steal_pointer(&all);
                }
                return NULL;
        }
        connection = nm_simple_connection_new();
        nm_connection_add_setting(connection,
                                  g_object_new(NM_TYPE_SETTING_CONNECTION,
                                               NM_SETTING_CONNECTION_ID, mpt_nm_profile_get_name(profile),
                                               NM_SETTING_CONNECTION_TYPE, NM_SETTING_VPN_SETTING_NAME,
                                               NULL));
        s = NM_SETTING_VPN(nm_setting_vpn_new());
        nm_connection_add_setting(connection, NM_SETTING(s));
        if (!mpt_nm_setting_from_profile(profile, s, error))
                return NULL;
        return g_steal_pointer(&connection);
}

static gboolean export_to_file(NMVpnEditorPlugin *plugin, const char *path, NMConnection *connection, GError **error) {
        NMSettingVpn *s = nm_connection_get_setting_vpn(connection);
        g_autoptr(NMConnection) copy = NULL;
        g_autoptr(MptProfile) profile = NULL;
        g_autofree char *text = NULL;

        if (!s) {
                g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                                    "the connection has no VPN setting");
                return FALSE;
        }
        /* A connection from NetworkManager comes without its secrets; a file for mptd needs the
         * key, so ask for it (root, or the owner of an agent-owned key, gets it). */
        if (NM_IS_REMOTE_CONNECTION(connection) && !nm_setting_vpn_get_secret(s, mpt_nm_secret_name(s))) {
                g_autoptr(GVariant) secrets = NULL;
                g_autoptr(GError) local = NULL;

                G_GNUC_BEGIN_IGNORE_DEPRECATIONS
                secrets = nm_remote_connection_get_secrets(NM_REMOTE_CONNECTION(connection),
                                                           NM_SETTING_VPN_SETTING_NAME, NULL, &local);
                G_GNUC_END_IGNORE_DEPRECATIONS
                if (secrets) {
                        copy = nm_simple_connection_new_clone(connection);
                        if (nm_connection_update_secrets(copy, NM_SETTING_VPN_SETTING_NAME, secrets, NULL))
                                s = nm_connection_get_setting_vpn(copy);
                }
        }
        if (!mpt_nm_profile_from_setting(s, &profile, error))
                return FALSE;
        if (mpt_nm_profile_lacks_key(profile)) {
                g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                                    "the connection's secret key (vpn.secrets Key or PrivateKey) is not "
                                    "available to this user, and mptd needs it in the file: export as root, "
                                    "or store the key in the connection");
                return FALSE;
        }
        text = mpt_nm_profile_to_text(profile, error);
        if (!text)
                return FALSE;
        /* It may hold the pre-shared key. */
        if (!g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600, error))
                return FALSE;
        return TRUE;
}

static char *get_suggested_filename(NMVpnEditorPlugin *plugin, NMConnection *connection) {
        const char *id = nm_connection_get_id(connection);
        g_autofree char *name = g_strdup(id && *id ? id : "mpt");

        /* mptd takes an argument ending in ".conf" as a file name. */
        g_strdelimit(name, "/", '_');
        return g_strdup_printf("%s.conf", name);
}

static void get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
        switch (prop_id) {
        case PROP_NAME:
                g_value_set_string(value, _("Multipath tunnel (mpt)"));
                break;
        case PROP_DESC:
                g_value_set_string(value, _("One tunnel over several network paths at once (GRE-in-UDP)."));
                break;
        case PROP_SERVICE:
                g_value_set_string(value, MPT_NM_DBUS_SERVICE);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void mpt_editor_plugin_init(MptEditorPlugin *self) {
}

static void editor_plugin_iface_init(NMVpnEditorPluginInterface *iface) {
        iface->get_editor = get_editor;
        iface->get_capabilities = get_capabilities;
        iface->import_from_file = import_from_file;
        iface->export_to_file = export_to_file;
        iface->get_suggested_filename = get_suggested_filename;
}

static void mpt_editor_plugin_class_init(MptEditorPluginClass *klass) {
        GObjectClass *object_class = G_OBJECT_CLASS(klass);

        object_class->get_property = get_property;
        g_object_class_override_property(object_class, PROP_NAME, NM_VPN_EDITOR_PLUGIN_NAME);
        g_object_class_override_property(object_class, PROP_DESC, NM_VPN_EDITOR_PLUGIN_DESCRIPTION);
        g_object_class_override_property(object_class, PROP_SERVICE, NM_VPN_EDITOR_PLUGIN_SERVICE);
}

G_MODULE_EXPORT NMVpnEditorPlugin *nm_vpn_editor_plugin_factory(GError **error);

G_MODULE_EXPORT NMVpnEditorPlugin *nm_vpn_editor_plugin_factory(GError **error) {
        g_return_val_if_fail(!error || !*error, NULL);
        mpt_nm_i18n_init();
        return g_object_new(mpt_editor_plugin_get_type(), NULL);
}
