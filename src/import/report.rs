//! The import's two outputs: the rt-app JSON workload and the report of what it assumed.

use super::build::{Builder, Start, Step, Task, DEFAULT_RT_POLICY};
use std::fmt::Write;

/// The policy and priority of an rt-app thread from the task's last `sched_switch` prio and
/// its recorded `sched_setscheduler` policy, and the note when a policy had to be assumed or
/// changed.
pub fn policy(prio: u32, recorded: Option<u32>) -> (&'static str, i64, Option<String>) {
    if prio < 100 {
        let rt = 99 - i64::from(prio);
        match recorded {
            Some(1) => ("SCHED_FIFO", rt, None),
            Some(2) => ("SCHED_RR", rt, None),
            Some(p) => (DEFAULT_RT_POLICY, rt, Some(format!("RT prio with recorded policy {p}: {DEFAULT_RT_POLICY}"))),
            None => {
                (DEFAULT_RT_POLICY, rt, Some(format!("RT prio, no sched_setscheduler: {DEFAULT_RT_POLICY} assumed")))
            }
        }
    } else {
        let nice = (i64::from(prio) - 120).clamp(-20, 19);
        let note = match recorded {
            Some(3) => Some("SCHED_BATCH recorded: SCHED_OTHER (the model has no batch class)".to_string()),
            Some(5) => Some("SCHED_IDLE recorded: SCHED_OTHER at nice 19".to_string()),
            Some(6) => Some("SCHED_DEADLINE recorded: SCHED_OTHER (the model has no deadline class)".to_string()),
            _ => None,
        };
        let nice = if recorded == Some(5) { 19 } else { nice };
        ("SCHED_OTHER", nice, note)
    }
}

/// Whether a forked task is created by its parent's `fork`: only if it takes part in no
/// barrier, since rt-app counts a barrier's threads among those present from the start
/// (`instance` 0 threads count for none); the others start at their fork's time (`delay`).
pub fn by_fork(t: &Task) -> bool {
    matches!(t.start, Start::Forked(..)) && !t.steps.iter().any(|s| matches!(s, Step::Barrier(_)))
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// The rt-app file: one thread per imported task, its steps as events in order.
pub fn workload_json(b: &Builder) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{{");
    let _ = writeln!(
        o,
        "  \"global\": {{ \"duration\": -1, \"default_policy\": \"SCHED_OTHER\", \"log_size\": \"disable\" }},"
    );
    let _ = writeln!(o, "  \"tasks\": {{");
    let n = b.tasks.len();
    for (ti, t) in b.tasks.iter().enumerate() {
        let (pol, prio, _) = policy(t.prio, t.policy);
        let delay = match t.start {
            Start::Forked(..) if by_fork(t) => None,
            Start::Forked(_, ns) | Start::Delay(ns) => Some(ns),
        };
        let _ = write!(o, "    {}: {{ \"instance\": {}, \"loop\": 1", json_str(&t.name), u8::from(delay.is_some()));
        let _ = write!(o, ", \"policy\": \"{pol}\", \"priority\": {prio}");
        if let Some(ns) = delay.filter(|&ns| ns >= 1000) {
            let _ = write!(o, ", \"delay\": {}", ns / 1000);
        }
        if b.opts.affinity_observed && !t.cpus.is_empty() {
            let cpus: Vec<String> = t.cpus.iter().map(|c| c.to_string()).collect();
            let _ = write!(o, ", \"cpus\": [{}]", cpus.join(", "));
        }
        for (k, s) in t.steps.iter().enumerate() {
            let _ = match s {
                Step::RunUs(us) => write!(o, ",\n      \"run{k}\": {us}"),
                Step::SleepUs(us) => write!(o, ",\n      \"sleep{k}\": {us}"),
                Step::Barrier(id) => write!(o, ",\n      \"barrier{k}\": \"w{id}\""),
                Step::Timer { chain, period_us } => write!(
                    o,
                    ",\n      \"timer{k}\": {{ \"ref\": \"unique-p{chain}\", \"period\": {period_us}, \"mode\": \"relative\" }}"
                ),
                Step::Fork(c) if by_fork(&b.tasks[*c]) => {
                    write!(o, ",\n      \"fork{k}\": {}", json_str(&b.tasks[*c].name))
                }
                Step::Fork(_) => Ok(()),
            };
        }
        if t.steps.is_empty() {
            // rt-app needs an event: a thread seen but never running is one empty run.
            let _ = write!(o, ",\n      \"run0\": 0");
        }
        let _ = writeln!(o, " }}{}", if ti + 1 < n { "," } else { "" });
    }
    let _ = writeln!(o, "  }}");
    let _ = writeln!(o, "}}");
    o
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// What the import assumed: per task its CPU time, its wakeups by how they were turned into
/// the workload, and the recording's gaps.
pub fn report_text(b: &Builder, origin: &str) -> String {
    let mut o = String::new();
    let s = &b.seen;
    let span = s.first_ts.map_or(0, |f| s.last_ts.saturating_sub(f));
    let _ = writeln!(
        o,
        "# schedsim import {origin}: {} records, {} CPUs, {} ms; {} tasks imported, {} wakeups as barriers",
        s.records,
        s.nr_cpus,
        ms(span),
        b.tasks.len(),
        s.edges
    );
    if s.unterminated {
        let _ = writeln!(o, "# the file ends inside a line (truncated?): its last line was read as it is");
    }
    if s.silent_switch_ins > 0 {
        let _ = writeln!(
            o,
            "# {} switch-ins are not in the trace (a CPU whose idle task logs nothing, or a lost record): each run \
             is taken to start at its CPU's record before",
            s.silent_switch_ins
        );
    }
    if let Some((ts, why)) = &s.cut {
        let _ = writeln!(o, "# the import ends early at {}: {why}", super::text::fmt_ts(*ts));
    }
    let sub = b.opts.subtract;
    let _ = writeln!(
        o,
        "# taken off the runs (the model charges them again): {} ns per block, {} ns per wake made, {} ns per \
         switch-in after a wakeup",
        sub.block_ns, sub.wake_ns, sub.wakein_ns
    );
    let _ = writeln!(
        o,
        "{:<28} {:>9} {:>7} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7}  policy",
        "thread", "cpu_ms", "sw_in", "woken", "barrier", "irq", "softq", "timer", "idle", "other", "running"
    );
    let mut notes: Vec<String> = Vec::new();
    for t in &b.tasks {
        let w = &t.wakes;
        let (pol, prio, note) = policy(t.prio, t.policy);
        let woken = w.matched + w.hardirq + w.softirq + w.timer + w.idle + w.by_other_task;
        let _ = writeln!(
            o,
            "{:<28} {:>9} {:>7} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7}  {pol} {prio}",
            t.name,
            ms(t.cpu_ns),
            t.switch_ins,
            woken,
            w.matched,
            w.hardirq,
            w.softirq,
            w.timer,
            w.idle,
            w.by_other_task,
            w.not_blocked
        );
        if let Some(n) = note {
            notes.push(format!("{}: {n}", t.name));
        }
        if !t.other_wakers.is_empty() {
            let who: Vec<String> = t.other_wakers.iter().map(|(c, n)| format!("{c} x{n}")).collect();
            notes.push(format!(
                "{}: woken by tasks left out (sleeps of the traced length): {}",
                t.name,
                who.join(", ")
            ));
        }
        if t.set_affinity && !b.opts.affinity_observed {
            notes.push(format!(
                "{}: called sched_setaffinity (the mask is not in the trace): --affinity observed pins it to the CPUs \
                 it ran on",
                t.name
            ));
        }
        if matches!(t.start, Start::Forked(..)) && !by_fork(t) {
            notes.push(format!(
                "{}: forked, but starts by `delay` at the fork's time, not by `fork` (it takes part in barriers, and \
                 rt-app counts a barrier's threads among those present from the start)",
                t.name
            ));
        }
        for p in &t.periodic {
            notes.push(format!(
                "{}: periodic, {} us: {} sleeps became rt-app timers (relative mode: a late period restarts from \
                 the wakeup)",
                t.name, p.period_us, p.timers
            ));
        }
        if t.unsubtracted_ns > 0 {
            notes.push(format!(
                "{}: {} of model costs could not be taken off (runs shorter than the costs)",
                t.name,
                if t.unsubtracted_ns >= 1000 {
                    format!("{} us", t.unsubtracted_ns / 1000)
                } else {
                    format!("{} ns", t.unsubtracted_ns)
                }
            ));
        }
    }
    let _ = writeln!(
        o,
        "# woken: wakeups that ended a sleep; barrier: by an imported task (kept as a dependency); irq, softq, timer, \
         idle, other: by an interrupt, a softirq, a timer, the idle task, a task left out (each a sleep of the \
         traced length); running: wakeups of a task that had not slept"
    );
    if !s.excluded.is_empty() {
        let mut ex: Vec<(&String, &u64)> = s.excluded.iter().collect();
        ex.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let names: Vec<String> = ex.iter().take(12).map(|(c, n)| format!("{c} ({n})")).collect();
        let more = if ex.len() > 12 { format!(" and {} more", ex.len() - 12) } else { String::new() };
        let _ = writeln!(
            o,
            "# left out (kernel threads, tracers, not selected; --all-tasks, --comm or --pid take them): {}{more}",
            names.join(", ")
        );
    }
    for n in notes {
        let _ = writeln!(o, "# {n}");
    }
    let (_, gaps) = b.missing();
    for g in gaps {
        let _ = writeln!(o, "# recording: {g}");
    }
    if s.lost_markers > 0 {
        let _ = writeln!(
            o,
            "# recording: {} lost-events markers; record with a larger buffer (trace-cmd record -b KB, or \
             buffer_size_kb)",
            s.lost_markers
        );
    }
    if !b.missing().1.is_empty() {
        let _ = writeln!(o, "# a fuller recording: {}", super::RECORD_LINE);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::build::Options;
    use crate::workload::rtapp_json::{parse_rtapp, Limits};

    #[test]
    fn policies_from_prio_and_recorded_syscalls() {
        assert_eq!(policy(120, None).0, "SCHED_OTHER");
        assert_eq!(policy(100, None).1, -20);
        assert_eq!(policy(89, Some(2)), ("SCHED_RR", 10, None));
        let (p, r, note) = policy(89, None);
        assert_eq!((p, r), ("SCHED_FIFO", 10));
        assert!(note.unwrap().contains("assumed"));
    }

    #[test]
    fn the_workload_reads_back_with_rtapps_grammar() {
        let lines = [
            " a-10 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=89",
            " a-10 [000] ..... 1.000010: sched_process_fork: comm=a pid=10 child_comm=a child_pid=12",
            " a-10 [000] d..2. 1.000050: sched_switch: prev_comm=a prev_pid=10 prev_prio=89 prev_state=S ==> next_comm=b/1 next_pid=11 next_prio=120",
            " b/1-11 [000] d..3. 1.000080: sched_waking: comm=a pid=10 prio=89 target_cpu=000",
        ];
        let b = crate::import::build::tests::build(&lines, Options::default());
        let j = workload_json(&b);
        let cfg =
            parse_rtapp(&j, "out.json", Limits { nr_cpus: 2, nr_nodes: 1 }).unwrap_or_else(|e| panic!("{e}\n{j}"));
        let names: Vec<&str> = cfg.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a-10", "a-12", "b_1-11"]);
        assert_eq!((cfg.tasks[1].instance, cfg.tasks[0].priority), (0, 10));
        let r = report_text(&b, "t.txt");
        assert!(r.contains("SCHED_FIFO 10") && r.contains("trace-cmd record -e sched:sched_switch"), "{r}");
    }
}
