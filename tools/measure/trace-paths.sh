#!/bin/bash
# Capture the real kernel's path durations on this machine (root, tracefs, perf).
# usage: trace-paths.sh OUTDIR REPEATS
# For each repeat, traces four workloads with the tracepoint pairs that bracket the paths the
# model charges (csd/softirq/local_timer/hrtimer entry->exit, ipi_send_cpu->handler,
# sched_waking->sched_switch, cpu_idle exit, raw syscalls), then tools/measure/path_costs.py
# turns the traces into per-path medians and spreads (docs/measured-paths.md).
# The nanosleep loop is a one-line C program compiled here (loop nanosleep(1 us) for 1 s).
set -u
out=${1:?outdir}; reps=${2:-3}; mkdir -p "$out"
T=/sys/kernel/tracing; mountpoint -q $T || mount -t tracefs nodev $T
cat > "$out/nsloop.c" <<'C'
#include <time.h>
int main(void){struct timespec r={0,1000},n,e;clock_gettime(CLOCK_MONOTONIC,&e);e.tv_sec+=1;
for(;;){nanosleep(&r,0);clock_gettime(CLOCK_MONOTONIC,&n);if(n.tv_sec>e.tv_sec||(n.tv_sec==e.tv_sec&&n.tv_nsec>=e.tv_nsec))return 0;}}
C
gcc -O2 -o "$out/nsloop" "$out/nsloop.c" || exit 1
old_buf=$(cut -d' ' -f1 < $T/buffer_size_kb); old_on=$(cat $T/tracing_on)
old_clock=$(sed -e 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
# x86-tsc prints raw TSC counts: ns resolution instead of the default clock's us.
echo x86-tsc > $T/trace_clock
grep -m1 'cpu MHz' /proc/cpuinfo > "$out/tsc-mhz.txt"
EV="sched:sched_switch sched:sched_waking sched:sched_wakeup sched:sched_wake_idle_without_ipi sched:sched_migrate_task
    ipi:ipi_send_cpu ipi:ipi_send_cpumask csd:csd_queue_cpu csd:csd_function_entry csd:csd_function_exit
    irq:softirq_raise irq:softirq_entry irq:softirq_exit power:cpu_idle
    irq_vectors:local_timer_entry irq_vectors:local_timer_exit irq_vectors:reschedule_entry irq_vectors:reschedule_exit
    irq_vectors:call_function_single_entry irq_vectors:call_function_single_exit
    irq_vectors:call_function_entry irq_vectors:call_function_exit
    timer:hrtimer_expire_entry timer:hrtimer_expire_exit timer:timer_expire_entry timer:timer_expire_exit
    raw_syscalls:sys_enter raw_syscalls:sys_exit"
run() { # name, command...
  local name=$1; shift
  echo 0 > $T/tracing_on; echo > $T/trace; echo 32768 > $T/buffer_size_kb; echo > $T/set_event
  for e in $EV; do echo $e >> $T/set_event; done
  echo 1 > $T/tracing_on
  "$@" > "$out/$name.stdout" 2>&1
  echo 0 > $T/tracing_on
  gzip -6 < $T/trace > "$out/$name.trace.gz"
  echo "$name: $(zcat "$out/$name.trace.gz" | grep -vc '^#') lines, overruns: $(grep -h overrun $T/per_cpu/cpu*/stats | tr '\n' ' ')"
}
for r in $(seq 1 "$reps"); do
  run "pipe-$r" perf bench sched pipe -l 20000
  run "messaging-$r" perf bench sched messaging -g 1 -l 100
  run "pipe1cpu-$r" taskset -c 0 perf bench sched pipe -l 20000
  run "nanosleep-$r" "$out/nsloop"
done
echo > $T/set_event; echo > $T/trace; echo "$old_buf" > $T/buffer_size_kb; echo "$old_on" > $T/tracing_on; echo "$old_clock" > $T/trace_clock
uname -r > "$out/kernel.txt"
