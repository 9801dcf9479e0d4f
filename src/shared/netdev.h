/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* systemd .netdev files as mpt profiles (mpt.netdev(5)).
 *
 * systemd-networkd creates the multi-queue TUN device from the [NetDev] and [Tun] sections and
 * silently ignores sections whose names start with "X-". mpt reads the tunnel from [X-MPT] and
 * its paths from repeated [X-MPTPath] sections, with exactly the keys and value parsers of a
 * native profile (the one key table, profile-keys.c), and checks that the device networkd
 * creates is one mptd can attach to:
 *
 *   [NetDev]  Name= (required; the tunnel's name), Kind=tun; other keys are networkd's
 *   [Tun]     MultiQueue=yes (required), PacketInfo= and VNetHeader= no or unset, User=, Group=
 *   [X-MPT]   the [Tunnel] keys; a Name= must equal the [NetDev] Name=
 *   [X-MPTPath] the [Path] keys, one section per path
 *   [X-MPTPeer] the [Peer] keys, one section per peer of a hub
 *
 * Other sections ([Match], networkd's own) are left to networkd. A section that looks like
 * ours but is not ([X-MPTPaths], [MPT]) is an error, never silently ignored. A file without
 * any section of ours is not an mpt netdev: the generator skips it silently. */

#include "profile.h"

#define NETDEV_TUNNEL_SECTION "X-MPT"
#define NETDEV_PATH_SECTION "X-MPTPath"
#define NETDEV_PEER_SECTION "X-MPTPeer"

/* Indexed by MptSection, for MptProfile.section_names. */
extern const char *const netdev_section_names[_MPT_SECTION_MAX];

/* What a .netdev says besides the tunnel: networkd's side of the file. */
typedef struct MptNetdevInfo {
        char *ifname;     /* [NetDev] Name=, as written; NULL when missing */
        char *kind;       /* [NetDev] Kind=; NULL when missing */
        char *user;       /* [Tun] User=; NULL when unset */
        char *group;      /* [Tun] Group=; NULL when unset */
        bool has_mpt;     /* the file has a section of ours */
} MptNetdevInfo;

void netdev_info_done(MptNetdevInfo *info);

/* Parses and verifies a .netdev file.
 *
 * Returns 1 with *ret set for a valid mpt netdev; 0 when the file has no section of ours (not
 * an mpt netdev; nothing is reported); -EINVAL when it has errors (all of them in d, as
 * FILE:LINE: message, in line order); another negative errno when it cannot be read (-EBADFD:
 * not a regular file; -EFBIG: too large). The file is opened without blocking: a FIFO is
 * refused, never waited on.
 *
 * ret_info (may be NULL) is filled whenever the file was parsed (return value 0, 1 or -EINVAL),
 * also for a broken file: the generator needs the interface name of every .netdev to apply
 * networkd's first-file-wins rule. Free it with netdev_info_done(). */
int netdev_load_file(const char *filename, MptProfile **ret, MptNetdevInfo *ret_info, MptDiagnostics *d);
int netdev_load_buffer(const char *filename, const char *buf, size_t len, MptProfile **ret,
                       MptNetdevInfo *ret_info, MptDiagnostics *d);

/* networkd reads drop-ins of a .netdev (the .conf files of NAME.netdev.d/, in the directory of the file and,
 * for a file in netdev_search_path, in every directory of it); mpt does not: its sections belong
 * in the .netdev itself. Adds a warning (FILE:LINE) to w for each [X-MPT...] section header in
 * such a drop-in. Returns how many, or -ENOMEM. */
int netdev_dropin_warnings(const char *filename, MptDiagnostics *w);

/* Whether a file name looks like a .netdev file (ends in ".netdev"). */
bool netdev_filename(const char *filename) _pure_;

/* networkd's search path for .netdev files, in order of precedence (systemd 252 on Debian:
 * CONF_PATHS("systemd/network") with split /usr). NULL-terminated. */
extern const char *const netdev_search_path[];
/* Bound what a directory full of files can make us read. */
#define NETDEV_FILES_MAX 4096u

/* Whether a .netdev file in dirs (NULL-terminated) gives a device the name ifname ([NetDev]
 * Name=), mpt's or not, masked or not: 1 with *ret_path (may be NULL) set to the first such file,
 * 0 when none does, or -ENOMEM. Files that cannot be read are skipped. */
int netdev_find_ifname(const char *const *dirs, const char *ifname, char **ret_path);

/* For mpt.netdev(5): how a key's documentation differs in a .netdev file. NULL when it does
 * not: the default as documented there, a text that replaces the table's, and a note added to
 * the table's text. */
const char *netdev_key_default_doc(const MptConfKey *k);
const char *netdev_key_doc(const MptConfKey *k);
const char *netdev_key_note(const MptConfKey *k);
