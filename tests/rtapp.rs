//! rt-app JSON workloads (`schedsim run --rtapp FILE.json`): the five files under
//! `scenarios/rtapp/` run to their end with the rows their loops ask for, and what each is
//! about shows in rt-app's own log columns (the two `peer-*.json` benchmark files are built,
//! not run); a run keeping summaries only reports what one keeping every row does; SCHED_RR slices, `sched_yield()`, absolute timers
//! and affinity masks behave as the kernel's do; bad files fail with the JSON path.

use schedsim::run::{build, execute};
use schedsim::spec::RunSpec;
use schedsim::trace::Event;
use schedsim::workload::params::Params;
use schedsim::workload::rtapp::{LogRow, RtApp};
use schedsim::workload::Workload;

fn spec(file: &str) -> RunSpec {
    let mut s = RunSpec::new("rtapp");
    s.machine = "smp-4".into();
    s.params = Params::from_pairs(vec![("file".into(), file.into())], "test");
    s
}

fn run(file: &str) -> (RtApp, schedsim::run::RunResult) {
    let r = execute(&spec(file)).unwrap();
    let Workload::RtApp(w) = &r.workload else { panic!("not rt-app") };
    (w.clone(), r)
}

fn rows<'a>(w: &'a RtApp, name: &str) -> Vec<&'a LogRow> {
    w.threads.iter().filter(|t| t.name == name).flat_map(|t| t.rows.iter()).collect()
}

fn mean(v: &[&LogRow], f: impl Fn(&LogRow) -> u64) -> f64 {
    v.iter().map(|r| f(r) as f64).sum::<f64>() / v.len().max(1) as f64
}

/// A JSON file written for one test (removed when dropped).
struct TempJson(std::path::PathBuf);
impl TempJson {
    fn new(tag: &str, text: &str) -> TempJson {
        let p = std::env::temp_dir().join(format!("schedsim-rtapp-{}-{tag}.json", std::process::id()));
        std::fs::write(&p, text).unwrap();
        TempJson(p)
    }
    fn path(&self) -> String {
        self.0.display().to_string()
    }
}
impl Drop for TempJson {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn periodic_threads_keep_their_absolute_periods() {
    let (w, r) = run("scenarios/rtapp/periodic.json");
    assert!(r.finished);
    let load = rows(&w, "load10");
    let fifo = rows(&w, "fifo");
    assert_eq!((load.len(), fifo.len()), (20, 30));
    // Phase "slow" then "fast": 40 ms then 20 ms periods, each activation 3 ms of work.
    assert!(fifo[..10].iter().all(|r| r.c_period == 40_000 && r.c_duration == 3000));
    assert!(fifo[10..].iter().all(|r| r.c_period == 20_000));
    // Absolute periods: each activation ends on its timer, so consecutive ends are one period
    // apart to within the wakeup latency.
    for pair in fifo[11..].windows(2) {
        let d = pair[1].end as i64 - pair[0].end as i64;
        assert!((d - 20_000).abs() <= 20, "fifo period {d} us");
    }
    // The FIFO thread never waits for the fair one: its wakeup latency stays a few us, below
    // the fair thread's (which pays the timer slack).
    assert!(mean(&fifo, |r| r.wu_lat) < 10.0, "{}", mean(&fifo, |r| r.wu_lat));
    assert!(mean(&load, |r| r.wu_lat) > mean(&fifo, |r| r.wu_lat));
    assert!((mean(&load, |r| r.period) - 100_000.0).abs() < 500.0);
    // slack = period - work, as rt-app computes it at the timer.
    assert!(fifo.iter().all(|r| (r.slack - (r.c_period as i64 - r.run as i64)).abs() < 50));
}

#[test]
fn the_pipeline_moves_at_the_sources_pace() {
    let (w, r) = run("scenarios/rtapp/pipeline.json");
    assert!(r.finished);
    let (src, s1, sink) = (rows(&w, "source"), rows(&w, "stage1"), rows(&w, "sink"));
    assert_eq!((src.len(), s1.len(), sink.len()), (50, 50, 50));
    // Each stage waits for the one before it, so each runs once per 20 ms source period.
    for v in [&s1, &sink] {
        let span = v.last().unwrap().end - v.first().unwrap().end;
        assert!((span as f64 / 49.0 - 20_000.0).abs() < 200.0, "{span}");
    }
    // stage1 starts after the source signals (3 ms into each period, after the 5 ms delay).
    assert!(s1[0].end > src[0].start + 3000 + 4000);
    // The sink only runs after stage1 resumed it.
    assert!(sink.iter().zip(&s1).all(|(k, s)| k.end >= s.end));
}

#[test]
fn the_lock_serialises_workers_and_affinity_moves_them() {
    let s = spec("scenarios/rtapp/lock-contention.json");
    let mut sp = s.clone();
    sp.trace = true;
    let mut k = build(&sp).unwrap();
    k.run(sp.limit_ns);
    assert!(k.finished());
    let Workload::RtApp(w) = &k.progs.workload else { panic!() };
    let workers: Vec<_> = w.threads.iter().filter(|t| t.name == "worker").collect();
    assert_eq!(workers.len(), 4);
    // Contention: somebody had to sleep on the mutex's futex and be woken by an unlock.
    let rows: Vec<&LogRow> = workers.iter().flat_map(|t| t.rows.iter()).collect();
    assert_eq!(rows.len(), 800);
    let blocked = rows.iter().filter(|r| r.period > 500 + 1000 + 100 + 200).count();
    assert!(blocked > 50, "only {blocked} phases waited for the lock");
    // Critical sections never overlap: a worker's run (500 us) happens under the mutex, so the
    // sum of all workers' runs fits in the elapsed time.
    let run_sum: u64 = rows.iter().map(|r| r.run).sum();
    let span = rows.iter().map(|r| r.end).max().unwrap() - rows.iter().map(|r| r.start).min().unwrap();
    assert!(run_sum <= span, "runs {run_sum} us in {span} us: the mutex did not serialise");
    // The "packed" phase binds every worker to CPU 0: they were migrated there, and ran there.
    for t in &workers {
        assert_eq!(k.tasks[t.tid as usize].cpu, 0, "{} ended on CPU {}", t.ind, k.tasks[t.tid as usize].cpu);
    }
    let pids: Vec<u32> = workers.iter().map(|t| k.tasks[t.tid as usize].pid).collect();
    let moved_to_0 = k
        .trace
        .records
        .iter()
        .filter(|r| matches!(r.event, Event::SchedMigrateTask { pid, dest_cpu: 0, .. } if pids.contains(&pid)))
        .count();
    assert!(moved_to_0 >= 1, "no worker was migrated to CPU 0");
    // The RR threads share CPU 1 and yield to each other after each 2 ms run.
    let rr: Vec<_> = w.threads.iter().filter(|t| t.name == "rr").collect();
    assert!(rr.iter().all(|t| t.rows.len() == 100 && k.tasks[t.tid as usize].cpu == 1));
}

#[test]
fn barriers_release_all_threads_together() {
    let (w, r) = run("scenarios/rtapp/barrier.json");
    assert!(r.finished);
    let t: Vec<Vec<&LogRow>> = ["task0", "task1", "task2"].iter().map(|n| rows(&w, n)).collect();
    assert!(t.iter().all(|v| v.len() == 100));
    // Each cycle ends at barrier THIRD: the three threads leave it within a wakeup of each
    // other, so their cycles end together.
    for i in 0..100 {
        let ends: Vec<u64> = t.iter().map(|v| v[i].end).collect();
        let spread = ends.iter().max().unwrap() - ends.iter().min().unwrap();
        assert!(spread < 100, "cycle {i}: ends {ends:?}");
    }
    // The slowest path decides the cycle: task0 runtime 1+2+1 ms with 4 ms of sleep, task1
    // runtime 2+1+2 with 2 ms of sleep; FIRST waits for task0 (3 ms), SECOND for task1
    // (FIRST + 3 ms), THIRD for task0 (SECOND + 3 ms): about 9 ms.
    let p = mean(&t[0], |r| r.period);
    assert!((9000.0..9600.0).contains(&p), "cycle {p} us");
}

#[test]
fn the_fork_storm_creates_every_worker_and_the_ticker_keeps_time() {
    let (w, r) = run("scenarios/rtapp/fork-storm.json");
    assert!(r.finished);
    let forks: Vec<_> = w.threads.iter().filter(|t| t.fork_id.is_some()).collect();
    assert_eq!(forks.len(), 100);
    assert!(forks.iter().all(|t| t.exited && t.rows.len() == 1 && t.rows[0].c_duration == 600));
    assert_eq!(RtApp::thread_name(forks[3]), "worker-5-0003");
    assert_eq!(w.log_file_name(forks[3]), "forks-worker-5-0003.log");
    let tick = rows(&w, "ticker");
    assert_eq!(tick.len(), 100);
    assert!(mean(&tick, |r| r.wu_lat) < 10.0);
}

#[test]
fn rr_threads_share_a_cpu_by_100_ms_slices_and_fifo_threads_do_not() {
    let json = |policy: &str| {
        format!(
            r#"{{"global": {{"calibration": 100}}, "tasks": {{"t": {{"instance": 2, "policy": "{policy}",
               "priority": 10, "cpus": [1], "loop": 1, "phases": {{"p": {{"run": 300000}}}}}}}}}}"#
        )
    };
    let rr = TempJson::new("rr", &json("SCHED_RR"));
    let fifo = TempJson::new("fifo", &json("SCHED_FIFO"));
    let (w, _) = run(&rr.path());
    let runs: Vec<u64> = rows(&w, "t").iter().map(|r| r.run).collect();
    // Round robin: 300 ms each in 100 ms slices, interleaved: both take about 500-600 ms.
    assert!(runs.iter().all(|&r| r > 450_000), "{runs:?}");
    let (w, _) = run(&fifo.path());
    let runs: Vec<u64> = rows(&w, "t").iter().map(|r| r.run).collect();
    assert!(runs.iter().all(|&r| r < 310_000), "{runs:?}");
}

#[test]
fn sched_yield_hands_the_cpu_to_an_equal_priority_fifo_thread() {
    let json = |y: &str| {
        format!(
            r#"{{"tasks": {{"t": {{"instance": 2, "policy": "SCHED_FIFO", "priority": 10, "cpus": [1],
               "loop": 1, "phases": {{"p": {{"loop": 10, "run": 1000 {y}}}}}}}}}}}"#
        )
    };
    let with = TempJson::new("yield", &json(r#", "yield": """#));
    let without = TempJson::new("noyield", &json(""));
    let overlap = |file: &str| {
        let (w, _) = run(file);
        let a: Vec<_> = w.threads[0].rows.clone();
        let b: Vec<_> = w.threads[1].rows.clone();
        // Does either thread start before the other has finished all its loops? (Which one
        // goes first depends on where fork balancing put them: each moves itself to CPU 1 at
        // its first phase, after the start barrier.)
        b[0].start < a.last().unwrap().end && a[0].start < b.last().unwrap().end
    };
    assert!(overlap(&with.path()), "with yield the threads should alternate");
    assert!(!overlap(&without.path()), "FIFO without yield runs one thread to its end first");
}

#[test]
fn sched_yield_on_eevdf_lets_the_other_fair_thread_run() {
    let json = |y: &str| {
        format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"instance": 2, "cpus": [1], "loop": 1,
               "phases": {{"p": {{"loop": 50, "run": 100 {y}}}}}}}}}}}"#
        )
    };
    let with = TempJson::new("fyield", &json(r#", "yield": """#));
    let without = TempJson::new("fnoyield", &json(""));
    let switches = |file: &str| {
        let mut s = spec(file);
        s.kernel = "v6.10".into();
        execute(&s).unwrap().stats.context_switches
    };
    let (a, b) = (switches(&with.path()), switches(&without.path()));
    // Without yield each thread keeps the CPU for its 3 ms request (30 loops); with it, the
    // pushed deadline hands the CPU over after every 100 us run.
    assert!(a >= 90 && b < 20, "switches with yield {a}, without {b}");
}

#[test]
fn an_overrunning_absolute_timer_keeps_its_reference_and_a_relative_one_resets() {
    let json = |mode: &str| {
        format!(
            r#"{{"tasks": {{"t": {{"loop": 1, "phases": {{"p": {{"loop": 6, "run": 15000,
               "timer": {{"ref": "unique", "period": 10000, "mode": "{mode}"}}}}}}}}}}}}"#
        )
    };
    let abs = TempJson::new("abs", &json("absolute"));
    let rel = TempJson::new("rel", &json("relative"));
    let slack = |file: &str| -> Vec<i64> { rows(&run(file).0, "t").iter().map(|r| r.slack / 1000).collect() };
    // Absolute: the n-th expiry is n periods after the start, so each 15 ms activation falls
    // 5 ms further behind. Relative: the reference moves to the late end each time.
    assert_eq!(slack(&abs.path()), vec![-5, -10, -15, -20, -25, -30]);
    assert_eq!(slack(&rel.path()), vec![-5, -5, -5, -5, -5, -5]);
}

#[test]
fn a_scenario_file_names_its_rtapp_json() {
    let text = "rtapp = \"rtapp/periodic.json\"\nmachine = \"smp-4\"\nseed = 3\n";
    let s = schedsim::spec::scenario::parse(text, "scenarios/my.toml").unwrap();
    assert_eq!(s.workload, "rtapp");
    assert_eq!(s.params.get("file"), Some("scenarios/rtapp/periodic.json"));
    assert!(build(&s).is_ok());
    let e = schedsim::spec::scenario::parse("workload = \"schbench\"\nrtapp = \"x.json\"\n", "a.toml").unwrap_err();
    assert!(e.contains("a.toml:2: rtapp = FILE runs the rtapp workload"), "{e}");
}

#[test]
fn bad_files_fail_with_the_json_path_and_line() {
    let bad =
        TempJson::new("bad", "{\"tasks\": {\n  \"thread0\": {\n    \"phases\": {\n      \"p1\": {\"run\": -5}}}}}");
    let e = build(&spec(&bad.path())).err().unwrap();
    assert!(e.ends_with(":4: tasks.thread0.phases.p1.run: expected a non-negative integer (microseconds of calibrated work), got -5"), "{e}");
    let cpu = TempJson::new("cpu", "{\"tasks\": {\"t\": {\"cpus\": [4], \"run\": 1}}}");
    let e = build(&spec(&cpu.path())).err().unwrap();
    assert!(e.contains("tasks.t.cpus[0]: CPU 4 does not exist on this machine (it has CPUs 0..3)"), "{e}");
    let e = build(&spec("no/such/file.json")).err().unwrap();
    assert!(e.starts_with("cannot read rt-app file no/such/file.json"), "{e}");
}

#[test]
fn the_same_seed_gives_the_same_log() {
    let a = run("scenarios/rtapp/lock-contention.json").0;
    let b = run("scenarios/rtapp/lock-contention.json").0;
    let la: Vec<String> = a.threads.iter().map(|t| a.log_text(t)).collect();
    let lb: Vec<String> = b.threads.iter().map(|t| b.log_text(t)).collect();
    assert_eq!(la, lb);
    assert!(la[0].starts_with("# Policy : SCHED_OTHER priority : 0\n#idx     perf      run   period"));
}

#[test]
fn the_shipped_scenario_file_runs_its_json() {
    let text = std::fs::read_to_string("scenarios/rtapp/pipeline.toml").unwrap();
    let s = schedsim::spec::scenario::parse(&text, "scenarios/rtapp/pipeline.toml").unwrap();
    assert_eq!(s.params.get("file"), Some("scenarios/rtapp/pipeline.json"));
    let r = execute(&s).unwrap();
    let Workload::RtApp(w) = &r.workload else { panic!() };
    assert_eq!(rows(w, "stage1").len(), 50);
}

/// `logs=summary` keeps no row, and the run, its text, metric and per-thread summaries are
/// those of the run keeping every row (`logs=keep`, the default).
#[test]
fn a_summary_run_reports_what_the_rows_say() {
    use schedsim::workload::rtapp_summary::RowSummary;
    let file = "scenarios/rtapp/periodic.json";
    let keep = execute(&spec(file)).unwrap();
    let mut s = spec(file);
    s.params.set("logs".into(), "summary".into());
    let summary = execute(&s).unwrap();
    let (Workload::RtApp(a), Workload::RtApp(b)) = (&keep.workload, &summary.workload) else { panic!() };
    assert_eq!((keep.actions, keep.sim_ns), (summary.actions, summary.sim_ns));
    assert!(a.threads.iter().any(|t| t.rows.len() > 10) && b.threads.iter().all(|t| t.rows.is_empty()));
    assert_eq!(a.summary(), b.summary());
    for (ta, tb) in a.threads.iter().zip(&b.threads) {
        let mut sum = RowSummary::default();
        ta.rows.iter().for_each(|r| sum.add(r));
        assert_eq!(sum, tb.sum);
        assert_eq!(sum.rows, ta.rows.len() as u64);
    }
    // The slack column has something to say here (the FIFO thread's halved period).
    assert!(b.threads.iter().any(|t| t.sum.slack_min != t.sum.slack_max), "{}", b.summary());
    use schedsim::workload::Program;
    assert_eq!(a.metric(&keep.facts()).value, b.metric(&summary.facts()).value);
    let j = b.json(&summary.facts());
    assert!(j["threads"][0].get("rows").is_none());
    assert_eq!(j["threads"][0]["summary"]["rows"], a.threads[0].rows.len() as u64);
    s.params.set("logs".into(), "all".into());
    assert!(build(&s).err().unwrap().contains("logs=all: expected keep"));
}

/// The peer's benchmark files (`schedsim bench --users`): 720 threads on 256 CPUs for 2 s, too
/// many rows to keep under the memory limit, and a summary run's memory does not grow with them.
#[test]
fn the_peer_benchmark_builds_with_summaries_only() {
    let mut s = spec("scenarios/rtapp/peer-640.json");
    s.machine = "epyc-7763-2s".into();
    let e = build(&s).err().unwrap();
    assert!(e.contains("memory"), "{e}");
    s.params.set("logs".into(), "summary".into());
    let w = build(&s).unwrap();
    assert_eq!(w.tasks.iter().filter(|t| t.kind == schedsim::linux::kernel::sched::TaskKind::Workload).count(), 720);
}

/// `run --json` of an rt-app file carries summaries; `--log-dir` with `logs=summary` is refused.
#[test]
fn run_json_carries_summaries_and_log_dir_needs_rows() {
    let bin = env!("CARGO_BIN_EXE_schedsim");
    let out = std::process::Command::new(bin)
        .args(["run", "--rtapp", "scenarios/rtapp/periodic.json", "--machine", "smp-4", "--quiet", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["workload"]["threads"][0];
    assert!(t.get("rows").is_none() && t["summary"]["rows"].as_u64().unwrap() > 0, "{t}");
    assert!(t["summary"]["wu_lat_us"]["percentiles"]["p99"].is_i64(), "{t}");
    let dir = std::env::temp_dir();
    let out = std::process::Command::new(bin)
        .args(["run", "--workload", "rtapp", "file=scenarios/rtapp/periodic.json", "logs=summary"])
        .args(["--machine", "smp-4", "--quiet", "--log-dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("logs=summary keeps none"));
}

/// rt-app 1.0's start (`thread_body()`): main creates every thread SCHED_OTHER, so the FIFO
/// thread of periodic.json is created fair (its `sched_wakeup_new` at prio 120) and fork
/// balancing spreads the two threads over two CPUs; the thread then makes itself FIFO 50
/// (prio 49 in every later record of it). No thread starts its phases before every thread
/// has reached the start barrier, and the timers count from thread 0's `t_zero`.
#[test]
fn the_periodic_fifo_thread_is_created_fair_and_becomes_fifo_at_its_start() {
    let mut sp = spec("scenarios/rtapp/periodic.json");
    sp.trace = true;
    let mut k = build(&sp).unwrap();
    k.run(sp.limit_ns);
    assert!(k.finished());
    let Workload::RtApp(w) = &k.progs.workload else { panic!() };
    let pid = |name: &str| k.tasks[w.threads.iter().find(|t| t.name == name).unwrap().tid as usize].pid;
    let (fifo, load) = (pid("fifo"), pid("load10"));
    let recs = &k.trace.records;
    let new_cpu = |p: u32| {
        recs.iter()
            .find_map(|r| match r.event {
                Event::SchedWakeupNew { pid, prio, target_cpu } if pid == p => Some((prio, target_cpu)),
                _ => None,
            })
            .unwrap()
    };
    let (fifo_new, load_new) = (new_cpu(fifo), new_cpu(load));
    assert_eq!((fifo_new.0, load_new.0), (120, 120), "both threads are created SCHED_OTHER");
    assert_ne!(fifo_new.1, load_new.1, "fork balancing put both threads on CPU {}", fifo_new.1);
    assert_eq!(k.tasks[w.threads[1].tid as usize].prio, 49);
    // Once it has run, the FIFO thread is switched in and out at its RT priority only.
    let prios: Vec<i32> = recs
        .iter()
        .filter_map(|r| match r.event {
            Event::SchedSwitch { prev_pid, prev_prio, .. } if prev_pid == fifo => Some(prev_prio),
            Event::SchedWakeup { pid, prio, .. } if pid == fifo => Some(prio),
            _ => None,
        })
        .collect();
    assert!(prios.len() > 50);
    assert_eq!(prios[0], 49, "the thread set its policy in its first run");
    assert!(prios.iter().all(|&p| p == 49));
    // The barrier: each thread's first phase starts after both threads first ran.
    let first_run = |p: u32| {
        recs.iter().find(|r| matches!(r.event, Event::SchedSwitch { next_pid, .. } if next_pid == p)).unwrap().ts_ns
    };
    let both_ran = first_run(fifo).max(first_run(load)) / 1000;
    for t in &w.threads {
        assert!(t.rows[0].start >= both_ran, "{} started at {} us, before {both_ran} us", t.name, t.rows[0].start);
    }
    assert!(w.t_zero >= first_run(load).min(first_run(fifo)));
    // rel_st counts from main's start, before the threads exist.
    assert!(w.main_start < w.t_zero);
}
