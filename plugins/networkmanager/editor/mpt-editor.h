/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The mpt connection editor widget (NMVpnEditor), built once for GTK3 and once for GTK4. */

#include <NetworkManager.h>

G_BEGIN_DECLS

#define MPT_TYPE_EDITOR (mpt_editor_get_type())
G_DECLARE_FINAL_TYPE(MptEditor, mpt_editor, MPT, EDITOR, GObject)

NMVpnEditor *mpt_editor_new(NMConnection *connection, GError **error);
/* The problem shown in the editor (what update_connection() would fail with), or NULL. */
const char *mpt_editor_get_error(MptEditor *self);

G_END_DECLS
