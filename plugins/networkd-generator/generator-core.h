/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The core of mpt-netdev-generator: networkd's search path with its override and masking rules,
 * systemd's unit name escaping, and the units of one tunnel (a drop-in for mptd@NAME.service
 * and the symlink that makes the device unit want it). It does not log and keeps no state;
 * main.c decides what to report and where. Tests call these functions directly or run the
 * binary on directories of .netdev files (tests/generator). */

#include "diag.h"
#include "macro.h"
#include "netdev.h"

#define GENERATOR_NAME "mpt-netdev-generator"
#define GENERATOR_DROPIN "50-netdev.conf"
/* Bound what a directory full of files can make us allocate. */
#define GENERATOR_FILES_MAX NETDEV_FILES_MAX

typedef struct NetdevFile {
        char *name; /* "mpt0.netdev" */
        char *path; /* the file that counts, in the first directory that has the name; NULL: masked */
} NetdevFile;

typedef struct NetdevFileList {
        NetdevFile *items;
        size_t n;
} NetdevFileList;

void netdev_file_list_done(NetdevFileList *l);

/* Lists the *.netdev files of dirs (NULL-terminated, in order of precedence) as networkd does: a
 * name counts from the first directory that has it, whatever the others hold; when that entry is
 * empty or a symlink to /dev/null (anything that is not a non-empty file: a character device, an
 * empty regular file), the name is masked and its path is NULL. Hidden files (".foo.netdev") are
 * skipped, as are names that are directories. Sorted by name, as networkd reads them. Missing
 * directories are skipped silently; one that cannot be read is reported in d (line 0) and skipped. */
int generator_scan(const char *const *dirs, NetdevFileList *ret, MptDiagnostics *d);

/* systemd's unit name escaping (systemd-escape): '/' becomes '-'; '-', '\' and every character
 * other than ASCII letters, digits, ':', '_' and '.' become "\xNN" (lower-case hex), as does a
 * leading '.'. */
int unit_name_escape(const char *s, char **ret);
/* systemd-escape --path: the path without its leading, trailing and repeated slashes, escaped;
 * "/" is "-". */
int unit_name_path_escape(const char *path, char **ret);
/* Whether s is a valid unit name of the form PREFIX[@INSTANCE].TYPE, as systemd checks it. */
bool unit_name_valid(const char *s) _pure_;

/* Where the emitted units point to: the compile-time paths, or test hooks (main.c). */
typedef struct GeneratorPaths {
        const char *mptd;    /* absolute path of mptd */
        const char *unitdir; /* directory of mptd@.service */
} GeneratorPaths;

typedef struct GeneratorUnit {
        char *service;     /* "mptd@mpt0.service" */
        char *device;      /* "sys-subsystem-net-devices-mpt0.device" */
        char *dropin_dir;  /* "mptd@mpt0.service.d" */
        char *dropin_text; /* the contents of dropin_dir/GENERATOR_DROPIN */
        char *wants_dir;   /* "sys-subsystem-net-devices-mpt0.device.wants" */
        char *link_target; /* "UNITDIR/mptd@.service": what wants_dir/service points to */
} GeneratorUnit;

void generator_unit_done(GeneratorUnit *u);

/* The units for the tunnel of interface ifname, read from the .netdev at source. -EINVAL with an
 * explanation in *reterr when they cannot be written: an interface or file name that cannot go
 * into a unit (the caller reports it and emits nothing). */
int generator_unit_new(const GeneratorPaths *paths, const char *ifname, const char *source, GeneratorUnit *ret,
                       char **reterr);

/* Writes the drop-in and the symlink below dir_fd, replacing what is there. */
int generator_unit_write(int dir_fd, const GeneratorUnit *u);
