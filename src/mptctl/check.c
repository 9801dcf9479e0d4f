/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "mptctl.h"
#include "profile.h"

/* mptctl check FILE... : every problem as FILE:LINE: message, non-zero exit if any. */
int verb_check(int argc, char **argv) {
        int result = 0;

        if (argc < 2) {
                fprintf(stderr, "mptctl: usage: mptctl check FILE...\n");
                return -EINVAL;
        }
        for (int i = 1; i < argc; i++) {
                _cleanup_(profile_freep) MptProfile *p = NULL;
                MptDiagnostics d = {};
                int r;

                r = profile_load_file(argv[i], &p, &d);
                if (r == -EINVAL) {
                        diag_print(&d, stderr, "");
                        result = r;
                } else if (r < 0) {
                        fprintf(stderr, "%s: cannot read: %s\n", argv[i], strerror(-r));
                        result = r;
                } else if (!arg_json)
                        printf("%s: OK (tunnel '%s', %zu path%s)\n", argv[i], p->tunnel.name, p->n_paths,
                               p->n_paths == 1 ? "" : "s");
                diag_done(&d);
        }
        return result;
}

/* mptctl keys : the profile keys, from the key table. */
int verb_keys(int argc, char **argv) {
        if (argc != 1) {
                fprintf(stderr, "mptctl: usage: mptctl keys\n");
                return -EINVAL;
        }
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                char def[64];

                if (k->default_doc)
                        snprintf(def, sizeof def, "%s", k->default_doc);
                else {
                        _cleanup_(profile_freep) MptProfile *p = profile_new();
                        _cleanup_free_ char *v = NULL;
                        MptPathConfig *path = p ? profile_add_path(p, 1) : NULL;
                        if (!path)
                                return -ENOMEM;
                        if (profile_format_value(k, k->section == MPT_SECTION_PATH ? (void *) path : (void *) &p->tunnel,
                                                 &v) < 0)
                                return -ENOMEM;
                        snprintf(def, sizeof def, "%s", v);
                }
                if (arg_json)
                        printf("%s{\"section\": \"%s\", \"key\": \"%s\", \"syntax\": \"%s\"}%s\n", i == 0 ? "[" : " ",
                               mpt_section_to_string(k->section), k->name, k->syntax, i + 1 == mpt_conf_keys_n ? "]" : ",");
                else
                        printf("[%s] %s=%s  (default: %s)\n", mpt_section_to_string(k->section), k->name, k->syntax, def);
        }
        return 0;
}
