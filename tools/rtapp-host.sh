#!/bin/sh
# Run the rt-app JSON files of scenarios/rtapp/ with Debian's rt-app on this host and in the
# model, and print rt-app's log columns side by side (tools/rtapp-compare.py).
#
#   tools/rtapp-host.sh [FILE.json ...]      (default: the four files rt-app 1.0 can run)
#
# Needs the `rt-app` package (apt-get install rt-app) and root for the SCHED_FIFO/SCHED_RR
# threads. MACHINE=FILE.toml|PRESET picks the model's machine; by default a 2-vCPU KVM guest
# derived from the icx-vm-32 preset (haltpoll idle, HZ=250), which is what the project's host
# is. SCHEDSIM=path overrides the binary (default: cargo build --release). OUT=DIR keeps the
# logs (default: a temporary directory). RTAPP=path runs another rt-app build (fork-storm.json
# needs one newer than Debian's 1.0, e.g. upstream built from source).
set -eu
cd "$(dirname "$0")/.."
RTAPP=${RTAPP:-rt-app}
command -v "$RTAPP" >/dev/null || { echo "rtapp-host: $RTAPP is not installed (apt-get install rt-app)" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then echo "rtapp-host: run as root (SCHED_FIFO/SCHED_RR threads)" >&2; exit 2; fi
if [ -z "${SCHEDSIM:-}" ]; then cargo build --release -q; SCHEDSIM=target/release/schedsim; fi
OUT=${OUT:-$(mktemp -d /tmp/rtapp-host.XXXXXX)}
mkdir -p "$OUT"
if [ -z "${MACHINE:-}" ]; then
    MACHINE=$OUT/kvm-2vcpu.toml
    "$SCHEDSIM" list --machine icx-vm-32 | sed \
        -e '0,/^name = /s/^name = .*/name = "kvm-2vcpu"/' \
        -e 's/^description = .*/description = "KVM guest, 2 vCPUs (2 cores, no SMT), haltpoll idle: icx-vm-32 costs"/' \
        -e 's/^hz = .*/hz = 250/' \
        -e 's/^cores_per_socket = .*/cores_per_socket = 2/' \
        -e 's/^cores_per_llc = [0-9]*/cores_per_llc = 2/' \
        -e 's/^threads_per_core = .*/threads_per_core = 1/' > "$MACHINE"
fi
[ $# -gt 0 ] || set -- scenarios/rtapp/periodic.json scenarios/rtapp/pipeline.json \
    scenarios/rtapp/lock-contention.json scenarios/rtapp/barrier.json
# rt-app calibrates its ns per loop from its (SCHED_OTHER) main thread, which a busy host
# preempts: calibrate once at SCHED_FIFO 99 and give that figure to every run, host and model,
# so `run` lasts its nominal time and the perf columns compare. CALIBRATION=N skips this.
if [ -z "${CALIBRATION:-}" ]; then
    mkdir -p "$OUT/calibrate"
    printf '{"global": {"calibration": "CPU0"}, "tasks": {"c": {"loop": 1, "phases": {"p": {"run": 10}}}}}\n' \
        > "$OUT/calibrate/calib.json"
    (cd "$OUT/calibrate" && chrt -f 99 "$RTAPP" calib.json > rt-app.out 2>&1)
    CALIBRATION=$(sed -n 's/.*pLoad = \([0-9]*\)ns.*/\1/p' "$OUT/calibrate/rt-app.out" | head -1)
    [ -n "$CALIBRATION" ] || { echo "rtapp-host: calibration failed (see $OUT/calibrate/rt-app.out)" >&2; exit 1; }
fi
echo "calibration: $CALIBRATION ns per loop (rt-app at SCHED_FIFO 99); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for f in "$@"; do
    b=$(basename "$f" .json)
    mkdir -p "$OUT/$b/host" "$OUT/$b/model"
    # The same file for both sides, with the measured calibration.
    abs=$OUT/$b/$b.json
    sed "s/\"calibration\" *: *\"CPU[0-9]*\"/\"calibration\" : $CALIBRATION/" "$f" > "$abs"
    echo "== $b: $RTAPP $abs (host) vs schedsim run --rtapp $abs --machine $MACHINE --log-dir $OUT/$b/model"
    # rt-app writes its logs into global.logdir ("./" by default): run it in the host dir.
    if ! (cd "$OUT/$b/host" && "$RTAPP" "$abs" > rt-app.out 2>&1); then
        echo "   rt-app failed on the host (see $OUT/$b/host/rt-app.out):"; tail -3 "$OUT/$b/host/rt-app.out" | sed 's/^/   /'
        continue
    fi
    "$SCHEDSIM" run --rtapp "$abs" --machine "$MACHINE" --log-dir "$OUT/$b/model" > "$OUT/$b/model/schedsim.out"
    python3 tools/rtapp-compare.py "$OUT/$b/host" "$OUT/$b/model"
done
echo "logs in $OUT"
