#!/bin/bash
# Usage (under the host lock, see tests/fixtures/import/README.md):
#   flock /tmp/schedsim-host.lock /tmp/host3/freeze.sh tools/record-tracedat-fixture.sh OUT.dat
# Records `perf bench sched pipe -l 300` (SCHED_FIFO 10) with the import's events through tracefs
# directly (`trace-cmd record` fails on this guest: it writes set_ftrace_filter and
# ftrace_enabled, refused here), then saves the buffer with `trace-cmd extract`, its
# /proc/kallsyms replaced (in a private mount namespace) by the timer-callback symbols only,
# which keeps the file small and still names hrtimer_wakeup. Leaves tracefs as it was.
out=$1
SUB=$(mktemp)
T=/sys/kernel/tracing
EV="sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new sched/sched_process_fork sched/sched_process_exit sched/sched_migrate_task irq/irq_handler_entry irq/irq_handler_exit irq/softirq_entry irq/softirq_exit timer/hrtimer_expire_entry timer/hrtimer_expire_exit timer/timer_expire_entry timer/timer_expire_exit syscalls/sys_enter_sched_setscheduler syscalls/sys_enter_sched_setaffinity"
E=""; for e in $EV; do E="$E -e ${e/\//:}"; done
echo 0 > $T/tracing_on; echo > $T/trace
for e in $EV; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
chrt -f 10 taskset -c 0-1 perf bench sched pipe -l 300 > $out.stdout 2>&1
echo 0 > $T/tracing_on
for e in $EV; do echo 0 > $T/events/$e/enable; done
grep -E ' [tT] [a-z_0-9.]*(timer|timeout|tick|wakeup|_fn)[a-z_0-9.]*$' /proc/kallsyms > $SUB
unshare -m sh -c "mount --bind $SUB /proc/kallsyms && trace-cmd extract -o $out" > $out.extract.log 2>&1
echo "extract rc $?"
echo 0 > $T/tracing_on
for e in $EV; do echo 0 > $T/events/$e/enable; done
echo > $T/trace
rm -f $SUB
