/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "mpt-nm-i18n.h"

void mpt_nm_i18n_init(void) {
        static gsize done = 0;

        if (g_once_init_enter(&done)) {
                const char *dir = g_getenv("MPT_NM_LOCALEDIR");

                bindtextdomain(GETTEXT_PACKAGE, dir && *dir ? dir : MPT_NM_LOCALEDIR);
                bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
                g_once_init_leave(&done, 1);
        }
}
