/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* NetworkManager's vpn.data / vpn.secrets of an mpt connection <-> the mpt profile model.
 *
 * Everything goes through the one key table (src/shared/profile-keys.c) and profile_assign() /
 * profile_verify(): the same key names, value syntax, limits and messages as a native profile
 * file and `mptctl check`. Only the location differs. The flat vpn.data naming is:
 *
 *   KEY            a [Tunnel] key, e.g. "Address", "LocalPort", "MTU"
 *   PathN.KEY      a key of the N-th [Path] section, N = 0..63 in decimal without leading zeros,
 *                  e.g. "Path0.Interface", "Path1.Remote"; paths are taken in the order of N
 *                  (gaps are allowed), a path exists when it has at least one key
 *   Key-flags      NMSettingSecretFlags of the secret "Key" (NetworkManager's convention)
 *
 *   vpn.secrets:   Key  the pre-shared key, or with the handshake PrivateKey (this end's
 *                       private key) and optionally PresharedKey (any [Tunnel] key that is a
 *                       secret, see mpt_nm_key_is_secret()); never in vpn.data
 *
 * A list key (Address=, Peer=, Route=) takes its entries separated by spaces in one item.
 * Messages read "vpn.data: Path1.Remote: invalid Remote= 'x': ..." (the item's name in place of
 * FILE:LINE), "vpn.data: Path1: path 'path1' has no Remote= address" (about a path as a whole),
 * "vpn.secrets: Key: ..." or "vpn.data: ..." (about the whole tunnel).
 *
 * A connection without Name= gets the tunnel name MPT_NM_DEFAULT_NAME.
 *
 * nm-mpt-service runs as root for every connection, whoever made it. A connection that belongs
 * to users (connection.permissions lists them; NetworkManager lets a user in an active session
 * make one) must not make root read a file: it builds with MPT_NM_OWNER_USER, which refuses
 * every key that names a file (KeyFile=) before anything touches the file, with the same message
 * whether the file exists or not. Only a system connection (no permissions; making one needs
 * the right to change the system's connections) may name files. */

#include <NetworkManager.h>

typedef struct MptProfile MptProfile;

#define MPT_NM_DBUS_SERVICE "org.freedesktop.NetworkManager.mpt"
#define MPT_NM_SECRET_KEY "Key"
#define MPT_NM_PRIVATE_KEY "PrivateKey"
#define MPT_NM_DEFAULT_NAME "mpt0"
#define MPT_NM_PATH_PREFIX "Path"

G_BEGIN_DECLS

typedef enum MptNmOwner {
        MPT_NM_OWNER_SYSTEM, /* connection.permissions is empty */
        MPT_NM_OWNER_USER,   /* connection.permissions names the users it belongs to */
} MptNmOwner;

/* Whose the connection is; *ret_user (may be NULL) gets the first user it belongs to, or NULL. */
MptNmOwner mpt_nm_connection_owner(NMConnection *c, const char **ret_user);

/* Whether a [Tunnel] key of the table is a secret (lives in vpn.secrets). */
gboolean mpt_nm_key_is_secret(const char *key);

/* "PathN.KEY" (path >= 0) or "KEY" (path < 0). */
char *mpt_nm_item_name(int path, const char *key);
/* Splits a vpn.data item name: *ret_path = N for "PathN.KEY", -1 for a tunnel key; *ret_key
 * points into item. FALSE when item starts like a path key but is malformed ("Path", "Path01.X",
 * "Path1.", "Path99.X"). */
gboolean mpt_nm_item_parse(const char *item, int *ret_path, const char **ret_key);

/* Builds and verifies the profile of a connection's VPN setting. On failure the GError
 * (NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS) carries the first problem; mpt_nm_validate_all() lists all.
 * The clients (editors, auth dialog, import and export) run as the user and build as the system
 * would; nm-mpt-service builds for the connection's owner (see above). */
gboolean mpt_nm_profile_from_setting(NMSettingVpn *s, MptProfile **ret, GError **error);
gboolean mpt_nm_profile_from_setting_for(NMSettingVpn *s, MptNmOwner owner, const char *user, MptProfile **ret,
                                         GError **error);
/* Same, without keeping the profile. */
gboolean mpt_nm_validate(NMSettingVpn *s, GError **error);
gboolean mpt_nm_validate_for(NMSettingVpn *s, MptNmOwner owner, const char *user, GError **error);
/* Every problem of the setting, in item order, or NULL when it is valid. ret_items (may be
 * NULL) gets the vpn.data/vpn.secrets item each message is about, in parallel ("" when the
 * message is about the whole tunnel, "PathN" when about a path as a whole), for editors that
 * mark the field. */
char **mpt_nm_validate_all(NMSettingVpn *s, char ***ret_items);

/* Replaces the mpt items of s (every data item but the *-flags ones, and the secrets of the
 * table) with the profile's explicitly set keys, and sets the service type. Paths are numbered
 * from 0 in profile order. */
gboolean mpt_nm_setting_from_profile(const MptProfile *p, NMSettingVpn *s, GError **error);

/* Native profile text (mpt.conf(5)) for export and for mptd. NULL only on OOM (with error). */
char *mpt_nm_profile_to_text(const MptProfile *p, GError **error);

/* Reads a native profile file. Errors are "FILE:LINE: message" (the first in the GError's
 * message, all of them, one per line, when ret_all is not NULL). */
gboolean mpt_nm_profile_from_file(const char *filename, MptProfile **ret, char **ret_all, GError **error);

/* The profile's accessors the plugin needs without the model's headers. */
const char *mpt_nm_profile_get_name(const MptProfile *p);
/* Secure mode without a key yet (vpn.secrets Key or PrivateKey missing, no KeyFile= or
 * PrivateKeyFile=): mptd would refuse it. */
gboolean mpt_nm_profile_lacks_key(const MptProfile *p);
/* The secret that the connection needs from NetworkManager: MPT_NM_PRIVATE_KEY when it runs the
 * handshake (vpn.data has the other end's PublicKey), else MPT_NM_SECRET_KEY (the pre-shared key
 * alone). */
const char *mpt_nm_secret_name(NMSettingVpn *s);
void mpt_nm_profile_free(MptProfile *p);

G_END_DECLS

G_DEFINE_AUTOPTR_CLEANUP_FUNC(MptProfile, mpt_nm_profile_free)
