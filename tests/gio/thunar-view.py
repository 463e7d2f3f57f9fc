#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""thunar-view - what a Thunar window shows, read from the accessibility tree

    thunar-view.py wait NAME...     until the window's details view lists
                                    exactly these names (exit 0), or 60 s
                                    pass (exit 1, saying what it shows)
    thunar-view.py show             prints the names it lists now

Reads the at-spi tree of the application "thunar" on the session bus
(DBUS_SESSION_BUS_ADDRESS; at-spi's own bus is found through it): the
"directory pane" of its details view is a table whose rows hold the file's
name in a cell of their own. What a person would see in the window, as the
toolkit tells screen readers. Used by tests/gio/test-thunar (under Xvfb on
the build machine).
"""

import os
import sys
import time

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

TIMEOUT = float(os.environ.get("THUNAR_VIEW_TIMEOUT", "60"))


def find(acc, role, depth=0):
    """The first descendant of acc with role (a role name), breadth first."""
    queue = [acc]
    while queue:
        a = queue.pop(0)
        try:
            if a.get_role_name() == role:
                return a
            n = a.get_child_count()
        except Exception:  # noqa: BLE001 - a node that went away meanwhile
            continue
        for i in range(min(n, 1000)):
            c = a.get_child_at_index(i)
            if c is not None:
                queue.append(c)
    return None


def shown():
    """The names the details view lists, or None if there is no such view."""
    desktop = Atspi.get_desktop(0)
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        if app is None or app.get_name() != "thunar":
            continue
        pane = find(app, "directory pane")
        table = find(pane, "table") if pane else None
        if table is None:
            return None
        names = []
        for j in range(table.get_child_count()):
            row = table.get_child_at_index(j)
            if row is None or row.get_role_name() != "table cell":
                continue
            # A row's name cell holds the icon's cell and the name's.
            for k in range(row.get_child_count()):
                cell = row.get_child_at_index(k)
                name = cell.get_name() if cell is not None else ""
                if name:
                    names.append(name)
        return sorted(names)
    return None


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "show":
        print(shown())
        return 0
    if len(sys.argv) < 2 or sys.argv[1] != "wait":
        print(__doc__, file=sys.stderr)
        return 2
    want = sorted(sys.argv[2:])
    deadline = time.monotonic() + TIMEOUT
    got = None
    while time.monotonic() < deadline:
        got = shown()
        if got == want:
            print(f"shows {got}")
            return 0
        time.sleep(0.2)
    print(f"shows {got}, not {want}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
