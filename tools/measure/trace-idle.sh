#!/bin/bash
# Capture a long trace of this machine's background kernel activity (root, tracefs).
# usage: trace-idle.sh OUT.trace.gz SECONDS [COMMAND...]
# With no COMMAND the machine is left idle; with one, it runs for the whole window (a light load).
# Events: sched, workqueue, timer, rcu, irq, irq_vectors, ipi, csd, power:cpu_idle.
# Source of the background profiles in src/background/profiles/ (tools/measure/background.py,
# make_profile.py; docs/background-measured.md).
set -u
out=${1:?out.trace.gz}; secs=${2:?seconds}; shift 2
T=/sys/kernel/tracing; mountpoint -q $T || mount -t tracefs nodev $T
old_buf=$(cut -d' ' -f1 < $T/buffer_size_kb); old_on=$(cat $T/tracing_on)
echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb; echo > $T/set_event
for e in sched:sched_switch sched:sched_wakeup sched:sched_waking sched:sched_wakeup_new \
         sched:sched_migrate_task sched:sched_wake_idle_without_ipi workqueue timer rcu \
         irq:softirq_raise irq:softirq_entry irq:softirq_exit irq:irq_handler_entry irq:irq_handler_exit \
         irq_vectors ipi csd power:cpu_idle; do echo "$e" >> $T/set_event; done
echo 1 > $T/tracing_on
if [ $# -gt 0 ]; then timeout "$secs" "$@" > /dev/null 2>&1; else sleep "$secs"; fi
echo 0 > $T/tracing_on
gzip -6 < $T/trace > "$out"
cat $T/per_cpu/cpu*/stats | grep -i overrun
echo > $T/set_event; echo > $T/trace; echo "$old_buf" > $T/buffer_size_kb; echo "$old_on" > $T/tracing_on
echo "$out: $(zcat "$out" | grep -vc '^#') lines"
