#!/bin/bash
# Usage (under the host lock, see tests/fixtures/import/README.md):
#   flock /tmp/schedsim-host.lock /tmp/host3/freeze.sh tools/record-perfetto-fixture.sh OUT PROGRAM...
# Records PROGRAM with the import's events through tracefs (as tools/record-tracedat-fixture.sh
# does: `trace-cmd record` cannot write set_ftrace_filter on this guest), saves the buffer with
# `trace-cmd extract` (kallsyms cut to the timer callbacks) and prints it as `trace-cmd report
# -N -t` text (nanosecond timestamps, no plugins): OUT.dat, OUT.txt, OUT.stdout.
# tools/perfetto-fixture.py turns OUT.txt into the Perfetto fixtures. Leaves tracefs as it was.
out=$1; shift
SUB=$(mktemp)
T=/sys/kernel/tracing
EV="sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new sched/sched_process_fork sched/sched_process_exit sched/sched_migrate_task irq/irq_handler_entry irq/irq_handler_exit irq/softirq_entry irq/softirq_exit timer/hrtimer_expire_entry timer/hrtimer_expire_exit timer/timer_expire_entry timer/timer_expire_exit"
echo 0 > $T/tracing_on; echo > $T/trace
for e in $EV; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
"$@" > $out.stdout 2>&1
echo 0 > $T/tracing_on
for e in $EV; do echo 0 > $T/events/$e/enable; done
grep -E ' [tT] [a-z_0-9.]*(timer|timeout|tick|wakeup|_fn)[a-z_0-9.]*$' /proc/kallsyms > $SUB
unshare -m sh -c "mount --bind $SUB /proc/kallsyms && trace-cmd extract -o $out.dat" > $out.extract.log 2>&1
echo "extract rc $?"
trace-cmd report -N -t -i $out.dat > $out.txt 2> $out.report.log
echo "report rc $? ($(wc -l < $out.txt) lines)"
echo > $T/trace
rm -f $SUB
