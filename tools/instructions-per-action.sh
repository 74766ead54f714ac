#!/bin/bash
# Instructions per action of bench --scaling's runs, counted by cachegrind (valgrind): whole
# runs of length 1 and 2, and the steady state (what the second run adds, per added action).
# Host-independent, unlike bench's CPU time. Usage:
#   tools/instructions-per-action.sh BIN WORKLOAD CPUS...   (e.g. target/release/schedsim nanosleep 8 4096)
# With CACHE=1, cachegrind also simulates a 48 KB 12-way L1d and a 1 MB 16-way last level (the
# development host's L1d and L2) and the steady state's data misses per action are added: a
# deterministic measure of how many cold lines an action touches (prefetches are not
# simulated, so they count as misses where the data is used). Needs valgrind. Slow: about 50
# times the run's own time (CACHE=1: about 100).
# With FUNCS=K, each size is followed by the K functions with the most instructions per action
# (whole run or steady state), by function as compiled: what a function inlines counts as its
# own (e.g. sched_balance_rq holds update_sd_lb_stats_cost and the line reads).
set -euo pipefail
bin=$1; w=$2; shift 2
command -v valgrind >/dev/null || { echo "needs valgrind (apt install valgrind)" >&2; exit 2; }
case "${FUNCS:-0}" in
  ''|*[!0-9]*) echo "FUNCS must be a number of functions to list, got '$FUNCS'" >&2; exit 2 ;;
esac
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
sim=(--cache-sim=no)
if [ "${CACHE:-0}" = 1 ]; then
  sim=(--cache-sim=yes --D1=49152,12,64 --LL=1048576,16,64)
fi
# actions and instructions of the run of length 1 (the instructions of the whole process: the
# machine's build too), and the steady state: what length 2 adds, per added action.
printf '%-6s %-10s %12s %16s %14s %14s' CPUs workload actions instructions "instr/action" "steady instr"
[ "${CACHE:-0}" = 1 ] && printf ' %12s %12s' "steady D1 mr" "steady LL mr"
printf '\n'
# A counter of cachegrind's summary, commas removed ("D1  misses:  50,907,121  ( 42,252,630 rd"
# gives the read misses, the number in the brackets).
count() { grep -oP "$1" "$2" | tr -d , ; }
for n in "$@"; do
  "$bin" machine --scaled-epyc "$n" -o "$dir/m.toml"
  for l in 1 2; do
    out=/dev/null
    [ "${FUNCS:-0}" != 0 ] && out="$dir/cg$l"
    valgrind --tool=cachegrind "${sim[@]}" --cachegrind-out-file="$out" \
      "$bin" bench --scaling-child "$w" "$n" "$dir/m.toml" "$l" > "$dir/out$l" 2> "$dir/err$l"
    grep -oP '"actions":\K[0-9]+' "$dir/out$l" > "$dir/a$l"
    count 'I\s+refs:\s+\K[0-9,]+' "$dir/err$l" > "$dir/i$l"
    if [ "${CACHE:-0}" = 1 ]; then
      count 'D1\s+misses:\s+[0-9,]+\s+\(\s*\K[0-9,]+' "$dir/err$l" > "$dir/d$l"
      count 'LLd misses:\s+[0-9,]+\s+\(\s*\K[0-9,]+' "$dir/err$l" > "$dir/ll$l"
    else
      echo 0 > "$dir/d$l"; echo 0 > "$dir/ll$l"
    fi
  done
  awk -v n="$n" -v w="$w" -v a1="$(cat "$dir/a1")" -v a2="$(cat "$dir/a2")" \
    -v i1="$(cat "$dir/i1")" -v i2="$(cat "$dir/i2")" -v d1="$(cat "$dir/d1")" -v d2="$(cat "$dir/d2")" \
    -v l1="$(cat "$dir/ll1")" -v l2="$(cat "$dir/ll2")" -v cache="${CACHE:-0}" \
    'BEGIN {
       printf "%-6s %-10s %12.0f %16.0f %14.0f %14.0f", n, w, a1, i1, i1 / a1, (i2 - i1) / (a2 - a1)
       if (cache == 1) printf " %12.2f %12.2f", (d2 - d1) / (a2 - a1), (l2 - l1) / (a2 - a1)
       printf "\n"
     }'
  if [ "${FUNCS:-0}" != 0 ]; then
    # cg_annotate's per-function rows ("  1,234  file:function"), summed over files by the
    # function's last two path segments (Kernel::run, fair::sched_balance_rq); printed per
    # action of each run and of the steady state.
    for l in 1 2; do
      cg_annotate --auto=no --threshold=0 --show-percs=no "$dir/cg$l" 2>/dev/null |
        awk '$1 ~ /^[0-9,]+$/ && $2 ~ /:/ {
               gsub(",", "", $1); f = $2; sub(/^[^:]*:/, "", f)
               n = split(f, p, "::"); if (n >= 2) f = p[n - 1] "::" p[n]
               s[f] += $1
             }
             END { for (f in s) print f, s[f] }' > "$dir/f$l"
    done
    awk -v a1="$(cat "$dir/a1")" -v a2="$(cat "$dir/a2")" -v k="$FUNCS" '
      FNR == NR { i1[$1] = $2; all[$1] = 1; next }
      { i2[$1] = $2; all[$1] = 1 }
      END {
        printf "  %-44s %12s %14s\n", "function", "instr/action", "steady instr"
        for (f in all) { w = i1[f] / a1; st = (i2[f] - i1[f]) / (a2 - a1); key[f] = (w > st ? w : st) }
        for (j = 0; j < k; j++) {
          best = ""; for (f in key) if (best == "" || key[f] > key[best] || (key[f] == key[best] && f < best)) best = f
          if (best == "") break
          printf "  %-44s %12.1f %14.1f\n", best, i1[best] / a1, (i2[best] - i1[best]) / (a2 - a1)
          delete key[best]
        }
      }' "$dir/f1" "$dir/f2"
  fi
done
