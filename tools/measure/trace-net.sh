#!/bin/bash
# Capture the real kernel's loopback networking paths on this machine (root, tracefs, the
# Debian packages netperf and dbench). usage: trace-net.sh OUTDIR REPEATS
#
# For each repeat, traces netperf TCP_RR and UDP_RR (20000 transactions each) and TCP_STREAM
# (16 KB sends, 64 MB) between a client pinned to CPU 0 and its server pinned to CPU 1
# (`netperf -T 0,1`), with the tracepoints that bracket the paths the model charges: the
# send and receive system calls (raw_syscalls, filtered to sendto/recvfrom/read/write), the
# device layer (net_dev_queue, net_dev_xmit, netif_receive_skb), the NET_RX softirq
# (softirq_entry/exit vec=3) and the scheduler's wakeup and switch records. x86-tsc clock.
# tools/measure/net_costs.py turns the captures into per-path medians (docs/costs.md,
# "Loopback networking").
#
# Each capture runs under the host lock of this project's shared machine, once no compiler
# runs; the analysis discards the captures in which other tasks used more than 5% of the CPUs
# and says how many.
set -u
out=${1:?outdir}; reps=${2:-3}; mkdir -p "$out"
T=/sys/kernel/tracing; mountpoint -q $T || mount -t tracefs nodev $T
command -v netperf >/dev/null || { echo "netperf is not installed (Debian: apt-get install netperf, in non-free)" >&2; exit 1; }
old_buf=$(cut -d' ' -f1 < $T/buffer_size_kb); old_on=$(cat $T/tracing_on)
old_clock=$(sed -e 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
echo x86-tsc > $T/trace_clock
grep -m1 'cpu MHz' /proc/cpuinfo > "$out/tsc-mhz.txt"
EV="sched:sched_switch sched:sched_waking sched:sched_wakeup sched:sched_process_fork
    irq:softirq_entry irq:softirq_exit net:net_dev_queue net:net_dev_xmit net:netif_receive_skb
    raw_syscalls:sys_enter raw_syscalls:sys_exit"
pgrep -x netserver >/dev/null || netserver -p 12865 >/dev/null 2>&1
sleep 0.5
run() { # name, command...
  local name=$1; shift
  flock /tmp/schedsim-host.lock bash -c '
    while pgrep -x rustc >/dev/null || pgrep -x cc1 >/dev/null; do sleep 5; done
    T='"$T"'
    echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb; echo > $T/set_event
    for e in '"$(echo $EV)"'; do echo $e >> $T/set_event; done
    # sendto, recvfrom, read, write (x86-64 numbers).
    echo "id == 44 || id == 45 || id == 0 || id == 1" > $T/events/raw_syscalls/sys_enter/filter
    echo "id == 44 || id == 45 || id == 0 || id == 1" > $T/events/raw_syscalls/sys_exit/filter
    echo "vec == 3" > $T/events/irq/softirq_entry/filter
    echo "vec == 3" > $T/events/irq/softirq_exit/filter
    echo 1 > $T/tracing_on
    "$@" > "'"$out/$name"'.stdout" 2>&1
    echo 0 > $T/tracing_on
    grep -h overrun $T/per_cpu/cpu*/stats > "'"$out/$name"'.overruns"
    gzip -6 < $T/trace > "'"$out/$name"'.trace.gz"
  ' _ "$@"
  echo "$name: $(zcat "$out/$name.trace.gz" | grep -vc '^#') lines, $(tr '\n' ' ' < "$out/$name.overruns")"
}
for r in $(seq 1 "$reps"); do
  run "tcp_rr-$r" netperf -4 -H 127.0.0.1 -t TCP_RR -T 0,1 -l -20000
  run "udp_rr-$r" netperf -4 -H 127.0.0.1 -t UDP_RR -T 0,1 -l -20000
  run "tcp_stream-$r" netperf -4 -H 127.0.0.1 -t TCP_STREAM -T 0,1 -l -67108864 -- -m 16384
done
for f in sys_enter sys_exit; do echo 0 > $T/events/raw_syscalls/$f/filter; done
for f in softirq_entry softirq_exit; do echo 0 > $T/events/irq/$f/filter; done
echo > $T/set_event; echo > $T/trace; echo "$old_buf" > $T/buffer_size_kb; echo "$old_on" > $T/tracing_on; echo "$old_clock" > $T/trace_clock
uname -r > "$out/kernel.txt"
