#!/bin/bash
# The idle-entry path on this machine under two cpuidle governors (root, tracefs): from the
# sched_switch to the idle task to its cpu_idle entry, on CPU 0 (this guest's CPU 1 logs no
# idle-task records, docs/background-measured.md), around a 1 s nanosleep(1 us) loop pinned
# there, x86-tsc timestamps. tick_stop is traced too, so intervals where the tick was stopped
# are told apart. Prints per governor the medians of the intervals without a tick_stop inside
# (docs/costs.md, "The idle-entry path, measured"). The governor and trace clock are restored.
# usage: idle-entry.sh [REPEATS] [GOVERNOR...]      (default: 3 haltpoll menu)
set -u
reps=${1:-3}; shift || true
govs=${*:-haltpoll menu}
case $reps in ''|*[!0-9]*|0) echo "idle-entry.sh: REPEATS $reps: expected a whole number above 0" >&2; exit 2;; esac
T=/sys/kernel/tracing; mountpoint -q $T || mount -t tracefs nodev $T
G=/sys/devices/system/cpu/cpuidle/current_governor
old_gov=$(cat $G); old_clock=$(sed -e 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
old_buf=$(cut -d' ' -f1 < $T/buffer_size_kb); old_on=$(cat $T/tracing_on)
mhz=$(grep -m1 'cpu MHz' /proc/cpuinfo | awk '{print $4}')
dir=$(mktemp -d)
# Whatever happens, leave tracing and the governor as they were.
restore() {
  echo > $T/set_event; echo > $T/trace; echo "$old_buf" > $T/buffer_size_kb; echo "$old_on" > $T/tracing_on
  echo "$old_clock" > $T/trace_clock; echo "$old_gov" > $G; rm -rf "$dir"
}
trap restore EXIT
cat > "$dir/nsloop.c" <<'C'
#include <time.h>
int main(void){struct timespec r={0,1000},n,e;clock_gettime(CLOCK_MONOTONIC,&e);e.tv_sec+=1;
for(;;){nanosleep(&r,0);clock_gettime(CLOCK_MONOTONIC,&n);if(n.tv_sec>e.tv_sec||(n.tv_sec==e.tv_sec&&n.tv_nsec>=e.tv_nsec))return 0;}}
C
gcc -O2 -o "$dir/nsloop" "$dir/nsloop.c" || exit 1
echo x86-tsc > $T/trace_clock
for r in $(seq 1 "$reps"); do
  for g in $govs; do
    echo "$g" > $G || { echo "cannot select governor $g" >&2; exit 2; }
    echo 0 > $T/tracing_on; echo > $T/trace; echo 16384 > $T/buffer_size_kb; echo > $T/set_event
    for e in sched:sched_switch power:cpu_idle timer:tick_stop; do echo $e >> $T/set_event; done
    echo 1 > $T/tracing_on
    taskset -c 0 "$dir/nsloop"
    echo 0 > $T/tracing_on
    cat $T/trace > "$dir/$g-$r.trace" || { echo "idle-entry.sh: cannot save the trace in $dir" >&2; exit 2; }
  done
done
python3 - "$dir" "$mhz" $govs <<'PY'
import glob, re, statistics, sys
d, mhz, govs = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
rx = re.compile(r'^\s*.+?-\d+\s+\[(\d+)\]\s+\S+\s+(\d+):\s+(\w+):\s*(.*)$')
def intervals(path):
    last = {}
    out = {"tick kept or already stopped": [], "tick stopped here": []}
    for line in open(path):
        m = rx.match(line)
        if not m:
            continue
        cpu, ts, ev, rest = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        if ev == "sched_switch":
            last[cpu] = (ts, False) if "next_pid=0 " in rest else None
        elif ev == "tick_stop" and last.get(cpu):
            last[cpu] = (last[cpu][0], True)
        elif ev == "cpu_idle" and last.get(cpu):
            if "4294967295" not in rest:
                t0, stopped = last[cpu]
                out["tick stopped here" if stopped else "tick kept or already stopped"].append((ts - t0) * 1000 / mhz)
            last[cpu] = None
    return out
print(f"switch to idle -> cpu_idle entry, CPU 0, ns ({mhz} MHz TSC)")
for g in govs:
    agg = {}
    for p in sorted(glob.glob(f"{d}/{g}-*.trace")):
        for k, v in intervals(p).items():
            agg.setdefault(k, []).extend(v)
    for k, v in agg.items():
        if v:
            v.sort()
            print(f"{g:9} {k:30} n={len(v):6} p10={v[len(v)//10]:7.0f} p50={statistics.median(v):7.0f} p90={v[len(v)*9//10]:7.0f}")
PY
