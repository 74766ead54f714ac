#!/bin/bash
# What the cpu controller's task-group hierarchy costs the scheduler on this machine (root,
# tracefs, the cpu controller mounted at /sys/fs/cgroup/cpu (cgroup v1) or /sys/fs/cgroup
# (v2)); docs/costs.md, "Task-group depth".
#
#  1. Per level of enqueue: a pipe ping-pong of two processes pinned to CPU 1, in groups at
#     depth 1..4. (Not in the root group: with CONFIG_SCHED_AUTOGROUP on, a task in the root
#     cgroup of a session other than init's runs in its session's autogroup, a task group at
#     depth 1, so the root is not depth 0 for a process this script starts; `cat
#     /proc/self/autogroup`.) Each wakeup is local, so sched_waking -> sched_wakeup on CPU 1
#     brackets try_to_wake_up()'s enqueue (enqueue_task_fair() walks one sched_entity per level)
#     and wakeup_preempt() (whose find_matching_se() walks the levels too). 1 s per capture.
#  2. Per leaf cfs_rq of the blocked-load update: a spinner in the root group keeps CPU 1's tick
#     (and its periodic SCHED softirq) running, beside L sleepers pinned to CPU 1, each in a group
#     of its own under the root (L = 0, 8, 32), so CPU 1's leaf_cfs_rq_list holds L + 1 cfs_rqs;
#     the SCHED softirq (softirq_entry -> softirq_exit, vec 7) runs
#     sched_balance_update_blocked_averages() over them. 3 s per capture.
#
# Captures alternate their order between repeats. A capture in which other tasks ran on CPU 1
# for more than MAX_FOREIGN percent of it is discarded and retried (up to 4 x REPEATS), the
# `--max-foreign` rule of `schedsim validate`; the discards are counted. Hold the host lock and
# wait for compilers to finish first (docs/costs.md gives the command line).
# usage: cgroup-depth.sh [REPEATS] [MAX_FOREIGN]        (default: 3 2)
set -u
reps=${1:-3}; max_foreign=${2:-2}
case $reps in ''|*[!0-9]*|0) echo "cgroup-depth.sh: REPEATS $reps: expected a whole number above 0" >&2; exit 2;; esac
T=/sys/kernel/tracing; mountpoint -q $T || mount -t tracefs nodev $T
if [ -f /sys/fs/cgroup/cpu/tasks ]; then CG=/sys/fs/cgroup/cpu; JOIN=tasks
elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then CG=/sys/fs/cgroup; JOIN=cgroup.procs
else echo "cgroup-depth.sh: no cpu controller at /sys/fs/cgroup/cpu or /sys/fs/cgroup" >&2; exit 2; fi
old_clock=$(sed -e 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
old_buf=$(cut -d' ' -f1 < $T/buffer_size_kb); old_on=$(cat $T/tracing_on); old_mask=$(cat $T/tracing_cpumask)
mhz=$(grep -m1 'cpu MHz' /proc/cpuinfo | awk '{print $4}')
dir=$(mktemp -d)
groups=()
# Whatever happens, leave tracing and the cgroup tree as they were.
restore() {
  echo 0 > $T/tracing_on; echo > $T/set_event; echo > $T/trace; echo "$old_buf" > $T/buffer_size_kb
  echo "$old_mask" > $T/tracing_cpumask; echo "$old_clock" > $T/trace_clock; echo "$old_on" > $T/tracing_on
  local j; for j in $(jobs -p); do kill "$j" 2>/dev/null; done; wait 2>/dev/null
  for ((i=${#groups[@]}-1; i>=0; i--)); do rmdir "${groups[$i]}" 2>/dev/null; done
  rm -rf "$dir"
}
trap restore EXIT
if [ "$CG" = /sys/fs/cgroup ]; then echo +cpu > $CG/cgroup.subtree_control; fi
mkgroup() {
  mkdir -p "$1" || exit 2
  groups+=("$1")
  if [ "$CG" = /sys/fs/cgroup ]; then echo +cpu > "$1/cgroup.subtree_control" 2>/dev/null; fi
}
# The depth chain ss1/ss2/ss3/ss4 and the leaf groups sl1..sl32.
path=$CG; for d in 1 2 3 4; do path=$path/ss$d; mkgroup "$path"; done
for i in $(seq 1 32); do mkgroup "$CG/sl$i"; done
depth_path() { local p=$CG; for d in $(seq 1 "$1"); do p=$p/ss$d; done; echo "$p"; }

cat > "$dir/cgload.c" <<'C'
/* cgload pingpong GROUP_TASKS SECONDS | cgload spin GROUP_TASKS SECONDS | cgload sleep GROUP_TASKS SECONDS:
   join the group, pin to CPU 1, then a pipe ping-pong with a child, a busy loop, or 20 us of work
   every 1 ms. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  if(argc!=4)return 2;
  FILE*f=fopen(argv[2],"w"); if(!f||fprintf(f,"%d\n",getpid())<0||fclose(f))return 3;
  cpu_set_t s;CPU_ZERO(&s);CPU_SET(1,&s);if(sched_setaffinity(0,sizeof s,&s))return 4;
  double end=now()+atof(argv[3]);
  if(!strcmp(argv[1],"spin")){while(now()<end);return 0;}
  if(!strcmp(argv[1],"sleep")){struct timespec r={0,1000000};while(now()<end){double t=now()+20e-6;while(now()<t);nanosleep(&r,0);}return 0;}
  int a[2],b[2];char c=0;if(pipe(a)||pipe(b))return 5;
  pid_t p=fork();if(p<0)return 6;
  if(p==0){close(a[1]);close(b[0]);for(;;){if(read(a[0],&c,1)!=1)return 0;if(write(b[1],&c,1)!=1)return 0;}}
  close(a[0]);close(b[1]);
  for(long i=0;;i++){if(write(a[1],&c,1)!=1||read(b[0],&c,1)!=1)return 7;if((i&1023)==0&&now()>end)break;}
  close(a[1]);waitpid(p,0,0);return 0;}
C
gcc -O2 -o "$dir/cgload" "$dir/cgload.c" || exit 1

echo x86-tsc > $T/trace_clock; echo 2 > $T/tracing_cpumask
# capture NAME SECONDS EVENTS... -- COMMAND...: one trace of CPU 1 while COMMAND runs.
capture() {
  local name=$1 secs=$2; shift 2
  # Other people's builds disturb a capture: start only while no compiler runs.
  while pgrep -x rustc >/dev/null || pgrep -x cc1 >/dev/null; do sleep 5; done
  local ev=(); while [ "$1" != -- ]; do ev+=("$1"); shift; done; shift
  echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb; echo > $T/set_event
  for e in "${ev[@]}"; do echo "$e" >> $T/set_event; done
  "$@" & local pid=$!
  sleep 0.2; echo 1 > $T/tracing_on; sleep "$secs"; echo 0 > $T/tracing_on
  wait $pid
  cat $T/trace > "$dir/$name.trace" || { echo "cgroup-depth.sh: cannot save the trace in $dir" >&2; exit 2; }
}
# foreign TRACE: the percent of the capture other tasks than ours and the idle task ran on CPU 1.
foreign() {
  python3 - "$1" <<'PY'
import re, sys
rx = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+):\s+(\w+):\s*(.*)$')
first = last = None; since = None; who = None; other = 0
for line in open(sys.argv[1]):
    m = rx.match(line)
    if not m: continue
    ts = int(m.group(4)); first = ts if first is None else first; last = ts
    if m.group(5) == "sched_switch":
        if who is not None and since is not None and who != "ours": other += ts - since
        n = re.search(r'next_comm=(\S+) next_pid=(\d+)', m.group(6))
        who = "ours" if n.group(1) == "cgload" or n.group(2) == "0" else "other"; since = ts
print(f"{100.0 * other / max(1, (last or 0) - (first or 0)):.2f}")
PY
}
declare -A discards
keep() { # keep NAME SECONDS EVENTS... -- COMMAND...: capture until quiet enough (4 tries).
  local name=$1; local t
  for t in 1 2 3 4; do
    capture "$@"
    local f; f=$(foreign "$dir/$name.trace")
    if python3 -c "import sys; sys.exit(0 if float('$f') <= $max_foreign else 1)"; then return; fi
    discards[$name]="${discards[$name]:-} $f%"
  done
  echo "cgroup-depth.sh: $name: no capture with at most $max_foreign% foreign time" >&2
}
for r in $(seq 1 "$reps"); do
  depths="1 2 3 4"; leaves="0 8 32"
  if [ $((r % 2)) = 0 ]; then depths="4 3 2 1"; leaves="32 8 0"; fi
  for d in $depths; do
    keep "depth$d-$r" 1 sched:sched_waking sched:sched_wakeup sched:sched_switch -- \
      "$dir/cgload" pingpong "$(depth_path "$d")/$JOIN" 1.5
  done
  for l in $leaves; do
    pids=()
    for i in $(seq 1 "$l"); do "$dir/cgload" sleep "$CG/sl$i/$JOIN" 4 & pids+=($!); done
    keep "leaves$l-$r" 3 irq:softirq_entry irq:softirq_exit sched:sched_switch -- \
      "$dir/cgload" spin "$CG/$JOIN" 3.5
    wait "${pids[@]}" 2>/dev/null
  done
done
for n in "${!discards[@]}"; do echo "discarded $n:${discards[$n]}"; done | sort
python3 - "$dir" "$mhz" "$reps" <<'PY'
import glob, re, statistics, sys
d, mhz, reps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rx = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+):\s+(\w+):\s*(.*)$')
def waking_to_wakeup(path):
    open_ = {}; out = []
    for line in open(path):
        m = rx.match(line)
        if not m: continue
        ts, ev, rest = int(m.group(4)), m.group(5), m.group(6)
        if ev in ("sched_waking", "sched_wakeup"):
            p = re.search(r'comm=(\S+) pid=(\d+)', rest)
            if not p or p.group(1) != "cgload": continue
            if ev == "sched_waking": open_[p.group(2)] = ts
            elif p.group(2) in open_: out.append((ts - open_.pop(p.group(2))) * 1000 / mhz)
    return out
def sched_softirq(path):
    t0 = None; out = []
    for line in open(path):
        m = rx.match(line)
        if not m: continue
        ts, ev, rest = int(m.group(4)), m.group(5), m.group(6)
        if "vec=7 " not in rest + " ": continue
        if ev == "softirq_entry": t0 = ts
        elif ev == "softirq_exit" and t0 is not None: out.append((ts - t0) * 1000 / mhz); t0 = None
    return out
def slope(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
def table(title, prefix, xs, f):
    print(title)
    per_rep = []
    for r in range(1, reps + 1):
        row = []
        for x in xs:
            v = f(f"{d}/{prefix}{x}-{r}.trace") if glob.glob(f"{d}/{prefix}{x}-{r}.trace") else []
            row.append((statistics.median(v), len(v)) if v else (None, 0))
        per_rep.append(row)
        print(f"  repeat {r}: " + "  ".join(f"{x}: {m:.0f} (n={n})" if m else f"{x}: -" for x, (m, n) in zip(xs, row)))
    slopes = [slope(xs, [m for m, _ in row]) for row in per_rep if all(m for m, _ in row)]
    if slopes:
        print(f"  slope per step (least squares over the medians), per repeat: " + ", ".join(f"{s:.1f}" for s in slopes)
              + f"; median {statistics.median(slopes):.1f} ns")
print(f"x86-tsc at {mhz} MHz; medians in ns")
table("sched_waking -> sched_wakeup on CPU 1, local pipe wakeups, by the tasks' depth", "depth", [1, 2, 3, 4], waking_to_wakeup)
table("SCHED softirq on CPU 1 (entry -> exit), by extra leaf cfs_rqs with load", "leaves", [0, 8, 32], sched_softirq)
PY
