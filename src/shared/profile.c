/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <sys/stat.h>

#include "allowed-ips.h"
#include "conf-parser.h"
#include "devclass.h"
#include "noise.h"
#include "profile.h"

static const char *const mpt_scheduler_table[_MPT_SCHEDULER_MAX] = {
        [MPT_SCHEDULER_WEIGHTED] = "weighted",
        [MPT_SCHEDULER_FLOW] = "flow",
        [MPT_SCHEDULER_LEARNED] = "learned",
};
DEFINE_STRING_TABLE(mpt_scheduler, MptScheduler, _MPT_SCHEDULER_MAX);

static const char *const mpt_mode_table[_MPT_MODE_MAX] = {
        [MPT_MODE_SECURE] = "secure",
        [MPT_MODE_COMPAT] = "compat",
};
DEFINE_STRING_TABLE(mpt_mode, MptMode, _MPT_MODE_MAX);

/* The character of a 6-bit value in base64's standard alphabet, without a table lookup indexed by
 * it (so a key's bytes leave no trace in the cache): each range's offset is added by a mask. */
static char base64_char(uint32_t x) {
        uint32_t c = x + 'A';
        c += ((25u - x) >> 8) & 6;   /* 26..51: 'a'.. */
        c -= ((51u - x) >> 8) & 75;  /* 52..61: '0'.. */
        c -= ((61u - x) >> 8) & 15;  /* 62: '+' */
        c += ((62u - x) >> 8) & 3;   /* 63: '/' */
        return (char) c;
}

static int base64_value(char c) {
        int v = -1;
        for (uint32_t i = 0; i < 64; i++)
                v = base64_char(i) == c ? (int) i : v;
        return v;
}

/* A key is 32 bytes in base64 (RFC 4648, standard alphabet, padded): 43 characters and one
 * '=', the last character's two unused bits zero, so each key has exactly one spelling. */
int mpt_key_from_base64(const char *s, MptKey *ret) {
        uint8_t buf[MPT_KEY_SIZE + 1];
        uint32_t acc = 0;
        size_t len, bits = 0, n = 0;
        int r = -EINVAL;

        s += strspn(s, " \t\r\n");
        len = strcspn(s, " \t\r\n");
        if (s[len + strspn(s + len, " \t\r\n")] != 0)
                return -EINVAL; /* more than one word */
        if (len != MPT_KEY_BASE64_LEN || s[MPT_KEY_BASE64_LEN - 1] != '=')
                return -EINVAL;
        for (size_t i = 0; i < MPT_KEY_BASE64_LEN - 1; i++) {
                int v = base64_value(s[i]);
                if (v < 0)
                        goto finish;
                acc = acc << 6 | (uint32_t) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        buf[n++] = (uint8_t) (acc >> bits);
                }
        }
        if (n != MPT_KEY_SIZE || (acc & ((1u << bits) - 1)) != 0)
                goto finish;
        ret->set = true;
        memcpy(ret->bytes, buf, MPT_KEY_SIZE);
        r = 0;
finish:
        explicit_bzero(buf, sizeof buf);
        explicit_bzero(&acc, sizeof acc);
        return r;
}

char *mpt_key_to_base64(const MptKey *k, char buf[static MPT_KEY_BASE64_LEN + 1]) {
        size_t n = 0;

        /* 32 bytes: ten groups of three, then two bytes as three characters and one '='. */
        for (size_t i = 0; i < MPT_KEY_SIZE; i += 3) {
                size_t left = MIN((size_t) 3, MPT_KEY_SIZE - i);
                uint32_t v = (uint32_t) k->bytes[i] << 16;

                if (left > 1)
                        v |= (uint32_t) k->bytes[i + 1] << 8;
                if (left > 2)
                        v |= k->bytes[i + 2];
                for (size_t j = 0; j < 4; j++)
                        buf[n++] = j <= left ? base64_char(v >> (18 - 6 * j) & 63) : '=';
        }
        buf[n] = 0;
        return buf;
}

static const char *const mpt_section_table[_MPT_SECTION_MAX] = {
        [MPT_SECTION_TUNNEL] = "Tunnel",
        [MPT_SECTION_PATH] = "Path",
        [MPT_SECTION_PEER] = "Peer",
};
DEFINE_STRING_TABLE(mpt_section, MptSection, _MPT_SECTION_MAX);

const MptConfKey *conf_key_lookup(MptSection section, const char *name) {
        for (size_t i = 0; i < mpt_conf_keys_n; i++)
                if (mpt_conf_keys[i].section == section && streq(mpt_conf_keys[i].name, name))
                        return &mpt_conf_keys[i];
        return NULL;
}

size_t conf_key_index(const MptConfKey *k) {
        size_t idx = 0;

        for (const MptConfKey *i = mpt_conf_keys; i < k; i++)
                if (i->section == k->section)
                        idx++;
        assert(idx < MPT_KEYS_PER_SECTION_MAX);
        return idx;
}

const char *conf_key_suggest(MptSection section, const char *name) {
        const char *best = NULL;
        unsigned best_d = CONF_KEY_HINT_DISTANCE + 1;

        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                unsigned dist;
                if (mpt_conf_keys[i].section != section)
                        continue;
                dist = string_distance(name, mpt_conf_keys[i].name);
                /* Short names need a closer match, or everything would look like "Name". */
                if (dist < best_d && dist <= MAX(1u, (unsigned) strlen(mpt_conf_keys[i].name) / 3)) {
                        best = mpt_conf_keys[i].name;
                        best_d = dist;
                }
        }
        return best;
}

const char *conf_section_closest(const char *const *names, const char *name, unsigned *ret_distance) {
        const char *best = NULL;
        unsigned best_d = UINT_MAX;

        for (MptSection s = 0; s < _MPT_SECTION_MAX; s++) {
                const char *candidate = names ? names[s] : mpt_section_to_string(s);
                unsigned dist = string_distance(name, candidate);
                if (dist < best_d) {
                        best_d = dist;
                        best = candidate;
                }
        }
        *ret_distance = best_d;
        return best;
}

static const char *section_title(const MptProfile *p, MptSection section) {
        return p->section_names ? p->section_names[section] : mpt_section_to_string(section);
}

/* A list entry as written: a bare address when the prefix covers all of it. */
static const char *format_list_entry(const MptPrefix *pf, char buf[static MPT_ADDRESS_STRLEN]) {
        if (pf->prefixlen == family_address_size(pf->family) * 8) {
                MptAddress a = { .family = pf->family, .addr = pf->addr };
                return address_to_string(&a, buf);
        }
        return prefix_to_string(pf, buf);
}

/* Where a section's object keeps the lines, files and refusals of its keys: every section's
 * struct has the same fields under the same names. */
typedef struct SectionMeta {
        unsigned *key_line;
        uint8_t *key_src;
        uint32_t *rejected;
        unsigned line; /* of the section's header */
        uint8_t line_src;
} SectionMeta;

#define SECTION_META(o) ((SectionMeta) { (o)->key_line, (o)->key_src, &(o)->key_rejected, (o)->line, (o)->line_src })

static SectionMeta section_meta(MptSection section, const void *config) {
        /* The const goes: the caller decides whether it writes (profile_assign()) or reads. */
        void *c = (void *) config;

        switch (section) {
        case MPT_SECTION_TUNNEL:
                return SECTION_META((MptTunnelConfig *) c);
        case MPT_SECTION_PATH:
                return SECTION_META((MptPathConfig *) c);
        case MPT_SECTION_PEER:
                return SECTION_META((MptPeerConfig *) c);
        default:
                assert(false);
                return (SectionMeta) {};
        }
}

/* The object of a section of a fresh profile with one path and one peer, for its defaults. */
static void *default_object(MptProfile *p, MptSection section) {
        return section == MPT_SECTION_PATH ? (void *) &p->paths[0]
               : section == MPT_SECTION_PEER ? (void *) &p->peers[0]
                                             : (void *) &p->tunnel;
}

static void *field_ptr(const MptConfKey *k, void *config) {
        return (uint8_t *) config + k->offset;
}

static const void *field_cptr(const MptConfKey *k, const void *config) {
        return (const uint8_t *) config + k->offset;
}

static void set_default(const MptConfKey *k, void *config) {
        void *f = field_ptr(k, config);

        switch (k->type) {
        case MPT_CONF_NAME:
        case MPT_CONF_IFNAME:
        case MPT_CONF_PATH:
                *(char **) f = mfree(*(char **) f);
                break;
        case MPT_CONF_ADDRESS:
                *(MptAddress *) f = (MptAddress) {};
                break;
        case MPT_CONF_MODE:
                *(MptMode *) f = (MptMode) k->def;
                break;
        case MPT_CONF_KEY:
                explicit_bzero(f, sizeof(MptKey));
                break;
        case MPT_CONF_PREFIX_LIST: {
                MptPrefixList *l = f;
                l->items = mfree(l->items);
                l->n = 0;
                break;
        }
        case MPT_CONF_POLICY_LIST: {
                MptPolicyList *l = f;
                l->items = mfree(l->items);
                l->n = 0;
                break;
        }
        case MPT_CONF_PORT:
                *(uint16_t *) f = (uint16_t) k->def;
                break;
        case MPT_CONF_UINT32:
                *(uint32_t *) f = (uint32_t) k->def;
                break;
        case MPT_CONF_DURATION:
                *(usec_t *) f = k->def;
                break;
        case MPT_CONF_BOOL:
                *(bool *) f = k->def;
                break;
        case MPT_CONF_SCHEDULER:
                *(MptScheduler *) f = (MptScheduler) k->def;
                break;
        case MPT_CONF_PERCENT:
                *(uint32_t *) f = (uint32_t) k->def;
                break;
        default:
                assert(false);
        }
}

/* Every key of a section at its default: what a new section starts with, and, since a default
 * holds no memory, what frees one. */
static void config_reset(MptSection section, void *config) {
        for (size_t i = 0; i < mpt_conf_keys_n; i++)
                if (mpt_conf_keys[i].section == section)
                        set_default(&mpt_conf_keys[i], config);
}

MptProfile *profile_new(void) {
        MptProfile *p = calloc(1, sizeof(MptProfile));
        if (!p)
                return NULL;
        config_reset(MPT_SECTION_TUNNEL, &p->tunnel);
        return p;
}

MptProfile *profile_free(MptProfile *p) {
        if (!p)
                return NULL;
        config_reset(MPT_SECTION_TUNNEL, &p->tunnel);
        explicit_bzero(&p->tunnel.psk, sizeof p->tunnel.psk);
        explicit_bzero(&p->tunnel.hs_private, sizeof p->tunnel.hs_private);
        explicit_bzero(&p->tunnel.hs_psk, sizeof p->tunnel.hs_psk);
        for (size_t i = 0; i < p->n_paths; i++)
                config_reset(MPT_SECTION_PATH, &p->paths[i]);
        free(p->paths);
        for (size_t i = 0; i < p->n_peers; i++) {
                config_reset(MPT_SECTION_PEER, &p->peers[i]);
                explicit_bzero(&p->peers[i].hs_psk, sizeof p->peers[i].hs_psk);
        }
        free(p->peers);
        free(p->filename);
        for (size_t i = 0; i < p->n_dropins; i++)
                free(p->dropins[i]);
        free(p->dropins);
        free(p->dropin_modes);
        return mfree(p);
}

MptPathConfig *profile_add_path(MptProfile *p, unsigned line) {
        MptPathConfig *paths;

        paths = realloc(p->paths, (p->n_paths + 1) * sizeof(MptPathConfig));
        if (!paths)
                return NULL;
        p->paths = paths;
        paths[p->n_paths] = (MptPathConfig) { .line = line, .line_src = p->cur_file };
        config_reset(MPT_SECTION_PATH, &paths[p->n_paths]);
        return &paths[p->n_paths++];
}

MptPeerConfig *profile_add_peer(MptProfile *p, unsigned line) {
        MptPeerConfig *peers;

        peers = reallocarray(p->peers, p->n_peers + 1, sizeof(MptPeerConfig));
        if (!peers)
                return NULL;
        p->peers = peers;
        peers[p->n_peers] = (MptPeerConfig) { .line = line, .line_src = p->cur_file };
        config_reset(MPT_SECTION_PEER, &peers[p->n_peers]);
        return &peers[p->n_peers++];
}

/* The value parsers, one per MptConfType, as networkd's config_parse_*(): each checks the text of
 * a non-empty value and stores it in its field, or says why not (FAIL). */

/* One entry of a list of addresses or prefixes. */
static int prefix_list_add(const MptConfKey *k, MptPrefixList *l, const char *value, char **reterr) {
        MptPrefix *items, pfx;
        MptAddress a;
        int r;

        if ((k->flags & MPT_CONF_HOST) && strchr(value, '/'))
                FAIL("invalid %s= '%s': takes an address without a prefix length", k->name, value);
        r = prefix_from_string(value, &pfx);
        if (r == -ERANGE)
                FAIL("invalid %s= '%s': prefix length out of range", k->name, value);
        if (r < 0)
                FAIL("invalid %s= '%s': expected %s", k->name, value, k->syntax);
        a = (MptAddress) { .family = pfx.family, .addr = pfx.addr };
        if (address_is_multicast(&a))
                FAIL("invalid %s= '%s': multicast addresses are not allowed", k->name, value);
        if (l->n >= MPT_ADDRESSES_MAX && k != conf_key(MPT_KEY_TUNNEL_ROUTE) &&
            k != conf_key(MPT_KEY_PEER_ALLOWED_IPS))
                FAIL("too many %s= entries (at most %u)", k->name, MPT_ADDRESSES_MAX);
        if (l->n >= MPT_ROUTES_MAX)
                FAIL("too many %s= entries (at most %u)", k->name, MPT_ROUTES_MAX);
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].family == pfx.family && l->items[i].prefixlen == pfx.prefixlen &&
                    memcmp(&l->items[i].addr, &pfx.addr, family_address_size(pfx.family)) == 0)
                        FAIL("duplicate %s= '%s'", k->name, value);
        items = realloc(l->items, (l->n + 1) * sizeof(MptPrefix));
        if (!items)
                return -ENOMEM;
        l->items = items;
        l->items[l->n++] = pfx;
        return 0;
}

static int set_string(char **field, const char *value) {
        char *s = strdup(value);

        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

static int config_parse_name(const MptConfKey *k, const char *value, void *field, char **reterr) {
        if (!object_name_valid(value))
                FAIL("invalid %s= '%s': use 1 to 15 letters, digits, '_', '.' or '-', "
                     "not starting with '-' or '.'", k->name, value);
        return set_string(field, value);
}

static int config_parse_ifname(const MptConfKey *k, const char *value, void *field, char **reterr) {
        if (!ifname_valid(value))
                FAIL("invalid interface name '%s' in %s=", value, k->name);
        return set_string(field, value);
}

static int config_parse_address(const MptConfKey *k, const char *value, void *field, char **reterr) {
        MptAddress a;

        if (address_from_string(value, &a) < 0)
                FAIL("invalid %s= '%s': not an IPv4 or IPv6 address", k->name, value);
        if (address_is_null(&a) || address_is_multicast(&a))
                FAIL("invalid %s= '%s': a unicast address is needed", k->name, value);
        *(MptAddress *) field = a;
        return 0;
}

static int config_parse_prefix_list(const MptConfKey *k, const char *value, void *field, char **reterr) {
        /* One or more entries separated by whitespace; repeating the key appends. */
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;
        int r;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                r = prefix_list_add(k, field, w, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int config_parse_policy_list(const MptConfKey *k, const char *value, void *field, char **reterr) {
        /* A rule per value; ';' separates several in one (NetworkManager's vpn.data has one item per
         * key). Repeating the key appends. */
        _cleanup_free_ char *copy = strdup(value);
        MptPolicyList *l = field;
        char *save = NULL;
        int r;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, ";", &save); w; w = strtok_r(NULL, ";", &save)) {
                _cleanup_free_ char *why = NULL;
                MptPolicyRule rule, *items;

                w += strspn(w, " \t");
                if (*w == 0)
                        continue;
                r = mpt_policy_parse(w, &rule, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        FAIL("invalid %s= '%s': %s", k->name, w, strna(why));
                if (l->n >= MPT_POLICY_MAX)
                        FAIL("too many %s= rules (at most %u)", k->name, MPT_POLICY_MAX);
                items = realloc(l->items, (l->n + 1) * sizeof(MptPolicyRule));
                if (!items)
                        return -ENOMEM;
                l->items = items;
                l->items[l->n++] = rule;
        }
        return 0;
}

static int config_parse_port(const MptConfKey *k, const char *value, void *field, char **reterr) {
        uint16_t port;

        if (parse_port(value, &port) < 0)
                FAIL("invalid %s= '%s': expected a port number 1..65535", k->name, value);
        *(uint16_t *) field = port;
        return 0;
}

static int config_parse_uint32(const MptConfKey *k, const char *value, void *field, char **reterr) {
        unsigned v;
        int r;

        if ((k->flags & MPT_CONF_AUTO) && streq(value, "auto")) {
                *(uint32_t *) field = 0;
                return 0;
        }
        r = safe_atou(value, &v);
        if (r < 0 || v < k->min || v > k->max)
                FAIL("invalid %s= '%s': expected %s%" PRIu64 "..%" PRIu64,
                     k->name, value, (k->flags & MPT_CONF_AUTO) ? "\"auto\" or " : "", k->min, k->max);
        *(uint32_t *) field = v;
        return 0;
}

static int config_parse_duration(const MptConfKey *k, const char *value, void *field, char **reterr) {
        char lo[32], hi[32];
        usec_t u;
        int r;

        r = parse_duration(value, &u);
        if (r == 0 && u == 0 && (k->flags & MPT_CONF_ZERO_OFF)) {
                *(usec_t *) field = 0;
                return 0;
        }
        if (r < 0 || u < k->min || u > k->max)
                FAIL("invalid %s= '%s': expected a duration %s%s..%s (e.g. \"500ms\", \"2s\")",
                     k->name, value, (k->flags & MPT_CONF_ZERO_OFF) ? "of 0 or " : "",
                     format_duration(k->min, lo, sizeof lo), format_duration(k->max, hi, sizeof hi));
        *(usec_t *) field = u;
        return 0;
}

static int config_parse_bool(const MptConfKey *k, const char *value, void *field, char **reterr) {
        int r = parse_boolean(value);

        if (r < 0)
                FAIL("invalid %s= '%s': expected yes or no", k->name, value);
        *(bool *) field = r;
        return 0;
}

static int config_parse_percent(const MptConfKey *k, const char *value, void *field, char **reterr) {
        /* "20%", "2.5%" or a bare "20": per mille, one decimal. */
        _cleanup_free_ char *num = strdup(value);
        unsigned whole = 0, tenth = 0;
        char *dot, *pct;

        if (!num)
                return -ENOMEM;
        pct = strchr(num, '%');
        if (pct) {
                if (pct[1] != 0)
                        FAIL("invalid %s= '%s': expected a percentage like \"20%%\"", k->name, value);
                *pct = 0;
        }
        dot = strchr(num, '.');
        if (dot) {
                *dot = 0;
                if (strlen(dot + 1) != 1 || safe_atou(dot + 1, &tenth) < 0)
                        FAIL("invalid %s= '%s': expected a percentage like \"20%%\" (one decimal at most)",
                             k->name, value);
        }
        if (safe_atou(num, &whole) < 0 || whole * 10 + tenth > k->max || whole * 10 + tenth < k->min)
                FAIL("invalid %s= '%s': expected a percentage %" PRIu64 "%%..%" PRIu64 "%%", k->name, value,
                     k->min / 10, k->max / 10);
        *(uint32_t *) field = whole * 10 + tenth;
        return 0;
}

static int config_parse_scheduler(const MptConfKey *k, const char *value, void *field, char **reterr) {
        MptScheduler s = mpt_scheduler_from_string(value);

        if (s < 0)
                FAIL("invalid %s= '%s': expected %s", k->name, value, k->syntax);
        *(MptScheduler *) field = s;
        return 0;
}

static int config_parse_mode(const MptConfKey *k, const char *value, void *field, char **reterr) {
        MptMode m = mpt_mode_from_string(value);

        if (m < 0)
                FAIL("invalid %s= '%s': expected %s", k->name, value, k->syntax);
        *(MptMode *) field = m;
        return 0;
}

static int config_parse_key(const MptConfKey *k, const char *value, void *field, char **reterr) {
        /* The value is a secret: never repeat it in a message. */
        if (mpt_key_from_base64(value, field) < 0)
                FAIL("invalid %s=: expected the base64 text of %u bytes (%u characters), as "
                     "`mptctl genkey` prints it", k->name, MPT_KEY_SIZE, MPT_KEY_BASE64_LEN);
        return 0;
}

static int config_parse_path(const MptConfKey *k, const char *value, void *field, char **reterr) {
        if (strlen(value) >= PATH_MAX)
                FAIL("invalid %s=: file name too long", k->name);
        return set_string(field, value);
}

typedef int (*ConfValueParser)(const MptConfKey *k, const char *value, void *field, char **reterr);

static const ConfValueParser config_parsers[_MPT_CONF_TYPE_MAX] = {
        [MPT_CONF_NAME] = config_parse_name,
        [MPT_CONF_IFNAME] = config_parse_ifname,
        [MPT_CONF_ADDRESS] = config_parse_address,
        [MPT_CONF_PREFIX_LIST] = config_parse_prefix_list,
        [MPT_CONF_POLICY_LIST] = config_parse_policy_list,
        [MPT_CONF_PORT] = config_parse_port,
        [MPT_CONF_UINT32] = config_parse_uint32,
        [MPT_CONF_DURATION] = config_parse_duration,
        [MPT_CONF_BOOL] = config_parse_bool,
        [MPT_CONF_SCHEDULER] = config_parse_scheduler,
        [MPT_CONF_PERCENT] = config_parse_percent,
        [MPT_CONF_MODE] = config_parse_mode,
        [MPT_CONF_KEY] = config_parse_key,
        [MPT_CONF_PATH] = config_parse_path,
};

/* The parser of the key's type, on the key's field of config. */
static int parse_value(const MptConfKey *k, const char *value, void *config, char **reterr) {
        assert(k->type < _MPT_CONF_TYPE_MAX && config_parsers[k->type]);
        return config_parsers[k->type](k, value, field_ptr(k, config), reterr);
}

int profile_assign(MptProfile *p, MptSection section, void *object, const char *key,
                   const char *value, const char *file, unsigned line, MptDiagnostics *d) {
        _cleanup_free_ char *err = NULL;
        const MptConfKey *k;
        void *config = section == MPT_SECTION_TUNNEL ? (void *) &p->tunnel : object;
        SectionMeta meta;
        unsigned *key_line;
        uint8_t *key_src;
        uint32_t *rejected;
        int r;

        assert(config);

        k = conf_key_lookup(section, key);
        if (!k) {
                const char *hint = conf_key_suggest(section, key);
                if (hint)
                        diag_add(d, file, line, "unknown key '%s' in [%s]; did you mean '%s'?",
                                 key, section_title(p, section), hint);
                else
                        diag_add(d, file, line, "unknown key '%s' in [%s]", key, section_title(p, section));
                return -ENOENT;
        }

        meta = section_meta(section, config);
        key_line = meta.key_line;
        key_src = meta.key_src;
        rejected = meta.rejected;
        *rejected &= ~(UINT32_C(1) << conf_key_index(k));

        if (isempty(value)) {
                /* An empty value resets the key to its default. */
                set_default(k, config);
                key_line[conf_key_index(k)] = 0;
                key_src[conf_key_index(k)] = 0;
                return 0;
        }

        r = parse_value(k, value, config, &err);
        if (r == -ENOMEM) {
                d->oom = true;
                return r;
        }
        if (r < 0) {
                diag_add(d, file, line, "%s", err ?: "invalid value");
                /* Verification must not complain again that the key is missing. */
                *rejected |= UINT32_C(1) << conf_key_index(k);
                return r;
        }
        key_line[conf_key_index(k)] = line;
        key_src[conf_key_index(k)] = p->cur_file;
        if (k->type == MPT_CONF_POLICY_LIST) {
                /* Each rule remembers its own line, for verification's messages. */
                MptPolicyList *l = field_ptr(k, config);
                for (size_t i = 0; i < l->n; i++)
                        if (l->items[i].line == 0) {
                                l->items[i].line = line;
                                l->items[i].line_src = p->cur_file;
                        }
        }
        return 0;
}

static bool is_rejected(uint32_t rejected, MptKeyId id) {
        return rejected & (UINT32_C(1) << conf_key_index(conf_key(id)));
}

static unsigned line_of(const unsigned *key_line, MptKeyId id, unsigned fallback) {
        unsigned l = key_line[conf_key_index(conf_key(id))];
        return l ?: fallback;
}

#define TLINE(p, id) line_of((p)->tunnel.key_line, id, (p)->tunnel.line)
#define PLINE(path, id) line_of((path)->key_line, id, (path)->line)
#define IS_SET(kl, id) (line_of((kl), id, 0) > 0)

int conf_key_default_text(const MptConfKey *k, char **ret) {
        _cleanup_(profile_freep) MptProfile *p = NULL;
        MptPathConfig *path;

        if (k->default_doc)
                return (*ret = strdup(k->default_doc)) ? 0 : -ENOMEM;
        p = profile_new();
        path = p ? profile_add_path(p, 1) : NULL;
        if (!path || !profile_add_peer(p, 1))
                return -ENOMEM;
        return profile_format_value(k, default_object(p, k->section), ret);
}

const char *profile_file_name(const MptProfile *p, unsigned i) {
        if (i == 0 || i > p->n_dropins)
                return p->filename ?: "<input>";
        return p->dropins[i - 1];
}

/* The file of a key (where it was set, else where its section starts), for FILE:LINE. */
static const char *file_of(const MptProfile *p, const unsigned *key_line, const uint8_t *key_src, uint8_t line_src,
                           MptKeyId id) {
        size_t i = conf_key_index(conf_key(id));
        return profile_file_name(p, key_line[i] > 0 ? key_src[i] : line_src);
}

#define TFILE(p, id) file_of((p), (p)->tunnel.key_line, (p)->tunnel.key_src, (p)->tunnel.line_src, id)

const char *profile_tunnel_key_where(const MptProfile *p, MptKeyId id, unsigned *ret_line) {
        *ret_line = TLINE(p, id);
        return TFILE(p, id);
}

#define PFILE(p, path, id) file_of((p), (path)->key_line, (path)->key_src, (path)->line_src, id)
#define SFILE(p, sec) profile_file_name((p), (sec)->line_src)

static char *default_tunnel_name(const char *filename) {
        _cleanup_free_ char *copy = NULL;
        char *base, *dot;

        if (!filename)
                return NULL;
        copy = strdup(filename);
        if (!copy)
                return NULL;
        base = basename(copy);
        dot = strrchr(base, '.');
        if (dot && dot != base)
                *dot = 0;
        if (!object_name_valid(base))
                return NULL;
        return strdup(base);
}

/* Reads a key file (KeyFile=, PrivateKeyFile=, PresharedKeyFile=: key id, value as written),
 * relative to the directory of the file that names it. A key that others can read is no secret:
 * refused. On failure, *reterr says why (without the file's contents). */
static int read_key_file(const MptProfile *p, const char *from, MptKeyId id, const char *value, MptKey *ret,
                         char **reterr) {
        _cleanup_free_ char *path = NULL, *dir = NULL;
        const char *name = conf_key(id)->name;
        char *buf = NULL;
        struct stat st;
        size_t n;
        int fd, r;

        /* Relative: to the directory of the file that says it (from: the profile or a drop-in). */
        if (value[0] == '/' || !p->filename || !strchr(from, '/'))
                path = strdup(value);
        else {
                dir = strdup(from);
                if (!dir)
                        return -ENOMEM;
                if (asprintf(&path, "%s/%s", dirname(dir), value) < 0)
                        path = NULL;
        }
        if (!path)
                return -ENOMEM;

        fd = read_full_file_open(path, READ_FULL_FILE_CHECK_FIRST, &st);
        if (fd == -EBADFD)
                FAIL("%s=%s: '%s' is not a regular file", name, value, path);
        if (fd == -ENOSYS)
                FAIL("%s=%s: cannot open '%s' safely: /proc is not mounted", name, value, path);
        /* Most likely mptd@.service (user mpt) and a key file made private to root. */
        if (fd == -EACCES && geteuid() != 0)
                FAIL("%s=%s: cannot open '%s': %s (this runs as uid %u: mptd@.service runs mptd as user mpt, "
                     "which reads key files through its group: chown root:mpt and chmod 640)",
                     name, value, path, strerror(-fd), (unsigned) geteuid());
        if (fd < 0)
                FAIL("%s=%s: cannot open '%s': %s", name, value, path, strerror(-fd));
        if (st.st_mode & S_IROTH) {
                close(fd);
                FAIL("%s=%s: '%s' is readable by everyone; make it private (chmod 600 or 640)", name, value, path);
        }
        /* A file of MPT_KEY_FILE_MAX bytes is too large already. */
        r = read_full_fd(fd, MPT_KEY_FILE_MAX - 1, READ_FULL_FILE_SECURE, &buf, &n);
        close(fd);
        if (r == -ENOMEM)
                return r;
        if (r == -EFBIG)
                FAIL("%s=%s: '%s' is too large for a key file", name, value, path);
        if (r < 0)
                FAIL("%s=%s: cannot read '%s': %s", name, value, path, strerror(-r));
        r = mpt_key_from_base64(buf, ret);
        explicit_bzero(buf, n);
        free(buf);
        if (r < 0)
                FAIL("%s=%s: '%s' does not hold a key: expected one line with the base64 text of "
                     "%u bytes, as `mptctl %s` prints it", name, value, path, MPT_KEY_SIZE,
                     id == MPT_KEY_TUNNEL_PRIVATE_KEY_FILE ? "genkey" : "genpsk");
        return 0;
}

/* Whether a key of a section's object is given (a key or a file name). */
static bool key_given(const void *config, MptKeyId id) {
        const void *f = (const uint8_t *) config + conf_key(id)->offset;

        return conf_key(id)->type == MPT_CONF_KEY ? ((const MptKey *) f)->set : !!*(char *const *) f;
}

/* One key of a section's object (the tunnel, a peer) from its two spellings (KEY= or KEY_FILE=:
 * value or file) into *ret. false when it failed (reported) or is not given. */
static bool resolve_key(MptProfile *p, const void *config, MptKeyId key, MptKeyId file, MptKey *ret,
                        MptDiagnostics *d) {
        SectionMeta m = section_meta(conf_key(key)->section, config);
        const char *where = file_of(p, m.key_line, m.key_src, m.line_src, file);
        unsigned line = line_of(m.key_line, file, m.line);
        _cleanup_free_ char *err = NULL;
        int r;

        explicit_bzero(ret, sizeof *ret);
        if (key_given(config, key) && key_given(config, file)) {
                diag_add(d, where, line, "%s= and %s= are both set; use one of them",
                         conf_key(key)->name, conf_key(file)->name);
                return false;
        }
        if (key_given(config, key)) {
                *ret = *(const MptKey *) ((const uint8_t *) config + conf_key(key)->offset);
                return true;
        }
        if (!key_given(config, file))
                return false;
        r = read_key_file(p, where, file, *(char *const *) ((const uint8_t *) config + conf_key(file)->offset), ret,
                          &err);
        if (r == -ENOMEM)
                d->oom = true;
        else if (r < 0)
                diag_add(d, where, line, "%s", err ?: "cannot read the key file");
        if (r < 0)
                explicit_bzero(ret, sizeof *ret);
        return r >= 0;
}

static const MptKeyId handshake_keys[] = {
        MPT_KEY_TUNNEL_PRIVATE_KEY, MPT_KEY_TUNNEL_PRIVATE_KEY_FILE, MPT_KEY_TUNNEL_PUBLIC_KEY,
        MPT_KEY_TUNNEL_PRESHARED_KEY, MPT_KEY_TUNNEL_PRESHARED_KEY_FILE,
};

#define RFILE(p, peer, id) file_of((p), (peer)->key_line, (peer)->key_src, (peer)->line_src, id)
#define RLINE(peer, id) line_of((peer)->key_line, id, (peer)->line)

/* Where another peer's key is, for a message about one in file here: "line N" in the same file
 * (as messages about paths say), "FILE:N" in another (a drop-in). NULL on OOM. */
static char *place_text(const char *here, const char *file, unsigned line) {
        char *s = NULL;

        if (streq(here, file) ? asprintf(&s, "line %u", line) < 0 : asprintf(&s, "%s:%u", file, line) < 0)
                return NULL;
        return s;
}

/* The keys of a hub: its own private key in [Tunnel], each other end's public key (and optional
 * pre-shared key) in its [Peer]. The tunnel's PublicKey= and PresharedKey= belong to the single
 * other end of a tunnel without peers: in a hub they would be ambiguous, so they are refused
 * rather than taken for a default. */
static void verify_hub_keys(MptProfile *p, MptDiagnostics *d) {
        MptTunnelConfig *t = &p->tunnel;
        uint8_t own[MPT_KEY_SIZE];
        bool priv;

        if (t->key.set || t->key_file) {
                MptKeyId kid = t->key.set ? MPT_KEY_TUNNEL_KEY : MPT_KEY_TUNNEL_KEY_FILE;

                diag_add(d, TFILE(p, kid), TLINE(p, kid),
                         "%s= is a key that every end shares; a hub ([Peer] sections) tells its peers apart by "
                         "their key pairs: set PrivateKey= here and each peer's PublicKey= in its [Peer]",
                         conf_key(kid)->name);
                return;
        }
        for (MptKeyId id = MPT_KEY_TUNNEL_PUBLIC_KEY; id <= MPT_KEY_TUNNEL_PRESHARED_KEY_FILE; id++)
                if (key_given(t, id))
                        diag_add(d, TFILE(p, id), TLINE(p, id),
                                 "%s= names the key of the one other end of a tunnel; this tunnel has [Peer] "
                                 "sections (a hub): give each peer's %s= in its [Peer] section", conf_key(id)->name,
                                 conf_key(id)->name);
        if (!key_given(t, MPT_KEY_TUNNEL_PRIVATE_KEY) && !key_given(t, MPT_KEY_TUNNEL_PRIVATE_KEY_FILE)) {
                if (!is_rejected(t->key_rejected, MPT_KEY_TUNNEL_PRIVATE_KEY) &&
                    !is_rejected(t->key_rejected, MPT_KEY_TUNNEL_PRIVATE_KEY_FILE))
                        diag_add(d, SFILE(p, &p->peers[0]), p->peers[0].line,
                                 "[Peer] sections (a hub) need PrivateKey= or PrivateKeyFile= in [%s], this end's "
                                 "private key (create one with `mptctl genkey`)",
                                 section_title(p, MPT_SECTION_TUNNEL));
                priv = false;
        } else
                priv = resolve_key(p, t, MPT_KEY_TUNNEL_PRIVATE_KEY, MPT_KEY_TUNNEL_PRIVATE_KEY_FILE,
                                   &t->hs_private, d) &&
                       mpt_noise_public_key(own, t->hs_private.bytes) == 0;

        for (size_t i = 0; i < p->n_peers; i++) {
                MptPeerConfig *peer = &p->peers[i];

                (void) resolve_key(p, peer, MPT_KEY_PEER_PRESHARED_KEY, MPT_KEY_PEER_PRESHARED_KEY_FILE,
                                   &peer->hs_psk, d);
                if (!peer->public_key.set) {
                        if (!is_rejected(peer->key_rejected, MPT_KEY_PEER_PUBLIC_KEY))
                                diag_add(d, SFILE(p, peer), peer->line,
                                         "peer '%s' needs PublicKey=, its public key (`mptctl pubkey` prints it "
                                         "from the peer's private key)", strna(peer->name));
                        continue;
                }
                if (priv && memcmp(own, peer->public_key.bytes, sizeof own) == 0)
                        diag_add(d, RFILE(p, peer, MPT_KEY_PEER_PUBLIC_KEY), RLINE(peer, MPT_KEY_PEER_PUBLIC_KEY),
                                 "peer '%s': PublicKey= is this end's own public key: give the peer's (each "
                                 "end has a key pair of its own)", strna(peer->name));
                for (size_t j = 0; j < i; j++)
                        if (p->peers[j].public_key.set &&
                            memcmp(p->peers[j].public_key.bytes, peer->public_key.bytes, MPT_KEY_SIZE) == 0) {
                                const MptPeerConfig *o = &p->peers[j];
                                const char *here = RFILE(p, peer, MPT_KEY_PEER_PUBLIC_KEY);
                                _cleanup_free_ char *first = place_text(here, RFILE(p, o, MPT_KEY_PEER_PUBLIC_KEY),
                                                                        RLINE(o, MPT_KEY_PEER_PUBLIC_KEY));

                                diag_add(d, here, RLINE(peer, MPT_KEY_PEER_PUBLIC_KEY),
                                         "peer '%s' has the PublicKey= of peer '%s' (%s): a key identifies one peer",
                                         strna(peer->name), strna(p->peers[j].name), strna(first));
                                break;
                        }
        }
        explicit_bzero(own, sizeof own);
}

/* A peer without Name= is called by its place, as a path without one is. */
static int name_peers(MptProfile *p) {
        for (size_t i = 0; i < p->n_peers; i++)
                if (!p->peers[i].name && asprintf(&p->peers[i].name, "peer%zu", i) < 0) {
                        p->peers[i].name = NULL;
                        return -ENOMEM;
                }
        return 0;
}

/* The [Peer] sections beside their keys: names, AllowedIPs= (each address of one peer), and
 * what a hub cannot have. */
static void verify_peers(MptProfile *p, MptDiagnostics *d) {
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *table = NULL;

        if (p->n_peers > MPT_PEERS_MAX) {
                diag_add(d, SFILE(p, &p->peers[MPT_PEERS_MAX]), p->peers[MPT_PEERS_MAX].line,
                         "too many peers (at most %u)", MPT_PEERS_MAX);
                return;
        }
        if (p->tunnel.mode == MPT_MODE_COMPAT) {
                diag_add(d, SFILE(p, &p->peers[0]), p->peers[0].line,
                         "[Peer] sections (a hub) need Mode=secure: the hub knows its peers by their keys");
                return;
        }
        if (p->tunnel.peers.n > 0)
                diag_add(d, TFILE(p, MPT_KEY_TUNNEL_PEER), TLINE(p, MPT_KEY_TUNNEL_PEER),
                         "Peer= is the tunnel address of the one other end of a tunnel; in a hub ([Peer] "
                         "sections) each peer's addresses are its AllowedIPs=");
        /* Every peer's paths reach the hub's from wherever they are: a Remote= would name one
         * other end, and which peer's it is nothing says. */
        for (size_t i = 0; i < p->n_paths; i++) {
                const MptPathConfig *path = &p->paths[i];

                if (!path_config_listens(path))
                        diag_add(d, PFILE(p, path, MPT_KEY_PATH_REMOTE), PLINE(path, MPT_KEY_PATH_REMOTE),
                                 "path '%s': a hub's paths listen (no Remote=): each peer's paths reach them from "
                                 "wherever they are", strna(path->name));
        }

        table = mpt_allowed_ips_new();
        if (!table) {
                d->oom = true;
                return;
        }
        for (size_t i = 0; i < p->n_peers; i++) {
                MptPeerConfig *peer = &p->peers[i];

                for (size_t j = 0; j < i; j++)
                        if (streq(p->peers[j].name, peer->name)) {
                                const char *here = RFILE(p, peer, MPT_KEY_PEER_NAME);
                                _cleanup_free_ char *first = place_text(here, SFILE(p, &p->peers[j]), p->peers[j].line);

                                diag_add(d, here, RLINE(peer, MPT_KEY_PEER_NAME),
                                         "duplicate peer name '%s' (first at %s); set a unique Name=", peer->name,
                                         strna(first));
                                break;
                        }
        }
        for (size_t i = 0; i < p->n_peers; i++) {
                const MptPeerConfig *peer = &p->peers[i];

                if (peer->allowed_ips.n == 0) {
                        if (!is_rejected(peer->key_rejected, MPT_KEY_PEER_ALLOWED_IPS))
                                diag_add(d, SFILE(p, peer), peer->line,
                                         "peer '%s' needs AllowedIPs=, the inner addresses it sends from and "
                                         "is reached at", peer->name);
                        continue;
                }
                for (size_t j = 0; j < peer->allowed_ips.n; j++) {
                        char buf[MPT_ADDRESS_STRLEN];
                        uint32_t other = 0;
                        int r = mpt_allowed_ips_add(table, &peer->allowed_ips.items[j], (uint32_t) i, &other);

                        if (r == -ENOMEM) {
                                d->oom = true;
                                return;
                        }
                        if (r == -EEXIST) {
                                /* other < i: the table holds the earlier peers only. */
                                const MptPeerConfig *o = &p->peers[other];
                                const char *here = RFILE(p, peer, MPT_KEY_PEER_ALLOWED_IPS);
                                _cleanup_free_ char *first = place_text(here, RFILE(p, o, MPT_KEY_PEER_ALLOWED_IPS),
                                                                        RLINE(o, MPT_KEY_PEER_ALLOWED_IPS));

                                diag_add(d, here, RLINE(peer, MPT_KEY_PEER_ALLOWED_IPS),
                                         "peer '%s': AllowedIPs= %s overlaps the AllowedIPs= of peer '%s' (%s): an "
                                         "address belongs to one peer", peer->name,
                                         format_list_entry(&peer->allowed_ips.items[j], buf), p->peers[other].name,
                                         strna(first));
                        } else if (r < 0) {
                                diag_add(d, RFILE(p, peer, MPT_KEY_PEER_ALLOWED_IPS),
                                         RLINE(peer, MPT_KEY_PEER_ALLOWED_IPS),
                                         "peer '%s': too many AllowedIPs= prefixes in all peers (at most %u)",
                                         peer->name, MPT_ALLOWED_IPS_MAX);
                                return;
                        }
                }
        }
}

static void verify_key(MptProfile *p, MptDiagnostics *d) {
        const MptTunnelConfig *t = &p->tunnel;
        bool rejected = is_rejected(t->key_rejected, MPT_KEY_TUNNEL_KEY) ||
                        is_rejected(t->key_rejected, MPT_KEY_TUNNEL_KEY_FILE) ||
                        is_rejected(t->key_rejected, MPT_KEY_TUNNEL_MODE);
        MptKeyId hs_given = _MPT_KEY_MAX; /* the first handshake key given */

        explicit_bzero(&p->tunnel.psk, sizeof p->tunnel.psk);
        explicit_bzero(&p->tunnel.hs_private, sizeof p->tunnel.hs_private);
        explicit_bzero(&p->tunnel.hs_psk, sizeof p->tunnel.hs_psk);
        for (size_t i = 0; i < ELEMENTSOF(handshake_keys); i++) {
                rejected = rejected || is_rejected(t->key_rejected, handshake_keys[i]);
                if (hs_given == _MPT_KEY_MAX && key_given(t, handshake_keys[i]))
                        hs_given = handshake_keys[i];
        }

        if (profile_is_hub(p) && t->mode == MPT_MODE_SECURE) {
                verify_hub_keys(p, d);
                return;
        }
        if (t->mode == MPT_MODE_COMPAT) {
                MptKeyId kid = t->key.set ? MPT_KEY_TUNNEL_KEY : t->key_file ? MPT_KEY_TUNNEL_KEY_FILE : hs_given;

                if (kid != _MPT_KEY_MAX)
                        diag_add(d, TFILE(p, kid), TLINE(p, kid),
                                 "Mode=compat sends everything in the clear and takes no key; remove %s= "
                                 "or use Mode=secure", conf_key(kid)->name);
                return;
        }
        if ((t->key.set || t->key_file) && hs_given != _MPT_KEY_MAX) {
                MptKeyId kid = t->key.set ? MPT_KEY_TUNNEL_KEY : MPT_KEY_TUNNEL_KEY_FILE;

                diag_add(d, TFILE(p, kid), TLINE(p, kid),
                         "%s= is the pre-shared key of secure mode without a handshake, and %s= asks for the "
                         "handshake: remove %s=, or give it as PresharedKey= (mixed into the handshake)",
                         conf_key(kid)->name, conf_key(hs_given)->name, conf_key(kid)->name);
                return;
        }
        if (t->key.set || t->key_file) {
                (void) resolve_key(p, t, MPT_KEY_TUNNEL_KEY, MPT_KEY_TUNNEL_KEY_FILE, &p->tunnel.psk, d);
                return;
        }
        if (hs_given != _MPT_KEY_MAX) {
                uint8_t own[MPT_KEY_SIZE];
                bool priv;

                if (!key_given(t, MPT_KEY_TUNNEL_PRIVATE_KEY) && !key_given(t, MPT_KEY_TUNNEL_PRIVATE_KEY_FILE)) {
                        /* As for a missing key below: front doors without sections (line 0, the
                         * NetworkManager plugin) ask for the secret instead (profile_lacks_key()). */
                        if (!is_rejected(t->key_rejected, MPT_KEY_TUNNEL_PRIVATE_KEY) &&
                            !is_rejected(t->key_rejected, MPT_KEY_TUNNEL_PRIVATE_KEY_FILE) && p->tunnel.line > 0)
                                diag_add(d, TFILE(p, hs_given), TLINE(p, hs_given),
                                         "%s= needs PrivateKey= or PrivateKeyFile=, this end's private key "
                                         "(create one with `mptctl genkey`)", conf_key(hs_given)->name);
                        return;
                }
                priv = resolve_key(p, t, MPT_KEY_TUNNEL_PRIVATE_KEY, MPT_KEY_TUNNEL_PRIVATE_KEY_FILE,
                                   &p->tunnel.hs_private, d);
                (void) resolve_key(p, t, MPT_KEY_TUNNEL_PRESHARED_KEY, MPT_KEY_TUNNEL_PRESHARED_KEY_FILE,
                                   &p->tunnel.hs_psk, d);
                if (!t->public_key.set) {
                        if (!is_rejected(t->key_rejected, MPT_KEY_TUNNEL_PUBLIC_KEY))
                                diag_add(d, TFILE(p, hs_given), TLINE(p, hs_given),
                                         "%s= needs PublicKey=, the other end's public key (`mptctl pubkey` "
                                         "prints it from that end's private key)", conf_key(hs_given)->name);
                } else if (priv && mpt_noise_public_key(own, p->tunnel.hs_private.bytes) == 0 &&
                           memcmp(own, t->public_key.bytes, sizeof own) == 0)
                        diag_add(d, TFILE(p, MPT_KEY_TUNNEL_PUBLIC_KEY), TLINE(p, MPT_KEY_TUNNEL_PUBLIC_KEY),
                                 "PublicKey= is this end's own public key: give the other end's (each end has a "
                                 "key pair of its own)");
                explicit_bzero(own, sizeof own);
                return;
        }
        /* A file without a tunnel section is reported as such; one message is enough. Front
         * doors without sections (line 0) must still call this with tunnel.line set. */
        if (!rejected && p->tunnel.line > 0)
                diag_add(d, TFILE(p, MPT_KEY_TUNNEL_MODE), TLINE(p, MPT_KEY_TUNNEL_MODE),
                         "secure mode needs keys: PrivateKey= and PublicKey= (a key pair per end: `mptctl "
                         "genkey`, `mptctl pubkey`), or a pre-shared Key= or KeyFile= (`mptctl genpsk`); or "
                         "Mode=compat for original MPT peers");
}

bool profile_lacks_key(const MptProfile *p) {
        return p->tunnel.mode == MPT_MODE_SECURE && !p->tunnel.psk.set && !p->tunnel.hs_private.set;
}

bool profile_uses_handshake(const MptProfile *p) {
        return p->tunnel.mode == MPT_MODE_SECURE && p->tunnel.hs_private.set;
}

int profile_verify(MptProfile *p, MptDiagnostics *d) {
        const char *file = p->filename ?: "<input>";
        size_t errors = diag_count(d);
        bool has_v6 = false;

        if (!p->tunnel.name && !is_rejected(p->tunnel.key_rejected, MPT_KEY_TUNNEL_NAME)) {
                p->tunnel.name = default_tunnel_name(p->filename);
                if (!p->tunnel.name)
                        diag_add(d, SFILE(p, &p->tunnel), p->tunnel.line,
                                 "no tunnel name: set Name= in [%s] (the file name is not a valid name)",
                                 section_title(p, MPT_SECTION_TUNNEL));
        }

        if (name_peers(p) < 0) {
                d->oom = true;
                return -ENOMEM;
        }
        verify_key(p, d);

        /* The learned scheduler needs the other end's feedback, which only secure mode carries
         * (an original MPT peer sends none, and nothing unauthenticated may move traffic). */
        if (p->tunnel.mode == MPT_MODE_COMPAT && p->tunnel.scheduler == MPT_SCHEDULER_LEARNED) {
                if (IS_SET(p->tunnel.key_line, MPT_KEY_TUNNEL_SCHEDULER))
                        diag_add(d, TFILE(p, MPT_KEY_TUNNEL_SCHEDULER), TLINE(p, MPT_KEY_TUNNEL_SCHEDULER),
                                 "Scheduler=learned needs the other end's feedback, which only secure mode "
                                 "carries: use Scheduler=weighted (with Weight=) in compat mode");
                else
                        p->tunnel.scheduler = MPT_SCHEDULER_WEIGHTED;
        }

        for (size_t i = 0; i < p->tunnel.addresses.n; i++)
                if (p->tunnel.addresses.items[i].family == AF_INET6)
                        has_v6 = true;
        if (has_v6 && p->tunnel.mtu != 0 && p->tunnel.mtu < MPT_IPV6_MIN_MTU)
                diag_add(d, TFILE(p, MPT_KEY_TUNNEL_MTU), TLINE(p, MPT_KEY_TUNNEL_MTU),
                         "MTU=%u is below %u, the minimum for a tunnel with an IPv6 address", p->tunnel.mtu,
                         MPT_IPV6_MIN_MTU);

        for (int family = AF_INET; family <= AF_INET6; family += AF_INET6 - AF_INET) {
                size_t n = 0;
                for (size_t i = 0; i < p->tunnel.peers.n; i++)
                        if (p->tunnel.peers.items[i].family == family)
                                n++;
                if (n > 1)
                        diag_add(d, TFILE(p, MPT_KEY_TUNNEL_PEER), TLINE(p, MPT_KEY_TUNNEL_PEER), "more than one %s Peer= address",
                                 family == AF_INET ? "IPv4" : "IPv6");
        }
        for (size_t i = 0; i < p->tunnel.peers.n; i++) {
                const MptPrefix *pf = &p->tunnel.peers.items[i];
                if (pf->prefixlen != family_address_size(pf->family) * 8)
                        diag_add(d, TFILE(p, MPT_KEY_TUNNEL_PEER), TLINE(p, MPT_KEY_TUNNEL_PEER), "Peer= takes an address without a prefix length");
        }

        if (p->tunnel.firewall_mark != 0 && !p->tunnel.firewall)
                diag_add(d, TFILE(p, MPT_KEY_TUNNEL_FIREWALL_MARK), TLINE(p, MPT_KEY_TUNNEL_FIREWALL_MARK), "FirewallMark= needs Firewall=yes");

        if (p->n_paths == 0)
                diag_add(d, file, 0, "no [%s] section: a tunnel needs at least one path",
                         section_title(p, MPT_SECTION_PATH));
        if (p->n_paths > MPT_PATHS_MAX)
                diag_add(d, SFILE(p, &p->paths[MPT_PATHS_MAX]), p->paths[MPT_PATHS_MAX].line, "too many paths (at most %u)", MPT_PATHS_MAX);

        for (size_t i = 0; i < p->n_paths; i++) {
                MptPathConfig *path = &p->paths[i];

                if (!path->name) {
                        /* Interface names may hold characters that object names may not. */
                        if (path->interface && object_name_valid(path->interface))
                                path->name = strdup(path->interface);
                        else
                                (void) asprintf(&path->name, "path%zu", i);
                        if (!path->name) {
                                d->oom = true;
                                return -ENOMEM;
                        }
                }

                if (!address_is_set(&path->remote) && !is_rejected(path->key_rejected, MPT_KEY_PATH_REMOTE)) {
                        /* A listening path: only authenticated traffic may tell where the other
                         * end is, and the socket's family and address must be known. */
                        if (p->tunnel.mode != MPT_MODE_SECURE)
                                diag_add(d, SFILE(p, path), path->line,
                                         "path '%s' has no Remote= address (only a secure tunnel, Mode=secure, "
                                         "may leave it out and learn the other end's address)",
                                         path->name);
                        else if (!address_is_set(&path->local) &&
                                 !is_rejected(path->key_rejected, MPT_KEY_PATH_LOCAL_ADDRESS))
                                diag_add(d, SFILE(p, path), path->line,
                                         "path '%s' has no Remote= address (a path without one listens for the "
                                         "other end, and then needs LocalAddress=: the address it is reached at)",
                                         path->name);
                        else if (path->pin_remote)
                                diag_add(d, PFILE(p, path, MPT_KEY_PATH_PIN_REMOTE), PLINE(path, MPT_KEY_PATH_PIN_REMOTE),
                                         "path '%s': PinRemote=yes needs Remote= (a path without it learns "
                                         "where the other end is)",
                                         path->name);
                }
                if (path->interface && p->tunnel.name && streq(path->interface, p->tunnel.name))
                        diag_add(d, PFILE(p, path, MPT_KEY_PATH_INTERFACE), PLINE(path, MPT_KEY_PATH_INTERFACE),
                                 "path '%s': Interface=%s is the tunnel's own interface", path->name, path->interface);
                if (!path->interface && !address_is_set(&path->local) &&
                    !is_rejected(path->key_rejected, MPT_KEY_PATH_INTERFACE) &&
                    !is_rejected(path->key_rejected, MPT_KEY_PATH_LOCAL_ADDRESS))
                        diag_add(d, SFILE(p, path), path->line, "path '%s' needs Interface= or LocalAddress=", path->name);
                if (address_is_set(&path->local) && address_is_set(&path->remote) &&
                    path->local.family != path->remote.family)
                        diag_add(d, PFILE(p, path, MPT_KEY_PATH_LOCAL_ADDRESS), PLINE(path, MPT_KEY_PATH_LOCAL_ADDRESS),
                                 "path '%s': LocalAddress= is %s but Remote= is %s", path->name,
                                 path->local.family == AF_INET ? "IPv4" : "IPv6",
                                 path->remote.family == AF_INET ? "IPv4" : "IPv6");

                if (!IS_SET(path->key_line, MPT_KEY_PATH_DEAD_TIME))
                        path->dead_time = MPT_DEAD_TIME_KEEPALIVES * path->keepalive_interval;
                else if (path->dead_time > 0 && path->keepalive_interval == 0)
                        diag_add(d, PFILE(p, path, MPT_KEY_PATH_DEAD_TIME), PLINE(path, MPT_KEY_PATH_DEAD_TIME),
                                 "path '%s': DeadTime= needs keepalives, but KeepaliveInterval=0", path->name);
                else if (path->dead_time > 0 && path->dead_time <= path->keepalive_interval)
                        diag_add(d, PFILE(p, path, MPT_KEY_PATH_DEAD_TIME), PLINE(path, MPT_KEY_PATH_DEAD_TIME),
                                 "path '%s': DeadTime= must be longer than KeepaliveInterval=", path->name);

                for (size_t j = 0; j < i; j++) {
                        const MptPathConfig *o = &p->paths[j];
                        if (o->name && streq(o->name, path->name))
                                diag_add(d, PFILE(p, path, MPT_KEY_PATH_NAME), PLINE(path, MPT_KEY_PATH_NAME),
                                         "duplicate path name '%s' (first at line %u); set a unique Name=",
                                         path->name, o->line);
                        else if (!path_config_listens(path) &&
                                 streq(strempty(o->interface), strempty(path->interface)) &&
                                 address_equal(&o->local, &path->local) &&
                                 address_equal(&o->remote, &path->remote) &&
                                 path_config_remote_port(p, o) == path_config_remote_port(p, path))
                                diag_add(d, SFILE(p, path), path->line,
                                         "path '%s' duplicates path '%s' (same interface, local and remote "
                                         "address and port)", path->name, o->name);
                }
        }

        /* Policy=: the paths a pinned rule names, as bits of their indexes. */
        for (size_t i = 0; i < p->tunnel.policy.n; i++) {
                MptPolicyRule *rule = &p->tunnel.policy.items[i];
                rule->paths = 0;
                for (unsigned j = 0; j < rule->n_paths; j++) {
                        size_t k;
                        for (k = 0; k < p->n_paths; k++)
                                if (p->paths[k].name && streq(p->paths[k].name, rule->path_names[j]))
                                        break;
                        if (k < p->n_paths && k < sizeof rule->paths * CHAR_BIT)
                                rule->paths |= UINT64_C(1) << k;
                        else
                                diag_add(d, profile_file_name(p, rule->line_src), rule->line,
                                         "Policy= names path '%s', which this tunnel does not have", rule->path_names[j]);
                }
        }

        if (profile_is_hub(p)) {
                /* After the paths: they have their names now. */
                verify_peers(p, d);
                /* The format is settled and checked; mptd's data plane for many peers is not
                 * there yet. Refused here, so that no front door (mptd, a reload, the generator,
                 * a NetworkManager import) takes a hub for a tunnel with one other end. */
                diag_add(d, SFILE(p, &p->peers[0]), p->peers[0].line,
                         "[%s] sections (a hub: many peers on one tunnel) are not supported yet: this "
                         "version checks them but cannot run them", section_title(p, MPT_SECTION_PEER));
        }

        return diag_count(d) > errors || d->oom ? -EINVAL : 0;
}

/* A [Path] or [Peer] section of a drop-in, kept until it ends: its Name= decides which path or
 * peer it changes. */
typedef struct PendingKey {
        char *key, *value;
        unsigned line;
} PendingKey;

typedef struct ParseState {
        MptProfile *profile;
        MptSection section;
        size_t path_index;
        size_t peer_index;
        bool seen_tunnel;
        bool dropin;
        const char *file; /* for messages */
        unsigned pending_line; /* of the pending [Path] or [Peer] header; 0: none */
        MptSection pending_section;
        PendingKey *pending;
        size_t n_pending;
} ParseState;

/* The name a path has or will have (profile_verify() gives one to a path without Name=). */
static char *path_name_of(const MptPathConfig *path, size_t index) {
        char *s = NULL;

        if (path->name)
                return strdup(path->name);
        if (path->interface && object_name_valid(path->interface))
                return strdup(path->interface);
        return asprintf(&s, "path%zu", index) < 0 ? NULL : s;
}

static void pending_clear(ParseState *s) {
        for (size_t i = 0; i < s->n_pending; i++) {
                free(s->pending[i].key);
                free(s->pending[i].value);
        }
        s->pending = mfree(s->pending);
        s->n_pending = 0;
        s->pending_line = 0;
}

/* The name a peer has or will have (name_peers()). */
static char *peer_name_of(const MptPeerConfig *peer, size_t index) {
        char *s = NULL;

        if (peer->name)
                return strdup(peer->name);
        return asprintf(&s, "peer%zu", index) < 0 ? NULL : s;
}

/* A drop-in's [Path] or [Peer] section ended: it changes the path or peer of its Name= (or of the
 * name that one gets by default), else it adds one. */
static void pending_flush(ParseState *s, MptDiagnostics *d) {
        MptProfile *p = s->profile;
        bool peer = s->pending_section == MPT_SECTION_PEER;
        size_t n_objects = peer ? p->n_peers : p->n_paths;
        const char *name = NULL;
        size_t target = SIZE_MAX;

        if (s->pending_line == 0)
                return;
        for (size_t i = 0; i < s->n_pending; i++)
                if (conf_key_lookup(s->pending_section, s->pending[i].key) ==
                            conf_key(peer ? MPT_KEY_PEER_NAME : MPT_KEY_PATH_NAME) &&
                    !isempty(s->pending[i].value))
                        name = s->pending[i].value;
        for (size_t i = 0; name && i < n_objects && target == SIZE_MAX; i++) {
                _cleanup_free_ char *n = peer ? peer_name_of(&p->peers[i], i) : path_name_of(&p->paths[i], i);
                if (!n) {
                        d->oom = true;
                        break;
                }
                if (streq(n, name))
                        target = i;
        }
        if (target == SIZE_MAX && !d->oom) {
                void *added = peer ? (void *) profile_add_peer(p, s->pending_line)
                                   : (void *) profile_add_path(p, s->pending_line);
                if (!added)
                        d->oom = true;
                else
                        target = (peer ? p->n_peers : p->n_paths) - 1;
        }
        for (size_t i = 0; target != SIZE_MAX && i < s->n_pending; i++)
                (void) profile_assign(p, s->pending_section,
                                      peer ? (void *) &p->peers[target] : (void *) &p->paths[target],
                                      s->pending[i].key, s->pending[i].value, s->file, s->pending[i].line, d);
        pending_clear(s);
}

static bool on_section(void *userdata, const char *section, unsigned line, MptDiagnostics *d) {
        ParseState *s = userdata;
        MptSection sec = mpt_section_from_string(section);

        if (s->dropin)
                pending_flush(s, d);

        if (sec < 0) {
                unsigned dist;
                const char *hint = conf_section_closest(NULL, section, &dist);
                if (dist <= CONF_SECTION_HINT_DISTANCE)
                        diag_add(d, s->file, line, "unknown section [%s]; did you mean [%s]?", section, hint);
                else
                        diag_add(d, s->file, line, "unknown section [%s]; expected [Tunnel], [Path] or [Peer]",
                                 section);
                return false;
        }

        s->section = sec;
        if (s->dropin) {
                /* [Tunnel] goes on with the profile's; a [Path] or [Peer] waits for its end. */
                if (sec != MPT_SECTION_TUNNEL) {
                        s->pending_line = line;
                        s->pending_section = sec;
                }
                return true;
        }
        if (sec == MPT_SECTION_TUNNEL) {
                if (s->seen_tunnel) {
                        diag_add(d, s->file, line,
                                 "second [Tunnel] section (the first is at line %u); a profile describes one tunnel",
                                 s->profile->tunnel.line);
                        return false;
                }
                s->seen_tunnel = true;
                s->profile->tunnel.line = line;
                return true;
        }

        if (sec == MPT_SECTION_PEER) {
                if (!profile_add_peer(s->profile, line)) {
                        d->oom = true;
                        return false;
                }
                s->peer_index = s->profile->n_peers - 1;
                return true;
        }
        if (!profile_add_path(s->profile, line)) {
                d->oom = true;
                return false;
        }
        s->path_index = s->profile->n_paths - 1;
        return true;
}

static void on_assignment(void *userdata, const char *section, const char *key, const char *value,
                          unsigned line, MptDiagnostics *d) {
        ParseState *s = userdata;
        (void) section;

        if (s->dropin && s->section != MPT_SECTION_TUNNEL && s->section >= 0) {
                PendingKey *n = reallocarray(s->pending, s->n_pending + 1, sizeof(PendingKey));
                if (!n) {
                        d->oom = true;
                        return;
                }
                s->pending = n;
                n[s->n_pending] = (PendingKey) { .key = strdup(key), .value = strdup(value), .line = line };
                if (!n[s->n_pending].key || !n[s->n_pending].value) {
                        free(n[s->n_pending].key);
                        free(n[s->n_pending].value);
                        d->oom = true;
                        return;
                }
                s->n_pending++;
                return;
        }
        (void) profile_assign(s->profile, s->section,
                              s->section == MPT_SECTION_PATH   ? (void *) &s->profile->paths[s->path_index]
                              : s->section == MPT_SECTION_PEER ? (void *) &s->profile->peers[s->peer_index]
                                                               : NULL,
                              key, value, s->file, line, d);
}

static const ConfCallbacks profile_callbacks = {
        .section = on_section,
        .assignment = on_assignment,
};

/* The rank of a problem's file for diag_sort_by_line(): the profile, then its drop-ins in order. */
static size_t file_rank(const char *file, const void *userdata) {
        const MptProfile *p = userdata;

        for (size_t i = 0; i < p->n_dropins; i++)
                if (streq(file, p->dropins[i]))
                        return i + 1;
        return 0;
}

/* The group of the "mpt" user (profile_file_mode()), looked up once. */
static gid_t service_gid = (gid_t) -1;
static bool looked_up;

void profile_set_service_gid(gid_t gid) {
        service_gid = gid;
        looked_up = true;
}

uint32_t profile_file_mode(const struct stat *st) {
        uint32_t mode = st->st_mode & 07777;

        if (!looked_up) {
                struct group *g = getgrnam("mpt");
                if (g)
                        service_gid = g->gr_gid;
                looked_up = true;
        }
        if (st->st_gid == service_gid)
                mode |= MPT_FILE_SERVICE_GROUP;
        return mode;
}

/* Parses a drop-in into p (p->cur_file set): -errno if it cannot be read. A file that is empty
 * or /dev/null (a link to it) hides a drop-in of that name in a later directory, and adds
 * nothing. */
static int parse_dropin(MptProfile *p, const char *path, MptDiagnostics *d) {
        _cleanup_free_ char *buf = NULL;
        ParseState s = { .profile = p, .dropin = true, .file = path, .section = _MPT_SECTION_INVALID };
        struct stat st;
        size_t size;
        int r;

        if (stat(path, &st) == 0 && S_ISCHR(st.st_mode))
                return 0; /* /dev/null: masked */
        r = read_full_file_full(path, CONF_FILE_MAX, READ_FULL_FILE_REGULAR, &buf, &size, &st);
        if (r < 0)
                return r;
        p->dropin_modes[p->cur_file - 1] = profile_file_mode(&st);
        conf_parse_buffer(path, buf, size, &profile_callbacks, &s, d);
        pending_flush(&s, d);
        pending_clear(&s);
        return 0;
}

/* Loads a profile from buf and then its drop-ins (paths, taken over by the profile). */
static int load(const char *filename, const char *buf, size_t len, char **dropins, size_t n_dropins,
                MptProfile **ret, MptDiagnostics *d) {
        _cleanup_(profile_freep) MptProfile *p = NULL;
        ParseState s = {};
        size_t errors = diag_count(d), first = d->n;

        p = profile_new();
        if (!p) {
                for (size_t i = 0; i < n_dropins; i++)
                        free(dropins[i]);
                free(dropins);
                return -ENOMEM;
        }
        p->dropins = dropins;
        p->n_dropins = n_dropins;
        p->filename = strdup(filename ?: "<input>");
        if (!p->filename)
                return -ENOMEM;
        if (n_dropins > 0) {
                p->dropin_modes = calloc(n_dropins, sizeof(uint32_t));
                if (!p->dropin_modes)
                        return -ENOMEM;
        }
        s.profile = p;
        s.file = p->filename;

        conf_parse_buffer(p->filename, buf, len, &profile_callbacks, &s, d);
        for (size_t i = 0; i < p->n_dropins && !d->oom; i++) {
                int r;

                p->cur_file = (uint8_t) (i + 1);
                r = parse_dropin(p, p->dropins[i], d);
                if (r == -ENOMEM)
                        d->oom = true;
                else if (r < 0)
                        diag_add(d, p->dropins[i], 0, "cannot read this drop-in: %s",
                                 r == -EBADFD ? "not a regular file" : strerror(-r));
        }
        p->cur_file = 0;
        if (d->oom)
                return -ENOMEM;
        if (!s.seen_tunnel && (p->n_paths > 0 || p->n_peers > 0))
                diag_add(d, p->filename, 0, "no [Tunnel] section");
        if (!s.seen_tunnel && p->n_paths == 0 && p->n_peers == 0) {
                /* Nothing to verify: say it once. */
                if (diag_count(d) == errors)
                        diag_add(d, p->filename, 0, "no [Tunnel] and no [Path] section: not an mpt profile");
        } else
                (void) profile_verify(p, d);
        diag_sort_by_line(d, first, file_rank, p);
        if (d->oom)
                return -ENOMEM;
        if (diag_count(d) > errors)
                return -EINVAL;
        *ret = TAKE_PTR(p);
        return 0;
}

int profile_load_buffer(const char *filename, const char *buf, size_t len, MptProfile **ret, MptDiagnostics *d) {
        return load(filename, buf, len, NULL, 0, ret, d);
}

int profile_load_file_dirs(const char *filename, const char *const *dirs, MptProfile **ret, MptDiagnostics *d) {
        _cleanup_free_ char *buf = NULL;
        char **dropins = NULL;
        size_t n_dropins = 0;
        struct stat st;
        size_t size;
        int r;

        /* A regular file (mptd reads it again on a reload, in its event loop). */
        r = read_full_file_full(filename, CONF_FILE_MAX, READ_FULL_FILE_REGULAR, &buf, &size, &st);
        if (r < 0)
                return r;
        r = conf_find_dropins(filename, dirs, &dropins, &n_dropins);
        if (r < 0)
                return r;
        if (n_dropins > MPT_DROPINS_MAX) {
                diag_add(d, filename, 0, "%zu drop-ins; at most %u are read", n_dropins, MPT_DROPINS_MAX);
                for (size_t i = 0; i < n_dropins; i++)
                        free(dropins[i]);
                free(dropins);
                return -EINVAL;
        }
        r = load(filename, buf, size, dropins, n_dropins, ret, d);
        if (r >= 0)
                (*ret)->file_mode = profile_file_mode(&st);
        return r;
}

int profile_load_file(const char *filename, MptProfile **ret, MptDiagnostics *d) {
        _cleanup_free_ char *copy = strdup(filename), *real_dir = NULL;
        const char *dir;

        if (!copy)
                return -ENOMEM;
        dir = dirname(copy);
        real_dir = realpath(dir, NULL);
        /* A profile of the system's (in MPT_SYSCONFDIR): drop-ins there, in /run and in /usr/lib,
         * as systemd has them for units. Elsewhere: next to the file. */
        if (real_dir && streq(real_dir, MPT_SYSCONFDIR))
                return profile_load_file_dirs(filename,
                                              (const char *const[]) { MPT_SYSCONFDIR, "/run/mpt", "/usr/lib/mpt", NULL },
                                              ret, d);
        return profile_load_file_dirs(filename, (const char *const[]) { dir, NULL }, ret, d);
}

/* The secrets of one section's object (the tunnel, a peer) for profile_check_key_private(). */
static bool check_section_keys_private(const MptProfile *p, MptSection section, const void *config, MptDiagnostics *d) {
        SectionMeta m = section_meta(section, config);
        bool found = false;

        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                MptKeyId id = (MptKeyId) i;

                if (k->section != section || !(k->flags & MPT_CONF_SECRET) || k->type != MPT_CONF_KEY ||
                    !((const MptKey *) field_cptr(k, config))->set)
                        continue;

                uint8_t src = m.key_src[conf_key_index(k)];
                uint32_t mode = src > 0 && src <= p->n_dropins ? p->dropin_modes[src - 1] : p->file_mode;
                /* networkd reads a .netdev through its group (systemd.netdev(5) has the same advice for
                 * the keys of WireGuard). */
                uint32_t exposed = mode & (p->from_netdev || (mode & MPT_FILE_SERVICE_GROUP) ? S_IROTH
                                                                                            : S_IRGRP | S_IROTH);
                const char *what = id == MPT_KEY_TUNNEL_KEY           ? "the tunnel's secret key"
                                   : id == MPT_KEY_TUNNEL_PRIVATE_KEY ? "this end's private key"
                                   : id == MPT_KEY_PEER_PRESHARED_KEY ? "a peer's pre-shared key"
                                                                      : "the tunnel's pre-shared key";
                const char *where = file_of(p, m.key_line, m.key_src, m.line_src, id);
                unsigned line = line_of(m.key_line, id, m.line);
                const char *who = exposed == (S_IRGRP | S_IROTH) ? "its group and others"
                                  : exposed == S_IRGRP           ? "its group"
                                                                 : "others";

                if (exposed == 0)
                        continue;
                if (p->from_netdev)
                        diag_add(d, where, line,
                                 "%s= holds %s, and %s can read this file (mode %04o): make it readable "
                                 "by root and systemd-networkd only (chmod 640, group systemd-network), or move "
                                 "the key to %sFile=", k->name, what, who, (unsigned) (mode & 07777), k->name);
                else
                        diag_add(d, where, line,
                                 "%s= holds %s, and %s can read this file (mode %04o): make it private "
                                 "(chmod 600; or chmod 640 and chown root:mpt, for mptd@.service, which runs mptd as "
                                 "user mpt), or move the key to %sFile=", k->name, what, who, (unsigned) (mode & 07777),
                                 k->name);
                found = true;
        }
        return found;
}

bool profile_check_key_private(const MptProfile *p, MptDiagnostics *d) {
        /* Every secret given in a file (Key=, PrivateKey=, PresharedKey=): the profile, or a drop-in. */
        bool found = check_section_keys_private(p, MPT_SECTION_TUNNEL, &p->tunnel, d);

        for (size_t i = 0; i < p->n_peers; i++)
                found = check_section_keys_private(p, MPT_SECTION_PEER, &p->peers[i], d) || found;
        return found;
}

int profile_format_value(const MptConfKey *k, const void *config, char **ret) {
        const void *f = field_cptr(k, config);
        char buf[MPT_ADDRESS_STRLEN + 32];
        char *s = NULL;

        switch (k->type) {
        case MPT_CONF_NAME:
        case MPT_CONF_IFNAME:
        case MPT_CONF_PATH:
                s = strdup(strempty(*(char *const *) f));
                break;
        case MPT_CONF_MODE:
                s = strdup(strempty(mpt_mode_to_string(*(const MptMode *) f)));
                break;
        case MPT_CONF_KEY: {
                char b64[MPT_KEY_BASE64_LEN + 1];
                s = strdup(((const MptKey *) f)->set ? mpt_key_to_base64(f, b64) : "");
                explicit_bzero(b64, sizeof b64);
                break;
        }
        case MPT_CONF_ADDRESS:
                s = strdup(address_is_set(f) ? address_to_string(f, buf) : "");
                break;
        case MPT_CONF_PREFIX_LIST: {
                const MptPrefixList *l = f;
                size_t pos = 0;
                s = malloc(l->n * (MPT_ADDRESS_STRLEN + 1) + 1);
                if (!s)
                        return -ENOMEM;
                s[0] = 0;
                for (size_t i = 0; i < l->n; i++)
                        pos += (size_t) sprintf(s + pos, "%s%s", i > 0 ? " " : "", format_list_entry(&l->items[i], buf));
                break;
        }
        case MPT_CONF_POLICY_LIST: {
                const MptPolicyList *l = f;
                size_t pos = 0;
                s = strdup("");
                for (size_t i = 0; s && i < l->n; i++) {
                        _cleanup_free_ char *rule = mpt_policy_format(&l->items[i]);
                        char *grown;
                        if (!rule)
                                return free(s), -ENOMEM;
                        grown = realloc(s, pos + strlen(rule) + 3);
                        if (!grown)
                                return free(s), -ENOMEM;
                        s = grown;
                        pos += (size_t) sprintf(s + pos, "%s%s", i > 0 ? "; " : "", rule);
                }
                break;
        }
        case MPT_CONF_PORT:
                snprintf(buf, sizeof buf, "%u", *(const uint16_t *) f);
                s = strdup(*(const uint16_t *) f ? buf : "");
                break;
        case MPT_CONF_UINT32:
                if (*(const uint32_t *) f == 0 && (k->flags & MPT_CONF_AUTO))
                        s = strdup("auto");
                else {
                        snprintf(buf, sizeof buf, "%" PRIu32, *(const uint32_t *) f);
                        s = strdup(buf);
                }
                break;
        case MPT_CONF_DURATION:
                s = strdup(format_duration(*(const usec_t *) f, buf, sizeof buf));
                break;
        case MPT_CONF_BOOL:
                s = strdup(*(const bool *) f ? "yes" : "no");
                break;
        case MPT_CONF_SCHEDULER:
                s = strdup(strempty(mpt_scheduler_to_string(*(const MptScheduler *) f)));
                break;
        case MPT_CONF_PERCENT: {
                uint32_t v = *(const uint32_t *) f;
                if (v % 10 == 0)
                        snprintf(buf, sizeof buf, "%" PRIu32 "%%", v / 10);
                else
                        snprintf(buf, sizeof buf, "%" PRIu32 ".%" PRIu32 "%%", v / 10, v % 10);
                s = strdup(buf);
                break;
        }
        default:
                assert(false);
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int profile_format_value_shown(const MptConfKey *k, const void *config, char **ret) {
        if (k->flags & MPT_CONF_SECRET) {
                char *s = strdup(k->type == MPT_CONF_KEY && ((const MptKey *) field_cptr(k, config))->set ? "(hidden)" : "");
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }
        return profile_format_value(k, config, ret);
}

int profile_foreach_key(const MptProfile *p, size_t path_index, unsigned flags, ProfileKeyFunc f, void *userdata) {
        return profile_foreach_section_key(p, path_index == SIZE_MAX ? MPT_SECTION_TUNNEL : MPT_SECTION_PATH,
                                           path_index, flags, f, userdata);
}

int profile_foreach_section_key(const MptProfile *p, MptSection section, size_t index, unsigned flags,
                                ProfileKeyFunc f, void *userdata) {
        const void *config = section == MPT_SECTION_PATH   ? (const void *) &p->paths[index]
                             : section == MPT_SECTION_PEER ? (const void *) &p->peers[index]
                                                           : (const void *) &p->tunnel;
        const unsigned *key_line = section_meta(section, config).key_line;

        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                char *v = NULL;
                int r;

                if (k->section != section)
                        continue;
                if (key_line[conf_key_index(k)] > 0 || k == conf_key(MPT_KEY_TUNNEL_NAME) ||
                    ((k == conf_key(MPT_KEY_PATH_NAME) || k == conf_key(MPT_KEY_PEER_NAME)) &&
                     (flags & PROFILE_KEYS_PATH_NAMES))) {
                        r = profile_format_value(k, config, &v);
                        if (r < 0)
                                return r;
                }
                r = f(k, config, v, userdata);
                if (v) {
                        explicit_bzero(v, strlen(v));
                        free(v);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

typedef struct TextWriter {
        FILE *f;
        ProfileTextOverride override;
        void *userdata;
        size_t index; /* of the path or peer; SIZE_MAX: the tunnel */
} TextWriter;

static int write_key(const MptConfKey *k, const void *config, const char *value, void *userdata) {
        TextWriter *w = userdata;

        if (w->override) {
                _cleanup_free_ char *v = NULL;
                int r = w->override(k, w->index, w->userdata, &v);
                if (r < 0)
                        return r;
                if (r > 0) {
                        /* The caller's value, or (NULL) none. */
                        if (v)
                                fprintf(w->f, "%s=%s\n", k->name, v);
                        return 0;
                }
        }
        if (isempty(value))
                return 0;
        if (k->type == MPT_CONF_PREFIX_LIST) {
                /* One entry per line reads better than one long line. */
                const MptPrefixList *l = field_cptr(k, config);
                char buf[MPT_ADDRESS_STRLEN];
                for (size_t j = 0; j < l->n; j++)
                        fprintf(w->f, "%s=%s\n", k->name, format_list_entry(&l->items[j], buf));
        } else if (k->type == MPT_CONF_POLICY_LIST) {
                const MptPolicyList *l = field_cptr(k, config);
                for (size_t j = 0; j < l->n; j++) {
                        _cleanup_free_ char *rule = mpt_policy_format(&l->items[j]);
                        if (!rule)
                                return -ENOMEM;
                        fprintf(w->f, "%s=%s\n", k->name, rule);
                }
        } else
                fprintf(w->f, "%s=%s\n", k->name, value);
        return 0;
}

/* A section's header and keys: what was set explicitly, and always the name (a path's or peer's
 * derived one too, so that the text names each as the profile does). */
static int write_section(const MptProfile *p, MptSection section, size_t index, ProfileTextOverride override,
                         void *userdata, FILE *f) {
        TextWriter w = { .f = f, .override = override, .userdata = userdata, .index = index };

        fprintf(f, "[%s]\n", mpt_section_to_string(section));
        return profile_foreach_section_key(p, section, index, PROFILE_KEYS_PATH_NAMES, write_key, &w);
}

int profile_to_text(const MptProfile *p, char **ret) {
        return profile_to_text_with(p, NULL, NULL, ret);
}

int profile_to_text_with(const MptProfile *p, ProfileTextOverride override, void *userdata, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        r = write_section(p, MPT_SECTION_TUNNEL, SIZE_MAX, override, userdata, f);
        for (size_t i = 0; r >= 0 && i < p->n_paths; i++) {
                fputc('\n', f);
                r = write_section(p, MPT_SECTION_PATH, i, override, userdata, f);
        }
        for (size_t i = 0; r >= 0 && i < p->n_peers; i++) {
                fputc('\n', f);
                r = write_section(p, MPT_SECTION_PEER, i, override, userdata, f);
        }
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}

const MptPathConfig *profile_find_path(const MptProfile *p, const char *name) {
        for (size_t i = 0; i < p->n_paths; i++)
                if (p->paths[i].name && streq(p->paths[i].name, name))
                        return &p->paths[i];
        return NULL;
}

const MptPeerConfig *profile_find_peer(const MptProfile *p, const char *name) {
        for (size_t i = 0; i < p->n_peers; i++)
                if (p->peers[i].name && streq(p->peers[i].name, name))
                        return &p->peers[i];
        return NULL;
}

uint16_t path_config_remote_port(const MptProfile *p, const MptPathConfig *path) {
        return path->remote_port ?: p->tunnel.remote_port;
}

bool path_config_is_set(const MptPathConfig *path, MptKeyId id) {
        assert(conf_key(id)->section == MPT_SECTION_PATH);
        return path->key_line[conf_key_index(conf_key(id))] > 0;
}

bool path_config_is_backup(const MptPathConfig *path, int devclass) {
        if (path_config_is_set(path, MPT_KEY_PATH_BACKUP))
                return path->backup || path->weight == 0;
        if (path_config_is_set(path, MPT_KEY_PATH_WEIGHT))
                return path->weight == 0;
        /* Cellular links are usually metered: keep them for when nothing else works. */
        return devclass == MPT_DEVCLASS_WWAN;
}

bool profile_uses_sequence(const MptProfile *p) {
        return p->tunnel.reorder_window > 0 && p->tunnel.scheduler != MPT_SCHEDULER_FLOW;
}

/* The outer headers: IPv4 without options (RFC 791), IPv6 (RFC 8200), UDP (RFC 768); GRE's flags
 * and protocol (RFC 2784) and its sequence number (RFC 2890). */
#define IPV4_HEADER_SIZE 20u
#define IPV6_HEADER_SIZE 40u
#define UDP_HEADER_SIZE 8u
#define GRE_HEADER_SIZE 4u
#define GRE_SEQUENCE_SIZE 4u

unsigned profile_path_overhead(const MptProfile *p, const MptPathConfig *path) {
        unsigned ip = path_config_family(path) == AF_INET6 ? IPV6_HEADER_SIZE : IPV4_HEADER_SIZE;
        return ip + UDP_HEADER_SIZE + (p->tunnel.mode == MPT_MODE_SECURE ? MPT_SECURE_OVERHEAD : 0) + GRE_HEADER_SIZE +
               (profile_uses_sequence(p) ? GRE_SEQUENCE_SIZE : 0);
}
