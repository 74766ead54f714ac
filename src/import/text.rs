//! The text layouts of a sched trace, one line at a time:
//!
//! - tracefs's `trace` file: `COMM-PID [CPU] FLAGS SECONDS: EVENT: ARGS`, with an optional
//!   `(TGID)` column (the `record-tgid` option) and four or five flag characters;
//! - `trace-cmd report`: the same without the flags column (or with it, `report -l`), and its
//!   header lines (`cpus=N`, `version = N`, `CPU N is empty`);
//! - `perf script` of `perf sched record`: `COMM PID [CPU] SECONDS: SYSTEM:EVENT: ARGS` (the
//!   default fields of a tracepoint sample; `PID/TID` when pids are asked for).
//!
//! Argument layouts are the kernel's `TP_printk()` formats of v6.x (include/trace/events/
//! sched.h, irq.h, timer.h) and the syscall tracer's (`sys_NAME(arg: value, ...)` in tracefs,
//! `arg: 0x...` in perf). A line that fits none of the layouts, or a known event whose
//! arguments lack a field the import needs, is an error naming what was expected.

use super::{Ctx, Kind, PrevState, Rec};

/// `SECONDS.FRACTION` of a timestamp in ns, as the trace prints it.
pub fn fmt_ts(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000)
}

const LAYOUT: &str = "expected a trace line: `COMM-PID [CPU] FLAGS SECONDS: EVENT: ARGS` (tracefs, trace-cmd \
                      report) or `COMM PID [CPU] SECONDS: SYSTEM:EVENT: ARGS` (perf script)";

/// Parse one line: `Ok(None)` for headers, comments and blank lines; an error for a line that
/// is none of those and not a record.
pub fn parse_line(line: &str) -> Result<Option<Rec<'_>>, String> {
    let t = line.trim();
    if t.is_empty()
        || t.starts_with('#')
        || t.starts_with("=>")
        || t.starts_with("cpus=")
        || t.starts_with("version =")
        || (t.starts_with("CPU ") && t.ends_with(" is empty"))
    {
        return Ok(None);
    }
    // `CPU:N [LOST M EVENTS]` (tracefs) and `CPU:N [M EVENTS DROPPED]` (trace-cmd report).
    if let Some(rest) = t.strip_prefix("CPU:") {
        if let Some((cpu, what)) = rest.split_once(' ') {
            let cpu: u32 = cpu.parse().map_err(|_| format!("bad CPU number in `{t}`"))?;
            let inner = what.trim().trim_start_matches('[').trim_end_matches(']');
            let count = inner
                .split(' ')
                .find_map(|w| w.parse::<u64>().ok())
                .ok_or_else(|| format!("expected `CPU:N [LOST M EVENTS]`, found `{t}`"))?;
            if inner.contains("LOST") || inner.contains("DROPPED") {
                return Ok(Some(Rec {
                    ts_ns: 0,
                    cpu,
                    pid: 0,
                    comm: "",
                    ctx: None,
                    event: "lost",
                    kind: Kind::Lost { count },
                }));
            }
        }
    }
    let open = line.find(" [").ok_or_else(|| LAYOUT.to_string())?;
    let head = line[..open].trim();
    // An optional `(TGID)` column before the CPU.
    let head = match head.rfind(" (") {
        Some(i) if head.ends_with(')') => head[..i].trim_end(),
        _ => head,
    };
    let after = &line[open + 2..];
    let close = after.find(']').ok_or_else(|| LAYOUT.to_string())?;
    let cpu: u32 = after[..close].trim().parse().map_err(|_| format!("bad CPU `{}`; {LAYOUT}", &after[..close]))?;
    if cpu >= crate::limits::MAX_CPUS {
        return Err(format!("CPU {cpu} is beyond the {} CPUs schedsim models", crate::limits::MAX_CPUS));
    }
    let (comm, pid) = split_task(head).ok_or_else(|| format!("bad task `{head}`; {LAYOUT}"))?;
    let mut rest = after[close + 1..].trim_start();
    // The flags column, when there is one: four or five characters, not a timestamp.
    let mut ctx = None;
    if let Some((first, tail)) = rest.split_once(' ') {
        if !first.ends_with(':') && (first.len() == 4 || first.len() == 5) && first.is_ascii() {
            ctx = Some(match first.as_bytes()[2] {
                b'h' | b'H' | b'z' | b'Z' => Ctx::Irq,
                b's' => Ctx::Softirq,
                _ => Ctx::Task,
            });
            rest = tail.trim_start();
        }
    }
    let (ts, rest) = rest.split_once(": ").ok_or_else(|| LAYOUT.to_string())?;
    let ts_ns = parse_seconds(ts.trim())?;
    let rest = rest.trim_start();
    // The event: `NAME: ARGS`, `SYSTEM:NAME: ARGS` (perf), or a syscall `sys_NAME(ARGS)`.
    let (event, args) = match rest.split_once(": ") {
        Some((e, a)) if !e.contains('(') => (e, a.trim()),
        _ => match rest.split_once('(') {
            Some((e, a)) if e.starts_with("sys_") => (e, a.trim_end_matches(')')),
            _ => (rest.trim_end_matches(':'), ""),
        },
    };
    let event = event.rsplit(':').next().unwrap_or(event);
    let kind = parse_kind(event, args).map_err(|e| format!("{event}: {e}"))?;
    Ok(Some(Rec { ts_ns, cpu, pid, comm, ctx, event, kind }))
}

/// `COMM-PID` (tracefs, trace-cmd) or `COMM PID`, `COMM PID/TID` (perf script).
fn split_task(head: &str) -> Option<(&str, u32)> {
    if let Some((comm, last)) = head.rsplit_once(char::is_whitespace) {
        let tid = last.rsplit('/').next().unwrap_or(last);
        if let Ok(pid) = tid.parse() {
            return Some((comm.trim(), pid));
        }
        // perf prints -1 for a sample whose thread it could not resolve.
        if tid == "-1" {
            return Some((comm.trim(), super::UNKNOWN_PID));
        }
    }
    let (comm, pid) = head.rsplit_once('-')?;
    Some((comm, pid.parse().ok()?))
}

fn parse_seconds(ts: &str) -> Result<u64, String> {
    let Some((secs, frac)) = ts.split_once('.') else {
        return Err(format!(
            "timestamp `{ts}` is not SECONDS.FRACTION (a raw-count clock such as x86-tsc or counter; record with \
             the local, global or mono clock)"
        ));
    };
    let ok = !frac.is_empty()
        && frac.len() <= 9
        && frac.bytes().all(|b| b.is_ascii_digit())
        && !secs.is_empty()
        && secs.bytes().all(|b| b.is_ascii_digit());
    let v = ok
        .then(|| {
            let sub = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
            secs.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(sub)
        })
        .flatten();
    v.ok_or_else(|| format!("bad timestamp `{ts}` (expected SECONDS.FRACTION)"))
}

/// The value of `key=` (at the start or after a space), up to the next space.
fn kv<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = args[from..].find(key) {
        let at = from + i;
        let rest = &args[at + key.len()..];
        if (at == 0 || args.as_bytes()[at - 1] == b' ') && rest.starts_with('=') {
            return Some(rest[1..].split(' ').next().unwrap_or(""));
        }
        from = at + key.len();
    }
    None
}

/// A comm value: from `key=` up to ` next=` (a comm may hold spaces).
fn comm_until<'a>(args: &'a str, key: &str, next: &str) -> Option<&'a str> {
    let start = if args.starts_with(&format!("{key}=")) {
        key.len() + 1
    } else {
        args.find(&format!(" {key}="))? + key.len() + 2
    };
    let rest = &args[start..];
    let end = rest.find(&format!(" {next}="))?;
    Some(&rest[..end])
}

fn wake_comm(a: &str) -> Result<&str, String> {
    comm_until(a, "comm", "pid").ok_or_else(|| "no `comm=` field".to_string())
}

fn num(args: &str, key: &str) -> Result<u32, String> {
    let v = kv(args, key).ok_or_else(|| format!("no `{key}=` field in `{args}`"))?;
    v.parse().map_err(|_| format!("`{key}={v}` is not a number"))
}

/// `name: 0x1f` (perf) or `name: 31` (tracefs) in a syscall's arguments.
fn sys_arg(args: &str, key: &str) -> Result<u32, String> {
    let v = args
        .split(',')
        .find_map(|p| p.trim().strip_prefix(key).and_then(|r| r.strip_prefix(':')))
        .ok_or_else(|| format!("no `{key}:` argument in `{args}`"))?
        .trim();
    let n = match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse::<u64>().ok(),
    };
    // A pid or policy wider than 32 bits is a negative int the syscall tracer printed unsigned.
    n.map(|n| n as u32).ok_or_else(|| format!("`{key}: {v}` is not a number"))
}

fn parse_kind<'a>(event: &str, a: &'a str) -> Result<Kind<'a>, String> {
    Ok(match event {
        "sched_switch" => {
            let (arrow_l, arrow_r) =
                a.split_once(" ==> ").ok_or("expected `prev_comm=.. prev_pid=.. ==> next_comm=.. next_pid=..`")?;
            let st = kv(arrow_l, "prev_state").ok_or("no `prev_state=` field")?;
            let prev_state = match st.as_bytes().first() {
                Some(b'R') => PrevState::Runnable,
                Some(b'S') => PrevState::Sleep,
                Some(b'D') => PrevState::Disk,
                _ => PrevState::Other,
            };
            Kind::Switch {
                prev_pid: num(arrow_l, "prev_pid")?,
                prev_prio: num(arrow_l, "prev_prio")?,
                prev_state,
                next_pid: num(arrow_r, "next_pid")?,
                next_prio: num(arrow_r, "next_prio")?,
                next_comm: comm_until(arrow_r, "next_comm", "next_pid").ok_or("no `next_comm=` field")?,
            }
        }
        "sched_waking" => Kind::Waking { pid: num(a, "pid")?, prio: num(a, "prio")?, comm: wake_comm(a)? },
        "sched_wakeup" => Kind::Wakeup { pid: num(a, "pid")?, prio: num(a, "prio")?, comm: wake_comm(a)? },
        "sched_wakeup_new" => Kind::WakeupNew { pid: num(a, "pid")?, prio: num(a, "prio")? },
        "sched_process_fork" => Kind::Fork {
            child_pid: num(a, "child_pid")?,
            child_comm: comm_until(a, "child_comm", "child_pid").ok_or("no `child_comm=` field")?,
        },
        "sched_process_exit" => Kind::Exit { pid: num(a, "pid")? },
        "sched_migrate_task" => Kind::Migrate { pid: num(a, "pid")?, dest_cpu: num(a, "dest_cpu")? },
        "irq_handler_entry" => Kind::IrqEntry,
        "irq_handler_exit" => Kind::IrqExit,
        "softirq_entry" => Kind::SoftirqEntry,
        "softirq_exit" => Kind::SoftirqExit,
        "hrtimer_expire_entry" => {
            Kind::TimerEntry { wakeup: kv(a, "function").ok_or("no `function=` field")?.starts_with("hrtimer_wakeup") }
        }
        "timer_expire_entry" => Kind::TimerEntry { wakeup: false },
        "hrtimer_expire_exit" | "timer_expire_exit" => Kind::TimerExit,
        "sys_sched_setscheduler" | "sys_enter_sched_setscheduler" => {
            Kind::SetScheduler { pid: sys_arg(a, "pid")?, policy: sys_arg(a, "policy")? }
        }
        "sys_sched_setaffinity" | "sys_enter_sched_setaffinity" => Kind::SetAffinity { pid: sys_arg(a, "pid")? },
        _ => Kind::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracefs_trace_cmd_and_perf_lines_parse_alike() {
        let fs = "      sched-pipe-2350    [001] d..2.   500.945893: sched_switch: prev_comm=sched-pipe prev_pid=2350 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120";
        let tc = "      sched-pipe-2350  [001]   500.945893: sched_switch:         prev_comm=sched-pipe prev_pid=2350 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120";
        let pf = "      sched-pipe  2350 [001]   500.945893:       sched:sched_switch: prev_comm=sched-pipe prev_pid=2350 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120";
        let want = Kind::Switch {
            prev_pid: 2350,
            prev_prio: 120,
            prev_state: PrevState::Sleep,
            next_pid: 0,
            next_prio: 120,
            next_comm: "swapper/1",
        };
        for (l, ctx) in [(fs, Some(Ctx::Task)), (tc, None), (pf, None)] {
            let r = parse_line(l).unwrap().unwrap();
            assert_eq!((r.pid, r.comm, r.cpu, r.ts_ns, r.ctx), (2350, "sched-pipe", 1, 500_945_893_000, ctx), "{l}");
            assert_eq!(r.kind, want, "{l}");
        }
    }

    #[test]
    fn context_tgid_syscalls_and_lost_markers() {
        let l = "          <idle>-0       [000] d.h3. 34025.324821: sched_waking: comm=sleep pid=8526 prio=120 target_cpu=000";
        let r = parse_line(l).unwrap().unwrap();
        assert_eq!((r.ctx, r.kind), (Some(Ctx::Irq), Kind::Waking { pid: 8526, prio: 120, comm: "sleep" }));
        let l = "              rm-4673    (-------) [001] d..3.   339.230488: sched_waking: comm=kworker/1:1 H pid=41 prio=120 target_cpu=001";
        assert_eq!(parse_line(l).unwrap().unwrap().kind, Kind::Waking { pid: 41, prio: 120, comm: "kworker/1:1 H" });
        let l = "      sched-pipe-8476    [001] ..... 34025.028080: sys_sched_setscheduler(pid: 0, policy: 1, param: 0x7ffe168572fc)";
        assert_eq!(parse_line(l).unwrap().unwrap().kind, Kind::SetScheduler { pid: 0, policy: 1 });
        let l = "   chrt  9 [000]  1.000001: syscalls:sys_enter_sched_setscheduler: pid: 0x00000000, policy: 0x00000002, param: 0x7ffe";
        assert_eq!(parse_line(l).unwrap().unwrap().kind, Kind::SetScheduler { pid: 0, policy: 2 });
        assert_eq!(parse_line("CPU:1 [LOST 233 EVENTS]").unwrap().unwrap().kind, Kind::Lost { count: 233 });
        assert_eq!(parse_line("CPU:0 [12 EVENTS DROPPED]").unwrap().unwrap().kind, Kind::Lost { count: 12 });
        let l = "  a-1 [000] d.s2. 1.000001: sched_process_fork: comm=a b pid=1 child_comm=a b c child_pid=7";
        assert_eq!(parse_line(l).unwrap().unwrap().kind, Kind::Fork { child_pid: 7, child_comm: "a b c" });
        for h in ["# tracer: nop", "", "cpus=2", "version = 7", "CPU 1 is empty"] {
            assert_eq!(parse_line(h).unwrap(), None);
        }
    }

    #[test]
    fn bad_lines_say_what_was_expected() {
        assert!(parse_line("hello world").unwrap_err().contains("expected a trace line"));
        let e = parse_line("  a-1 [000] d..2. 123456789: sched_switch: x").unwrap_err();
        assert!(e.contains("raw-count clock"), "{e}");
        let e = parse_line("  a-1 [000] d..2. 1.5: sched_switch: prev_comm=a prev_pid=1").unwrap_err();
        assert!(e.contains("sched_switch") && e.contains("==>"), "{e}");
        let e = parse_line("  a-1 [000] d..2. 1.5: sched_waking: comm=a pid=x prio=1").unwrap_err();
        assert!(e.contains("`pid=x` is not a number"), "{e}");
        assert!(parse_line("  a-1 [99999] d..2. 1.5: x: y").unwrap_err().contains("beyond"));
        let r = parse_line("  :-1    -1 [000] 1.5: sched:sched_stat_runtime: comm=x pid=7 runtime=1 [ns]")
            .unwrap()
            .unwrap();
        assert_eq!(r.pid, crate::import::UNKNOWN_PID);
    }
}
