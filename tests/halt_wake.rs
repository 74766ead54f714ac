//! A halted vCPU's wake that grows with the halt (`halt_wake_extra_ns` and
//! `halt_refill_extra_ns` of a halting idle state, docs/costs.md, "Calibration"): on the guest
//! file with a curve, a sleeper whose CPU halted long wakes later by the curve's extra at that
//! halt, one whose CPU halted shorter than the curve's first point not at all. A nanosleep loop
//! pays the extra once per sleep; the runs with and without the curve draw the same random
//! numbers (the curve consumes none), so the difference is the curve alone.

use schedsim::run::execute;
use schedsim::sim::NSEC_PER_MSEC;
use schedsim::spec::RunSpec;
use schedsim::workload::Workload;

const GUEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guest-2vcpu.toml");
const DURATION_MS: u64 = 200;

/// Sleeps of one nanosleep(`ns`) loop in 200 ms on `machine`, no background.
fn sleeps(machine: &str, ns: u64) -> u64 {
    let mut s = RunSpec::new("nanosleep");
    s.machine = machine.into();
    s.background = Some("none".into());
    let (ns, d) = (format!("ns={ns}"), format!("duration_ms={DURATION_MS}"));
    s.params = schedsim::workload::params::Params::parse(["procs=1", ns.as_str(), d.as_str()], "test").unwrap();
    s.limit_ns = 2 * DURATION_MS * NSEC_PER_MSEC;
    let r = execute(&s).expect("valid spec");
    match r.workload {
        Workload::Nanosleep(w) => w.loops,
        other => panic!("not a nanosleep run: {other:?}"),
    }
}

/// The guest file without its curves, plus `extra` (lines) after the halting state's `wake_ns`,
/// written beside a copy of its background profile; returns the file's path.
fn guest_with(dir: &std::path::Path, name: &str, extra: &str) -> String {
    let text = std::fs::read_to_string(GUEST).unwrap();
    let mut out = String::new();
    let mut hlt = false;
    for l in text.lines() {
        if l.starts_with("halt_wake_extra_ns") || l.starts_with("halt_refill_extra_ns") {
            continue;
        }
        out.push_str(l);
        out.push('\n');
        hlt |= l.starts_with("kind = \"hlt\"");
        if hlt && l.starts_with("wake_ns") {
            out.push_str(extra);
            out.push('\n');
            hlt = false;
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_long_halt_wakes_later_than_a_short_one_by_the_curves_extra() {
    let dir = std::env::temp_dir().join(format!("schedsim-halt-wake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(GUEST.replace(".toml", "-background.toml"), dir.join("guest-2vcpu-background.toml")).unwrap();
    // No extra up to 100 us of halt, 20 us from 1 ms on.
    let curve = "[[100000, 0], [1000000, 20000]]";
    let plain = guest_with(&dir, "plain.toml", "");
    let host = guest_with(&dir, "host.toml", &format!("halt_wake_extra_ns = {curve}"));
    let guest = guest_with(&dir, "guest.toml", &format!("halt_refill_extra_ns = {curve}"));
    let m = schedsim::hw::machine_from_toml(&std::fs::read_to_string(&host).unwrap(), "host").unwrap();
    assert_eq!(m.idle_states[1].halt_extra.as_ref().map(|c| c.extra_ns(1_000_000)), Some(20_000));
    let m = schedsim::hw::machine_from_toml(&std::fs::read_to_string(&plain).unwrap(), "plain").unwrap();
    assert!(m.idle_states[1].halt_extra.is_none() && m.idle_states[1].halt_refill.is_none());

    // Short halts (a 50 us sleep halts less than 100 us): the curve adds nothing but to the
    // first wakes (the CPUs halted from the start of the run), which shifts the loop's phase:
    // at most one sleep more or fewer of ~1600, where 20 us on each would cost a fifth of them.
    let short = sleeps(&plain, 50_000);
    for file in [&host, &guest] {
        let n = sleeps(file, 50_000);
        assert!(n.abs_diff(short) <= 1, "{n} sleeps with the curve, {short} without");
    }

    // Long halts (a 2 ms sleep halts about 2 ms): each sleep 20 us longer, the last point's.
    let (without, with_host, with_guest) =
        (sleeps(&plain, 2_000_000), sleeps(&host, 2_000_000), sleeps(&guest, 2_000_000));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(with_host < without, "{with_host} sleeps with the curve, {without} without");
    // Both keys are charged at the wake: the same run.
    assert_eq!(with_host, with_guest);
    let period = |n: u64| (DURATION_MS * NSEC_PER_MSEC) as f64 / n as f64;
    let extra = period(with_host) - period(without);
    // One loop more or less moves the mean period by ~ period / loops (~20 us / 100 loops).
    let slack = period(without) / without as f64 * 1.5;
    assert!((extra - 20_000.0).abs() < slack, "each sleep {extra:.0} ns longer; the curve adds 20000 (+-{slack:.0})");
}
