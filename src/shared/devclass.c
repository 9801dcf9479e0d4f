/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <libgen.h>
#include <linux/if_arp.h>
#include <sys/stat.h>

#include "conf-parser.h"
#include "devclass.h"
#include "parse-util.h"

static const char *const mpt_devclass_table[_MPT_DEVCLASS_MAX] = {
        [MPT_DEVCLASS_UNKNOWN] = "unknown",
        [MPT_DEVCLASS_ETHERNET] = "ethernet",
        [MPT_DEVCLASS_WLAN] = "wlan",
        [MPT_DEVCLASS_WWAN] = "wwan",
        [MPT_DEVCLASS_PPP] = "ppp",
        [MPT_DEVCLASS_VIRTUAL] = "virtual",
        [MPT_DEVCLASS_TUNNEL] = "tunnel",
        [MPT_DEVCLASS_LOOPBACK] = "loopback",
};
DEFINE_STRING_TABLE(mpt_devclass, MptDevClass, _MPT_DEVCLASS_MAX);

/* Modem drivers whose network interfaces do not always announce DEVTYPE=wwan. */
static const char *const wwan_drivers[] = {
        "qmi_wwan", "cdc_mbim", "huawei_cdc_ncm", "sierra_net", "mhi_net", "ipa", "cdc_ether_wwan",
        "option", "usb_wwan",
};

MptDevClass devclass_from_sysfs(const char *devtype, int arphrd, bool wireless, const char *driver, bool is_virtual) {
        if (devtype && streq(devtype, "wlan"))
                return MPT_DEVCLASS_WLAN;
        if (wireless)
                return MPT_DEVCLASS_WLAN;
        if (devtype && streq(devtype, "wwan"))
                return MPT_DEVCLASS_WWAN;
        if (driver)
                for (size_t i = 0; i < ELEMENTSOF(wwan_drivers); i++)
                        if (streq(driver, wwan_drivers[i]))
                                return MPT_DEVCLASS_WWAN;
        switch (arphrd) {
        case ARPHRD_LOOPBACK:
                return MPT_DEVCLASS_LOOPBACK;
        case ARPHRD_PPP:
                return MPT_DEVCLASS_PPP;
        case ARPHRD_NONE:
        case ARPHRD_TUNNEL:
        case ARPHRD_TUNNEL6:
        case ARPHRD_SIT:
        case ARPHRD_IPGRE:
                return MPT_DEVCLASS_TUNNEL;
        case ARPHRD_ETHER:
                if (is_virtual || (devtype && (streq(devtype, "bridge") || streq(devtype, "bond") ||
                                               streq(devtype, "vlan") || streq(devtype, "macvlan"))))
                        return MPT_DEVCLASS_VIRTUAL;
                return MPT_DEVCLASS_ETHERNET;
        default:
                return is_virtual ? MPT_DEVCLASS_VIRTUAL : MPT_DEVCLASS_UNKNOWN;
        }
}

static int read_attr(const char *ifname, const char *attr, char **ret) {
        _cleanup_free_ char *path = NULL;
        size_t size;
        char *buf;
        int r;

        if (asprintf(&path, "/sys/class/net/%s/%s", ifname, attr) < 0)
                return -ENOMEM;
        r = read_full_file(path, 64 * 1024, &buf, &size);
        if (r < 0)
                return r;
        *ret = buf;
        return 0;
}

static char *uevent_value(const char *uevent, const char *key) {
        size_t l = strlen(key);

        for (const char *p = uevent; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                if (len > l && strneq(p, key, l) && p[l] == '=')
                        return strndup(p + l + 1, len - l - 1);
                p = nl ? nl + 1 : NULL;
        }
        return NULL;
}

MptDevClass devclass_of(const char *ifname) {
        _cleanup_free_ char *uevent = NULL, *type = NULL, *devtype = NULL, *path = NULL, *real = NULL,
                            *driver_link = NULL, *driver = NULL;
        unsigned arphrd = 0;
        bool wireless, is_virtual;
        struct stat st;
        char target[PATH_MAX];
        ssize_t n;

        if (!ifname_valid(ifname))
                return MPT_DEVCLASS_UNKNOWN;
        if (asprintf(&path, "/sys/class/net/%s", ifname) < 0)
                return MPT_DEVCLASS_UNKNOWN;
        if (stat(path, &st) < 0)
                return MPT_DEVCLASS_UNKNOWN;

        if (read_attr(ifname, "uevent", &uevent) >= 0)
                devtype = uevent_value(uevent, "DEVTYPE");
        if (read_attr(ifname, "type", &type) >= 0) {
                type[strcspn(type, "\n")] = 0;
                (void) safe_atou(type, &arphrd);
        }

        {
                _cleanup_free_ char *w = NULL, *phy = NULL;
                if (asprintf(&w, "%s/wireless", path) < 0 || asprintf(&phy, "%s/phy80211", path) < 0)
                        return MPT_DEVCLASS_UNKNOWN;
                wireless = access(w, F_OK) >= 0 || access(phy, F_OK) >= 0;
        }

        /* Physical devices live below their bus in /sys/devices; virtual ones below
         * /sys/devices/virtual. */
        real = realpath(path, NULL);
        is_virtual = real && strstr(real, "/devices/virtual/");

        if (asprintf(&driver_link, "%s/device/driver", path) >= 0) {
                n = readlink(driver_link, target, sizeof target - 1);
                if (n > 0) {
                        target[n] = 0;
                        driver = strdup(basename(target));
                }
        }
        if (!driver && uevent) {
                /* Some devices name their driver in the uevent file instead. */
                driver = uevent_value(uevent, "DRIVER");
        }

        return devclass_from_sysfs(devtype, (int) arphrd, wireless, driver, is_virtual);
}
