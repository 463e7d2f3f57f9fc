#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""test-gio-monitor - `gio monitor` through the module prints what it prints with inotify

Runs under tests/gio/with-watchd. Two `gio monitor A B` run side by side on
the same two directories, one with GIO_USE_FILE_MONITOR=inotify, one with
GIO_USE_FILE_MONITOR=watchd, while a script changes files: create, write,
chmod, rename in a directory, move across the two, delete, mkdir, a
directory moved across, rmdir, moves in from and out to an unwatched
directory. After each step a marker file is created in A and in B and both
outputs are read up to them, so the steps are compared one by one, line for
line for each directory.
Prints TAP, one test a step.
"""

import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT = 10.0


class Monitor:
    def __init__(self, backend, dirs):
        env = dict(os.environ, GIO_USE_FILE_MONITOR=backend)
        self.backend = backend
        self.proc = subprocess.Popen(["gio", "monitor"] + dirs, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line:            # "renamed to" is followed by an empty line
                self.lines.put(line)

    def read_until(self, markers, timeout=TIMEOUT):
        """The lines until each of markers (paths) has said its changes are
        done, without the markers' own, grouped by monitored directory (the
        order between two monitors is GLib's dispatch order, not an event
        order) and in order within each."""
        got = []
        waiting = set(markers)
        deadline = time.monotonic() + timeout
        while waiting:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{self.backend}: no {sorted(waiting)} within {timeout} s; got {got}")
            for m in list(waiting):
                if line.endswith(f" {m}: changes done"):
                    waiting.discard(m)
            got.append(line)
        got = [l for l in got if "/.mark-" not in l and "/.ready-" not in l]
        got = sorted(got, key=lambda l: l.split(": ", 1)[0])
        # The kernel merges identical consecutive events of one inotify
        # instance while they wait unread (inotify(7)): whether the two
        # IN_MODIFY of open(O_TRUNC) + write() come as one or two depends on
        # when the reader read, in GLib's backend as in watchd. A run of the
        # same line is one line.
        return [l for i, l in enumerate(got) if i == 0 or l != got[i - 1]]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(TIMEOUT)


def touch(path):
    with open(path, "a"):
        pass


def main():
    top = tempfile.mkdtemp(prefix="gio-monitor-")
    a, b, c = (os.path.join(top, n) for n in "ABC")
    for d in (a, b, c):
        os.mkdir(d)
    steps = [
        ("create", lambda: touch(f"{a}/f")),
        ("write", lambda: open(f"{a}/f", "w").write("hello\n")),
        ("chmod", lambda: os.chmod(f"{a}/f", 0o600)),
        ("rename in a directory", lambda: os.rename(f"{a}/f", f"{a}/g")),
        ("move across directories", lambda: os.rename(f"{a}/g", f"{b}/g")),
        ("delete", lambda: os.unlink(f"{b}/g")),
        ("mkdir", lambda: os.mkdir(f"{a}/sub")),
        ("directory moved across", lambda: os.rename(f"{a}/sub", f"{b}/sub")),
        ("rmdir", lambda: os.rmdir(f"{b}/sub")),
        ("moved in from elsewhere", lambda: (touch(f"{c}/o"), os.rename(f"{c}/o", f"{a}/o"))),
        ("moved out to elsewhere", lambda: os.rename(f"{a}/o", f"{c}/o2")),
    ]
    monitors = [Monitor("inotify", [a, b]), Monitor("watchd", [a, b])]
    failed = 0
    print(f"1..{len(steps) + 1}")
    try:
        # Both are watching once both report a marker.
        deadline = time.monotonic() + TIMEOUT
        for i in range(1000):
            marks = [f"{a}/.ready-{i}", f"{b}/.ready-{i}"]
            for p in marks:
                touch(p)
            try:
                for m in monitors:
                    m.read_until(marks, timeout=0.2)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
        print("ok 1 both monitors watching")
        for n, (name, step) in enumerate(steps, 2):
            step()
            marks = [f"{a}/.mark-{n}", f"{b}/.mark-{n}"]
            for p in marks:
                touch(p)
            outs = [m.read_until(marks) for m in monitors]
            for m, out in zip(monitors, outs):
                for line in out:
                    print(f"# {m.backend}: {line}")
            if outs[0] == outs[1] and outs[0]:
                print(f"ok {n} {name}")
            else:
                failed += 1
                print(f"not ok {n} {name}: inotify {outs[0]} != watchd {outs[1]}")
    finally:
        for m in monitors:
            m.stop()
        shutil.rmtree(top, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
