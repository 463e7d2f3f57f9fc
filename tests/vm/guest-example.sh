# tests/vm/guest-example.sh - the example program in the VM: shell functions
# that tests/vm/run puts in front of tests/vm/guest.sh (after
# guest-common.sh, whose result() they use).
#
# example_watch: /inotify-dev-watch (kmod/examples/inotify-dev-watch.c) is
# started on a directory and a file; known changes are made; its lines must
# appear while it runs (not only at exit), and after SIGTERM its whole output
# must be exactly the expected events, then the IN_IGNORED of each watch, and
# its exit status 0. Also: a path that does not exist is an error (status 1,
# the path named on stderr), and no path is a usage error (status 2).

# Waits up to about 10 s until FILE has at least N lines (or PATTERN, if given).
example_wait() {  # file n [pattern]
    i=0
    while [ $i -lt 100 ]; do
        if [ -n "${3:-}" ]; then
            grep -q "$3" "$1" 2>/dev/null && return 0
        elif [ "$(wc -l < "$1")" -ge "$2" ]; then
            return 0
        fi
        usleep 100000
        i=$((i + 1))
    done
    return 1
}

example_watch() {
    d=/tmp/example-watch
    rm -rf $d
    mkdir -p $d/dir || return 1
    : > $d/file
    ff=$(printf 'x\377')    # a name that is not UTF-8

    /inotify-dev-watch $d/dir $d/file > $d/out 2> $d/err &
    pid=$!
    if ! example_wait $d/err 0 '^ready$'; then
        kill $pid 2>/dev/null
        result example_watch 1 "not ready after 10 s: $(cat $d/err)"
        return 1
    fi
    echo x > $d/dir/new                  # create, open, write, close
    mv $d/dir/new $d/dir/renamed         # a rename pair, one cookie
    mkdir $d/dir/sub
    rm $d/dir/renamed
    chmod 600 $d/file                    # the file's own watch
    : > "$d/dir/$ff"
    # Printed as they happen: all 12 lines before it is told to stop.
    example_wait $d/out 12
    live=$?
    nlive=$(wc -l < $d/out)
    kill -TERM $pid
    wait $pid
    st=$?

    # Cookies: the rename pair's must be equal and not 0, then they are written C.
    cookies=$(awk -F '\t' '$2 ~ /IN_MOVED/ { print $3 }' $d/out | sort -u)
    awk -F '\t' 'BEGIN { OFS = "\t" } $2 ~ /IN_MOVED/ { $3 = "C" } { print }' $d/out > $d/got
    printf '%s\n' \
        "1	IN_CREATE	0	new" \
        "1	IN_OPEN	0	new" \
        "1	IN_MODIFY	0	new" \
        "1	IN_CLOSE_WRITE	0	new" \
        "1	IN_MOVED_FROM	C	new" \
        "1	IN_MOVED_TO	C	renamed" \
        "1	IN_CREATE|IN_ISDIR	0	sub" \
        "1	IN_DELETE	0	renamed" \
        "2	IN_ATTRIB	0	" \
        "1	IN_CREATE	0	x\\xff" \
        "1	IN_OPEN	0	x\\xff" \
        "1	IN_CLOSE_WRITE	0	x\\xff" \
        "1	IN_IGNORED	0	" \
        "2	IN_IGNORED	0	" > $d/want
    if [ $live -ne 0 ]; then
        result example_watch 1 "only $nlive of 12 lines printed within 10 s, before SIGTERM"
    elif [ $st -ne 0 ]; then
        result example_watch 1 "exit status $st after SIGTERM: $(cat $d/err)"
    elif [ "$(echo "$cookies" | wc -l)" -ne 1 ] || [ "$cookies" = 0 ]; then
        result example_watch 1 "rename cookies '$(echo "$cookies" | tr '\n' ' ')': want one, not 0"
    elif ! diff $d/want $d/got > $d/diff; then
        result example_watch 1 "output differs (- want, + got): $(tr '\t\n' ' |' < $d/diff)"
    elif [ "$(cat $d/err)" != "$(printf 'watching %s as wd 1\nwatching %s as wd 2\nready' $d/dir $d/file)" ]; then
        result example_watch 1 "stderr: $(tr '\n' '|' < $d/err)"
    else
        result example_watch 0
    fi

    /inotify-dev-watch $d/missing > /dev/null 2> $d/err
    st=$?
    [ $st -eq 1 ] && grep -q "$d/missing: No such file or directory" $d/err
    result example_watch_missing $? "a missing path: status $st, stderr '$(cat $d/err)'"
    /inotify-dev-watch > /dev/null 2>&1
    st=$?
    [ $st -eq 2 ]
    result example_watch_usage $? "no path: status $st, want 2"
}
