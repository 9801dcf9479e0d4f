/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The NetworkManager vpn.data/vpn.secrets parser (plugins/networkmanager/shared): what
 * nm-mpt-service and the editors build a profile from.
 *
 * Input: one item per line, "NAME=VALUE" for vpn.data and "!NAME=VALUE" for vpn.secrets (NM
 * carries both as string dictionaries; names and values are non-empty UTF-8). A connection that
 * builds must survive the round trip profile -> vpn.data -> profile with the same text. */

#include <stdlib.h>
#include <string.h>

#include "mpt-nm-profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Not CHECK(): the checks have side effects and must hold in every build type. */
#define CHECK(x) do { if (!(x)) abort(); } while (0)

static NMSettingVpn *setting_from_input(const char *text, size_t size) {
        NMSettingVpn *s = NM_SETTING_VPN(nm_setting_vpn_new());
        const char *p = text, *end = text + size;

        g_object_set(s, NM_SETTING_VPN_SERVICE_TYPE, MPT_NM_DBUS_SERVICE, NULL);
        while (p < end) {
                const char *nl = memchr(p, '\n', end - p) ?: end;
                g_autofree char *line = g_strndup(p, nl - p);
                char *eq, *name = line;
                gboolean secret = FALSE;

                p = nl + 1;
                if (name[0] == '!') {
                        secret = TRUE;
                        name++;
                }
                eq = strchr(name, '=');
                if (!eq || eq == name || !eq[1])
                        continue;
                *eq = 0;
                if (!g_utf8_validate(name, -1, NULL) || !g_utf8_validate(eq + 1, -1, NULL))
                        continue;
                if (secret)
                        nm_setting_vpn_add_secret(s, name, eq + 1);
                else
                        nm_setting_vpn_add_data_item(s, name, eq + 1);
        }
        return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autoptr(NMSettingVpn) s = NULL, s2 = NULL;
        g_autoptr(MptProfile) p = NULL, p2 = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) problems = NULL;
        g_autofree char *text = NULL, *text2 = NULL;
        gboolean ok;

        if (size > 64 * 1024)
                return 0;
        s = setting_from_input((const char *) data, size);

        problems = mpt_nm_validate_all(s, NULL);
        ok = mpt_nm_profile_from_setting(s, &p, &error);
        /* Both views agree: no problems exactly when the connection builds. */
        CHECK(ok == (problems == NULL || problems[0] == NULL));
        if (!ok) {
                CHECK(error && error->message && *error->message);
                return 0;
        }

        text = mpt_nm_profile_to_text(p, NULL);
        CHECK(text);
        s2 = NM_SETTING_VPN(nm_setting_vpn_new());
        CHECK(mpt_nm_setting_from_profile(p, s2, NULL));
        CHECK(mpt_nm_profile_from_setting(s2, &p2, NULL));
        text2 = mpt_nm_profile_to_text(p2, NULL);
        CHECK(text2 && strcmp(text, text2) == 0);
        return 0;
}
