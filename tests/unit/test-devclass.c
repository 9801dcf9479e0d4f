/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Device classification against fake sysfs devices (umockdev). Runs without root, under
 * umockdev-wrapper, which redirects /sys to a test bed. */

#include <glib.h>
#include <linux/if_arp.h>
#include <umockdev.h>

#include "devclass.h"
#include "profile.h"

typedef struct {
        const char *name;
        const char *record; /* umockdev record: P: sysfs path, E: properties, A: attributes */
        MptDevClass expect;
} Device;

/* Realistic sysfs layouts: physical devices below their bus, virtual ones below /devices/virtual. */
static const Device devices[] = {
        { "eth0",
          "P: /devices/pci0000:00/0000:00:1f.6/net/eth0\nE: SUBSYSTEM=net\nE: INTERFACE=eth0\nA: type=1\n",
          MPT_DEVCLASS_ETHERNET },
        { "wlp2s0",
          "P: /devices/pci0000:00/0000:02:00.0/net/wlp2s0\nE: SUBSYSTEM=net\nE: INTERFACE=wlp2s0\n"
          "E: DEVTYPE=wlan\nA: type=1\n",
          MPT_DEVCLASS_WLAN },
        /* Older drivers announce no DEVTYPE but have a wireless/ directory. */
        { "wlan1",
          "P: /devices/pci0000:00/0000:03:00.0/net/wlan1\nE: SUBSYSTEM=net\nE: INTERFACE=wlan1\nA: type=1\n"
          "A: wireless/status=0\n",
          MPT_DEVCLASS_WLAN },
        { "wwan0",
          "P: /devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.4/net/wwan0\nE: SUBSYSTEM=net\nE: INTERFACE=wwan0\n"
          "E: DEVTYPE=wwan\nA: type=1\n",
          MPT_DEVCLASS_WWAN },
        /* A QMI modem's raw-IP interface: the driver tells. */
        { "wwp0s20",
          "P: /devices/pci0000:00/0000:00:14.0/usb2/2-2/2-2:1.8/net/wwp0s20\nE: SUBSYSTEM=net\n"
          "E: INTERFACE=wwp0s20\nE: DRIVER=qmi_wwan\nA: type=65534\n",
          MPT_DEVCLASS_WWAN },
        { "ppp0",
          "P: /devices/virtual/net/ppp0\nE: SUBSYSTEM=net\nE: INTERFACE=ppp0\nA: type=512\n",
          MPT_DEVCLASS_PPP },
        { "veth7",
          "P: /devices/virtual/net/veth7\nE: SUBSYSTEM=net\nE: INTERFACE=veth7\nA: type=1\n",
          MPT_DEVCLASS_VIRTUAL },
        { "br0",
          "P: /devices/virtual/net/br0\nE: SUBSYSTEM=net\nE: INTERFACE=br0\nE: DEVTYPE=bridge\nA: type=1\n",
          MPT_DEVCLASS_VIRTUAL },
        { "tun0",
          "P: /devices/virtual/net/tun0\nE: SUBSYSTEM=net\nE: INTERFACE=tun0\nA: type=65534\n",
          MPT_DEVCLASS_TUNNEL },
        { "lo",
          "P: /devices/virtual/net/lo\nE: SUBSYSTEM=net\nE: INTERFACE=lo\nA: type=772\n",
          MPT_DEVCLASS_LOOPBACK },
};

static UMockdevTestbed *testbed(void) {
        UMockdevTestbed *tb = umockdev_testbed_new();
        g_autoptr(GError) error = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS(devices); i++) {
                g_assert_true(umockdev_testbed_add_from_string(tb, devices[i].record, &error));
                g_assert_no_error(error);
        }
        return tb;
}

static void test_sysfs(void) {
        g_autoptr(UMockdevTestbed) tb = testbed();

        for (size_t i = 0; i < G_N_ELEMENTS(devices); i++) {
                MptDevClass c = devclass_of(devices[i].name);
                g_test_message("%s: %s", devices[i].name, mpt_devclass_to_string(c));
                g_assert_cmpstr(mpt_devclass_to_string(c), ==, mpt_devclass_to_string(devices[i].expect));
        }
        /* Not there: unknown, and no crash on hostile names. */
        g_assert_cmpint(devclass_of("nosuch0"), ==, MPT_DEVCLASS_UNKNOWN);
        g_assert_cmpint(devclass_of("../../etc"), ==, MPT_DEVCLASS_UNKNOWN);
        g_assert_cmpint(devclass_of(""), ==, MPT_DEVCLASS_UNKNOWN);
}

/* A modem that appears later (hotplug) is classified when it is there. */
static void test_hotplug(void) {
        g_autoptr(UMockdevTestbed) tb = umockdev_testbed_new();
        g_autoptr(GError) error = NULL;

        g_assert_cmpint(devclass_of("wwan1"), ==, MPT_DEVCLASS_UNKNOWN);
        umockdev_testbed_add_from_string(tb,
                                         "P: /devices/pci0000:00/0000:00:14.0/usb1/1-3/1-3:1.0/net/wwan1\n"
                                         "E: SUBSYSTEM=net\nE: INTERFACE=wwan1\nE: DEVTYPE=wwan\nA: type=1\n",
                                         &error);
        g_assert_no_error(error);
        g_assert_cmpint(devclass_of("wwan1"), ==, MPT_DEVCLASS_WWAN);
}

/* The default that follows from the class: a cellular path is a backup path unless the profile
 * says otherwise. */
static void test_backup_default(void) {
        g_autoptr(UMockdevTestbed) tb = testbed();
        const char *text = "[Tunnel]\nName=t\nMode=compat\n"
                           "[Path]\nInterface=eth0\nRemote=192.0.2.1\n"
                           "[Path]\nInterface=wwan0\nRemote=192.0.2.1\n"
                           "[Path]\nInterface=wwp0s20\nRemote=192.0.2.1\nBackup=no\n"
                           "[Path]\nInterface=wlp2s0\nRemote=192.0.2.1\n";
        MptDiagnostics d = {};
        MptProfile *p = NULL;

        g_assert_cmpint(profile_load_buffer("t.conf", text, strlen(text), &p, &d), ==, 0);
        g_assert_false(path_config_is_backup(&p->paths[0], devclass_of("eth0")));
        g_assert_true(path_config_is_backup(&p->paths[1], devclass_of("wwan0")));
        g_assert_false(path_config_is_backup(&p->paths[2], devclass_of("wwp0s20")));
        g_assert_false(path_config_is_backup(&p->paths[3], devclass_of("wlp2s0")));
        profile_free(p);
        diag_done(&d);
}

/* The decision table itself, for what sysfs cannot easily fake. */
static void test_rules(void) {
        g_assert_cmpint(devclass_from_sysfs(NULL, ARPHRD_ETHER, false, "cdc_mbim", false), ==, MPT_DEVCLASS_WWAN);
        g_assert_cmpint(devclass_from_sysfs(NULL, ARPHRD_ETHER, true, NULL, false), ==, MPT_DEVCLASS_WLAN);
        g_assert_cmpint(devclass_from_sysfs("vlan", ARPHRD_ETHER, false, NULL, false), ==, MPT_DEVCLASS_VIRTUAL);
        g_assert_cmpint(devclass_from_sysfs(NULL, ARPHRD_ETHER, false, "e1000e", false), ==, MPT_DEVCLASS_ETHERNET);
        g_assert_cmpint(devclass_from_sysfs(NULL, ARPHRD_IPGRE, false, NULL, true), ==, MPT_DEVCLASS_TUNNEL);
        g_assert_cmpint(devclass_from_sysfs(NULL, 9999, false, NULL, false), ==, MPT_DEVCLASS_UNKNOWN);
        for (MptDevClass c = 0; c < _MPT_DEVCLASS_MAX; c++)
                g_assert_cmpint(mpt_devclass_from_string(mpt_devclass_to_string(c)), ==, c);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/devclass/rules", test_rules);
        /* Creating a test bed first is what makes umockdev_in_mock_environment() answer. */
        g_autoptr(UMockdevTestbed) probe = umockdev_testbed_new();
        if (!umockdev_in_mock_environment()) {
                /* Without the wrapper, /sys would be the real one: the sysfs cases cannot run. */
                g_test_message("not under umockdev-wrapper: skipping the sysfs cases");
                return g_test_run();
        }
        g_test_add_func("/mpt/devclass/sysfs", test_sysfs);
        g_test_add_func("/mpt/devclass/hotplug", test_hotplug);
        g_test_add_func("/mpt/devclass/backup-default", test_backup_default);
        return g_test_run();
}
