#!/usr/bin/env bash
# Check that two schedsim binaries give byte-identical results: every built-in experiment's
# `reproduce` output, every built-in scenario's `run` output and trace (with its machine's
# default background and with `--background none`), the counters of `run --json` (without the
# `actions` field, the simulator's own work count), and a few larger or differently configured
# runs (hackbench and nanosleep on the 256-CPU preset, PREEMPT_RT, full preemption, rt-app).
#
#   tools/check-identical.sh BEFORE_BIN AFTER_BIN [WORKDIR]
#
# Outputs go to WORKDIR/<first 12 hex of the binary's sha256>/ (default WORKDIR:
# /tmp/schedsim-identical), so a binary already checked is not run again. Traces are kept as
# sha256 sums (they can be hundreds of MB). Prints the differing files and exits 1 on any
# difference. FULL=1 runs hackbench-2013 with its default seeds and size (slow: minutes per
# seed) instead of one seed of `hackbench 50`.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BEFORE_BIN AFTER_BIN [WORKDIR]" >&2
    exit 2
fi
work="${3:-/tmp/schedsim-identical}"
mkdir -p "$work"

outputs() {
    local bin="$1"
    local id
    id="$(sha256sum "$bin" | cut -c1-12)"
    local dir="$work/$id"
    if [ -f "$dir/.done" ]; then
        echo "$dir"
        return
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    # The same trace path for every binary (the run prints it).
    local tmp="$work/trace.tmp"
    # One run: stdout to NAME.out, the trace's sum to NAME.trace.sha256, the JSON counters
    # (without "actions") to NAME.json.
    one() {
        local name="$1"
        shift
        "$bin" run --quiet "$@" --trace "$tmp.txt" >"$dir/$name.out" 2>"$dir/$name.err" || echo "exit $?" >>"$dir/$name.out"
        sha256sum <"$tmp.txt" >"$dir/$name.trace.sha256"
        rm -f "$tmp.txt"
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
    local exps
    exps="$("$bin" list --json | python3 -c 'import json,sys; print(" ".join(e["name"] for e in json.load(sys.stdin)["experiments"]))')"
    for e in $exps; do
        if [ "$e" = hackbench-2013 ] && [ "${FULL:-0}" != 1 ]; then
            "$bin" reproduce --quiet "$e" --runs 1 --param args=50 >"$dir/reproduce-$e.out" 2>"$dir/reproduce-$e.err" || echo "exit $?" >>"$dir/reproduce-$e.out"
        else
            "$bin" reproduce --quiet "$e" >"$dir/reproduce-$e.out" 2>"$dir/reproduce-$e.err" || echo "exit $?" >>"$dir/reproduce-$e.out"
        fi
    done
    touch "$dir/.done"
    echo "$dir"
}

a="$(outputs "$1")"
b="$(outputs "$2")"
echo "compared $(find "$a" -type f -not -name '.done' -not -name '*.err' | wc -l) files: $a vs $b"
if diff -rq -x '*.err' -x .done "$a" "$b"; then
    echo "identical"
else
    exit 1
fi
