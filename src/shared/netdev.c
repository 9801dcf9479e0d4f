/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <libgen.h>
#include <strings.h>
#include <sys/stat.h>

#include "conf-parser.h"
#include "netdev.h"

const char *const netdev_search_path[] = {
        "/etc/systemd/network",
        "/run/systemd/network",
        "/usr/local/lib/systemd/network",
        "/usr/lib/systemd/network",
        "/lib/systemd/network",
        NULL,
};

const char *const netdev_section_names[_MPT_SECTION_MAX] = {
        [MPT_SECTION_TUNNEL] = NETDEV_TUNNEL_SECTION,
        [MPT_SECTION_PATH] = NETDEV_PATH_SECTION,
        [MPT_SECTION_PEER] = NETDEV_PEER_SECTION,
};

typedef enum NetdevSection {
        NETDEV_SECTION_OTHER, /* networkd's: [Match], [NetDev] keys we do not need, ... */
        NETDEV_SECTION_NETDEV,
        NETDEV_SECTION_TUN,
        NETDEV_SECTION_MPT_TUNNEL,
        NETDEV_SECTION_MPT_PATH,
        NETDEV_SECTION_MPT_PEER,
} NetdevSection;

/* A [Tun] boolean: -1 while unset. */
typedef struct TunFlag {
        int value;
        unsigned line;
        bool invalid; /* reported already */
} TunFlag;

typedef struct NetdevState {
        MptProfile *profile;
        MptNetdevInfo info;
        NetdevSection section;
        size_t path_index;
        size_t peer_index;
        bool seen_tunnel;
        unsigned netdev_line; /* of the first [NetDev] header */
        unsigned name_line, kind_line;
        unsigned tun_line;    /* of the first [Tun] header */
        TunFlag multi_queue, packet_info, vnet_header;
} NetdevState;

void netdev_info_done(MptNetdevInfo *info) {
        free(info->ifname);
        free(info->kind);
        free(info->user);
        free(info->group);
        *info = (MptNetdevInfo) {};
}

bool netdev_filename(const char *filename) {
        size_t n = strlen(filename);

        return n > STRLEN(".netdev") && streq(filename + n - STRLEN(".netdev"), ".netdev");
}

/* A section that is meant to be ours but is not spelled right: "X-MPTPaths", "x-mpt", "MPT"
 * (networkd warns about [MPT] and ignores it, so its settings would be lost). Returns the
 * section it probably means. */
static const char *lookalike_section(const char *section) {
        unsigned dist;
        const char *best = conf_section_closest(netdev_section_names, section, &dist);

        if (strncasecmp(section, "X-MPT", STRLEN("X-MPT")) == 0 || strncasecmp(section, "MPT", STRLEN("MPT")) == 0 ||
            dist <= CONF_SECTION_HINT_DISTANCE)
                return best;
        return NULL;
}

static bool on_section(void *userdata, const char *section, unsigned line, MptDiagnostics *d) {
        NetdevState *s = userdata;
        MptProfile *p = s->profile;
        const char *hint;

        s->section = NETDEV_SECTION_OTHER;

        if (streq(section, "NetDev")) {
                if (s->netdev_line == 0)
                        s->netdev_line = line;
                s->section = NETDEV_SECTION_NETDEV;
                return true;
        }
        if (streq(section, "Tun")) {
                if (s->tun_line == 0)
                        s->tun_line = line;
                s->section = NETDEV_SECTION_TUN;
                return true;
        }
        if (streq(section, NETDEV_TUNNEL_SECTION)) {
                s->info.has_mpt = true;
                if (s->seen_tunnel) {
                        diag_add(d, p->filename, line,
                                 "second [" NETDEV_TUNNEL_SECTION "] section (the first is at line %u); "
                                 "a .netdev describes one tunnel", p->tunnel.line);
                        return false;
                }
                s->seen_tunnel = true;
                p->tunnel.line = line;
                s->section = NETDEV_SECTION_MPT_TUNNEL;
                return true;
        }
        if (streq(section, NETDEV_PATH_SECTION)) {
                s->info.has_mpt = true;
                if (!profile_add_path(p, line)) {
                        d->oom = true;
                        return false;
                }
                s->path_index = p->n_paths - 1;
                s->section = NETDEV_SECTION_MPT_PATH;
                return true;
        }
        if (streq(section, NETDEV_PEER_SECTION)) {
                s->info.has_mpt = true;
                if (!profile_add_peer(p, line)) {
                        d->oom = true;
                        return false;
                }
                s->peer_index = p->n_peers - 1;
                s->section = NETDEV_SECTION_MPT_PEER;
                return true;
        }

        hint = lookalike_section(section);
        if (hint) {
                s->info.has_mpt = true;
                diag_add(d, p->filename, line, "unknown section [%s]; did you mean [%s]?", section, hint);
        }
        /* Everything else is networkd's business. */
        return false;
}

static int set_string(char **field, const char *value) {
        char *v = NULL;

        if (!isempty(value)) {
                v = strdup(value);
                if (!v)
                        return -ENOMEM;
        }
        free(*field);
        *field = v;
        return 0;
}

static void set_tun_flag(NetdevState *s, TunFlag *flag, const char *key, const char *value, unsigned line,
                         MptDiagnostics *d) {
        int r;

        if (isempty(value)) {
                *flag = (TunFlag) { .value = -1 };
                return;
        }
        r = parse_boolean(value);
        if (r < 0) {
                diag_add(d, s->profile->filename, line, "invalid %s= '%s' in [Tun]: expected yes or no", key, value);
                flag->invalid = true;
                return;
        }
        *flag = (TunFlag) { .value = r, .line = line };
}

static void on_assignment(void *userdata, const char *section, const char *key, const char *value, unsigned line,
                          MptDiagnostics *d) {
        NetdevState *s = userdata;
        MptProfile *p = s->profile;
        int r = 0;

        switch (s->section) {
        case NETDEV_SECTION_NETDEV:
                if (streq(key, "Name")) {
                        r = set_string(&s->info.ifname, value);
                        s->name_line = line;
                } else if (streq(key, "Kind")) {
                        r = set_string(&s->info.kind, value);
                        s->kind_line = line;
                }
                break;
        case NETDEV_SECTION_TUN:
                if (streq(key, "MultiQueue"))
                        set_tun_flag(s, &s->multi_queue, key, value, line, d);
                else if (streq(key, "PacketInfo"))
                        set_tun_flag(s, &s->packet_info, key, value, line, d);
                else if (streq(key, "VNetHeader"))
                        set_tun_flag(s, &s->vnet_header, key, value, line, d);
                else if (streq(key, "User"))
                        r = set_string(&s->info.user, value);
                else if (streq(key, "Group"))
                        r = set_string(&s->info.group, value);
                break;
        case NETDEV_SECTION_MPT_TUNNEL:
                (void) profile_assign(p, MPT_SECTION_TUNNEL, NULL, key, value, p->filename, line, d);
                break;
        case NETDEV_SECTION_MPT_PATH:
                (void) profile_assign(p, MPT_SECTION_PATH, &p->paths[s->path_index], key, value, p->filename,
                                      line, d);
                break;
        case NETDEV_SECTION_MPT_PEER:
                (void) profile_assign(p, MPT_SECTION_PEER, &p->peers[s->peer_index], key, value, p->filename,
                                      line, d);
                break;
        default:
                break;
        }
        if (r == -ENOMEM)
                d->oom = true;
}

static const ConfCallbacks netdev_callbacks = {
        .section = on_section,
        .assignment = on_assignment,
};

/* What networkd needs to create a device mptd can use, and the tunnel's name. */
static void check_device(NetdevState *s, MptDiagnostics *d) {
        MptProfile *p = s->profile;
        const char *file = p->filename;
        const MptConfKey *name_key = conf_key(MPT_KEY_TUNNEL_NAME);
        unsigned mpt_name_line = p->tunnel.key_line[conf_key_index(name_key)];

        if (s->netdev_line == 0)
                diag_add(d, file, 0, "no [NetDev] section: networkd needs Name= and Kind=tun there");
        else {
                if (!s->info.ifname)
                        diag_add(d, file, s->netdev_line,
                                 "missing Name= in [NetDev]: it names the TUN device and the tunnel");
                if (!s->info.kind)
                        diag_add(d, file, s->netdev_line, "missing Kind= in [NetDev]: mpt needs Kind=tun");
                else if (!streq(s->info.kind, "tun"))
                        diag_add(d, file, s->kind_line, "Kind=%s: mpt needs Kind=tun (a multi-queue TUN device)",
                                 s->info.kind);
        }

        if (s->info.ifname) {
                if (mpt_name_line > 0) {
                        /* [X-MPT] Name= was checked by its parser; it must not contradict networkd. */
                        if (p->tunnel.name && !streq(p->tunnel.name, s->info.ifname))
                                diag_add(d, file, mpt_name_line,
                                         "Name= '%s' differs from Name= '%s' in [NetDev] (line %u): leave it out, "
                                         "or make them the same", p->tunnel.name, s->info.ifname, s->name_line);
                } else
                        /* The interface name is the tunnel's name: the same rules and message as
                         * a Name= of [X-MPT]. */
                        (void) profile_assign(p, MPT_SECTION_TUNNEL, NULL, "Name", s->info.ifname, file, s->name_line,
                                              d);
        }

        if (s->tun_line == 0)
                diag_add(d, file, 0,
                         "no [Tun] section with MultiQueue=yes: mptd attaches one queue per worker thread");
        else if (s->multi_queue.invalid)
                ; /* reported */
        else if (s->multi_queue.value < 0)
                diag_add(d, file, s->tun_line,
                         "missing MultiQueue=yes in [Tun]: mptd attaches one queue per worker thread");
        else if (s->multi_queue.value == 0)
                diag_add(d, file, s->multi_queue.line,
                         "MultiQueue=no: mptd needs MultiQueue=yes (it attaches one queue per worker thread)");
        if (s->packet_info.value > 0)
                diag_add(d, file, s->packet_info.line,
                         "PacketInfo=yes: mptd needs PacketInfo=no (packets without the packet information header)");
}

int netdev_load_buffer(const char *filename, const char *buf, size_t len, MptProfile **ret,
                       MptNetdevInfo *ret_info, MptDiagnostics *d) {
        _cleanup_(profile_freep) MptProfile *p = NULL;
        size_t errors = diag_count(d), first = d->n, dropped = d->n_dropped;
        NetdevState s = {
                .multi_queue.value = -1,
                .packet_info.value = -1,
                .vnet_header.value = -1,
        };
        int r;

        p = profile_new();
        if (!p)
                return -ENOMEM;
        p->filename = strdup(filename ?: "<input>");
        if (!p->filename)
                return -ENOMEM;
        p->section_names = netdev_section_names;
        p->from_netdev = true;
        s.profile = p;

        conf_parse_buffer(p->filename, buf, len, &netdev_callbacks, &s, d);
        if (s.info.has_mpt && !d->oom) {
                check_device(&s, d);
                if (!s.seen_tunnel)
                        diag_add(d, p->filename, 0,
                                 "no [" NETDEV_TUNNEL_SECTION "] section: an mpt .netdev needs one (it may be empty)");
                if (s.seen_tunnel || p->n_paths > 0)
                        (void) profile_verify(p, d);
                diag_sort_by_line(d, first, NULL, NULL);
        }

        if (d->oom)
                r = -ENOMEM;
        else if (!s.info.has_mpt)
                /* Not ours. Structural problems of a file that is networkd's alone are
                 * networkd's to report. */
                r = 0;
        else if (diag_count(d) > errors)
                r = -EINVAL;
        else
                r = 1;

        if (r == 0) {
                /* Leave no trace of a file that is not ours. */
                while (d->n > first) {
                        d->n--;
                        free(d->items[d->n].file);
                        free(d->items[d->n].message);
                }
                d->n_dropped = dropped;
        }
        if (r == 1)
                *ret = TAKE_PTR(p);
        if (ret_info && r != -ENOMEM)
                *ret_info = s.info;
        else
                netdev_info_done(&s.info);
        return r;
}

int netdev_load_file(const char *filename, MptProfile **ret, MptNetdevInfo *ret_info, MptDiagnostics *d) {
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t size = 0;
        int r;

        /* Never blocking: a FIFO (or anything but a regular file) is refused before it is read. */
        r = read_full_file_full(filename, CONF_FILE_MAX, READ_FULL_FILE_REGULAR, &buf, &size, &st);
        if (r < 0)
                return r;
        r = netdev_load_buffer(filename, buf, size, ret, ret_info, d);
        if (r == 1)
                (*ret)->file_mode = st.st_mode & 07777;
        return r;
}

int netdev_find_ifname(const char *const *dirs, const char *ifname, char **ret_path) {
        for (const char *const *dir = dirs; *dir; dir++) {
                DIR *d = opendir(*dir);
                size_t n = 0;

                if (!d)
                        continue;
                for (struct dirent *de; (de = readdir(d)) && n < NETDEV_FILES_MAX;) {
                        _cleanup_(profile_freep) MptProfile *p = NULL;
                        _cleanup_free_ char *path = NULL;
                        MptNetdevInfo info = {};
                        MptDiagnostics diag = {};
                        bool match;
                        int r;

                        if (de->d_name[0] == '.' || !netdev_filename(de->d_name))
                                continue;
                        n++;
                        if (asprintf(&path, "%s/%s", *dir, de->d_name) < 0) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        r = netdev_load_file(path, &p, &info, &diag);
                        diag_done(&diag);
                        /* info is filled for a broken file too (and stays empty when unread). */
                        match = info.ifname && streq(info.ifname, ifname);
                        netdev_info_done(&info);
                        if (r == -ENOMEM) {
                                closedir(d);
                                return r;
                        }
                        if (match) {
                                closedir(d);
                                if (ret_path)
                                        *ret_path = TAKE_PTR(path);
                                return 1;
                        }
                }
                closedir(d);
        }
        return 0;
}

typedef struct NetdevKeyDoc {
        MptKeyId key;
        const char *default_doc;
        const char *doc;  /* replaces the table's text */
        const char *note; /* follows the table's text */
} NetdevKeyDoc;

static const NetdevKeyDoc netdev_key_docs[] = {
        {
                MPT_KEY_TUNNEL_NAME, "the Name= of the [NetDev] section",
                "Name of the tunnel, which is the name of its TUN device: mptctl addresses the tunnel by "
                "this name, and its control socket is /run/mpt/NAME.sock. In a .netdev file the name is the "
                "Name= of the [NetDev] section, and systemd-networkd creates the device: mptd only attaches "
                "to it, and exits when it is removed. Name= may be left out here; when it is given, it must "
                "be the same.",
                NULL,
        },
        {
                MPT_KEY_TUNNEL_ADDRESS, NULL, NULL,
                "With systemd-networkd, give the addresses in the [Network] section of the .network file "
                "instead, as for any other link: networkd removes addresses that it did not add itself "
                "whenever it configures the link.",
        },
        {
                MPT_KEY_TUNNEL_ROUTE, NULL, NULL,
                "With systemd-networkd, give the routes in [Route] sections of the .network file instead: "
                "networkd removes routes that it did not add itself whenever it configures the link.",
        },
        {
                MPT_KEY_TUNNEL_KEY, NULL, NULL,
                "A .netdev file is usually readable by everyone (systemd-networkd does not need it "
                "private): use KeyFile= instead, with a file only root can read. Here the warning of "
                "mptd and mptctl check is for a file that others can read: its group may read it, "
                "since networkd reads it as user systemd-network (mode 0640, group systemd-network).",
        },
        {
                MPT_KEY_TUNNEL_KEY_FILE, NULL, NULL,
                "Here the directory of the profile is that of the .netdev file: KeyFile=mpt0.key in "
                "/etc/systemd/network/mpt0.netdev names /etc/systemd/network/mpt0.key.",
        },
        {
                MPT_KEY_TUNNEL_MTU, NULL, NULL,
                "networkd ignores MTUBytes in the [NetDev] section of a tun device. Should the .network file "
                "set MTUBytes in its [Link] section, give MTU= the same value, or the two will overwrite "
                "each other.",
        },
};

static const NetdevKeyDoc *netdev_key_docs_find(const MptConfKey *k) {
        for (size_t i = 0; i < ELEMENTSOF(netdev_key_docs); i++)
                if (conf_key(netdev_key_docs[i].key) == k)
                        return &netdev_key_docs[i];
        return NULL;
}

const char *netdev_key_default_doc(const MptConfKey *k) {
        const NetdevKeyDoc *doc = netdev_key_docs_find(k);
        return doc ? doc->default_doc : NULL;
}

const char *netdev_key_doc(const MptConfKey *k) {
        const NetdevKeyDoc *doc = netdev_key_docs_find(k);
        return doc ? doc->doc : NULL;
}

const char *netdev_key_note(const MptConfKey *k) {
        const NetdevKeyDoc *doc = netdev_key_docs_find(k);
        return doc ? doc->note : NULL;
}

/* [X-MPT...] headers in one drop-in of netdev: a warning each. */
static int dropin_warnings(const char *path, const char *netdev, MptDiagnostics *w) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        unsigned line = 1;
        int n = 0;

        if (read_full_file(path, CONF_FILE_MAX, &buf, &size) < 0)
                return 0; /* networkd says what it cannot read */
        for (size_t i = 0; i < size; line++) {
                const char *l = buf + i, *end = memchr(l, '\n', size - i);
                size_t ll = end ? (size_t) (end - l) : size - i;

                while (ll > 0 && (*l == ' ' || *l == '\t')) {
                        l++;
                        ll--;
                }
                if (ll >= STRLEN("[X-MPT") && strncmp(l, "[X-MPT", STRLEN("[X-MPT")) == 0) {
                        diag_add(w, path, line,
                                 "mpt reads its sections from the .netdev file itself (%s), not from "
                                 "networkd's drop-ins: this section is ignored; move it there", netdev);
                        n++;
                }
                i = end ? (size_t) (end - buf) + 1 : size;
        }
        return n;
}

int netdev_dropin_warnings(const char *filename, MptDiagnostics *w) {
        _cleanup_free_ char *copy = strdup(filename), *real_dir = NULL;
        const char *const *dirs = NULL, *here[2] = {};
        char **dropins = NULL;
        size_t n_dropins = 0;
        int n = 0, r;

        if (!copy)
                return -ENOMEM;
        here[0] = dirname(copy);
        real_dir = realpath(here[0], NULL);
        /* Where networkd itself looks: its whole search path for a file in one of its
         * directories, else next to the file. */
        for (size_t i = 0; real_dir && netdev_search_path[i] && !dirs; i++)
                if (streq(real_dir, netdev_search_path[i]))
                        dirs = netdev_search_path;
        r = conf_find_dropins(filename, dirs ?: here, &dropins, &n_dropins);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_dropins; i++) {
                n += dropin_warnings(dropins[i], filename, w);
                free(dropins[i]);
        }
        free(dropins);
        return n;
}
