#!/bin/sh
# Byte-identical check used while restructuring the kernel model (class table, assertions,
# workload boundary, resume points): every built-in scenario's stdout and ftrace text, and every
# experiment's `reproduce` output (one seed), hashed.
#   tools/check-class-identical.sh BINARY OUTDIR      writes OUTDIR/NAME.{out,trace}.sha256
#   diff -r BASEDIR OUTDIR                             compares two such directories
# EXPERIMENTS='' skips the experiments (the slow part, ~3 min); EXPERIMENTS='a b' runs those.
set -eu
bin=$1
out=$2
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in ipistorm schbench spinners numa-imbalance nanosleep hackbench rt-push pingpong perf-pipe idle; do
    "$bin" run "$s" --quiet --trace "$tmp/t.txt" | sed "s#$tmp#TMP#g" > "$tmp/o.txt"
    sha256sum < "$tmp/o.txt" > "$out/run-$s.out.sha256"
    sha256sum < "$tmp/t.txt" > "$out/run-$s.trace.sha256"
    rm -f "$tmp/t.txt"
done
for e in ${EXPERIMENTS-ipistorm ipistorm-intel schbench-ttwu ilb-polling rt-warn nanosleep hackbench-2013 rt-push}; do
    "$bin" reproduce "$e" --runs 1 --jobs 2 --quiet > "$tmp/o.txt"
    sha256sum < "$tmp/o.txt" > "$out/reproduce-$e.out.sha256"
done
