//! `schedsim import` (issue 36): real traces recorded on the project's 2-vCPU guest
//! (tests/fixtures/import/README.md) become rt-app workloads that the model runs unedited; a
//! wakeup survives the replay reaching the waker first; bad input is a clear error, never a
//! panic; memory does not grow with the trace.

use schedsim::import::build::{Builder, Options, Step};
use schedsim::import::tracedat::read_tracedat_bytes;
use schedsim::import::{read_text, report};
use schedsim::run::execute;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use schedsim::workload::rtapp_json::{parse_rtapp, Limits};
use std::io::BufReader;

fn import(path: &str, opts: Options) -> Result<Builder, String> {
    let f = std::fs::File::open(path).unwrap();
    let mut r = BufReader::new(flate2::read::GzDecoder::new(f));
    let mut b = Builder::new(opts);
    read_text(&mut r, path, &mut b).map_err(|e| e.to_string())?;
    b.finish();
    Ok(b)
}

fn comm(c: &str) -> Options {
    Options { comms: vec![c.into()], ..Options::default() }
}

struct TempJson(std::path::PathBuf);
impl TempJson {
    fn new(tag: &str, text: &str) -> TempJson {
        let p = std::env::temp_dir().join(format!("schedsim-import-{}-{tag}.json", std::process::id()));
        std::fs::write(&p, text).unwrap();
        TempJson(p)
    }
}
impl Drop for TempJson {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn run_json(tag: &str, json: &str, limit_ms: u64) -> schedsim::run::RunResult {
    let t = TempJson::new(tag, json);
    let mut s = RunSpec::new("rtapp");
    s.machine = "smp-4".into();
    s.limit_ns = limit_ms * 1_000_000;
    s.params = Params::from_pairs(vec![("file".into(), t.0.display().to_string())], "test");
    execute(&s).unwrap()
}

#[test]
fn tracefs_pipe_capture_keeps_every_wakeup_of_the_pair() {
    let b = import("tests/fixtures/import/pipe-fifo.trace.gz", comm("sched-pipe")).unwrap();
    let names: Vec<&str> = b.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sched-pipe-8476", "sched-pipe-8477"]);
    // 300 round trips (perf bench sched pipe -l 300): every wakeup between the two is a barrier.
    assert_eq!((b.tasks[0].wakes.matched, b.tasks[1].wakes.matched), (300, 299));
    // chrt -f 10: the parent's sched_setscheduler is recorded, the child inherits it.
    assert_eq!((b.tasks[0].policy, b.tasks[1].policy), (Some(1), Some(1)));
    assert!(matches!(b.tasks[1].start, schedsim::import::build::Start::Forked(0, _)));
    assert!(b.tasks[0].steps.contains(&Step::Fork(1)));
    let json = report::workload_json(&b);
    let cfg = parse_rtapp(&json, "pipe.json", Limits { nr_cpus: 2, nr_nodes: 1 }).unwrap();
    // The child takes part in barriers: it starts by delay at its fork's time.
    assert_eq!((cfg.tasks[0].priority, cfg.tasks[1].instance), (10, 1));
    assert!(cfg.tasks[1].delay_us > 0);
    let r = run_json("pipe", &json, 2_000);
    assert!(r.finished, "the imported pipe pair runs to its end");
}

#[test]
fn perf_script_of_perf_sched_record_imports() {
    let b = import("tests/fixtures/import/pipe.perf-script.txt.gz", comm("sched-pipe")).unwrap();
    assert_eq!(b.tasks.len(), 2);
    let matched: u64 = b.tasks.iter().map(|t| t.wakes.matched).sum();
    // perf bench sched pipe -l 1000: about two wakeups per loop; those before the child was
    // renamed `sched-pipe` (still `perf`) are left out with it.
    assert!((1800..=2000).contains(&matched), "{matched}");
    let text = report::report_text(&b, "pipe.perf-script.txt.gz");
    assert!(text.contains("no irq/softirq events"), "{text}");
    assert!(run_json("perf", &report::workload_json(&b), 2_000).finished);
}

#[test]
fn timer_wakeups_become_sleeps_of_the_traced_length() {
    let b = import("tests/fixtures/import/sleep-loop.trace.gz", comm("sleep")).unwrap();
    // Ten `sleep 0.01`: each a process woken by its hrtimer once.
    assert_eq!(b.tasks.len(), 10);
    for t in &b.tasks {
        assert_eq!((t.wakes.timer, t.wakes.matched), (1, 0), "{}", t.name);
        let slept: u64 = t.steps.iter().map(|s| if let Step::SleepUs(u) = s { *u } else { 0 }).sum();
        assert!((10_000..11_000).contains(&slept), "{}: {slept} us", t.name);
    }
}

/// rt-app's periodic.json as validate captured it on the guest (a SCHED_OTHER thread on a
/// 100 ms timer, a FIFO thread on 20 ms after its first 10 activations at 40 ms): each periodic
/// stretch becomes rt-app `timer` events of the traced period, and the workload runs. A loop of
/// fixed relative sleeps (validate's nanosleep capture) stays sleeps.
#[test]
fn periodic_wakeups_become_rtapp_timers() {
    let o = Options { comms: vec!["load10".into(), "fifo".into()], ..Options::default() };
    let b = import("tests/fixtures/import/rtapp-periodic.trace.gz", o).unwrap();
    assert!(b.tasks.len() >= 2);
    for t in &b.tasks {
        assert!(!t.periodic.is_empty(), "{}: {:?}", t.name, t.steps);
        for p in &t.periodic {
            let near = |want: u64| p.period_us.abs_diff(want) <= want / 100;
            let ok = if t.comm == "load10" { near(100_000) } else { near(20_000) || near(40_000) };
            assert!(ok, "{}: period {} us", t.name, p.period_us);
        }
        assert!(t.steps.iter().any(|s| matches!(s, Step::Timer { .. })));
    }
    // The FIFO thread that ran all 10 of its 40 ms activations in the capture has both stretches.
    assert!(b
        .tasks
        .iter()
        .any(|t| t.periodic.iter().map(|p| (p.period_us + 5_000) / 10_000).collect::<Vec<_>>() == [4, 2]));
    let json = report::workload_json(&b);
    assert!(json.contains("\"mode\": \"relative\""));
    assert!(report::report_text(&b, "periodic").contains("sleeps became rt-app timers"));
    let r = run_json("periodic", &json, 1_000);
    assert!(r.stats.context_switches > 0);

    let b = import("tests/fixtures/validate/nanosleep.trace.gz", comm("nsloop")).unwrap();
    assert!(b.tasks.iter().all(|t| t.periodic.is_empty()), "a relative sleep loop is not periodic");
    assert!(b.tasks.iter().any(|t| t.steps.iter().filter(|s| matches!(s, Step::SleepUs(_))).count() > 100));
}

#[test]
fn messaging_capture_imports_and_runs() {
    let b = import("tests/fixtures/import/messaging.trace.gz", comm("sched-messaging")).unwrap();
    // perf bench sched messaging -g 1: 20 senders, 20 receivers and their parent.
    assert_eq!(b.tasks.len(), 40 + 1);
    assert!(b.seen.edges > 300, "{}", b.seen.edges);
    assert!(run_json("msg", &report::workload_json(&b), 2_000).finished);
}

/// A wakeup must survive the replay bringing the waker to it first. The imported pair (b wakes
/// a) is replayed with the wakee made slower than in the trace, so the waker gets to the wakeup
/// before the wakee sleeps: with the import's barrier both threads still finish; with rt-app's
/// `resume`/`suspend` (a condition variable) the wakeup is lost and the wakee never wakes.
#[test]
fn reversed_pair_keeps_the_wakeup() {
    let lines = [
        " a-10 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120",
        " b-11 [001] d..2. 1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=11 next_prio=120",
        " a-10 [000] d..2. 1.000050: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
        " b-11 [001] d..3. 1.000500: sched_waking: comm=a pid=10 prio=120 target_cpu=000",
        " b-11 [001] ..... 1.000600: sched_process_exit: comm=b pid=11 prio=120 group_dead=1",
        " a-10 [000] ..... 1.000700: sched_process_exit: comm=a pid=10 prio=120 group_dead=1",
    ];
    let mut b = Builder::new(Options::default());
    for (n, l) in lines.iter().enumerate() {
        if let Some(r) = schedsim::import::text::parse_line(l).unwrap() {
            b.push(&r, n as u64 + 1);
        }
    }
    b.finish();
    assert_eq!(b.tasks[0].steps[..2], [Step::RunUs(50), Step::Barrier(0)]);
    let json = report::workload_json(&b);
    assert!(json.contains("\"run0\": 50,"), "{json}");
    // The wakee now runs 5 ms before it sleeps: the waker (500 us) comes first.
    let reversed = json.replacen("\"run0\": 50,", "\"run0\": 5000,", 1);
    let r = run_json("reversed", &reversed, 100);
    assert!(r.finished, "the barrier keeps the wakeup:\n{reversed}");
    // The same pair with rt-app's condition variable: the early resume finds no waiter.
    let lost = reversed.replacen("\"barrier1\": \"w0\"", "\"suspend1\": \"\"", 1).replacen(
        "\"barrier1\": \"w0\"",
        "\"resume1\": \"a-10\"",
        1,
    );
    assert!(lost.contains("suspend1") && lost.contains("resume1"), "{lost}");
    assert!(!run_json("lost", &lost, 100).finished, "a condition variable loses the early wakeup:\n{lost}");
}

#[test]
fn bad_traces_are_clear_errors() {
    let cases: &[(&str, &str)] = &[
        ("hello\n", "x:1: expected a trace line"),
        (
            " a-1 [000] d..2. 2.000000: sched_waking: comm=a pid=1 prio=1 target_cpu=0\n a-1 [000] d..2. 1.000000: sched_waking: comm=a pid=1 prio=1 target_cpu=0\n",
            "x:2: timestamp 1.000000 is 1000000000 ns before line 1's 2.000000: records out of order",
        ),
        (" a-1 [000] d..2. 1.000000: sched_switch: prev_comm=a\n", "x:1: sched_switch: expected `prev_comm"),
        ("", "x: empty file"),
        (" a-1 [000] d..2. 1.0000", "x:1: expected a trace line"),
    ];
    for (text, want) in cases {
        let mut b = Builder::new(Options::default());
        let e = read_text(&mut text.as_bytes(), "x", &mut b).unwrap_err().to_string();
        assert!(e.starts_with(want), "{e:?} does not start with {want:?}");
    }
    // A file cut inside a line: read, and said.
    let mut b = Builder::new(Options::default());
    let cut = " a-1 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n b-2 [000] d..3. 1.000001: irq_handler_en";
    read_text(&mut cut.as_bytes(), "x", &mut b).unwrap();
    b.finish();
    assert!(report::report_text(&b, "x").contains("ends inside a line"));
    // Not text at all.
    let mut b = Builder::new(Options::default());
    let e = read_text(&mut &[0xffu8, 0xfe, b'\n'][..], "x", &mut b).unwrap_err().to_string();
    assert!(e.contains("not UTF-8"), "{e}");
}

/// Random mutations of a real trace's lines (cut, spliced, bytes changed): the reader and the
/// builder end in `Ok` or a clean error, and what builds is a workload rt-app's grammar reads.
#[test]
fn fuzzed_traces_never_panic() {
    let mut text = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(std::fs::File::open("tests/fixtures/import/pipe-fifo.trace.gz").unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let lines: Vec<&str> = text.lines().skip(12).take(400).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for case in 0..200 {
        let mut v: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        for _ in 0..1 + rnd(6) {
            let i = rnd(v.len());
            let l = v[i].clone();
            v[i] = match rnd(6) {
                0 => l[..rnd(l.len() + 1)].to_string(),
                1 => {
                    let j = rnd(l.len() + 1);
                    format!("{}{}", &l[..j], ["=", " ", "[", "]", "-", ":", "==> ", "99999999999999999999"][rnd(8)])
                        + &l[j..]
                }
                2 => l.replace("prev_state=S", ["prev_state=R+", "prev_state=", "prev_state=X"][rnd(3)]),
                3 => l.replace("pid=", "pid=-"),
                4 => format!("CPU:{} [LOST {} EVENTS]", rnd(3), rnd(1000)),
                _ => lines[rnd(lines.len())].to_string(),
            };
        }
        let t = v.join("\n");
        let mut b = Builder::new(Options { max_steps: 1 + rnd(500), max_tasks: 1 + rnd(5), ..Options::default() });
        if read_text(&mut t.as_bytes(), "fuzz", &mut b).is_ok() {
            b.finish();
            let _ = report::report_text(&b, "fuzz");
            if !b.tasks.is_empty() {
                let j = report::workload_json(&b);
                parse_rtapp(&j, "fuzz.json", Limits { nr_cpus: 4, nr_nodes: 1 })
                    .unwrap_or_else(|e| panic!("case {case}: {e}\n{j}"));
            }
        }
    }
}

fn gunzip(path: &str) -> Vec<u8> {
    use std::io::Read;
    let mut v = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_end(&mut v).unwrap();
    v
}

fn import_dat(path: &str, opts: Options) -> Result<Builder, String> {
    let mut b = Builder::new(opts);
    let bytes = if path.ends_with(".gz") { gunzip(path) } else { std::fs::read(path).unwrap() };
    read_tracedat_bytes(bytes, path, &mut b).map_err(|e| e.to_string())?;
    b.finish();
    Ok(b)
}

/// The report without its first line (which names the file).
fn report_body(b: &Builder) -> String {
    report::report_text(b, "x").lines().skip(1).collect::<Vec<_>>().join("\n")
}

/// One capture (tests/fixtures/import/README.md), as trace-cmd wrote it (version 7, zstd), as
/// `trace-cmd convert --file-version 6` wrote it, and as `trace-cmd report -N -t` printed it:
/// the same workload and the same report from all three.
#[test]
fn tracedat_v6_v7_zstd_and_trace_cmd_report_import_alike() {
    for opts in [comm("sched-pipe"), Options { all_tasks: true, ..Options::default() }] {
        let v7 = import_dat("tests/fixtures/import/pipe.v7-zstd.dat", opts.clone()).unwrap();
        let v6 = import_dat("tests/fixtures/import/pipe.v6.dat.gz", opts.clone()).unwrap();
        let txt = import("tests/fixtures/import/pipe.dat.report.txt.gz", opts.clone()).unwrap();
        let j = report::workload_json(&v7);
        assert_eq!(j, report::workload_json(&v6));
        assert_eq!(j, report::workload_json(&txt));
        assert_eq!(report_body(&v7), report_body(&v6));
        // One line differs from the text's: ksoftirqd/1's wakeup by the idle task, made in a
        // softirq on idle's interrupt exit. The binary record's flags say softirq; the text of
        // `trace-cmd report` has no flags column, so the text reader sees the idle task.
        let (a, b) = (report_body(&v7), report_body(&txt));
        let diff: Vec<(&str, &str)> = a.lines().zip(b.lines()).filter(|(x, y)| x != y).collect();
        if opts.all_tasks {
            assert_eq!(diff.len(), 1, "{diff:?}");
            let cols = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
            let (x, y) = (cols(diff[0].0), cols(diff[0].1));
            assert_eq!(x[0], "ksoftirqd_1-24");
            // softq, idle columns.
            assert_eq!((&x[6][..], &x[8][..], &y[6][..], &y[8][..]), ("1", "0", "0", "1"));
        } else {
            assert!(diff.is_empty(), "{diff:?}");
        }
    }
    let b = import_dat("tests/fixtures/import/pipe.v7-zstd.dat", comm("sched-pipe")).unwrap();
    let names: Vec<&str> = b.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sched-pipe-20117", "sched-pipe-20118"]);
    // perf bench sched pipe -l 300 under chrt -f 10: every wakeup of the pair is a barrier, the
    // policy comes from the recorded sched_setscheduler (decoded from the syscall's format).
    assert_eq!((b.tasks[0].wakes.matched, b.tasks[1].wakes.matched), (300, 299));
    assert_eq!((b.tasks[0].policy, b.tasks[1].policy), (Some(1), Some(1)));
    assert!(run_json("dat", &report::workload_json(&b), 2_000).finished);
}

/// The offset of CPU `cpu`'s data in a version 6 file (its `flyrecord` table).
fn v6_cpu_data(b: &[u8], cpu: usize) -> usize {
    let i = b.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10 + 16 * cpu;
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap()) as usize
}

#[test]
fn bad_tracedat_files_are_clear_errors() {
    let good = gunzip("tests/fixtures/import/pipe.v6.dat.gz");
    let err = |b: Vec<u8>| -> String {
        let mut bl = Builder::new(Options::default());
        read_tracedat_bytes(b, "t.dat", &mut bl).unwrap_err().to_string()
    };
    let mut b = good.clone();
    b[1] = 0;
    assert_eq!(err(b), "t.dat: byte 0: not a trace.dat (expected the magic 17 08 44 `tracing`)");
    let mut b = good.clone();
    b[10] = b'8';
    assert!(err(b).starts_with("t.dat: byte 10: trace.dat version 8: versions 6 and 7 are read"));
    let e = err(good[..5000].to_vec());
    assert!(e.starts_with("t.dat: byte ") && e.contains("truncated"), "{e}");
    let c1 = v6_cpu_data(&good, 1);
    let e = err(good[..c1 + 100].to_vec());
    assert!(e.contains("truncated file: CPU 1's") && e.contains("run past the end"), "{e}");
    // A page whose commit runs past its end.
    let c0 = v6_cpu_data(&good, 0);
    let mut b = good.clone();
    b[c0 + 8..c0 + 16].copy_from_slice(&5000u64.to_le_bytes());
    assert_eq!(
        err(b),
        format!("t.dat: byte {}: CPU 0: the page's commit of 5000 bytes runs past its end (4080 data bytes)", c0 + 8)
    );
    // An event whose ID has no format: the first event of CPU 0 (a short one: its header's
    // type_len is its length in words).
    let mut b = good.clone();
    let w = u32::from_le_bytes(b[c0 + 16..c0 + 20].try_into().unwrap());
    assert!((1..=28).contains(&(w & 31)), "{w:#x}");
    b[c0 + 20..c0 + 22].copy_from_slice(&0xfff0u16.to_le_bytes());
    assert_eq!(
        err(b),
        format!("t.dat: byte {}: CPU 0: event ID 65520 has no format in the file (expected the formats of every recorded event)", c0 + 20)
    );
    // A page that says the ring buffer lost events: the import ends there, and says so.
    let mut b = good.clone();
    let p = c0 + 4096;
    let commit = u64::from_le_bytes(b[p + 8..p + 16].try_into().unwrap());
    b[p + 8..p + 16].copy_from_slice(&(commit | 1 << 31).to_le_bytes());
    let mut bl = Builder::new(Options { all_tasks: true, ..Options::default() });
    read_tracedat_bytes(b, "t.dat", &mut bl).unwrap();
    bl.finish();
    assert!(bl.seen.lost_at.is_some());
    assert!(report::report_text(&bl, "t.dat").contains("lost"));
}

/// Random byte changes, cuts and splices of both trace.dat fixtures: `Ok` or a clean error.
/// A seeded xorshift: `rnd(n)` is in `0..n`.
fn xorshift(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n.max(1) as u64) as usize
    }
}

/// One fuzzed file's outcome: read (then its report and workload must build and the workload
/// parse), or refused with an error naming the file.
fn tally_fuzzed<E: std::fmt::Display>(
    r: Result<(), E>,
    mut bl: Builder,
    name: &str,
    case: usize,
    (ok, errs): (&mut usize, &mut usize),
) {
    match r {
        Ok(()) => {
            *ok += 1;
            bl.finish();
            let _ = report::report_text(&bl, "fuzz");
            if !bl.tasks.is_empty() {
                let j = report::workload_json(&bl);
                parse_rtapp(&j, "fuzz.json", Limits { nr_cpus: 4, nr_nodes: 1 })
                    .unwrap_or_else(|e| panic!("case {case}: {e}\n{j}"));
            }
        }
        Err(e) => {
            *errs += 1;
            assert!(e.to_string().starts_with(&format!("{name}: ")), "{e}");
        }
    }
}

#[test]
fn fuzzed_tracedat_files_never_panic() {
    let v6 = gunzip("tests/fixtures/import/pipe.v6.dat.gz");
    let v7 = std::fs::read("tests/fixtures/import/pipe.v7-zstd.dat").unwrap();
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
    let (mut ok, mut errs) = (0usize, 0usize);
    for case in 0..60 {
        let base = if case % 3 == 2 { &v7 } else { &v6 };
        let mut b = base.clone();
        // Mostly the ring-buffer data (the last pages), sometimes anywhere.
        let data_from = if case % 3 == 2 { 0 } else { v6_cpu_data(&v6, 0) };
        for _ in 0..1 + rnd(8) {
            let i = if rnd(4) == 0 { rnd(b.len()) } else { data_from + rnd(b.len() - data_from) };
            match rnd(4) {
                0 => b[i] = rnd(256) as u8,
                1 => b[i] ^= 1 << rnd(8),
                2 => b[i] = [0, 0xff, 0x1d, 0x1e, 0x1f][rnd(5)],
                _ => {
                    let n = rnd(9).min(b.len() - i);
                    b[i..i + n].fill(0xff)
                }
            }
        }
        if rnd(5) == 0 {
            b.truncate(rnd(b.len()));
        }
        let mut bl = Builder::new(Options { all_tasks: true, max_steps: 1 + rnd(5000), ..Options::default() });
        let r = read_tracedat_bytes(b, "fuzz.dat", &mut bl);
        tally_fuzzed(r, bl, "fuzz.dat", case, (&mut ok, &mut errs));
    }
    assert!(ok > 0 && errs > 0, "{ok} read, {errs} refused");
}

// ---- Perfetto (src/import/perfetto.rs) ----

use schedsim::import::perfetto::read_perfetto_bytes;

fn import_pf(path: &str, opts: Options) -> Result<Builder, String> {
    let mut b = Builder::new(opts);
    read_perfetto_bytes(gunzip(path), path, &mut b).map_err(|e| e.to_string())?;
    b.finish();
    Ok(b)
}

/// One capture (tests/fixtures/import/README.md: `taskset -c 0 perf bench sched messaging -g 1
/// -l 20`), as `trace-cmd report -N -t` printed it and as tools/perfetto-fixture.py wrote it
/// with Perfetto's own proto classes, expanded and compact_sched: the same workload and report.
#[test]
fn perfetto_expanded_and_compact_import_as_the_text_of_the_same_capture() {
    let dir = "tests/fixtures/import";
    let all = Options { all_tasks: true, ..Options::default() };
    for opts in [comm("sched-messaging"), all.clone()] {
        let txt = import(&format!("{dir}/messaging-cpu0.report.txt.gz"), opts.clone()).unwrap();
        let exp = import_pf(&format!("{dir}/messaging-cpu0.expanded.pftrace.gz"), opts.clone()).unwrap();
        let j = report::workload_json(&txt);
        assert_eq!(report::workload_json(&exp), j);
        assert_eq!(report_body(&exp), report_body(&txt));
        if !opts.all_tasks {
            let cmp = import_pf(&format!("{dir}/messaging-cpu0.compact.pftrace.gz"), opts.clone()).unwrap();
            assert_eq!(report::workload_json(&cmp), j);
            assert_eq!(report_body(&cmp), report_body(&txt));
        }
    }
    // With every task: the compact encoding has no prev task in a switch and no waker in a
    // waking, both taken from the CPU's previous switch. On this guest CPU 1's idle task logs
    // no switch (tests/fixtures/import/README.md), so there a task switched in silently is
    // taken for idle: the rows that differ are of tasks that ran on CPU 1.
    let txt = import(&format!("{dir}/messaging-cpu0.report.txt.gz"), all.clone()).unwrap();
    let cmp = import_pf(&format!("{dir}/messaging-cpu0.compact.pftrace.gz"), all).unwrap();
    assert!(txt.seen.silent_switch_ins > 0 && cmp.seen.silent_switch_ins < txt.seen.silent_switch_ins);
    let (a, b) = (report_body(&cmp), report_body(&txt));
    let rows = |t: &str| t.lines().filter(|l| !l.starts_with('#')).map(String::from).collect::<Vec<_>>();
    let (ra, rb) = (rows(&a), rows(&b));
    assert_eq!(ra.len(), rb.len());
    let mut differ = 0;
    for (x, y) in ra.iter().zip(&rb) {
        if x != y {
            differ += 1;
            let name = y.split_whitespace().next().unwrap();
            let t = txt.tasks.iter().find(|t| t.name == name).unwrap();
            assert!(t.cpus.contains(&1), "{name} ran on {:?}\n{x}\n{y}", t.cpus);
        }
    }
    assert!((1..=5).contains(&differ), "{differ} rows differ");
    let b = import_pf(&format!("{dir}/messaging-cpu0.compact.pftrace.gz"), comm("sched-messaging")).unwrap();
    // 20 senders, 20 receivers and their parent; the wakeups between them are barriers.
    assert_eq!(b.tasks.len(), 41);
    let matched: u64 = b.tasks.iter().map(|t| t.wakes.matched).sum();
    assert!(matched > 1500, "{matched}");
    assert!(run_json("pf", &report::workload_json(&b), 2_000).finished);
}

/// A protobuf field: tag and value.
fn pb_varint(out: &mut Vec<u8>, mut v: u64) {
    while v > 0x7f {
        out.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}
fn pb_int(field: u32, v: u64) -> Vec<u8> {
    let mut o = Vec::new();
    pb_varint(&mut o, u64::from(field) << 3);
    pb_varint(&mut o, v);
    o
}
fn pb_msg(field: u32, body: &[u8]) -> Vec<u8> {
    let mut o = Vec::new();
    pb_varint(&mut o, u64::from(field) << 3 | 2);
    pb_varint(&mut o, body.len() as u64);
    o.extend_from_slice(body);
    o
}
fn pb_packed(field: u32, vals: &[u64]) -> Vec<u8> {
    let mut b = Vec::new();
    for &v in vals {
        pb_varint(&mut b, v);
    }
    pb_msg(field, &b)
}
/// A trace of packets, each holding one bundle of CPU `cpu` with `body` (bundle fields).
fn pf_trace(bundles: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut t = Vec::new();
    for (cpu, body) in bundles {
        let mut bundle = pb_int(1, u64::from(*cpu));
        bundle.extend_from_slice(body);
        t.extend(pb_msg(1, &pb_msg(1, &bundle)));
    }
    t
}
/// An expanded sched_waking at `ts` by `pid` of task 7.
fn pf_waking(ts: u64, pid: u32) -> Vec<u8> {
    let mut w = pb_msg(1, b"t");
    w.extend(pb_int(2, 7));
    w.extend(pb_int(3, 120));
    let mut e = pb_int(1, ts);
    e.extend(pb_int(2, u64::from(pid)));
    e.extend(pb_msg(20, &w));
    pb_msg(2, &e)
}

#[test]
fn bad_perfetto_files_are_clear_errors() {
    let good = gunzip("tests/fixtures/import/messaging-cpu0.compact.pftrace.gz");
    let err = |b: Vec<u8>| -> String {
        let mut bl = Builder::new(Options::default());
        read_perfetto_bytes(b, "t.pftrace", &mut bl).unwrap_err().to_string()
    };
    // Truncated: the last packet's length runs past the end.
    let e = err(good[..good.len() - 10].to_vec());
    assert!(e.starts_with("t.pftrace: byte ") && e.contains("truncated file: a packet of"), "{e}");
    assert_eq!(err(vec![]), "t.pftrace: byte 0: empty file (expected a Perfetto trace)");
    // A packet length past the end, a varint past the end, a field that is not a packet.
    assert_eq!(
        err(vec![0x0a, 0xff, 0x01, 0x08]),
        "t.pftrace: byte 0 (packet 0): truncated file: a packet of 255 bytes runs past the end (byte 4)"
    );
    assert_eq!(
        err(vec![0x0a, 0x80]),
        "t.pftrace: byte 1 (packet 0): truncated file: a packet's length runs past the end"
    );
    assert_eq!(
        err(vec![0x0a, 0x02, 0x50, 0x80]),
        "t.pftrace: byte 3 (packet 0): a varint runs past the end of its message"
    );
    assert!(err(vec![0x08, 0x01]).starts_with("t.pftrace: byte 0 (packet 0): expected a TracePacket (field 1 of Trace"));
    assert!(err(pb_msg(1, &pb_msg(50, b"x"))).starts_with("t.pftrace: byte 2 (packet 0): compressed packets"));
    // Wrong wire types: ftrace_events as an integer; a sched_switch's next_pid as a string.
    assert_eq!(
        err(pb_msg(1, &pb_int(1, 5))),
        "t.pftrace: byte 2 (packet 0): ftrace_events: an integer where a length-delimited message or string was expected"
    );
    let mut sw = pb_msg(6, b"x");
    sw.extend(pb_int(2, 1));
    let mut ev = pb_int(1, 10);
    ev.extend(pb_int(2, 1));
    ev.extend(pb_msg(4, &sw));
    let e = err(pf_trace(&[(0, pb_msg(2, &ev))]));
    assert!(
        e.contains("(packet 0): sched_switch field 6: a length-delimited value where an integer was expected"),
        "{e}"
    );
    // A compact_sched column shorter than another; an interned index out of range.
    let mut cs = pb_packed(1, &[100, 5]);
    cs.extend(pb_packed(2, &[1]));
    cs.extend(pb_packed(3, &[8, 9]));
    cs.extend(pb_packed(4, &[120, 120]));
    cs.extend(pb_packed(6, &[0, 0]));
    cs.extend(pb_msg(5, b"a"));
    let e = err(pf_trace(&[(0, pb_msg(4, &cs))]));
    assert!(e.contains("compact_sched: column switch_prev_state has 1 entries, switch_timestamp has 2"), "{e}");
    let mut cs = pb_packed(1, &[100]);
    cs.extend(pb_packed(2, &[1]));
    cs.extend(pb_packed(3, &[8]));
    cs.extend(pb_packed(4, &[120]));
    cs.extend(pb_packed(6, &[3]));
    cs.extend(pb_msg(5, b"a"));
    let e = err(pf_trace(&[(0, pb_msg(4, &cs))]));
    assert!(e.contains("compact_sched: switch_next_comm_index 3 is beyond the intern table's 1 strings"), "{e}");
    // Out-of-order timestamps: in a bundle, and between two bundles of a CPU.
    let mut b = pf_waking(200, 1);
    b.extend(pf_waking(100, 1));
    let e = err(pf_trace(&[(0, b)]));
    assert!(e.contains("(packet 0): timestamp 100 ns is 100 ns before the bundle's previous event"), "{e}");
    let e = err(pf_trace(&[(1, pf_waking(200, 1)), (0, pf_waking(50, 1)), (1, pf_waking(150, 1))]));
    assert!(e.contains("(packet 2): CPU 1: timestamp 150 ns is 50 ns before the CPU's previous event"), "{e}");
    // The CPUs' bundles interleaved in chunks merge by time.
    let mut bl = Builder::new(Options { all_tasks: true, ..Options::default() });
    read_perfetto_bytes(
        pf_trace(&[(1, pf_waking(200, 1)), (0, pf_waking(50, 1)), (0, pf_waking(300, 1))]),
        "t",
        &mut bl,
    )
    .unwrap();
    assert_eq!(bl.seen.records, 3);
    // A bundle that says the kernel lost events: the import ends there, and says so.
    let mut lost = pf_waking(400, 1);
    lost.extend(pb_int(3, 1));
    let mut bl = Builder::new(Options { all_tasks: true, ..Options::default() });
    read_perfetto_bytes(pf_trace(&[(0, pf_waking(300, 1)), (0, lost)]), "t", &mut bl).unwrap();
    bl.finish();
    assert_eq!(bl.seen.lost_at.map(|l| l.1), Some(0));
    assert!(report::report_text(&bl, "t").contains("lost-events markers"));
    // A packet of a sequence already seen says the trace buffer dropped packets before it (the
    // first packet of a sequence says so too, and is no loss).
    let seq_packet = |ts: u64, dropped: bool| {
        let mut bundle = pb_int(1, 0);
        bundle.extend(pf_waking(ts, 1));
        let mut p = pb_int(10, 5);
        p.extend(pb_int(42, u64::from(dropped)));
        p.extend(pb_msg(1, &bundle));
        pb_msg(1, &p)
    };
    for (second_dropped, lost) in [(false, false), (true, true)] {
        let mut t = seq_packet(100, true);
        t.extend(seq_packet(200, second_dropped));
        let mut bl = Builder::new(Options { all_tasks: true, ..Options::default() });
        read_perfetto_bytes(t, "t", &mut bl).unwrap();
        assert_eq!(bl.seen.lost_at.is_some(), lost);
    }
    // Overruns between the start and end ftrace_stats: lost somewhere, said at the end.
    let stats = |phase: u64, overrun: u64| {
        let mut c = pb_int(1, 1);
        c.extend(pb_int(3, overrun));
        let mut s = pb_int(1, phase);
        s.extend(pb_msg(2, &c));
        pb_msg(1, &pb_msg(34, &s))
    };
    let mut t = stats(1, 4);
    t.extend(pf_trace(&[(1, pf_waking(300, 1))]));
    t.extend(stats(2, 9));
    let mut bl = Builder::new(Options { all_tasks: true, ..Options::default() });
    read_perfetto_bytes(t, "t", &mut bl).unwrap();
    assert_eq!(bl.seen.lost_at.map(|l| (l.1, l.2)), Some((1, 5)));
}

/// Random byte changes, cuts and splices of both Perfetto fixtures: `Ok` or a clean error.
#[test]
fn fuzzed_perfetto_files_never_panic() {
    let exp = gunzip("tests/fixtures/import/messaging-cpu0.expanded.pftrace.gz");
    let cmp = gunzip("tests/fixtures/import/messaging-cpu0.compact.pftrace.gz");
    let mut rnd = xorshift(0x5851_f42d_4c95_7f2d);
    let (mut ok, mut errs) = (0usize, 0usize);
    for case in 0..120 {
        let mut b = if case % 2 == 0 { exp.clone() } else { cmp.clone() };
        for _ in 0..1 + rnd(8) {
            let i = rnd(b.len());
            match rnd(5) {
                0 => b[i] = rnd(256) as u8,
                1 => b[i] ^= 1 << rnd(8),
                2 => b[i] = [0, 0xff, 0x80, 0x0a, 0x12][rnd(5)],
                3 => {
                    let n = rnd(9).min(b.len() - i);
                    b[i..i + n].fill(0xff)
                }
                _ => {
                    let j = rnd(b.len());
                    let n = rnd(64).min(b.len() - j).min(b.len() - i);
                    let s = b[j..j + n].to_vec();
                    b[i..i + n].copy_from_slice(&s);
                }
            }
        }
        if rnd(5) == 0 {
            b.truncate(rnd(b.len()));
        }
        let mut bl = Builder::new(Options { all_tasks: true, max_steps: 1 + rnd(5000), ..Options::default() });
        let r = read_perfetto_bytes(b, "fuzz.pftrace", &mut bl);
        tally_fuzzed(r, bl, "fuzz.pftrace", case, (&mut ok, &mut errs));
    }
    assert!(ok > 0 && errs > 0, "{ok} read, {errs} refused");
}
