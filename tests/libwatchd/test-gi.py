#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""test-gi - libwatchd from Python, through GObject-Introspection

Uses Watchd-1.0.typelib as a Python program would (from gi.repository
import Watchd), against a real watchd on a private dbus-daemon started
here. GI_TYPELIB_PATH and LD_LIBRARY_PATH point at the build tree (meson
sets them); WATCHD is the daemon. Prints TAP.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import gi

gi.require_version("Watchd", "1.0")
gi.require_version("Gio", "2.0")
from gi.repository import GLib, Gio, Watchd  # noqa: E402

TIMEOUT = 10.0
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={dir}/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/>
    <allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
"""


class Env:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="watchd-gi-")
        with open(os.path.join(self.dir, "bus.conf"), "w") as f:
            f.write(BUS_CONFIG.format(dir=self.dir))
        # A small window: the replay of test_durable_replay is twenty of them.
        with open(os.path.join(self.dir, "watchd.conf"), "w") as f:
            f.write("[limits]\nmax_pending_events_per_client = 1000\n")
        self.bus = subprocess.Popen(
            ["dbus-daemon", "--nofork", "--print-address", "--config-file",
             os.path.join(self.dir, "bus.conf")], stdout=subprocess.PIPE, text=True)
        self.address = self.bus.stdout.readline().strip()
        self.watchd = None
        self.files = os.path.join(self.dir, "files")
        os.mkdir(self.files)

    def start_watchd(self):
        self.watchd = subprocess.Popen(
            [os.environ.get("WATCHD", "watchd"), "--address", self.address, "--backend", "syscall",
             "--config", os.path.join(self.dir, "watchd.conf"), "--state-dir", os.path.join(self.dir, "state")])
        conn = Gio.DBusConnection.new_for_address_sync(
            self.address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
            Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                   "NameHasOwner", GLib.Variant("(s)", ("org.example.Inotify",)),
                                   None, Gio.DBusCallFlags.NONE, -1, None)
            if reply.unpack()[0]:
                break
            if time.monotonic() > deadline or self.watchd.poll() is not None:
                raise RuntimeError("watchd did not take its name")
            time.sleep(0.005)
        conn.close_sync(None)

    def stop_watchd(self):
        self.watchd.send_signal(signal.SIGTERM)
        assert self.watchd.wait(TIMEOUT) == 0
        self.watchd = None

    def close(self):
        if self.watchd:
            self.stop_watchd()
        self.bus.send_signal(signal.SIGTERM)
        self.bus.wait(TIMEOUT)
        shutil.rmtree(self.dir, ignore_errors=True)


def await_true(cond):
    """Runs the default main context until cond() or the deadline."""
    ctx = GLib.MainContext.default()
    deadline = time.monotonic() + TIMEOUT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        ctx.iteration(False) or time.sleep(0.001)


class Recorder:
    def __init__(self, sub):
        self.events = []
        self.overflows = []
        self.removed = []
        sub.connect("events", self.on_events)
        sub.connect("overflow", lambda s, reason: self.overflows.append(reason))
        sub.connect("removed", lambda s, reason, detail, error: self.removed.append((reason, detail)))

    def on_events(self, sub, events):
        self.events.extend(events)

    def find(self, path, mask):
        return [e for e in self.events if e.get_path() == path and e.get_mask() & mask == mask]


def test_events(env, client):
    sub = Watchd.Subscription.new(client, env.files, Watchd.EventMask.CREATE | Watchd.EventMask.MOVE,
                                  Watchd.WatchFlags.NONE)
    rec = Recorder(sub)
    assert sub.start_sync(None)
    assert sub.is_active() and sub.get_id() > 0
    a, b = os.path.join(env.files, "a"), os.path.join(env.files, "b")
    open(a, "w").close()
    os.rename(a, b)
    await_true(lambda: rec.find(a, Watchd.EventMask.MOVE))
    created = rec.find(a, Watchd.EventMask.CREATE)[0]
    assert created.get_mask() == Watchd.EventMask.CREATE, created.get_mask()
    assert created.get_new_path() is None
    moved = rec.find(a, Watchd.EventMask.MOVE)[0]
    assert moved.is_rename()
    assert moved.get_new_path() == b
    assert moved.get_cookie() != 0
    sub.cancel()


def test_add_async_and_cancel(env, client):
    done = []
    client.add_watch(env.files, Watchd.EventMask.DELETE, Watchd.WatchFlags.NONE, None,
                     lambda c, res: done.append(c.add_watch_finish(res)))
    await_true(lambda: done)
    sub = done[0]
    assert isinstance(sub, Watchd.Subscription) and sub.is_active()
    sub.cancel()
    assert not sub.is_active()

    cancellable = Gio.Cancellable()
    cancellable.cancel()
    failed = []

    def on_started(s, res):
        try:
            s.start_finish(res)
        except GLib.Error as e:
            failed.append(e)

    sub2 = Watchd.Subscription.new(client, env.files, Watchd.EventMask.DELETE, Watchd.WatchFlags.NONE)
    sub2.start(cancellable, on_started)
    await_true(lambda: failed)
    assert failed[0].matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED), failed[0]


def test_errors(env, client):
    try:
        client.add_watch_sync("relative", Watchd.EventMask.CREATE, Watchd.WatchFlags.NONE, None)
    except GLib.Error as e:
        assert Gio.DBusError.get_remote_error(e) == "org.freedesktop.DBus.Error.InvalidArgs", e
    else:
        raise AssertionError("a relative path was accepted")


def test_removed(env, client):
    d = os.path.join(env.files, "gone")
    os.mkdir(d)
    sub = client.add_watch_sync(d, Watchd.EventMask.ALL, Watchd.WatchFlags.ONLYDIR, None)
    rec = Recorder(sub)
    os.rmdir(d)
    await_true(lambda: rec.removed)
    assert rec.removed[0] == (Watchd.RemovedReason.DELETED, "deleted"), rec.removed


def test_restart(env, client):
    sub = Watchd.Subscription.new(client, env.files, Watchd.EventMask.CREATE, Watchd.WatchFlags.NONE)
    rec = Recorder(sub)
    sub.start_sync(None)
    restarted = []
    client.connect("daemon-restarted", lambda c: restarted.append(True))
    env.stop_watchd()
    await_true(lambda: not client.get_daemon_running())
    env.start_watchd()
    await_true(lambda: restarted)
    assert rec.overflows == [Watchd.OverflowReason.RESTARTED], rec.overflows
    f = os.path.join(env.files, "after-restart")
    open(f, "w").close()
    await_true(lambda: rec.find(f, Watchd.EventMask.CREATE))
    sub.cancel()


def test_snapshot(env, client):
    """A WatchdSnapshot from Python: the rescan's events, and one following a
    subscription across a restart."""
    d = os.path.join(env.files, "snap")
    os.mkdir(d)
    with open(os.path.join(d, "old"), "w") as f:
        f.write("x")
    snap = Watchd.Snapshot.new(d, False)
    assert snap.scan()
    assert snap.get_n_entries() == 1 and snap.is_known()
    os.rename(os.path.join(d, "old"), os.path.join(d, "new"))
    events = snap.rescan()
    assert [(e.get_mask(), e.get_path(), e.get_new_path()) for e in events] == [
        (Watchd.EventMask.MOVE | Watchd.EventMask.RESCANNED, os.path.join(d, "old"), os.path.join(d, "new"))
    ], [(hex(int(e.get_mask())), e.get_path(), e.get_new_path()) for e in events]
    assert snap.rescan() == []

    sub = Watchd.Subscription.new(client, d, Watchd.EventMask.CREATE | Watchd.EventMask.DELETE,
                                  Watchd.WatchFlags.NONE)
    rec = Recorder(sub)
    sub.start_sync(None)
    followed = Watchd.Snapshot.new(d, False)
    followed.follow(sub)
    restarted = []
    client.connect("daemon-restarted", lambda c: restarted.append(True))
    env.stop_watchd()
    await_true(lambda: not client.get_daemon_running())
    made = os.path.join(d, "made-while-away")
    open(made, "w").close()
    env.start_watchd()
    await_true(lambda: rec.find(made, Watchd.EventMask.CREATE | Watchd.EventMask.RESCANNED))
    assert rec.overflows == [Watchd.OverflowReason.RESTARTED], rec.overflows
    sub.cancel()


def test_stats(env, client):
    stats = client.get_stats_sync(None).unpack()
    assert "kernel_watches" in stats and "subscriptions" in stats, stats
    assert client.dup_daemon_version()


REPLAY_RECORDS = 20000


def durable_last_id(client, name):
    for entry in client.list_durable_sync(None).unpack():
        if entry[0] == name:
            return entry[6]
    raise AssertionError(f"no durable subscription {name}")


def test_durable_replay(env, client):
    """A replay of 20 windows through the typelib: every record once, in order, in
    batches ("events") between which the program's idle sources run, then caught up."""
    d = os.path.join(env.files, "replay")
    os.mkdir(d)
    ok, journal, cursor = client.create_durable_sync("py", d, Watchd.EventMask.CREATE, Watchd.WatchFlags.NONE, None)
    assert ok and cursor == 0
    for chunk in range(0, REPLAY_RECORDS, 2000):
        for i in range(chunk, chunk + 2000):
            open(os.path.join(d, f"f{i:06d}"), "w").close()
        deadline = time.monotonic() + 60
        while durable_last_id(client, "py") < chunk + 2000:
            assert time.monotonic() < deadline, "the journal did not grow"
            time.sleep(0.005)

    state = {"ids": [], "batches": 0, "max_batch": 0, "turns": 0, "turns_at_batch": 0, "no_turn": 0,
             "caught_up": None}

    def on_events(durable, events):
        if state["batches"] and state["turns"] == state["turns_at_batch"]:
            state["no_turn"] += 1
        state["turns_at_batch"] = state["turns"]
        state["batches"] += 1
        state["max_batch"] = max(state["max_batch"], len(events))
        state["ids"].extend(e.get_id() for e in events)

    def on_idle():
        state["turns"] += 1
        return True

    durable = client.resume_durable_sync("py", journal, 0, None)
    durable.connect("events", on_events)
    durable.connect("caught-up", lambda durable, i: state.update(caught_up=i))
    idle = GLib.idle_add(on_idle)
    ctx = GLib.MainContext.default()
    last, idle_since = 0, time.monotonic()
    while state["caught_up"] is None:
        ctx.iteration(True)
        if len(state["ids"]) != last:
            last, idle_since = len(state["ids"]), time.monotonic()
        elif time.monotonic() - idle_since > 60:
            raise AssertionError(f"the replay stalled after {last} records")
    GLib.source_remove(idle)
    assert state["ids"] == list(range(1, REPLAY_RECORDS + 1)), (len(state["ids"]), state["ids"][:3])
    assert state["caught_up"] == REPLAY_RECORDS
    assert durable.get_cursor() == REPLAY_RECORDS
    assert state["max_batch"] <= 1024 and state["batches"] >= REPLAY_RECORDS // 1024, state
    assert state["no_turn"] == 0, state
    client.remove_durable_sync("py", None)


def main():
    tests = [test_events, test_add_async_and_cancel, test_errors, test_removed, test_restart, test_snapshot,
             test_stats, test_durable_replay]
    print(f"1..{len(tests)}")
    failed = 0
    env = Env()
    try:
        env.start_watchd()
        client = Watchd.Client.new_for_address_sync(env.address, None)
        for i, t in enumerate(tests, 1):
            try:
                t(env, client)
                print(f"ok {i} {t.__name__}")
            except Exception as e:  # noqa: BLE001 - a test reports every failure
                failed += 1
                print(f"not ok {i} {t.__name__}: {type(e).__name__}: {e}")
        client.close()
    finally:
        env.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
