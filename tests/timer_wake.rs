//! A halted vCPU's own timer (`timer_wake_ns` of a halting idle state, docs/costs.md,
//! "Calibration"): on the calibrated guest file a sleeper's timer wakes its halted CPU in
//! `timer_wake_ns`, where without the key it woke in `wake_ns` as an IPI does. A nanosleep loop
//! pays the difference once per sleep.

use schedsim::run::execute;
use schedsim::sim::NSEC_PER_MSEC;
use schedsim::spec::RunSpec;
use schedsim::workload::Workload;

const GUEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guest-2vcpu.toml");

/// Sleeps of one nanosleep(50 us) loop in 100 ms on `machine`, no background.
fn sleeps(machine: &str) -> u64 {
    let mut s = RunSpec::new("nanosleep");
    s.machine = machine.into();
    s.background = Some("none".into());
    s.params = schedsim::workload::params::Params::parse(["procs=1", "ns=50000", "duration_ms=100"], "test").unwrap();
    s.limit_ns = 200 * NSEC_PER_MSEC;
    let r = execute(&s).expect("valid spec");
    match r.workload {
        Workload::Nanosleep(w) => w.loops,
        other => panic!("not a nanosleep run: {other:?}"),
    }
}

#[test]
fn a_halted_cpus_timer_wakes_it_in_timer_wake_ns_and_in_wake_ns_without_the_key() {
    let text = std::fs::read_to_string(GUEST).unwrap();
    let m = schedsim::hw::machine_from_toml(&text, GUEST).unwrap();
    let hlt = &m.idle_states[1];
    let tw = hlt.timer_wake.expect("the calibrated guest file has timer_wake_ns");
    let w = hlt.wake;
    // The same file without the key: its timers wake the CPU as IPIs do.
    let without: String = text.lines().filter(|l| !l.starts_with("timer_wake_ns")).map(|l| format!("{l}\n")).collect();
    let dir = std::env::temp_dir().join(format!("schedsim-timer-wake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = dir.join("guest-2vcpu.toml");
    std::fs::write(&plain, without).unwrap();
    std::fs::copy(GUEST.replace(".toml", "-background.toml"), dir.join("guest-2vcpu-background.toml")).unwrap();
    let plain_m = schedsim::hw::machine_from_toml(&std::fs::read_to_string(&plain).unwrap(), "plain").unwrap();
    assert!(plain_m.idle_states[1].timer_wake.is_none());

    let (with_key, without_key) = (sleeps(GUEST), sleeps(plain.to_str().unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(with_key < without_key, "{with_key} sleeps with timer_wake_ns, {without_key} without");
    // Each sleep's period grows by the difference of the two wakes, within their ranges.
    let period = |n: u64| (100 * NSEC_PER_MSEC) as f64 / n as f64;
    let extra = period(with_key) - period(without_key);
    let (lo, hi) = (tw.lo_ns as f64 - w.hi_ns as f64, tw.hi_ns as f64 - w.lo_ns as f64);
    assert!(extra > lo.max(0.0) && extra < hi, "each sleep {extra:.0} ns longer; the wakes allow {lo:.0}..{hi:.0}");
}
