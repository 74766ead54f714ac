#!/bin/sh
# Time to the first finding against the budget, for `schedsim explore` (docs/explore.md).
# Usage: tools/explore-scaling.sh [BIN] [SEEDS] [STRATEGIES] -- runs the d6962c4fe8f9 scenario
# (v6.1, small schbench on smp-4; SCHBENCH="-m 2 -t 4" by default) for each strategy, budget and
# seed with --first, and prints one line per (strategy, budget): explorations that found the
# race, median first run index, median wall seconds to the first finding (stderr of
# schedsim explore).
BIN=${1:-target/release/schedsim}
SEEDS=${2:-10}
STRATEGIES=${3:-"random,pct --no-jitter,delay --no-jitter --depth 1"}
SCEN="schbench --kernel v6.1 --machine smp-4 --background none"
ARGS="-- ${SCHBENCH:--m 2 -t 4} -r 1 -w 0"
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
printf "%-22s %6s %7s %10s %12s\n" strategy budget found "med-run" "med-wall-s"
echo "$STRATEGIES" | tr ',' '\n' | while read -r strat; do
  for budget in 4 16 64 256; do
    runs=""; walls=""; found=0
    for seed in $(seq 1 "$SEEDS"); do
      out=$($BIN explore $SCEN --strategy $strat --budget $budget --seed $seed --first --jobs 2 $ARGS 2>/tmp/explore-scaling.err)
      r=$(echo "$out" | sed -n 's/^finding 1: .*(first in run \([0-9]*\);.*/\1/p')
      if [ -n "$r" ]; then
        found=$((found + 1))
        runs="$runs $r"
        walls="$walls $(sed -n 's/.*first finding after \([0-9.]*\) s.*/\1/p' /tmp/explore-scaling.err)"
      fi
    done
    printf "%-22s %6s %4s/%-2s %10s %12s\n" "$(echo $strat | cut -d' ' -f1-2)" "$budget" "$found" "$SEEDS" \
      "$(echo $runs | tr ' ' '\n' | grep . | median)" "$(echo $walls | tr ' ' '\n' | grep . | median)"
  done
done
