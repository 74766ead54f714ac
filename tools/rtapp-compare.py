#!/usr/bin/env python3
# Compare rt-app log files of two runs (a real rt-app run and `schedsim run --rtapp ... --log-dir`)
# thread by thread: rows, and the mean and p90 of period, run, slack and wu_lat (us), forked
# threads summed per task. Usage: tools/rtapp-compare.py HOST_DIR MODEL_DIR
import glob, os, re, sys

COLS = ["idx", "perf", "run", "period", "start", "end", "rel_st", "slack", "c_duration", "c_period", "wu_lat"]

def read(d):
    out = {}
    for p in sorted(glob.glob(os.path.join(d, "*.log"))):
        rows = []
        for line in open(p):
            if line.startswith("#") or not line.strip():
                continue
            v = line.split()
            if len(v) == len(COLS):
                rows.append(dict(zip(COLS, map(int, v))))
        # Forked threads (<base>-<task>-<ind>-<fork>.log) are summed per task.
        name = re.sub(r"-\d+-\d{4}\.log$", "-*-NNNN.log (forks)", os.path.basename(p))
        out.setdefault(name, []).extend(rows)
    return out

def stat(rows, k):
    v = sorted(r[k] for r in rows)
    if not v:
        return (0.0, 0)
    return (sum(v) / len(v), v[min(len(v) - 1, (9 * len(v)) // 10)])

def main():
    host, model = read(sys.argv[1]), read(sys.argv[2])
    print(f"   {'log':<28} {'rows':>9}  " + "  ".join(f"{k + ' mean/p90 (host | model)':>36}" for k in ("period", "run", "slack", "wu_lat")))
    for name in sorted(set(host) | set(model)):
        h, m = host.get(name, []), model.get(name, [])
        cells = []
        for k in ("period", "run", "slack", "wu_lat"):
            (hm, hp), (mm, mp) = stat(h, k), stat(m, k)
            cells.append(f"{hm:9.0f}/{hp:<7} | {mm:9.0f}/{mp:<7}")
        print(f"   {name:<28} {len(h):>4}|{len(m):<4}  " + "  ".join(f"{c:>36}" for c in cells))

main()
