/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fake-watchd - a watchd played by a test, to say what a real one never would
 *
 * It owns org.example.Inotify on a bus (a private dbus-daemon of the test)
 * and answers libwatchd's calls from a GDBus filter on its own connection,
 * so it needs no main loop and any thread may drive it: AddWatch with the
 * answers the test queued (else ids counting up from 1), RemoveWatch,
 * ListWatches (what it was asked and has not removed, or what the test set),
 * GetStats (empty: a round trip a test waits on), GetAll (Version and the
 * Capabilities given), and, when they hold "stream", OpenStream: one end of
 * a socket pair, whose other end the test writes frames or any bytes to.
 * Signals go to whom the test says, with any body, any signature.
 *
 * Used by tests/libwatchd/test-hostile.c (and tests/gio's module case) and
 * by fuzz/fuzz-libwatchd.c: GIO, gio-unix and shared/stream_frame.c only.
 */

#include <gio/gio.h>

typedef struct FakeWatchd FakeWatchd;

/* Connects to the bus at address and takes the name; caps: the words of
 * Capabilities (NULL: no such property, as watchd 0.1). Aborts on failure. */
FakeWatchd *fake_watchd_start(const char *address, const char *const *caps);
/* The same in two steps, so that answers can be queued before the name is
 * taken (a client adds its subscriptions again as soon as it sees that). */
FakeWatchd *fake_watchd_new(const char *address, const char *const *caps);
void fake_watchd_take_name(FakeWatchd *fw);
/* The Capabilities answered from now on (a client reads them when it starts). */
void fake_watchd_set_caps(FakeWatchd *fw, const char *const *caps);
/* Forgets what was asked and queued: the next id is 1 again, no answer
 * queued, no call held, the default ListWatches and OpenStream answers,
 * the stream closed. */
void fake_watchd_reset(FakeWatchd *fw);
/* Gives the name up, closes its stream, its connection; frees fw. */
void fake_watchd_stop(FakeWatchd *fw);
const char *fake_watchd_unique_name(FakeWatchd *fw);

/* The next AddWatch is answered with body (floating is sunk; any type), or,
 * with error_name set, with that D-Bus error. */
void fake_watchd_push_add_reply(FakeWatchd *fw, GVariant *body, const char *error_name);
/* While held, AddWatch (ListWatches) calls wait unanswered; releasing
 * answers them, in order. */
void fake_watchd_hold_adds(FakeWatchd *fw, gboolean hold);
void fake_watchd_hold_lists(FakeWatchd *fw, gboolean hold);
/* The unique name of the last caller of any method (the client's connection). */
char *fake_watchd_dup_last_caller(FakeWatchd *fw);
/* The AddWatch calls so far. */
guint fake_watchd_n_adds(FakeWatchd *fw);
/* Whether RemoveWatch(id) was called. */
gboolean fake_watchd_was_removed(FakeWatchd *fw, guint32 id);
guint fake_watchd_n_removes(FakeWatchd *fw);
guint fake_watchd_n_list_calls(FakeWatchd *fw);
/* ListWatches is answered with body from now on (NULL: the default). */
void fake_watchd_set_list_reply(FakeWatchd *fw, GVariant *body);
/* OpenStream is answered with body (and no descriptor) from now on. */
void fake_watchd_set_stream_reply(FakeWatchd *fw, GVariant *body);

/* A signal of org.example.Inotify on its object, to destination (NULL: broadcast). */
void fake_watchd_signal(FakeWatchd *fw, const char *destination, const char *member, GVariant *body);

/* The stream: whether one was handed out (and is still open), and writes to it
 * (bytes as they are, or frames made by the daemon's own encoder). A write
 * to a stream the client closed is dropped. */
gboolean fake_watchd_has_stream(FakeWatchd *fw);
void fake_watchd_stream_write(FakeWatchd *fw, const void *buf, size_t n);
void fake_watchd_stream_event(FakeWatchd *fw, guint32 id, guint32 mask, guint32 cookie, const char *path,
                              const char *new_path);
void fake_watchd_stream_overflow(FakeWatchd *fw, const guint32 *ids, size_t n);
void fake_watchd_stream_removed(FakeWatchd *fw, guint32 id, const char *reason);
void fake_watchd_stream_close(FakeWatchd *fw);
