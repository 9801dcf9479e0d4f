/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "macro.h"

/* What kind of link a network interface is, from sysfs (and the uevent properties udev sees).
 * It sets path defaults: a wwan (cellular, usually metered) path is a backup path unless the
 * profile says otherwise. */
typedef enum MptDevClass {
        MPT_DEVCLASS_UNKNOWN,  /* not found, or nothing says what it is */
        MPT_DEVCLASS_ETHERNET, /* a physical Ethernet device */
        MPT_DEVCLASS_WLAN,     /* Wi-Fi */
        MPT_DEVCLASS_WWAN,     /* cellular modem (DEVTYPE=wwan, or a modem driver) */
        MPT_DEVCLASS_PPP,      /* PPP (DSL, dial-up, some modems) */
        MPT_DEVCLASS_VIRTUAL,  /* veth, bridge, bond, VLAN, ...: no physical device */
        MPT_DEVCLASS_TUNNEL,   /* TUN, WireGuard and other L3 tunnels */
        MPT_DEVCLASS_LOOPBACK,
        _MPT_DEVCLASS_MAX,
        _MPT_DEVCLASS_INVALID = -EINVAL,
} MptDevClass;

DECLARE_STRING_TABLE(mpt_devclass, MptDevClass);

/* Classifies the interface by reading /sys/class/net/IFNAME (uevent DEVTYPE, type, wireless/,
 * the driver of the physical device, and whether the device is virtual). */
MptDevClass devclass_of(const char *ifname);

/* The decision itself, from what devclass_of() reads (exported for tests). */
MptDevClass devclass_from_sysfs(const char *devtype, int arphrd, bool wireless, const char *driver, bool is_virtual);
