/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The plugin's translations (po/): _() and N_() in the domain GETTEXT_PACKAGE (config.h). */
#include <glib/gi18n-lib.h>

/* Binds the domain to its catalogues, once: MPT_NM_LOCALEDIR (config.h), or $MPT_NM_LOCALEDIR
 * (the build tree's po/ in the tests). */
void mpt_nm_i18n_init(void);
