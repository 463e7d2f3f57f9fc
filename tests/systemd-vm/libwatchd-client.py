#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""libwatchd-client.py DIR - libwatchd from Python through the installed
gir1.2-watchd-1.0 (from gi.repository import Watchd), for
tests/systemd-vm/guest-deb: watches DIR for creations on the system bus's
watchd, prints "ready" once watchd holds the watch, then "CREATE PATH" for
the first creation and exits 0 (1 on an error, 2 if none came within 60 s).
"""

import sys

import gi

gi.require_version("Watchd", "1.0")
gi.require_version("Gio", "2.0")
from gi.repository import GLib, Gio, Watchd  # noqa: E402

status = 2
loop = GLib.MainLoop()


def on_events(sub, events):
    global status
    for e in events:
        if e.get_mask() & Watchd.EventMask.CREATE:
            print("CREATE", e.get_path(), flush=True)
            status = 0
            loop.quit()


def on_timeout():
    print("libwatchd-client.py: no event within 60 s", file=sys.stderr)
    loop.quit()
    return GLib.SOURCE_REMOVE


try:
    client = Watchd.Client.new_sync(Gio.BusType.SYSTEM, None)
    sub = Watchd.Subscription.new(client, sys.argv[1], Watchd.EventMask.CREATE, Watchd.WatchFlags.NONE)
    sub.connect("events", on_events)
    sub.start_sync(None)
except GLib.Error as e:
    print(f"libwatchd-client.py: {e.message}", file=sys.stderr)
    sys.exit(1)
print("ready", flush=True)
GLib.timeout_add_seconds(60, on_timeout)
loop.run()
client.close()
sys.exit(status)
