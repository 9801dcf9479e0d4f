#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Accessibility (AT-SPI) queries for the GUI tests; the tests drive the programs with real X input
# (xdotool) at the places this reports.
#   atspi.py find APP NAME [ROLE]  the centre "X Y" of the first showing accessible called NAME
#                                  (optionally of role ROLE, e.g. "push button") in application APP
#   atspi.py find-sensitive ...   the same, once the accessible is sensitive (e.g. an Apply button)
#   atspi.py find-insensitive ... the same, once it is insensitive (e.g. Save with invalid input)
#   ... --in NAME                 only below an accessible called NAME (e.g. a list row)
#   atspi.py text APP NAME         the text of that accessible (entries), or its name
#   atspi.py dump APP              the tree, for debugging
# Exit status 1 when there is no such accessible (yet); the caller retries.
import re
import subprocess
import sys

import pyatspi


def apps(name):
    desk = pyatspi.Registry.getDesktop(0)
    for i in range(desk.childCount):
        app = desk.getChildAtIndex(i)
        try:
            if app is not None and app.name == name:
                yield app
        except Exception:
            continue


def walk(acc, depth=0):
    yield acc, depth
    try:
        n = acc.childCount
    except Exception:
        return
    for i in range(n):
        try:
            child = acc.getChildAtIndex(i)
        except Exception:
            continue
        if child is not None:
            yield from walk(child, depth + 1)


def showing(acc):
    try:
        return acc.getState().contains(pyatspi.STATE_SHOWING)
    except Exception:
        return False


def visible(acc):
    try:
        return acc.getState().contains(pyatspi.STATE_VISIBLE)
    except Exception:
        return False


def sensitive(acc):
    try:
        return acc.getState().contains(pyatspi.STATE_SENSITIVE)
    except Exception:
        return False


def extents(acc):
    e = acc.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    return e.x, e.y, e.width, e.height


def is_gtk4(app):
    try:
        return app.toolkitName == 'GTK' and app.toolkitVersion.startswith('4.')
    except Exception:
        return False


def toplevel_name(acc):
    top = None
    while acc is not None:
        try:
            if acc.getRoleName() in ('frame', 'dialog', 'window'):
                top = acc.name
            acc = acc.parent
        except Exception:
            break
    return top


def window_origin(title):
    """Position of the X window called title (GTK4 reports window-relative positions only)."""
    try:
        out = subprocess.run(['xdotool', 'search', '--onlyvisible', '--name', '^%s$' % re.escape(title),
                              'getwindowgeometry', '--shell'], capture_output=True, text=True, timeout=30).stdout
    except Exception:
        return 0, 0
    geo = dict(line.split('=', 1) for line in out.splitlines() if '=' in line)
    return int(geo.get('X', 0)), int(geo.get('Y', 0))


def has_ancestor(acc, name):
    try:
        acc = acc.parent
        while acc is not None:
            if acc.name == name:
                return True
            acc = acc.parent
    except Exception:
        pass
    return False


def find(app_name, name, role=None, within=None):
    """NAME matches exactly, or as a substring with a leading '~'; within: an ancestor's name."""
    for app in apps(app_name):
        gtk4 = is_gtk4(app)
        for acc, _ in walk(app):
            try:
                n = acc.name
                if (n != name and not (name.startswith('~') and name[1:] in n)) or \
                   (role and acc.getRoleName() != role) or (within and not has_ancestor(acc, within)):
                    continue
            except Exception:
                continue
            # GTK 4.8 sets no "showing" state; widgets of hidden pages have an empty size there.
            if not showing(acc) and not (gtk4 and visible(acc)):
                continue
            x, y, w, h = extents(acc)
            if x < 0 or y < 0 or w <= 1 or h <= 1:
                continue
            if gtk4:
                ox, oy = window_origin(toplevel_name(acc) or '')
                x, y = x + ox, y + oy
            return acc, (x + w // 2, y + h // 2)
    return None, None


def main(argv):
    cmd = argv[1]
    if cmd == 'dump':
        for app in apps(argv[2]):
            for acc, depth in walk(app):
                try:
                    print('  ' * depth + '%s %r showing=%s %s' % (acc.getRoleName(), acc.name, showing(acc),
                                                                  extents(acc) if showing(acc) else ''))
                except Exception:
                    pass
        return 0
    within = None
    if '--in' in argv:
        i = argv.index('--in')
        within = argv[i + 1]
        del argv[i:i + 2]
    acc, centre = find(argv[2], argv[3], argv[4] if len(argv) > 4 and argv[4] else None, within)
    if acc is None:
        return 1
    if cmd == 'find':
        print(centre[0], centre[1])
    elif cmd == 'find-sensitive':
        if not sensitive(acc):
            return 1
        print(centre[0], centre[1])
    elif cmd == 'find-insensitive':
        if sensitive(acc):
            return 1
        print(centre[0], centre[1])
    elif cmd == 'text':
        try:
            t = acc.queryText()
            print(t.getText(0, t.characterCount))
        except NotImplementedError:
            print(acc.name)
    else:
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
