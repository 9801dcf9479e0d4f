/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* nm-mpt-auth-dialog: asks the user for the pre-shared key of an mpt connection on behalf of a
 * NetworkManager secret agent (nmcli --ask, GNOME Shell, nm-applet).
 *
 *   nm-mpt-auth-dialog -u UUID -n NAME -s SERVICE [-i] [-r] [-t HINT]... [--external-ui-mode]
 *
 * stdin: the connection's vpn.data and vpn.secrets as DATA_KEY=/DATA_VAL=/SECRET_KEY=/SECRET_VAL=
 * lines up to DONE (nm_vpn_service_plugin_read_vpn_details()), then QUIT when the agent is done.
 *
 * --external-ui-mode: the agent asks the user itself; we print what to ask, as a key file
 *   ([VPN Plugin UI] Version/Title/Description, then one group per secret with Value, Label,
 *   IsSecret, ShouldAsk) and exit. nmcli prints the Description and prompts for every secret with
 *   ShouldAsk=true; GNOME Shell shows a dialog.
 * Otherwise: we ask (a GTK dialog when built with GTK and -i is given; Connect only with a key of
 *   the right form), print "Key\nVALUE\n\n\n" and wait for QUIT. Cancel: exit status 1 and no
 *   output (the agent reports the request as canceled). Without -i the stored key, if any, is
 *   returned as is.
 * -r (the key was refused) and a hint "Key" (the service asks for it) ask even when a key was
 *   given; a hint "x-vpn-message:TEXT" is the service's message, shown instead of ours. Without a
 *   "Key" hint it is the service refusing the connection (for a reason only it can see, such as
 *   a file named in a user's connection or a tunnel name of the system's): a problem, as below.
 *
 * The key is needed in secure mode (the default) unless KeyFile= names a file; Key-flags 4 (not
 * required) also means no prompt. When vpn.data itself is broken no key helps: the problems go to
 * stderr (which the agent shares: nmcli prints them) and to the Description, and nothing is asked. */

#include <errno.h>
#include <stdio.h>
#include <locale.h>
#include <string.h>
#include <unistd.h>

#include "mpt-nm-i18n.h"
#include "mpt-nm-profile.h"

#include <glib.h>
#ifdef MPT_AUTH_DIALOG_GTK
#include <gtk/gtk.h>
#endif

/* The secret asked for: the pre-shared key (Key), or with the handshake this end's private key. */
#define KEY_LABEL(r) (g_str_equal((r)->secret, MPT_NM_PRIVATE_KEY) ? _("Private key") : _("Pre-shared key"))
#define UI_GROUP "VPN Plugin UI"
#define VPN_MESSAGE_HINT "x-vpn-message:"

typedef struct Request {
        const char *name;
        const char *secret;        /* MPT_NM_SECRET_KEY or MPT_NM_PRIVATE_KEY (mpt_nm_secret_name()) */
        NMSettingVpn *setting;
        const char *existing;      /* the key we were given, or NULL */
        char **problems;           /* of vpn.data, or NULL */
        gboolean need_key;
        const char *message;       /* from the service (x-vpn-message: hint), or NULL */
} Request;

static void add_item(gpointer key, gpointer value, gpointer data) {
        nm_setting_vpn_add_data_item(data, key, value);
}

static void add_secret(gpointer key, gpointer value, gpointer data) {
        nm_setting_vpn_add_secret(data, key, value);
}

/* Whether mptd will need the key from NetworkManager: as the service decides (NeedSecrets). */
static gboolean needs_key(NMSettingVpn *s, GHashTable *data) {
        NMSettingSecretFlags flags = NM_SETTING_SECRET_FLAG_NONE;
        g_autoptr(MptProfile) p = NULL;
        g_autoptr(NMSettingVpn) copy = NULL;

        (void) nm_vpn_service_plugin_get_secret_flags(data, mpt_nm_secret_name(s), &flags);
        if (flags & NM_SETTING_SECRET_FLAG_NOT_REQUIRED)
                return FALSE;
        /* Without the key we were given: does the profile still need one? */
        copy = NM_SETTING_VPN(nm_setting_duplicate(NM_SETTING(s)));
        nm_setting_vpn_remove_secret(copy, mpt_nm_secret_name(s));
        if (!mpt_nm_profile_from_setting(copy, &p, NULL))
                return FALSE;
        return mpt_nm_profile_lacks_key(p);
}

static char *description(const Request *r) {
        if (r->problems)
                return g_strdup_printf(_("The mpt connection '%s' cannot be activated: %s"), r->name, r->problems[0]);
        if (r->message)
                return g_strdup(r->message);
        if (g_str_equal(r->secret, MPT_NM_PRIVATE_KEY))
                return g_strdup_printf(_("The mpt connection '%s' needs this computer's private key (secure mode "
                                         "with a handshake): the key from `mptctl genkey` whose public key the "
                                         "other end has."),
                                       r->name);
        return g_strdup_printf(_("The mpt connection '%s' needs its pre-shared key (secure mode): the key "
                                 "from `mptctl genkey` that the other end uses."),
                               r->name);
}

static int external_ui(const Request *r, gboolean should_ask) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autofree char *title = g_strdup_printf(_("Authenticate VPN %s"), r->name);
        g_autofree char *desc = description(r);
        g_autofree char *text = NULL;

        g_key_file_set_integer(kf, UI_GROUP, "Version", 2);
        g_key_file_set_string(kf, UI_GROUP, "Description", desc);
        g_key_file_set_string(kf, UI_GROUP, "Title", title);
        if (r->need_key) {
                g_key_file_set_string(kf, r->secret, "Value", r->existing ?: "");
                g_key_file_set_string(kf, r->secret, "Label", KEY_LABEL(r));
                g_key_file_set_boolean(kf, r->secret, "IsSecret", TRUE);
                g_key_file_set_boolean(kf, r->secret, "ShouldAsk", should_ask);
        }
        text = g_key_file_to_data(kf, NULL, NULL);
        fputs(text, stdout);
        return fflush(stdout) == 0 ? 0 : 1;
}

/* The agent closes our stdin or sends QUIT when it has read the secrets. */
static void wait_for_quit(void) {
        char line[128];

        while (fgets(line, sizeof line, stdin))
                if (strncmp(line, "QUIT", 4) == 0)
                        break;
}

#ifdef MPT_AUTH_DIALOG_GTK
typedef struct Dialog {
        const Request *request;
        GtkWidget *dialog, *entry, *problem;
} Dialog;

/* The key as it will be returned: without the blanks a paste may bring along. */
static char *entry_key(GtkWidget *entry) {
        return g_strstrip(g_strdup(gtk_entry_get_text(GTK_ENTRY(entry))));
}

/* Connect only with a key of the right form; what is wrong with it is shown under the entry. */
static void on_key_changed(GtkEditable *editable, gpointer data) {
        Dialog *d = data;
        g_autoptr(NMSettingVpn) copy = NM_SETTING_VPN(nm_setting_duplicate(NM_SETTING(d->request->setting)));
        g_autoptr(GError) error = NULL;
        char *key = entry_key(GTK_WIDGET(editable));
        gboolean ok = FALSE;

        if (*key) {
                nm_setting_vpn_add_secret(copy, d->request->secret, key);
                ok = mpt_nm_validate(copy, &error);
        }
        explicit_bzero(key, strlen(key));
        g_free(key);
        gtk_label_set_text(GTK_LABEL(d->problem), error ? error->message : "");
        gtk_widget_set_visible(d->problem, error != NULL);
        gtk_dialog_set_response_sensitive(GTK_DIALOG(d->dialog), GTK_RESPONSE_OK, ok);
}

static char *ask_gtk(const Request *r, gboolean retry) {
        GtkWidget *area, *label;
        g_autofree char *desc = description(r);
        g_autofree char *title = g_strdup_printf(_("Authenticate VPN %s"), r->name);
        Dialog d = { .request = r };
        char *key = NULL;

        d.dialog = gtk_dialog_new_with_buttons(title, NULL, GTK_DIALOG_MODAL, _("_Cancel"), GTK_RESPONSE_CANCEL,
                                               _("C_onnect"), GTK_RESPONSE_OK, NULL);
        gtk_dialog_set_default_response(GTK_DIALOG(d.dialog), GTK_RESPONSE_OK);
        area = gtk_dialog_get_content_area(GTK_DIALOG(d.dialog));
        gtk_container_set_border_width(GTK_CONTAINER(area), 12);
        gtk_box_set_spacing(GTK_BOX(area), 6);
        /* Asked again: the service's message says why, if it sent one. */
        label = gtk_label_new(retry && !r->message ? _("The key was not accepted; enter it again.") : desc);
        gtk_label_set_line_wrap(GTK_LABEL(label), TRUE);
        gtk_label_set_max_width_chars(GTK_LABEL(label), 60);
        gtk_box_pack_start(GTK_BOX(area), label, FALSE, FALSE, 0);
        d.entry = gtk_entry_new();
        gtk_entry_set_visibility(GTK_ENTRY(d.entry), FALSE);
        gtk_entry_set_activates_default(GTK_ENTRY(d.entry), TRUE);
        gtk_entry_set_placeholder_text(GTK_ENTRY(d.entry), KEY_LABEL(r));
        atk_object_set_name(gtk_widget_get_accessible(d.entry), KEY_LABEL(r));
        gtk_box_pack_start(GTK_BOX(area), d.entry, FALSE, FALSE, 0);
        d.problem = gtk_label_new(NULL);
        gtk_label_set_line_wrap(GTK_LABEL(d.problem), TRUE);
        gtk_label_set_max_width_chars(GTK_LABEL(d.problem), 60);
        gtk_box_pack_start(GTK_BOX(area), d.problem, FALSE, FALSE, 0);
        g_signal_connect(d.entry, "changed", G_CALLBACK(on_key_changed), &d);
        gtk_widget_show_all(d.dialog);
        if (r->existing)
                gtk_entry_set_text(GTK_ENTRY(d.entry), r->existing);
        on_key_changed(GTK_EDITABLE(d.entry), &d);
        if (gtk_dialog_run(GTK_DIALOG(d.dialog)) == GTK_RESPONSE_OK)
                key = entry_key(d.entry);
        /* Not left in the entry's buffer. */
        gtk_entry_set_text(GTK_ENTRY(d.entry), "");
        gtk_widget_destroy(d.dialog);
        return key;
}
#endif

static int classic(const Request *r, gboolean should_ask, gboolean retry) {
        g_autofree char *key = NULL;
        gboolean ok;

        if (r->problems)
                return 1;
        if (should_ask) {
#ifdef MPT_AUTH_DIALOG_GTK
                if (gtk_init_check(NULL, NULL))
                        key = ask_gtk(r, retry);
                else
                        g_printerr("nm-mpt-auth-dialog: no display to ask for the key of '%s'\n", r->name);
#else
                g_printerr("nm-mpt-auth-dialog: built without GTK: cannot ask for the key of '%s' "
                           "(the agent should use --external-ui-mode)\n", r->name);
#endif
                if (!key)
                        return 1;
        } else if (r->existing)
                key = g_strdup(r->existing);
        /* KEY\nVALUE\n pairs, then an empty line; agents such as GNOME Shell send QUIT once they
         * have read two empty lines, nm-applet has sent it already. */
        if (key && *key)
                printf("%s\n%s\n", r->secret, key);
        printf("\n\n");
        ok = fflush(stdout) == 0;
        if (key)
                explicit_bzero(key, strlen(key));
        if (!ok)
                return 1;
        wait_for_quit();
        return 0;
}

int main(int argc, char **argv) {
        g_autofree char *uuid = NULL, *name = NULL, *service = NULL, *key_message = NULL;
        g_auto(GStrv) hints = NULL;
        gboolean interaction = FALSE, reprompt = FALSE, external = FALSE;
        GOptionEntry options[] = {
                { "uuid", 'u', 0, G_OPTION_ARG_STRING, &uuid, "UUID of the connection", "UUID" },
                { "name", 'n', 0, G_OPTION_ARG_STRING, &name, "Name of the connection", "NAME" },
                { "service", 's', 0, G_OPTION_ARG_STRING, &service, "VPN service type", "SERVICE" },
                { "allow-interaction", 'i', 0, G_OPTION_ARG_NONE, &interaction, "Allow asking the user", NULL },
                { "reprompt", 'r', 0, G_OPTION_ARG_NONE, &reprompt, "Ask again (the key was refused)", NULL },
                { "hint", 't', 0, G_OPTION_ARG_STRING_ARRAY, &hints, "What the service asks for", "HINT" },
                { "external-ui-mode", 0, 0, G_OPTION_ARG_NONE, &external, "Describe the prompt, do not ask", NULL },
                {}
        };
        g_autoptr(GOptionContext) ctx = g_option_context_new("- ask for the key of an mpt VPN connection");
        g_autoptr(GError) error = NULL;
        g_autoptr(GHashTable) data = NULL, secrets = NULL;
        g_autoptr(NMSettingVpn) s = NULL;
        gboolean should_ask;
        Request r = {};

        setlocale(LC_ALL, "");
        mpt_nm_i18n_init();
        g_option_context_add_main_entries(ctx, options, NULL);
        if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
                g_printerr("nm-mpt-auth-dialog: %s\n", error->message);
                return 1;
        }
        if (!uuid || !name || !service) {
                g_printerr("nm-mpt-auth-dialog: -u UUID, -n NAME and -s SERVICE are required\n");
                return 1;
        }
        if (!g_str_equal(service, MPT_NM_DBUS_SERVICE)) {
                g_printerr("nm-mpt-auth-dialog: this dialog is for %s, not %s\n", MPT_NM_DBUS_SERVICE, service);
                return 1;
        }
        if (!nm_vpn_service_plugin_read_vpn_details(STDIN_FILENO, &data, &secrets)) {
                g_printerr("nm-mpt-auth-dialog: cannot read the connection's data from stdin\n");
                return 1;
        }

        s = NM_SETTING_VPN(nm_setting_vpn_new());
        g_object_set(s, NM_SETTING_VPN_SERVICE_TYPE, MPT_NM_DBUS_SERVICE, NULL);
        g_hash_table_foreach(data, add_item, s);
        g_hash_table_foreach(secrets, add_secret, s);

        r.name = name;
        r.setting = s;
        r.secret = mpt_nm_secret_name(s);
        r.existing = g_hash_table_lookup(secrets, r.secret);
        if (r.existing && !*r.existing)
                r.existing = NULL;
        {
                /* vpn.data first: no key helps there. A key that is given but malformed is asked
                 * for again, with its problem as the message. */
                g_autoptr(NMSettingVpn) data_only = NM_SETTING_VPN(nm_setting_duplicate(NM_SETTING(s)));
                g_autoptr(GError) key_error = NULL;

                nm_setting_vpn_remove_secret(data_only, r.secret);
                r.problems = mpt_nm_validate_all(data_only, NULL);
                if (!r.problems && r.existing && !mpt_nm_validate(s, &key_error)) {
                        key_message = g_strdup_printf(_("The stored key of '%s' is not usable: %s"), name,
                                                      key_error->message);
                        r.existing = NULL;
                        reprompt = TRUE;
                }
        }
        r.message = key_message;
        {
                const char *service_message = NULL;
                gboolean service_asks_key = FALSE;

                for (char **h = hints; h && *h; h++) {
                        if (g_str_has_prefix(*h, VPN_MESSAGE_HINT))
                                service_message = *h + strlen(VPN_MESSAGE_HINT);
                        else if (g_str_equal(*h, r.secret))
                                service_asks_key = reprompt = TRUE; /* the service asks for the key (again) */
                }
                /* A message without a request for the key is the service refusing the connection
                 * for a reason only it can see (it runs as root: the connection's owner, a
                 * tunnel name of the system's): as much a problem as one found here. */
                if (service_message && !service_asks_key && !r.problems) {
                        r.problems = g_new0(char *, 2);
                        r.problems[0] = g_strdup(service_message);
                } else if (service_message)
                        r.message = service_message;
        }
        r.need_key = !r.problems && needs_key(s, data);
        for (char **p = r.problems; p && *p; p++)
                g_printerr("nm-mpt-auth-dialog: %s: %s\n", name, *p);

        should_ask = r.need_key && interaction && (reprompt || !r.existing);
        if (external) {
                int ret = external_ui(&r, should_ask);
                g_strfreev(r.problems);
                return ret;
        }
        {
                int ret = classic(&r, should_ask, reprompt);
                g_strfreev(r.problems);
                return ret;
        }
}
