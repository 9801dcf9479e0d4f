/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/stat.h>

/* The profile model: one tunnel and its paths, whatever front door it came through (a native
 * profile file, a systemd .netdev file, NetworkManager's vpn.data). Every front door feeds
 * key/value assignments through profile_assign(); one key table (profile-keys.c) defines the
 * names, value syntax, limits, defaults and documentation of every key. */

#include "diag.h"
#include "in-addr-util.h"
#include "policy.h"
#include "parse-util.h"

#define MPT_PATHS_MAX 64u
#define MPT_ADDRESSES_MAX 16u
#define MPT_ROUTES_MAX 256u
/* [Peer] sections of a hub; each peer has at most MPT_ROUTES_MAX AllowedIPs= prefixes. */
#define MPT_PEERS_MAX 4096u
#define MPT_WEIGHT_MAX 10000u
#define MPT_WORKERS_MAX 64u
#define MPT_DEFAULT_PORT 4754u /* IANA GRE-in-UDP (RFC 8086) */
/* DeadTime= by default: this many keepalive intervals (mpt.conf(5)), so that two keepalives lost
 * in a row do not make a path dead. */
#define MPT_DEAD_TIME_KEEPALIVES 3u
#define MPT_KEYS_PER_SECTION_MAX 32u
/* MTU= bounds: the size of datagram that every IPv4 host must accept (RFC 791, RFC 1122 3.3.2),
 * and the largest that IP's 16-bit Total Length can describe. */
#define MPT_MTU_MIN 576u
#define MPT_MTU_MAX 65535u
/* The smallest MTU of a link that carries IPv6 (RFC 8200, section 5): a tunnel with an IPv6
 * address needs at least this much. Without a suffix: documentation strings spell it. */
#define MPT_IPV6_MIN_MTU 1280

typedef enum MptScheduler {
        MPT_SCHEDULER_WEIGHTED, /* per packet, weighted round-robin (spec section 4.2) */
        MPT_SCHEDULER_FLOW,     /* per flow: a flow sticks to one path, flows spread by weight */
        MPT_SCHEDULER_LEARNED,  /* per packet, by what each path delivers (mptd: learn.h); secure mode */
        _MPT_SCHEDULER_MAX,
        _MPT_SCHEDULER_INVALID = -EINVAL,
} MptScheduler;

DECLARE_STRING_TABLE(mpt_scheduler, MptScheduler);

typedef enum MptMode {
        MPT_MODE_SECURE, /* every datagram authenticated and encrypted (mptd(8), "SECURE WIRE FORMAT") */
        MPT_MODE_COMPAT, /* the plain wire format of the original MPT */
        _MPT_MODE_MAX,
        _MPT_MODE_INVALID = -EINVAL,
} MptMode;

DECLARE_STRING_TABLE(mpt_mode, MptMode);

#define MPT_KEY_SIZE 32u
/* The base64 text of a key (RFC 4648): 4 characters for every 3 bytes, the last group padded. */
#define MPT_KEY_BASE64_LEN (DIV_ROUND_UP(MPT_KEY_SIZE, 3u) * 4u)
#define MPT_SECURE_OVERHEAD 36u /* per datagram in secure mode: clear header (20) + AEAD tag (16), secure.h */
#define MPT_KEY_FILE_MAX 4096u /* a key file is one base64 line; refuse anything much bigger */

/* The tunnel's pre-shared key. Never logged, never shown (mptctl prints "(hidden)"). */
typedef struct MptKey {
        bool set;
        uint8_t bytes[MPT_KEY_SIZE];
} MptKey;

/* Decodes the base64 text of a key (MPT_KEY_BASE64_LEN characters, surrounding whitespace ignored).
 * 0 or -EINVAL. */
int mpt_key_from_base64(const char *s, MptKey *ret);
/* Writes the base64 text of a key (MPT_KEY_BASE64_LEN characters and a NUL) into buf. */
char *mpt_key_to_base64(const MptKey *k, char buf[static MPT_KEY_BASE64_LEN + 1]);

typedef enum MptSection {
        MPT_SECTION_TUNNEL,
        MPT_SECTION_PATH,
        MPT_SECTION_PEER,
        _MPT_SECTION_MAX,
        _MPT_SECTION_INVALID = -EINVAL,
} MptSection;

DECLARE_STRING_TABLE(mpt_section, MptSection);

typedef struct MptPrefixList {
        MptPrefix *items;
        size_t n;
} MptPrefixList;

typedef struct MptTunnelConfig {
        char *name;
        MptPrefixList addresses;
        MptPrefixList peers; /* at most one per family */
        MptPrefixList routes;
        uint32_t mtu; /* 0: computed from the paths */
        uint16_t local_port;
        uint16_t remote_port;
        uint32_t reorder_window; /* 0: no sequence numbers, no reordering */
        usec_t reorder_max_delay;
        MptScheduler scheduler;
        MptPolicyList policy; /* Policy=: per-flow rules, in order */
        uint32_t workers; /* 0: one per CPU */
        bool firewall;         /* maintain the nftables table mpt-NAME */
        uint32_t firewall_mark; /* OR-ed into the mark of accepted data packets; 0: none */
        MptMode mode;
        MptKey key;     /* Key= */
        char *key_file; /* KeyFile= as written */
        MptKey psk;     /* the key in use, from Key= or KeyFile= (filled in by profile_verify()) */
        /* The handshake (secure mode with PrivateKey= or PrivateKeyFile=; handshake.h). */
        MptKey private_key;       /* PrivateKey= */
        char *private_key_file;   /* PrivateKeyFile= as written */
        MptKey public_key;        /* PublicKey=: the other end's; never set in a hub (its peers have theirs) */
        MptKey preshared_key;     /* PresharedKey= */
        char *preshared_key_file; /* PresharedKeyFile= as written */
        /* What is in use, filled in by profile_verify(): this end's private key (set: the tunnel
         * runs the handshake) and the optional pre-shared key mixed into it. */
        MptKey hs_private;
        MptKey hs_psk;

        unsigned line;                                /* of the [Tunnel] header; 0 if none */
        unsigned key_line[MPT_KEYS_PER_SECTION_MAX]; /* where each key was set; 0: default */
        /* In which file each was set (profile_file_name()): 0 the profile itself, i a drop-in. */
        uint8_t line_src, key_src[MPT_KEYS_PER_SECTION_MAX];
        uint32_t key_rejected; /* bit per key: given, but its value was refused (already reported) */
} MptTunnelConfig;

typedef struct MptPathConfig {
        char *name;
        char *interface;
        MptAddress local;
        MptAddress remote;
        uint16_t remote_port; /* 0: the tunnel's RemotePort= */
        uint32_t weight;      /* 0: backup */
        uint32_t receive_weight;
        usec_t keepalive_interval; /* 0: no keepalives */
        usec_t dead_time;          /* 0: never declared dead */
        bool backup;               /* see path_config_is_backup(): the default depends on the device */
        bool pin_remote;           /* never follow the other end to a new address or port */
        uint32_t loss_threshold;   /* per mille; 0: never demoted for loss */

        unsigned line; /* of the [Path] header */
        unsigned key_line[MPT_KEYS_PER_SECTION_MAX];
        uint8_t line_src, key_src[MPT_KEYS_PER_SECTION_MAX]; /* as in MptTunnelConfig */
        uint32_t key_rejected;
} MptPathConfig;

/* A [Peer] section: one of the many other ends of a hub (a tunnel with [Peer] sections), known by
 * its public key and routed to by AllowedIPs=. A tunnel without [Peer] sections has one other end,
 * the one of [Tunnel] PublicKey=. */
typedef struct MptPeerConfig {
        char *name;
        MptKey public_key;        /* PublicKey= */
        MptPrefixList allowed_ips; /* AllowedIPs= */
        MptKey preshared_key;     /* PresharedKey= */
        char *preshared_key_file; /* PresharedKeyFile= as written */
        MptKey hs_psk;            /* in use, from either (filled in by profile_verify()) */

        unsigned line; /* of the [Peer] header */
        unsigned key_line[MPT_KEYS_PER_SECTION_MAX];
        uint8_t line_src, key_src[MPT_KEYS_PER_SECTION_MAX]; /* as in MptTunnelConfig */
        uint32_t key_rejected;
} MptPeerConfig;

/* A path without Remote= listens (secure mode only): it learns where the other end is from the
 * first datagram of it that authenticates, and follows it from then on. */
static inline bool path_config_listens(const MptPathConfig *c) {
        return c->remote.family == AF_UNSPEC;
}

/* The address family of the path's sockets: Remote='s, or LocalAddress='s for a listening path. */
static inline int path_config_family(const MptPathConfig *c) {
        return path_config_listens(c) ? c->local.family : c->remote.family;
}

typedef struct MptProfile {
        char *filename; /* as given; used in messages */
        /* How the file spells the sections, for messages; NULL: "Tunnel" and "Path". A .netdev
         * file calls them "X-MPT" and "X-MPTPath" (netdev.h). */
        const char *const *section_names;
        /* Read from a systemd .netdev file: systemd-networkd creates the TUN device, mptd only
         * attaches to it (never creates it). */
        bool from_netdev;
        /* Permission bits of the regular file it was read from; 0 when it came from elsewhere
         * (a buffer, a pipe). With MPT_FILE_SERVICE_GROUP when the file's group is the one mptd
         * reads profiles through (profile_file_mode()). */
        uint32_t file_mode;
        /* Drop-ins read after it (profile_load_file()), in order: file names and permission bits.
         * Their index + 1 is what key_src[] and line_src say. */
        char **dropins;
        uint32_t *dropin_modes;
        size_t n_dropins;
        uint8_t cur_file; /* while parsing: the file that profile_assign() records */
        MptTunnelConfig tunnel;
        MptPathConfig *paths;
        size_t n_paths;
        MptPeerConfig *peers; /* [Peer] sections (not the [Tunnel] key Peer=, tunnel.peers) */
        size_t n_peers;
} MptProfile;

typedef enum MptConfType {
        MPT_CONF_NAME,        /* char*, object_name_valid() */
        MPT_CONF_IFNAME,      /* char*, ifname_valid() */
        MPT_CONF_ADDRESS,     /* MptAddress */
        MPT_CONF_PREFIX_LIST, /* MptPrefixList, repeatable, empty value clears */
        MPT_CONF_POLICY_LIST, /* MptPolicyList (policy.h), a rule per line or ';'-separated, repeatable,
                               * empty value clears */
        MPT_CONF_PORT,        /* uint16_t */
        MPT_CONF_UINT32,      /* uint32_t within [min, max] */
        MPT_CONF_DURATION,    /* usec_t within [min, max] */
        MPT_CONF_BOOL,        /* bool */
        MPT_CONF_SCHEDULER,   /* MptScheduler */
        MPT_CONF_PERCENT,     /* uint32_t per mille, written "12.5%" */
        MPT_CONF_MODE,        /* MptMode */
        MPT_CONF_KEY,         /* MptKey, base64 */
        MPT_CONF_PATH,        /* char*, a file name */
        _MPT_CONF_TYPE_MAX,
} MptConfType;

enum {
        MPT_CONF_AUTO = 1 << 0,     /* the word "auto" is accepted and stored as 0 */
        MPT_CONF_ZERO_OFF = 1 << 1, /* 0 is accepted outside [min, max] and means off */
        MPT_CONF_REQUIRED = 1 << 2, /* verify: must be set (Remote=: unless the path may listen) */
        MPT_CONF_HOST = 1 << 3,     /* MPT_CONF_PREFIX_LIST of addresses: no prefix length */
        MPT_CONF_SECRET = 1 << 4,   /* never shown: mptctl prints "(hidden)" */
};

typedef struct MptConfKey {
        MptSection section;
        const char *name;
        MptConfType type;
        size_t offset;
        uint64_t min, max; /* numbers and durations (usec) */
        uint64_t def;      /* default for numbers and durations; booleans 0/1 */
        unsigned flags;
        const char *syntax;      /* for docs and messages, e.g. "ADDRESS[/PREFIXLEN]" */
        const char *default_doc; /* for docs: how the default is found, when not a plain value */
        const char *doc;         /* man page text (roff-safe plain text) */
} MptConfKey;

/* Every key, by identity: the index of its entry in mpt_conf_keys[] (in documentation order). Code
 * refers to a key by these, never by its name as a string, so that a misspelt key does not compile. */
typedef enum MptKeyId {
        MPT_KEY_TUNNEL_NAME,
        MPT_KEY_TUNNEL_MODE,
        MPT_KEY_TUNNEL_KEY,
        MPT_KEY_TUNNEL_KEY_FILE,
        MPT_KEY_TUNNEL_PRIVATE_KEY,
        MPT_KEY_TUNNEL_PRIVATE_KEY_FILE,
        MPT_KEY_TUNNEL_PUBLIC_KEY,
        MPT_KEY_TUNNEL_PRESHARED_KEY,
        MPT_KEY_TUNNEL_PRESHARED_KEY_FILE,
        MPT_KEY_TUNNEL_ADDRESS,
        MPT_KEY_TUNNEL_PEER,
        MPT_KEY_TUNNEL_ROUTE,
        MPT_KEY_TUNNEL_MTU,
        MPT_KEY_TUNNEL_LOCAL_PORT,
        MPT_KEY_TUNNEL_REMOTE_PORT,
        MPT_KEY_TUNNEL_REORDER_WINDOW,
        MPT_KEY_TUNNEL_REORDER_MAX_DELAY,
        MPT_KEY_TUNNEL_SCHEDULER,
        MPT_KEY_TUNNEL_POLICY,
        MPT_KEY_TUNNEL_WORKERS,
        MPT_KEY_TUNNEL_FIREWALL,
        MPT_KEY_TUNNEL_FIREWALL_MARK,
        MPT_KEY_PATH_NAME,
        MPT_KEY_PATH_INTERFACE,
        MPT_KEY_PATH_LOCAL_ADDRESS,
        MPT_KEY_PATH_REMOTE,
        MPT_KEY_PATH_REMOTE_PORT,
        MPT_KEY_PATH_WEIGHT,
        MPT_KEY_PATH_RECEIVE_WEIGHT,
        MPT_KEY_PATH_KEEPALIVE_INTERVAL,
        MPT_KEY_PATH_DEAD_TIME,
        MPT_KEY_PATH_BACKUP,
        MPT_KEY_PATH_PIN_REMOTE,
        MPT_KEY_PATH_LOSS_THRESHOLD,
        MPT_KEY_PEER_NAME,
        MPT_KEY_PEER_PUBLIC_KEY,
        MPT_KEY_PEER_ALLOWED_IPS,
        MPT_KEY_PEER_PRESHARED_KEY,
        MPT_KEY_PEER_PRESHARED_KEY_FILE,
        _MPT_KEY_MAX,
} MptKeyId;

/* The key table, in documentation order. */
extern const MptConfKey mpt_conf_keys[];
extern const size_t mpt_conf_keys_n;

static inline const MptConfKey *conf_key(MptKeyId id) {
        return &mpt_conf_keys[id];
}

const MptConfKey *conf_key_lookup(MptSection section, const char *name);
size_t conf_key_index(const MptConfKey *k); /* index within its section */
/* The closest key name of a section within edit distance CONF_KEY_HINT_DISTANCE (less for short
 * names), or NULL. */
#define CONF_KEY_HINT_DISTANCE 3u
const char *conf_key_suggest(MptSection section, const char *name);
/* The section name closest to name, for a did-you-mean hint, with its edit distance in *ret_distance.
 * names: how the file spells the sections (MptProfile.section_names), NULL for "Tunnel" and "Path". */
const char *conf_section_closest(const char *const *names, const char *name, unsigned *ret_distance);
/* A section name this close (or closer) to one of ours is taken for a misspelling of it. */
#define CONF_SECTION_HINT_DISTANCE 2u

MptProfile *profile_new(void);
MptProfile *profile_free(MptProfile *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(MptProfile *, profile_free);

/* Adds a path with default values; line is where its section starts. NULL on OOM. */
MptPathConfig *profile_add_path(MptProfile *p, unsigned line);

/* Adds a peer ([Peer] section) with default values; line is where its section starts. NULL on OOM. */
MptPeerConfig *profile_add_peer(MptProfile *p, unsigned line);

/* Applies one Key=Value to the tunnel (object == NULL) or to the object of a section (an
 * MptPathConfig, an MptPeerConfig). Problems are reported as file:line diagnostics; returns 0, or
 * a negative errno when the value was rejected. */
int profile_assign(MptProfile *p, MptSection section, void *object, const char *key,
                   const char *value, const char *file, unsigned line, MptDiagnostics *d);

/* Second pass: cross-key checks and derived defaults (path names, dead time). Problems go to
 * d; returns -EINVAL if there were any. */
int profile_verify(MptProfile *p, MptDiagnostics *d);

/* How a key's default reads, for documentation and for the editors' placeholders: its
 * default_doc, or the value a fresh profile has, as the parser reads it back ("" for none). */
int conf_key_default_text(const MptConfKey *k, char **ret);

/* The text mptctl shows for a key's value: "(hidden)" for a secret that is set. */
int profile_format_value_shown(const MptConfKey *k, const void *config, char **ret);

/* In a file mode (MptProfile.file_mode, dropin_modes): the file's group is mptd's own, the group
 * of the "mpt" user that the shipped unit runs mptd as, which reads the profile through it: its
 * read bit exposes nothing. */
#define MPT_FILE_SERVICE_GROUP 0x10000u
uint32_t profile_file_mode(const struct stat *st);
/* Instead of the "mpt" group's (tests). */
void profile_set_service_gid(gid_t gid);

/* Parses and verifies a native profile file and its drop-ins (mpt.conf(5), DROP-INS): *.conf
 * files in the directories FILE.d/ (FILE's base name, e.g. mpt0.conf.d) next to it, and, for a
 * profile in MPT_SYSCONFDIR, in /run/mpt and /usr/lib/mpt too. A drop-in's name in an earlier
 * directory hides the same name in a later one (an empty file or a link to /dev/null hides
 * without adding); they are read in the order of their names. The profile and its drop-ins are
 * regular files: anything else (a FIFO: never waited on) is -EBADFD for the profile, an error of
 * the drop-in's. Returns -errno if the profile cannot be read, -EINVAL if it or a drop-in has
 * errors (all of them in d, FILE:LINE of the file each is in), 0 on success. */
int profile_load_file(const char *filename, MptProfile **ret, MptDiagnostics *d);
/* The same with the drop-in directories given (NULL-terminated, most important first) instead of
 * the ones profile_load_file() looks in. */
int profile_load_file_dirs(const char *filename, const char *const *dirs, MptProfile **ret, MptDiagnostics *d);
/* At most this many drop-ins per profile. */
#define MPT_DROPINS_MAX 64u
/* The name of file i of a profile (0: the profile, i > 0: drop-in i - 1). */
const char *profile_file_name(const MptProfile *p, unsigned i);
/* Where tunnel key id was set: its file (the profile or a drop-in) and line, or, for a key left
 * at its default, the [Tunnel] section's. For FILE:LINE messages about a profile. */
const char *profile_tunnel_key_where(const MptProfile *p, MptKeyId id, unsigned *ret_line);
int profile_load_buffer(const char *filename, const char *buf, size_t len, MptProfile **ret, MptDiagnostics *d);

/* When the profile holds its key in the file itself (Key=) and the file can be read by more than
 * it needs to be, adds a FILE:LINE diagnostic (at Key=) to d and returns true. A native profile is
 * read by root only: its group and others may not read it. A .netdev file may be readable by its
 * group (systemd-networkd reads it as user systemd-network), not by others. The callers decide
 * whether that is a warning (mptd, mptctl check) or an error (mptctl check --strict). */
bool profile_check_key_private(const MptProfile *p, MptDiagnostics *d);

/* Text of one key's current value, as the parser reads it back; "" when unset. */
int profile_format_value(const MptConfKey *k, const void *config, char **ret);
/* Calls f(k, config, value, userdata) for every key of a section of p in table order (path_index:
 * a path's, SIZE_MAX: the tunnel's), with value the text of a key the profile sets (as the parser
 * reads it back; "" for an empty list), NULL for one left at its default. The tunnel's Name=
 * counts as set always (mptd needs a name, and a connection has no file to take it from); with
 * PROFILE_KEYS_PATH_NAMES so does each path's (the derived name of a path without Name=). A
 * negative return of f stops it and is returned. Values are wiped after f (they may be keys). */
typedef int (*ProfileKeyFunc)(const MptConfKey *k, const void *config, const char *value, void *userdata);
enum { PROFILE_KEYS_PATH_NAMES = 1 << 0 };
int profile_foreach_key(const MptProfile *p, size_t path_index, unsigned flags, ProfileKeyFunc f, void *userdata);
/* As profile_foreach_key() for any section: index is the path's or peer's (ignored for the tunnel). */
int profile_foreach_section_key(const MptProfile *p, MptSection section, size_t index, unsigned flags,
                                ProfileKeyFunc f, void *userdata);
/* A complete native profile for p (only keys that differ from their defaults, plus Name=): the
 * tunnel, its paths, then its peers. */
int profile_to_text(const MptProfile *p, char **ret);
/* The same, but asking override(k, index (SIZE_MAX: the tunnel section; a path's or a peer's by
 * k->section), userdata, &value)
 * for every key first: > 0 writes *value instead of what the profile has (a NULL *value: no
 * line at all), 0 goes on as profile_to_text() does, < 0 fails with that. */
typedef int (*ProfileTextOverride)(const MptConfKey *k, size_t path_index, void *userdata, char **value);
int profile_to_text_with(const MptProfile *p, ProfileTextOverride override, void *userdata, char **ret);

const MptPathConfig *profile_find_path(const MptProfile *p, const char *name);
const MptPeerConfig *profile_find_peer(const MptProfile *p, const char *name);

/* Whether the tunnel is a hub: [Peer] sections, each other end known by its key (mpt.conf(5), HUB). */
static inline bool profile_is_hub(const MptProfile *p) {
        return p->n_peers > 0;
}

/* Per-path values after defaults: the port to send to, and whether the path is a backup: Backup=
 * or Weight=0 when set; otherwise a cellular (wwan) interface is a backup path. */
uint16_t path_config_remote_port(const MptProfile *p, const MptPathConfig *path);
bool path_config_is_backup(const MptPathConfig *path, int devclass /* MptDevClass */);
/* Whether the profile sets the key (in the file, vpn.data, ...) rather than leaving the default. */
bool path_config_is_set(const MptPathConfig *path, MptKeyId id);

/* Whether data carries GRE sequence numbers: ReorderWindow= not 0 and Scheduler=weighted (the
 * flow scheduler keeps each flow on one path, so there is nothing to reorder). */
bool profile_uses_sequence(const MptProfile *p);
/* Whether the tunnel authenticates its ends with the handshake (secure mode with PrivateKey= or
 * PrivateKeyFile=), rather than with the pre-shared key alone (Key= or KeyFile=). */
bool profile_uses_handshake(const MptProfile *p);
/* Secure mode without the key it needs yet (no Key=/KeyFile=, no PrivateKey=/PrivateKeyFile=):
 * only front doors without sections get that far (the NetworkManager plugin, which then asks for
 * the secret); a profile file is refused. */
bool profile_lacks_key(const MptProfile *p);
/* Encapsulation overhead of a path in bytes (outer IP + UDP [+ secure header and tag] + GRE
 * [+ sequence]). */
unsigned profile_path_overhead(const MptProfile *p, const MptPathConfig *path);
