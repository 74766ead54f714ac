#!/bin/bash
# Instructions per action of bench --scaling's runs, counted by cachegrind (valgrind): whole
# runs of length 1 and 2, and the steady state (what the second run adds, per added action).
# Host-independent, unlike bench's CPU time. Usage:
#   tools/instructions-per-action.sh BIN WORKLOAD CPUS...   (e.g. target/release/schedsim nanosleep 8 4096)
# Needs valgrind. Slow: about 50 times the run's own time.
set -euo pipefail
bin=$1; w=$2; shift 2
command -v valgrind >/dev/null || { echo "needs valgrind (apt install valgrind)" >&2; exit 2; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
# actions and instructions of the run of length 1 (the instructions of the whole process: the
# machine's build too), and the steady state: what length 2 adds, per added action.
printf '%-6s %-10s %12s %16s %14s %14s\n' CPUs workload actions instructions "instr/action" "steady instr"
for n in "$@"; do
  "$bin" machine --scaled-epyc "$n" -o "$dir/m.toml"
  for l in 1 2; do
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
      "$bin" bench --scaling-child "$w" "$n" "$dir/m.toml" "$l" > "$dir/out$l" 2> "$dir/err$l"
    grep -oP '"actions":\K[0-9]+' "$dir/out$l" > "$dir/a$l"
    grep -oP 'I\s+refs:\s+\K[0-9,]+' "$dir/err$l" | tr -d , > "$dir/i$l"
  done
  a1=$(cat "$dir/a1"); a2=$(cat "$dir/a2"); i1=$(cat "$dir/i1"); i2=$(cat "$dir/i2")
  awk -v n="$n" -v w="$w" -v a1="$a1" -v a2="$a2" -v i1="$i1" -v i2="$i2" \
    'BEGIN { printf "%-6s %-10s %12.0f %16.0f %14.0f %14.0f\n", n, w, a1, i1, i1 / a1, (i2 - i1) / (a2 - a1) }'
done
