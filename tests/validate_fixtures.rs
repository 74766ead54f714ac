//! The model against small real traces of this project's 2-vCPU KVM guest (Linux 6.18,
//! haltpoll with guest_halt_poll_ns=0, HZ=250), so CI checks fidelity without tracefs.
//!
//! Each fixture in tests/fixtures/validate is 3000 lines from the middle of a real capture
//! (see the README there); the machine file is what `schedsim machine --from-host` wrote on
//! that guest. The model runs the same program on that machine file and both traces go through
//! the same analyzer (`schedsim::validate`). Only structural figures (per program wakeup) are
//! checked: rates and speeds need the whole run and the host's real costs, which the machine
//! file can only guess. Each check states its tolerance; the figures the model does not match
//! yet are printed, not asserted, and named in the comments with the reason.

use schedsim::run;
use schedsim::spec::RunSpec;
use schedsim::validate::{self, Program};
use schedsim::workload::params::Params;
use std::collections::BTreeSet;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/validate");

fn read_gz(name: &str) -> String {
    let bytes = std::fs::read(format!("{DIR}/{name}")).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).unwrap();
    text
}

/// (figure name, real, model) for one fixture and one model run.
fn compare(fixture: &str, comms: &[&str], workload: &str, params: &[(&str, &str)]) -> Vec<(String, f64, f64)> {
    let machine = format!("{DIR}/host.toml");
    let real_text = read_gz(fixture);
    let silent: BTreeSet<u32> = validate::silent_idle_cpus(&real_text, 20);
    let comms: Vec<String> = comms.iter().map(|s| s.to_string()).collect();
    let real = validate::analyze(&real_text, &Program::Comms(&comms), &silent);
    assert!(real.wakeups > 100, "{fixture}: only {} program wakeups", real.wakeups);

    let mut s = RunSpec::new(workload);
    s.machine = machine.clone();
    s.kernel = schedsim::linux::patches::KERNELS.last().unwrap().name.into();
    s.params = Params::from_pairs(params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), "test");
    s.trace = true;
    let r = run::execute(&s).unwrap();
    assert!(r.finished, "{workload} did not finish");
    let model = validate::model_counts(&r, &validate::model_trace_text(&r), &silent);

    let names: Vec<String> = run::machine(&machine).unwrap().idle_states.iter().map(|s| s.name.clone()).collect();
    let fr = validate::figures(&real, &names, None);
    let fm = validate::figures(&model, &names, None);
    let rows = validate::rows(&[fr], &[fm], 0.15);
    eprintln!("{fixture}:\n{}", validate::render(&rows, 0.15));
    rows.into_iter()
        .filter(|r| r.kind == validate::RowKind::Structure)
        .map(|r| (r.name, r.real_mean.unwrap(), r.model))
        .collect()
}

fn get(rows: &[(String, f64, f64)], name: &str) -> (f64, f64) {
    rows.iter().find(|r| r.0 == name).map_or((0.0, 0.0), |r| (r.1, r.2))
}

/// The ratio is within `tol` of 1.
fn assert_ratio(rows: &[(String, f64, f64)], name: &str, tol: f64) {
    let (real, model) = get(rows, name);
    assert!(real > 0.0, "{name}: the real trace has none");
    let ratio = model / real;
    assert!((ratio - 1.0).abs() <= tol, "{name}: model {model:.3} / real {real:.3} = {ratio:.2}, outside +-{tol}");
}

/// Both sides are (nearly) zero per wakeup.
fn assert_rare(rows: &[(String, f64, f64)], name: &str) {
    let (real, model) = get(rows, name);
    assert!(real <= 0.02 && model <= 0.02, "{name}: real {real:.3}, model {model:.3} per wakeup");
}

#[test]
fn perf_bench_sched_pipe_wakes_through_the_wakelist_and_halts_once_per_round_trip() {
    let r = compare("perf-pipe.trace.gz", &["sched-pipe"], "perf-pipe", &[("loops", "2000")]);
    // With guest_halt_poll_ns=0 the sleeper's vCPU halts, so every wakeup queues on the
    // wakelist and sends an IPI; half of the switches go to idle.
    assert_ratio(&r, "IPIs per wakeup: ttwu", 0.15);
    assert_ratio(&r, "switches per wakeup", 0.15);
    assert_ratio(&r, "idle entries per wakeup: haltpoll", 0.15);
    assert_rare(&r, "IPIs per wakeup: resched");
    assert_rare(&r, "migrations per wakeup");
}

/// The model's figure lies within the real captures' spread, widened by `tol` on each side.
fn assert_within_spread(runs: &[Vec<(String, f64, f64)>], name: &str, tol: f64) {
    let reals: Vec<f64> = runs.iter().map(|r| get(r, name).0).collect();
    let model = get(&runs[0], name).1;
    let (lo, hi) = reals.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(lo > 0.0, "{name}: a real trace has none");
    assert!(
        model >= lo * (1.0 - tol) && model <= hi * (1.0 + tol),
        "{name}: model {model:.3} outside the real {lo:.3}..{hi:.3} +-{tol}"
    );
}

#[test]
fn perf_bench_sched_messaging_switches_alike() {
    // Two captures of `perf bench sched messaging -g 1 -l 100` (middle windows): they differ
    // (switches per wakeup 1.57 and 1.17; whole runs of other quiet captures 1.21-1.30), so
    // the model is held to their spread.
    let p = &[("tool", "perf"), ("args", "-g 1 -l 20")];
    let runs: Vec<_> = ["messaging.trace.gz", "messaging-2.trace.gz"]
        .iter()
        .map(|f| compare(f, &["sched-messaging"], "hackbench", p))
        .collect();
    assert_within_spread(&runs, "switches per wakeup", 0.15);
    let r = &runs[0];
    assert_rare(r, "IPIs per wakeup: other csd");
    // Not matched yet (printed above): resched IPIs per wakeup (model ~0.8x) and migrations
    // per wakeup (model ~0.5x): the real guest also runs kworkers, RCU and the tracing
    // machinery on these two CPUs, which the model does not have yet, so its balancer and
    // wakeup preemption see fewer competing tasks.
}

#[test]
fn a_nanosleep_loop_halts_once_per_sleep_without_ipis() {
    let r = compare("nanosleep.trace.gz", &["nsloop"], "nanosleep", &[("procs", "1"), ("duration_ms", "100")]);
    assert_ratio(&r, "switches per wakeup", 0.15);
    assert_ratio(&r, "idle entries per wakeup: haltpoll", 0.15);
    assert_rare(&r, "IPIs per wakeup: ttwu");
    assert_rare(&r, "IPIs per wakeup: resched");
    assert_rare(&r, "wakeups without IPI per wakeup");
}

#[test]
fn the_host_machine_file_reads_back_with_its_haltpoll_parameters() {
    let m = run::machine(&format!("{DIR}/host.toml")).unwrap();
    assert_eq!(m.topo.nr_cpus, 2);
    assert_eq!(m.governor, schedsim::hw::Governor::Haltpoll);
    assert_eq!(m.haltpoll.guest_halt_poll_ns, 0, "this guest boots with haltpoll.guest_halt_poll_ns=0");
    assert_eq!(m.hz, 250);
}

/// rt-app's real run (rtapp-periodic.trace.gz) is its calibration (5 s), its threads (2 s)
/// and the rest of its `duration` (1 s); the model runs only the threads. Over the whole
/// process the real wakeups per second were a third of the model's (issue 32); over the use
/// case (`Window::Forked`: the threads' first run to their exit) they agree.
#[test]
fn rt_apps_use_case_is_timed_alone_on_both_sides() {
    let text = read_gz("rtapp-periodic.trace.gz");
    let names = ["rt-app".to_string()];
    let none = BTreeSet::new();
    let life = validate::analyze(&text, &Program::Comms(&names), &none);
    let uc = validate::analyze_in(&text, &Program::Comms(&names), &none, validate::Window::Forked);
    assert!(!life.forked_window && uc.forked_window);
    assert!(life.span_ns > 7_000_000_000, "the whole process: {} ns", life.span_ns);
    assert!((1_990_000_000..2_100_000_000).contains(&uc.span_ns), "the threads: {} ns", uc.span_ns);
    assert_eq!(uc.pids, 3, "rt-app and its two threads");

    let mut s = RunSpec::new("rtapp");
    s.machine = format!("{DIR}/host.toml");
    s.kernel = schedsim::linux::patches::KERNELS.last().unwrap().name.into();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/rtapp/periodic.json");
    s.params = Params::from_pairs(vec![("file".into(), file.into())], "test");
    s.trace = true;
    let r = run::execute(&s).unwrap();
    assert!(r.finished);
    let model = validate::model_counts(&r, &validate::model_trace_text(&r), &none);
    let per_s = |c: &validate::Counts| c.wakeups as f64 * 1e9 / c.span_ns as f64;
    let (m, real_uc, real_life) = (per_s(&model), per_s(&uc), per_s(&life));
    eprintln!("wakeups per second: model {m:.2}, real use case {real_uc:.2}, real lifetime {real_life:.2}");
    assert!((m / real_uc - 1.0).abs() <= 0.15, "model {m:.2} against the use case's {real_uc:.2}");
    assert!(m / real_life > 2.5, "the lifetime's rate was the old miss: {real_life:.2}");
}
