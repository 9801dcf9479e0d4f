/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "mptctl.h"
#include "show-fields.h"
#include "netdev.h"
#include "profile.h"

/* A native profile, or a systemd .netdev (by its extension) with the same messages that mptd
 * and mpt-netdev-generator give. */
static int load_any(const char *filename, MptProfile **ret, MptDiagnostics *d) {
        int r;

        if (!netdev_filename(filename))
                return profile_load_file(filename, ret, d);
        r = netdev_load_file(filename, ret, NULL, d);
        if (r == 0) {
                /* Asked to check it, so say why there is nothing to check. */
                diag_add(d, filename, 0, "no [" NETDEV_TUNNEL_SECTION "] section: this .netdev describes no mpt "
                         "tunnel (see mpt.netdev(5))");
                return -EINVAL;
        }
        return r < 0 ? r : 0;
}

static void json_diagnostics(const MptDiagnostics *d) {
        fputs("[", stdout);
        for (size_t j = 0; j < d->n; j++) {
                /* The file: the profile, or one of its drop-ins. */
                printf("%s{\"file\": ", j ? ", " : "");
                json_string(stdout, d->items[j].file);
                printf(", \"line\": %u, \"message\": ", d->items[j].line);
                json_string(stdout, d->items[j].message);
                fputs("}", stdout);
        }
        fputs("]", stdout);
}

/* mptctl check [--strict] FILE... : every problem as FILE:LINE: message, non-zero exit if any.
 * Warnings (a key that others can read) do not change the exit status, unless --strict makes them
 * problems. */
int verb_check(int argc, char **argv) {
        int result = 0;

        if (argc < 2) {
                fprintf(stderr, "mptctl: usage: mptctl check [--strict] FILE...\n");
                return -EINVAL;
        }
        if (arg_json)
                fputs("[", stdout);
        for (int i = 1; i < argc; i++) {
                _cleanup_(profile_freep) MptProfile *p = NULL;
                MptDiagnostics d = {}, w = {};
                int r;

                r = load_any(argv[i], &p, &d);
                /* [X-MPT...] in a drop-in of the .netdev: networkd reads it, mpt does not. */
                if (r >= 0 && netdev_filename(argv[i]) && netdev_dropin_warnings(argv[i], &w) < 0)
                        w.oom = true;
                if (r >= 0 && profile_check_key_private(p, arg_strict ? &d : &w) && arg_strict) {
                        p = profile_free(p);
                        r = -EINVAL;
                }
                if (d.oom || w.oom)
                        r = -ENOMEM;
                if (r < 0)
                        result = r;
                if (arg_json) {
                        printf("%s\n  {\"file\": ", i > 1 ? "," : "");
                        json_string(stdout, argv[i]);
                        printf(", \"ok\": %s", r >= 0 ? "true" : "false");
                        if (r >= 0) {
                                printf(", \"tunnel\": ");
                                json_string(stdout, p->tunnel.name);
                                printf(", \"paths\": %zu, \"dropins\": [", p->n_paths);
                                for (size_t j = 0; j < p->n_dropins; j++) {
                                        fputs(j > 0 ? ", " : "", stdout);
                                        json_string(stdout, p->dropins[j]);
                                }
                                putchar(']');
                        } else if (r != -EINVAL) {
                                printf(", \"error\": ");
                                json_string(stdout, strerror(-r));
                        }
                        printf(", \"problems\": ");
                        json_diagnostics(&d);
                        printf(", \"warnings\": ");
                        json_diagnostics(&w);
                        fputs("}", stdout);
                } else {
                        if (r == -EINVAL)
                                diag_print(&d, stderr, "");
                        else if (r < 0)
                                fprintf(stderr, "%s: cannot read: %s\n", argv[i],
                                        r == -EBADFD ? "not a regular file" : strerror(-r));
                        else {
                                char dropins[32] = "";
                                if (p->n_dropins > 0)
                                        snprintf(dropins, sizeof dropins, ", %zu drop-in%s", p->n_dropins,
                                                 p->n_dropins == 1 ? "" : "s");
                                printf("%s: OK (tunnel '%s', %zu path%s%s)\n", argv[i], p->tunnel.name, p->n_paths,
                                       p->n_paths == 1 ? "" : "s", dropins);
                        }
                        /* The drop-ins it read, in order (mpt.conf(5), DROP-INS). */
                        if (r >= 0)
                                for (size_t j = 0; j < p->n_dropins; j++)
                                        printf("  drop-in: %s\n", p->dropins[j]);
                        for (size_t j = 0; j < w.n; j++)
                                fprintf(stderr, "%s:%u: warning: %s\n", w.items[j].file, w.items[j].line,
                                        w.items[j].message);
                }
                diag_done(&d);
                diag_done(&w);
        }
        if (arg_json)
                fputs("\n]\n", stdout);
        return result;
}

/* mptctl keys : the profile keys, from the key table. */
int verb_keys(int argc, char **argv) {
        if (argc != 1) {
                fprintf(stderr, "mptctl: usage: mptctl keys\n");
                return -EINVAL;
        }
        if (arg_json)
                fputs("[", stdout);
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                _cleanup_free_ char *def = NULL;

                if (conf_key_default_text(k, &def) < 0)
                        return -ENOMEM;
                if (arg_json) {
                        printf("%s\n  {\"section\": \"%s\", \"key\": \"%s\", \"syntax\": ", i ? "," : "",
                               mpt_section_to_string(k->section), k->name);
                        json_string(stdout, k->syntax);
                        fputs(", \"default\": ", stdout);
                        json_string(stdout, def);
                        fputs(", \"description\": ", stdout);
                        json_string(stdout, k->doc);
                        fputs("}", stdout);
                } else
                        printf("[%s] %s=%s  (default: %s)\n", mpt_section_to_string(k->section), k->name, k->syntax, def);
        }
        if (arg_json)
                fputs("\n]\n", stdout);
        return 0;
}

/* mptctl fields : the fields of mptctl show, from the table of show fields (show-fields.h). */
int verb_fields(int argc, char **argv) {
        if (argc != 1) {
                fprintf(stderr, "mptctl: usage: mptctl fields\n");
                return -EINVAL;
        }
        if (arg_json)
                fputs("[", stdout);
        for (size_t i = 0; i < show_fields_n; i++) {
                const ShowField *f = &show_fields[i];

                if (arg_json) {
                        printf("%s\n  {\"record\": \"%s\", \"field\": ", i ? "," : "", f->record);
                        json_string(stdout, f->name);
                        printf(", \"type\": \"%s\", \"unit\": ", show_type_to_string(f->type));
                        if (f->unit)
                                json_string(stdout, f->unit);
                        else
                                fputs("null", stdout);
                        fputs("}", stdout);
                } else if (f->unit)
                        printf("%-7s %-26s %-8s %s\n", f->record, f->name, show_type_to_string(f->type), f->unit);
                else
                        printf("%-7s %-26s %s\n", f->record, f->name, show_type_to_string(f->type));
        }
        if (arg_json)
                fputs("\n]\n", stdout);
        return 0;
}
