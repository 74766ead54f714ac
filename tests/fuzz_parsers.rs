//! A bounded fuzz of every user-input parser: random scenario files, machine files, rt-app JSON
//! files, sweep grids and `key=value` parameter lists, built from the keys the parsers know and
//! from numbers at the edges (0, 2^31, 2^63, 2^64, negative, not numbers). Whatever the text,
//! parsing and building must end in `Ok` or a clean `Err`, never a panic; what builds is also
//! run for a few simulated milliseconds on a small quiet machine, so overflow in the
//! conversions the model does from those numbers shows too. Each case is capped: the memory its
//! thread holds ([`CAP_BYTES`], counted by this binary's allocator) and its CPU time
//! (`FUZZ_CASE_SECS`, default 120 s; a watchdog ends the process naming the case). Sized to stay
//! within a few seconds per parser in `cargo test`; `FUZZ_CASES=N` runs more (docs/fuzzing.md,
//! "The long run"), and `FUZZ_SAVE_RTAPP=DIR` keeps each generated rt-app file with schedsim's
//! verdict for the differential check against rt-app itself (docs/rtapp.md). rt-app files come
//! from two generators: one of random keys and edge values (mostly refused: it reaches the
//! refusals) and one of well-formed files with at most one value mutated (mostly built: it
//! reaches the model); `FUZZ_DEBUG=1` prints the second one's refusals.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schedsim::run;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;

fn cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn runner(n: u32) -> TestRunner {
    // The strategies filter some values (a TOML integer, a JSON number): proptest's default
    // reject limits (65,536 local) end a long run (`FUZZ_CASES=1000000`) with "Too many local
    // rejects" though no case failed, so they are lifted.
    TestRunner::new(Config {
        cases: cases(n),
        failure_persistence: None,
        max_local_rejects: u32::MAX,
        max_global_rejects: u32::MAX,
        ..Config::default()
    })
}

// Per-case caps. Each thread counts the bytes it holds (a run is single-threaded); a case whose
// thread grows past CAP_BYTES is a finding: the allocator prints the case and aborts before the
// machine runs out of memory, and a case that ends above it fails its test.

/// Most bytes a case may hold: 1 GiB above the tool's own memory limit (a run whose estimate
/// passes `limits::check_memory` may hold up to that limit; more means the estimate is wrong or
/// something grows unbounded).
const CAP_BYTES: usize = schedsim::limits::MAX_MEMORY_BYTES as usize + (1 << 30);

struct Counting;

thread_local! {
    static HELD: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    static PEAK: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    static CASE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn count(delta: isize) {
    let _ = HELD.try_with(|h| {
        let now = h.get() + delta;
        h.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        if now > CAP_BYTES as isize {
            // No allocation from here: the case text was stored before it ran.
            let _ = CASE.try_with(|c| {
                if let Ok(c) = c.try_borrow() {
                    let msg = b"\nfuzz case over the memory cap (the 8 GiB limit + 1 GiB), aborting; the case:\n";
                    // SAFETY: writing bytes we own to stderr.
                    unsafe {
                        libc::write(2, msg.as_ptr().cast(), msg.len());
                        libc::write(2, c.as_ptr().cast(), c.len());
                    }
                }
            });
            std::process::abort();
        }
    });
}

// SAFETY: forwards to the system allocator; the counting touches only const-initialised
// thread-locals, which never allocate.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        count(l.size() as isize);
        std::alloc::System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        count(-(l.size() as isize));
        std::alloc::System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        count(new as isize - l.size() as isize);
        std::alloc::System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The cases running now, by thread: (what, its text, the thread's CPU clock, its reading when
/// the case started); the watchdog reads it.
static RUNNING: std::sync::Mutex<Vec<(std::thread::ThreadId, String, libc::clockid_t, u64)>> =
    std::sync::Mutex::new(Vec::new());

/// A thread's CPU time, ns (None once the thread is gone).
fn cpu_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: t is a valid timespec.
    (unsafe { libc::clock_gettime(clock, &mut t) } == 0).then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

/// This thread's CPU clock.
fn own_cpu_clock() -> libc::clockid_t {
    let mut c: libc::clockid_t = 0;
    // SAFETY: pthread_self() is this live thread; c is a valid out-parameter.
    unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut c) };
    c
}

fn watchdog() {
    static START: std::sync::Once = std::sync::Once::new();
    START.call_once(|| {
        let secs: u64 = std::env::var("FUZZ_CASE_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(120);
        std::thread::spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let r = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            // CPU time, not wall time: a loaded or stopped (SIGSTOP) test process is not a slow case.
            let over =
                |c: libc::clockid_t, t0: u64| cpu_ns(c).is_some_and(|t| t.saturating_sub(t0) > secs * 1_000_000_000);
            if let Some((_, text, ..)) = r.iter().find(|(_, _, c, t0)| over(*c, *t0)) {
                eprintln!("\nfuzz case over the time cap ({secs} s of CPU), aborting; the case:\n{text}");
                std::process::abort();
            }
        });
    });
}

/// Run one case under the caps; `text` names it if it breaks one.
fn capped(text: &str, f: impl FnOnce()) -> Result<(), TestCaseError> {
    watchdog();
    tally(|t| t.0 += 1);
    let me = std::thread::current().id();
    CASE.with(|c| {
        let mut c = c.borrow_mut();
        c.clear();
        c.push_str(text);
    });
    let clock = own_cpu_clock();
    let t0 = cpu_ns(clock).unwrap_or(0);
    RUNNING.lock().unwrap_or_else(|e| e.into_inner()).push((me, text.to_string(), clock, t0));
    let base = HELD.with(|h| h.get());
    PEAK.with(|p| p.set(base));
    f();
    RUNNING.lock().unwrap_or_else(|e| e.into_inner()).retain(|(t, ..)| *t != me);
    let peak = PEAK.with(|p| p.get()) - base;
    prop_assert!(peak <= CAP_BYTES as isize, "held {peak} bytes: {text}");
    Ok(())
}

const EDGE: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "100",
    "250",
    "1000",
    "100000",
    "3600000",
    "3600001",
    "32768",
    "32769",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "-9223372036854775808",
    "1.5",
    "abc",
    "",
    "0-3",
    "0,2",
    "1e3",
];

/// A number-ish token: an edge case or any u64.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![3 => prop::sample::select(EDGE).prop_map(str::to_string), 1 => any::<u64>().prop_map(|n| n.to_string())]
}

/// A TOML value: an integer-looking token as is, or quoted, or a boolean, or an array.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => number().prop_filter("a TOML integer", |v| !v.is_empty() && v.parse::<i128>().is_ok()),
        2 => number().prop_map(|v| format!("\"{v}\"")),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        1 => (number(), number()).prop_map(|(a, b)| format!("[{a}, {b}]")),
    ]
}

const WORKLOADS: &[&str] =
    &["ipistorm", "spinners", "nanosleep", "rt-push", "hackbench", "schbench", "pingpong", "perf-pipe", "idle", "nope"];

fn param_keys(workload: &str) -> Vec<&'static str> {
    use schedsim::workload::*;
    let mut k: Vec<&str> = match workload {
        "ipistorm" => ipistorm::PARAM_NAMES.to_vec(),
        "spinners" => spinners::PARAM_NAMES.to_vec(),
        "nanosleep" => nanosleep::PARAM_NAMES.to_vec(),
        "rt-push" => rtpush::PARAM_NAMES.to_vec(),
        "hackbench" => hackbench::PARAM_NAMES.to_vec(),
        "schbench" => vec!["args"],
        "pingpong" => pipepair::PINGPONG_PARAMS.to_vec(),
        "perf-pipe" => pipepair::PERF_PIPE_PARAMS.to_vec(),
        _ => vec![],
    };
    k.push("bogus");
    k
}

/// A value for `key`: program arguments for `args`, else a number-ish token.
fn param_value(key: &'static str) -> BoxedStrategy<String> {
    if key == "args" {
        let opt = prop::sample::select(
            &["-m", "-t", "-r", "-s", "-c", "-w", "-g", "-l", "-f", "-s", "-p", "-T", "perf", "rt-tests", "old"][..],
        );
        prop::collection::vec((opt, number()), 0..4)
            .prop_map(|v| v.into_iter().map(|(o, n)| format!("{o} {n}")).collect::<Vec<_>>().join(" "))
            .boxed()
    } else {
        number().boxed()
    }
}

/// `key=value` items for a workload (sometimes without `=`, sometimes repeated).
fn params_for(workload: &'static str) -> impl Strategy<Value = Vec<String>> {
    let keys = param_keys(workload);
    prop::collection::vec(
        prop::sample::select(keys).prop_flat_map(|k| {
            (param_value(k), 0..8u8).prop_map(move |(v, form)| match form {
                0 => k.to_string(),
                1 => format!("{k}= {v}"),
                _ => format!("{k}={v}"),
            })
        }),
        0..5,
    )
}

thread_local! {
    /// This test's cases so far: (cases, built, ran); each test runs on its own thread.
    static TALLY: std::cell::Cell<(usize, usize, usize)> = const { std::cell::Cell::new((0, 0, 0)) };
}

fn tally(f: impl FnOnce(&mut (usize, usize, usize))) {
    TALLY.with(|t| {
        let mut v = t.get();
        f(&mut v);
        t.set(v);
    })
}

/// The counts by outcome (printed with `--nocapture`, to see what a fuzz covered): every case
/// is refused with an error, or builds; what builds runs to its end or limit, or stops with an
/// error. A panic, an abort or a case over a cap fails the test instead.
fn report(what: &str) {
    let (cases, built, ran) = TALLY.with(|t| t.replace((0, 0, 0)));
    eprintln!(
        "{what}: {cases} cases: {} refused with an error, {built} built; of those {ran} ran to the end or the limit, {} stopped with an error",
        cases - built,
        built - ran
    );
}

/// Run what builds for a few simulated milliseconds on a small quiet machine.
fn run_briefly(spec: &RunSpec) {
    tally(|t| t.1 += 1);
    let mut s = spec.clone();
    s.limit_ns = s.limit_ns.min(3_000_000);
    s.background = Some("none".into());
    if let Ok(m) = run::machine(&s.machine) {
        if m.topo.nr_cpus > 64 {
            s.machine = "smp-4".into();
            s.idle_states.clear();
        }
    }
    if run::execute(&s).is_ok() {
        tally(|t| t.2 += 1);
    }
}

#[test]
fn random_parameters_never_panic() {
    let strategy = prop::sample::select(WORKLOADS).prop_flat_map(|w| (Just(w), params_for(w)));
    runner(2000)
        .run(&strategy, |(w, items)| {
            capped(&format!("{w} {}", items.join(" ")), || {
                if let Ok(p) = Params::parse(items.iter().map(String::as_str), "fuzz") {
                    let mut s = RunSpec::new(w);
                    s.machine = "smp-4".into();
                    s.params = p;
                    if run::build(&s).is_ok() {
                        run_briefly(&s);
                    }
                }
            })
        })
        .unwrap();
    report("parameters");
}

#[test]
fn random_scenario_files_never_panic() {
    let opt = |s: BoxedStrategy<String>| prop::option::weighted(0.4, s);
    let sel = |key: &'static str, vals: &'static [&'static str]| {
        opt(prop::sample::select(vals).prop_map(move |v| format!("{key} = \"{v}\"")).boxed())
    };
    let top = (
        sel("machine", &["smp-4", "i7-4c8t", "epyc-7763-2s", "nope", "/nonexistent.toml"]),
        sel("kernel", &["v6.10", "v6.1 +3dcac251b066", "v6.10+rfc-tif-notify-ipi", "v3.8", "v9", "v6.10-"]),
        opt(prop::sample::select(&["+3dcac251b066", "-3dcac251b066", "nope", "", "+"][..])
            .prop_map(|p| format!("patches = [\"{p}\"]"))
            .boxed()),
        opt(prop::sample::select(&["NO_TTWU_QUEUE", "TTWU_QUEUE", "NOPE"][..])
            .prop_map(|f| format!("features = [\"{f}\"]"))
            .boxed()),
        opt(toml_value().prop_map(|v| format!("hz = {v}")).boxed()),
        opt(toml_value().prop_map(|v| format!("seed = {v}")).boxed()),
        opt(toml_value().prop_map(|v| format!("limit_ms = {v}")).boxed()),
        sel("preempt", &["none", "full", "dynamic-voluntary", "nope"]),
        prop::option::weighted(0.05, "[ -~]{0,12}"),
    );
    let idle = (prop::sample::select(&["POLL", "C1", "C2", "C9"][..]), any::<bool>())
        .prop_map(|(n, on)| format!("{n} = {on}"));
    let strategy = prop::sample::select(WORKLOADS).prop_flat_map(move |w| {
        let param = (prop::sample::select(param_keys(w)), toml_value()).prop_map(|(k, v)| (k, format!("{k} = {v}")));
        (Just(w), top.clone(), prop::collection::vec(param, 0..5), prop::collection::vec(idle.clone(), 0..2))
    });
    runner(2000)
        .run(&strategy, |(w, top, params, idle)| {
            let (a, b, c, d, e, f, g, h, i) = top;
            let mut lines = vec![format!("workload = \"{w}\"")];
            lines.extend([a, b, c, d, e, f, g, h, i].into_iter().flatten());
            // A key once per table (a repeated key is a TOML error the parser reports anyway).
            let mut seen = Vec::new();
            let params: Vec<String> = params
                .into_iter()
                .filter(|(k, _)| {
                    !seen.contains(k) && {
                        seen.push(*k);
                        true
                    }
                })
                .map(|(_, l)| l)
                .collect();
            let mut seen: Vec<String> = Vec::new();
            let idle: Vec<String> = idle
                .into_iter()
                .filter(|l| {
                    let name = l.split(' ').next().unwrap_or("").to_string();
                    let new = !seen.contains(&name);
                    seen.push(name);
                    new
                })
                .collect();
            let text =
                format!("{}\n[params]\n{}\n[idle_states]\n{}\n", lines.join("\n"), params.join("\n"), idle.join("\n"));
            capped(&text, || {
                if let Ok(s) = schedsim::spec::scenario::parse(&text, "fuzz.toml") {
                    if run::build(&s).is_ok() {
                        run_briefly(&s);
                    }
                }
            })
        })
        .unwrap();
    report("scenario files");
}

#[test]
fn random_machine_files_never_panic() {
    let base = schedsim::hw::preset_text("smp-4").unwrap().to_string();
    let nr_lines = base.lines().count();
    // Up to four edits: replace a line's value, drop a line, or insert a junk line.
    let edit = (0..nr_lines, 0..4u8, toml_value(), "[ -~]{0,16}");
    let dir = std::env::temp_dir().join(format!("schedsim-fuzz-machine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.toml");
    runner(2000)
        .run(&prop::collection::vec(edit, 1..5), |edits| {
            let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
            for (i, how, value, junk) in edits {
                let i = i.min(lines.len().saturating_sub(1));
                match how {
                    0 | 1 => {
                        if let Some((k, _)) = lines[i].clone().split_once(" = ") {
                            lines[i] = format!("{k} = {value}");
                        }
                    }
                    2 => {
                        lines.remove(i);
                    }
                    _ => lines.insert(i, junk),
                }
            }
            let text = lines.join("\n");
            capped(&text, || {
                if schedsim::hw::machine_from_toml(&text, "fuzz.toml").is_ok() {
                    std::fs::write(&path, &text).unwrap();
                    let mut s = RunSpec::new("ipistorm");
                    s.machine = path.display().to_string();
                    s.params = Params::parse(["numipi=20", "single=1", "offset=1", "cpulist=0"], "fuzz").unwrap();
                    if run::build(&s).is_ok() {
                        run_briefly(&s);
                    }
                }
            })
        })
        .unwrap();
    report("machine files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A JSON value for an rt-app key: an edge number, a string, a boolean, an array or null.
fn json_value() -> BoxedStrategy<String> {
    prop_oneof![
        24 => (0u32..20_000).prop_map(|n| n.to_string()),
        2 => number().prop_filter("a JSON number", |v| serde_json::from_str::<f64>(v).is_ok()),
        2 => number().prop_map(|v| format!("\"{v}\"")),
        1 => prop::sample::select(&["\"CPU0\"", "\"SCHED_FIFO\"", "\"SCHED_OTHER\"", "\"file\"", "\"disable\"", "\"m\"", "\"t\""][..]).prop_map(str::to_string),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        1 => (number(), number()).prop_map(|(a, b)| format!("[{}, {}]", json_num(&a), json_num(&b))),
        1 => Just("[]".to_string()),
        1 => Just("null".to_string()),
        1 => Just("{}".to_string()),
    ]
    .boxed()
}

/// `v` as a JSON number if it is one, else quoted.
fn json_num(v: &str) -> String {
    if serde_json::from_str::<f64>(v).is_ok() {
        v.to_string()
    } else {
        format!("\"{v}\"")
    }
}

const RTAPP_GLOBAL: &[&str] = &[
    "duration",
    "calibration",
    "default_policy",
    "log_size",
    "log_basename",
    "lock_pages",
    "pi_enabled",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
    "nope",
];
const RTAPP_TASK: &[&str] = &[
    "instance",
    "loop",
    "cpus",
    "nodes_membind",
    "policy",
    "priority",
    "delay",
    "util_min",
    "util_max",
    "taskgroup",
    "nope",
];
const RTAPP_EVENTS: &[&str] = &[
    "run", "run", "run", "runtime", "sleep", "sleep", "sleep", "timer", "timer", "lock", "unlock", "signal", "wait",
    "broad", "sync", "suspend", "resume", "barrier", "yield", "mem", "iorun", "fork", "sem_wait", "sem_post", "nope",
];

/// A random rt-app file: a few global keys, one to three tasks of task keys and events (some
/// as phases), values from [`json_value`] or well-formed ones (`timer`'s object, a thread name).
fn rtapp_file() -> impl Strategy<Value = String> {
    let global = prop::collection::vec((prop::sample::select(RTAPP_GLOBAL), json_value()), 0..2);
    let event = (prop::sample::select(RTAPP_EVENTS), json_value(), number()).prop_map(|(k, v, n)| match k {
        "timer" => format!("\"timer\": {{\"ref\": \"t\", \"period\": {}}}", json_num(&n)),
        "lock" | "unlock" | "signal" | "wait" | "broad" | "suspend" | "resume" | "barrier" | "fork" => {
            format!("\"{k}\": {}", if v.starts_with('"') { "\"m\"".to_string() } else { v })
        }
        _ => format!("\"{k}\": {v}"),
    });
    let task = (
        prop::collection::vec((prop::sample::select(RTAPP_TASK), json_value()), 0..2),
        prop::collection::vec(event, 1..4),
        any::<bool>(),
    );
    (global, prop::collection::vec(task, 1..4)).prop_map(|(global, tasks)| {
        let dedup = |kv: Vec<String>| {
            let mut seen = Vec::new();
            kv.into_iter()
                .filter(|l| {
                    let k = l.split(':').next().unwrap_or("").to_string();
                    let new = !seen.contains(&k);
                    seen.push(k);
                    new
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let g = dedup(global.into_iter().map(|(k, v)| format!("\"{k}\": {v}")).collect());
        let t: Vec<String> = tasks
            .into_iter()
            .enumerate()
            .map(|(i, (keys, events, phases))| {
                let keys = dedup(keys.into_iter().map(|(k, v)| format!("\"{k}\": {v}")).collect());
                let events = dedup(events);
                let body = if phases { format!("\"phases\": {{\"p0\": {{{events}}}}}") } else { events };
                let sep = if keys.is_empty() { "" } else { ", " };
                format!("\"t{i}\": {{{keys}{sep}{body}}}")
            })
            .collect();
        format!("{{\"global\": {{{g}}}, \"tasks\": {{{}}}}}", t.join(", "))
    })
}

#[test]
fn random_rtapp_files_never_panic() {
    let dir = std::env::temp_dir().join(format!("schedsim-fuzz-rtapp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    let save = std::env::var("FUZZ_SAVE_RTAPP").ok().map(std::path::PathBuf::from);
    let saved = std::sync::atomic::AtomicUsize::new(0);
    runner(500)
        .run(&rtapp_file(), |text| {
            capped(&text, || {
                std::fs::write(&path, &text).unwrap();
                let mut s = RunSpec::new("rtapp");
                s.machine = "smp-4".into();
                s.params = Params::parse([format!("file={}", path.display()).as_str()], "fuzz").unwrap();
                let verdict = match run::build(&s) {
                    Ok(_) => {
                        run_briefly(&s);
                        "accepted".to_string()
                    }
                    Err(e) => format!("refused: {e}"),
                };
                if let Some(d) = &save {
                    let n = saved.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    std::fs::write(d.join(format!("{n:06}.json")), &text).unwrap();
                    std::fs::write(d.join(format!("{n:06}.verdict")), verdict).unwrap();
                }
            })
        })
        .unwrap();
    report("rt-app files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One event of a well-formed thread, as `(key prefix, value)` pairs in order: a value is a
/// number, a name or an object within what the parser accepts. `lock`/`wait`/`unlock` and
/// `lock`/`sync`/`unlock` come as whole groups, as rt-app files write them.
fn rtapp_event(threads: usize) -> BoxedStrategy<Vec<(&'static str, String)>> {
    let thread = move |j: usize| format!("\"t{}\"", j % threads.max(1));
    prop_oneof![
        6 => (0u32..20_000).prop_map(|n| vec![("run", n.to_string())]),
        2 => (0u32..20_000).prop_map(|n| vec![("runtime", n.to_string())]),
        5 => (0u32..20_000).prop_map(|n| vec![("sleep", n.to_string())]),
        3 => (0u32..3, 1u32..20_000, any::<bool>()).prop_map(|(t, p, abs)| {
            let mode = if abs { "absolute" } else { "relative" };
            vec![("timer", format!("{{\"ref\": \"tick{t}\", \"period\": {p}, \"mode\": \"{mode}\"}}"))]
        }),
        2 => (0u32..2, 0u32..2_000).prop_map(|(m, n)| {
            vec![("lock", format!("\"m{m}\"")), ("run", n.to_string()), ("unlock", format!("\"m{m}\""))]
        }),
        1 => (0u32..2, 0u32..2).prop_map(|(m, c)| {
            let o = format!("{{\"ref\": \"c{c}\", \"mutex\": \"m{m}\"}}");
            vec![("lock", format!("\"m{m}\"")), ("wait", o), ("unlock", format!("\"m{m}\""))]
        }),
        1 => (0u32..2, 0u32..2).prop_map(|(m, c)| {
            let o = format!("{{\"ref\": \"c{c}\", \"mutex\": \"m{m}\"}}");
            vec![("lock", format!("\"m{m}\"")), ("sync", o), ("unlock", format!("\"m{m}\""))]
        }),
        1 => (0u32..2).prop_map(|c| vec![("signal", format!("\"c{c}\""))]),
        1 => (0u32..2).prop_map(|c| vec![("broad", format!("\"c{c}\""))]),
        1 => (0u32..2).prop_map(|b| vec![("barrier", format!("\"b{b}\""))]),
        1 => Just(vec![("suspend", "\"\"".to_string())]),
        1 => (0..4usize).prop_map(move |j| vec![("resume", thread(j))]),
        1 => Just(vec![("yield", "\"\"".to_string())]),
        1 => (0u32..65_536).prop_map(|n| vec![("mem", n.to_string())]),
        1 => (0u32..65_536).prop_map(|n| vec![("iorun", n.to_string())]),
        1 => (0..4usize).prop_map(move |j| vec![("fork", thread(j))]),
    ]
    .boxed()
}

/// A thread's own keys, each within its range (`priority` matching the policy).
fn rtapp_thread_keys() -> impl Strategy<Value = Vec<(&'static str, String)>> {
    let policy = prop::sample::select(&["SCHED_OTHER", "SCHED_FIFO", "SCHED_RR"][..]);
    let cpus = prop::collection::btree_set(0u32..4, 1..4)
        .prop_map(|s| format!("[{}]", s.into_iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")));
    let util = (0u32..=1024, 0u32..=1024).prop_map(|(a, b)| (a.min(b), a.max(b)));
    (
        prop::option::weighted(0.3, 1u32..4),
        prop::option::weighted(0.5, prop_oneof![Just(-1i64), 1i64..6]),
        prop::option::weighted(0.4, cpus),
        prop::option::weighted(0.5, (policy, 1i64..100, -20i64..20)),
        prop::option::weighted(0.3, 0u32..2_000),
        prop::option::weighted(0.2, util),
    )
        .prop_map(|(instance, lp, cpus, pol, delay, util)| {
            let mut k = Vec::new();
            if let Some(n) = instance {
                k.push(("instance", n.to_string()));
            }
            if let Some(n) = lp {
                k.push(("loop", n.to_string()));
            }
            if let Some(c) = cpus {
                k.push(("cpus", c));
            }
            if let Some((p, rt, nice)) = pol {
                k.push(("policy", format!("\"{p}\"")));
                k.push(("priority", if p == "SCHED_OTHER" { nice } else { rt }.to_string()));
            }
            if let Some(d) = delay {
                k.push(("delay", d.to_string()));
            }
            if let Some((lo, hi)) = util {
                k.push(("util_min", lo.to_string()));
                k.push(("util_max", hi.to_string()));
            }
            k
        })
}

/// A well-formed rt-app file: one to four threads (`t0`..), each of its own keys within range
/// and one to five events (sometimes in phases), every key one the parser accepts and every
/// value in range, so that most cases build and run; in a quarter of the cases one value is
/// replaced by a [`json_value`], so each key's checks are reached from a valid file too.
fn rtapp_wellformed_file() -> impl Strategy<Value = String> {
    let global = (
        prop::option::weighted(0.5, 1u32..4),
        prop::option::weighted(0.3, prop::sample::select(&["SCHED_OTHER", "SCHED_FIFO", "SCHED_RR"][..])),
        prop::option::weighted(
            0.3,
            prop_oneof![Just("\"CPU0\"".to_string()), (1u32..1_000).prop_map(|n| n.to_string())],
        ),
        prop::option::weighted(0.2, any::<bool>()),
    );
    (1usize..5)
        .prop_flat_map(move |n| {
            let thread = (
                rtapp_thread_keys(),
                prop::collection::vec(rtapp_event(n), 1..6),
                prop::option::weighted(0.3, (1usize..3, prop_oneof![Just(-1i64), 1i64..4])),
            );
            (
                global.clone(),
                prop::collection::vec(thread, n),
                prop::option::weighted(0.25, (any::<usize>(), json_value())),
            )
        })
        .prop_map(|((duration, policy, calibration, lock_pages), threads, mutation)| {
            // Every value goes through `val`, which swaps in the mutation at its index.
            let total = std::cell::Cell::new(0usize);
            let val = |v: String| -> String {
                let i = total.get();
                total.set(i + 1);
                match &mutation {
                    Some((at, m)) if *at % 64 == i => m.clone(),
                    _ => v,
                }
            };
            let kv = |k: &str, v: String| format!("\"{k}\": {}", val(v));
            let mut g = Vec::new();
            if let Some(d) = duration {
                g.push(kv("duration", d.to_string()));
            }
            if let Some(p) = policy {
                g.push(kv("default_policy", format!("\"{p}\"")));
            }
            if let Some(c) = calibration {
                g.push(kv("calibration", c));
            }
            if let Some(b) = lock_pages {
                g.push(kv("lock_pages", b.to_string()));
            }
            let events = |evs: &[Vec<(&str, String)>], seq: &mut usize| -> String {
                let mut out = Vec::new();
                for group in evs {
                    for (k, v) in group {
                        out.push(kv(&format!("{k}{seq}"), v.clone()));
                        *seq += 1;
                    }
                }
                out.join(", ")
            };
            let t: Vec<String> = threads
                .iter()
                .enumerate()
                .map(|(i, (keys, evs, phases))| {
                    let mut body: Vec<String> = keys.iter().map(|(k, v)| kv(k, v.clone())).collect();
                    let mut seq = 0;
                    match phases {
                        Some((np, lp)) => {
                            let per = evs.len().div_ceil(*np).max(1);
                            let ps: Vec<String> = evs
                                .chunks(per)
                                .enumerate()
                                .map(|(j, c)| {
                                    format!("\"p{j}\": {{\"loop\": {}, {}}}", val(lp.to_string()), events(c, &mut seq))
                                })
                                .collect();
                            body.push(format!("\"phases\": {{{}}}", ps.join(", ")));
                        }
                        None => body.push(events(evs, &mut seq)),
                    }
                    format!("\"t{i}\": {{{}}}", body.join(", "))
                })
                .collect();
            format!("{{\"global\": {{{}}}, \"tasks\": {{{}}}}}", g.join(", "), t.join(", "))
        })
}

#[test]
fn random_wellformed_rtapp_files_never_panic() {
    let dir = std::env::temp_dir().join(format!("schedsim-fuzz-rtapp-wf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    runner(300)
        .run(&rtapp_wellformed_file(), |text| {
            capped(&text, || {
                std::fs::write(&path, &text).unwrap();
                let mut s = RunSpec::new("rtapp");
                s.machine = "smp-4".into();
                s.params = Params::parse([format!("file={}", path.display()).as_str()], "fuzz").unwrap();
                // As a user would run an rt-app file of unbounded loops: with a short --limit-ms,
                // which the memory estimate of its log rows is computed for.
                s.limit_ns = 3_000_000;
                match run::build(&s) {
                    Ok(_) => run_briefly(&s),
                    Err(e) if std::env::var("FUZZ_DEBUG").is_ok() => eprintln!("REFUSED {e}"),
                    Err(_) => {}
                }
            })
        })
        .unwrap();
    report("well-formed rt-app files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A random sweep grid: top-level lists, seeds and limits, one to three `[[run]]` tables of a
/// workload, a built-in scenario or an experiment, with parameter lists and spec fields.
fn grid_file() -> impl Strategy<Value = String> {
    let list = |vals: &'static [&'static str]| {
        prop::collection::vec(prop::sample::select(vals), 0..3)
            .prop_map(|v| format!("[{}]", v.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", ")))
    };
    let kernels = list(&["v6.10", "v6.10", "v6.1", "v6.10+3dcac251b066", "v9", "v6.12-"]);
    let machines = list(&["smp-4", "smp-4", "smp-4", "i7-4c8t", "nope", "/nonexistent.toml"]);
    // Mostly values in range, so that what parses goes on to expand, build and run.
    let small = |hi: u32| prop_oneof![6 => (1..hi).prop_map(|n| n.to_string()), 1 => toml_value()];
    let opt = |s: BoxedStrategy<String>| prop::option::weighted(0.5, s);
    let top = (
        opt(kernels.clone().prop_map(|v| format!("kernels = {v}")).boxed()),
        opt(machines.clone().prop_map(|v| format!("machines = {v}")).boxed()),
        opt(small(4).prop_map(|v| format!("seeds = {v}")).boxed()),
        opt(small(5).prop_map(|v| format!("limit_ms = {v}")).boxed()),
        opt(prop::sample::select(&["none", "server", "nope"][..])
            .prop_map(|v| format!("background = \"{v}\""))
            .boxed()),
        prop::option::weighted(0.05, "[ -~]{0,12}"),
    );
    let what = prop_oneof![
        4 => prop::sample::select(WORKLOADS).prop_map(|w| format!("workload = \"{w}\"")),
        1 => prop::sample::select(&["ipistorm", "idle", "nope"][..]).prop_map(|w| format!("scenario = \"{w}\"")),
        1 => prop::sample::select(&["ipistorm", "rt-warn", "nope"][..]).prop_map(|w| format!("experiment = \"{w}\"")),
    ];
    let param = (
        prop::sample::select(&["numipi", "tasks", "iters", "delay", "nope"][..]),
        prop::collection::vec(prop_oneof![4 => (1u32..50).prop_map(|n| n.to_string()), 1 => number()], 0..3),
    )
        .prop_map(|(k, v)| format!("{k} = [{}]", v.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", ")));
    let run = (
        what,
        opt(kernels.prop_map(|v| format!("kernels = {v}")).boxed()),
        opt(machines.prop_map(|v| format!("machines = {v}")).boxed()),
        prop::option::weighted(0.5, param),
        prop::option::weighted(0.1, toml_value().prop_map(|v| format!("hz = {v}"))),
    );
    (top, prop::collection::vec(run, 0..3)).prop_map(|(top, runs)| {
        let (a, b, c, d, e, f) = top;
        let mut lines: Vec<String> = [a, b, c, d, e, f].into_iter().flatten().collect();
        for (w, k, m, p, hz) in runs {
            lines.push("[[run]]".into());
            lines.push(w);
            lines.extend([k, m, hz].into_iter().flatten());
            if let Some(p) = p {
                lines.push(format!("params = {{ {} }}", p));
            }
        }
        lines.join("\n")
    })
}

#[test]
fn random_grids_never_panic() {
    runner(300)
        .run(&grid_file(), |text| {
            capped(&text, || {
                if let Ok(runs) = schedsim::sweep::parse_grid(&text, "fuzz.toml") {
                    for r in runs.iter().take(2) {
                        let _ = r.key();
                        if run::build(&r.spec).is_ok() {
                            run_briefly(&r.spec);
                        }
                    }
                }
            })
        })
        .unwrap();
    report("grids");
}
