#!/usr/bin/env bash
# Check that two schedsim binaries give byte-identical results: every built-in experiment's
# `reproduce` output, every built-in scenario's `run` output and trace (with its machine's
# default background and with `--background none`), the counters of `run --json` (without the
# `actions` field, the simulator's own work count), and a few larger or differently configured
# runs (hackbench and nanosleep on the 256-CPU preset and on 1024- and 4096-CPU machines made
# from it, PREEMPT_RT, full preemption, rt-app).
#
#   tools/check-identical.sh BEFORE_BIN AFTER_BIN [WORKDIR]
#
# Outputs go to WORKDIR/<first 12 hex of the binary's sha256>/ (default WORKDIR:
# /tmp/schedsim-identical), so a binary already checked is not run again. Traces are kept as
# sha256 sums (they can be hundreds of MB). Prints the differing files and exits 1 on any
# difference. FULL=1 runs hackbench-2013 and lkp-matrix with their default seeds and size (slow: minutes per
# seed) instead of one seed of `hackbench 50` and of the matrix's 25% hackbench and RR cells.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BEFORE_BIN AFTER_BIN [WORKDIR]" >&2
    exit 2
fi
work="${3:-/tmp/schedsim-identical}"
# Bumped whenever the list of runs below changes.
RUNS_VERSION=3
mkdir -p "$work"

outputs() {
    local bin="$1"
    local id
    id="$(sha256sum "$bin" | cut -c1-12)"
    local dir="$work/$id"
    # `.done` names the list of runs the directory holds; a directory made for an older list
    # keeps its outputs and gets only the runs it lacks.
    if [ "$(cat "$dir/.done" 2>/dev/null)" = "$RUNS_VERSION" ]; then
        echo "$dir"
        return
    fi
    [ -f "$dir/.done" ] || rm -rf "$dir"
    mkdir -p "$dir"
    # The run prints its trace path, so every binary's outputs name the same one: each
    # invocation writes its traces in a private directory (several checks may share WORKDIR)
    # and the outputs are rewritten to the shared name.
    local private
    private="$(mktemp -d "$work/trace.XXXXXX")"
    local tmp="$private/trace.tmp"
    # One run: stdout to NAME.out, the trace's sum to NAME.trace.sha256, the JSON counters
    # (without "actions") to NAME.json.
    one() {
        local name="$1"
        shift
        [ -f "$dir/$name.json" ] && return
        "$bin" run --quiet "$@" --trace "$tmp.txt" >"$dir/$name.out" 2>"$dir/$name.err" || echo "exit $?" >>"$dir/$name.out"
        sha256sum <"$tmp.txt" >"$dir/$name.trace.sha256"
        rm -f "$tmp.txt"
        sed -i "s#$private/trace.tmp#$work/trace.tmp#g" "$dir/$name.out" "$dir/$name.err"
        "$bin" run --quiet "$@" --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("actions",None); print(json.dumps(d,sort_keys=True,indent=1))' >"$dir/$name.json" || echo "json failed" >>"$dir/$name.json"
    }
    local scenarios
    scenarios="$("$bin" list --json | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)["scenarios"]))')"
    for s in $scenarios; do
        one "run-$s" "$s"
        one "run-$s-quiet" "$s" --background none
    done
    one run-hackbench-256 hackbench --machine epyc-7763-2s
    one run-hackbench-256-quiet hackbench --machine epyc-7763-2s --background none
    one run-nanosleep-256 nanosleep --machine epyc-7763-2s procs=256
    one run-ipistorm-rt ipistorm --preempt-rt numipi=20000
    one run-hackbench-full hackbench --preempt full
    one run-schbench-v38 schbench --kernel v3.8
    one run-rtapp-pipeline --scenario scenarios/rtapp/pipeline.toml
    # Machines larger than any preset (the 256-CPU EPYC with 8 and 32 sockets): the action
    # queue's far heap, prefetching (512+ CPUs) and the balancing scans at scale.
    one run-nanosleep-1024 nanosleep --machine "$m1024" procs=1024 --limit-ms 4
    one run-hackbench-1024 hackbench "args=64 process 20" --machine "$m1024"
    one run-nanosleep-4096 nanosleep --machine "$m4096" procs=4096 --limit-ms 3
    one run-hackbench-4096 hackbench "args=256 process 5" --machine "$m4096"
    local exps
    exps="$("$bin" list --json | python3 -c 'import json,sys; print(" ".join(e["name"] for e in json.load(sys.stdin)["experiments"]))')"
    for e in $exps; do
        [ -f "$dir/reproduce-$e.out" ] && continue
        if [ "$e" = lkp-matrix ] && [ "${FULL:-0}" != 1 ]; then
            # The whole matrix takes hours on two cores: one seed of the 25% hackbench cells
            # (process and threads) and the RR netperf cells.
            "$bin" reproduce --quiet "$e" --runs 1 --cells 'hackbench-*-25%,netperf-*_RR-25%' >"$dir/reproduce-$e.out" 2>"$dir/reproduce-$e.err" || echo "exit $?" >>"$dir/reproduce-$e.out"
        elif [ "$e" = hackbench-2013 ] && [ "${FULL:-0}" != 1 ]; then
            "$bin" reproduce --quiet "$e" --runs 1 --param args=50 >"$dir/reproduce-$e.out" 2>"$dir/reproduce-$e.err" || echo "exit $?" >>"$dir/reproduce-$e.out"
        else
            "$bin" reproduce --quiet "$e" >"$dir/reproduce-$e.out" 2>"$dir/reproduce-$e.err" || echo "exit $?" >>"$dir/reproduce-$e.out"
        fi
    done
    rm -rf "$private"
    echo "$RUNS_VERSION" >"$dir/.done"
    echo "$dir"
}

# Machines larger than any preset, the same files for both binaries (written from the first's
# preset; at fixed paths, since a run prints its machine file's path).
m1024=/tmp/schedsim-check-epyc-1024.toml
m4096=/tmp/schedsim-check-epyc-4096.toml
"$1" list --machine epyc-7763-2s | sed 's/^sockets = 2$/sockets = 8/' >"$m1024"
"$1" list --machine epyc-7763-2s | sed 's/^sockets = 2$/sockets = 32/' >"$m4096"
if ! grep -q '^sockets = 8$' "$m1024" || ! grep -q '^sockets = 32$' "$m4096"; then
    echo "$0: the epyc-7763-2s preset no longer has a 'sockets = 2' line to scale" >&2
    exit 2
fi

a="$(outputs "$1")"
b="$(outputs "$2")"
echo "compared $(find "$a" -type f -not -name '.done' -not -name '*.err' | wc -l) files: $a vs $b"
if diff -rq -x '*.err' -x .done "$a" "$b"; then
    echo "identical"
else
    exit 1
fi
