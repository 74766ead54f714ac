//! The two calibrated 2-vCPU guest files this project ships (docs/guest-2vcpu.toml: an Intel
//! Xeon host; docs/guest-2vcpu-epyc.toml: an AMD EPYC host, calibrated in session 8) load,
//! carry what `validate` needs to tell calibrated from predicted figures, and differ where the
//! calibration measured the hosts differently: a model of "your machine" is that machine's.

use schedsim::run::execute;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn nanosleep_wake_latency(file: &str) -> (u64, u64) {
    let mut s = RunSpec::new("nanosleep");
    s.machine = format!("{ROOT}/docs/{file}");
    s.kernel = "v6.18".into();
    s.seed = 1;
    s.params = Params::from_pairs(
        vec![("procs".into(), "1".into()), ("ns".into(), "500000".into()), ("duration_ms".into(), "50".into())],
        "test",
    );
    let r = execute(&s).expect("runs");
    assert!(r.finished, "{file}: the run finishes");
    (r.stats.wakeup_latency.len(), r.stats.wakeup_latency.value_at_quantile(0.5))
}

#[test]
fn both_shipped_guest_calibrations_load_and_name_their_calibration_set() {
    for file in ["guest-2vcpu.toml", "guest-2vcpu-epyc.toml"] {
        let text = std::fs::read_to_string(format!("{ROOT}/docs/{file}")).expect("the file");
        for line in ["# calibrated-program: nanosleep", "# calibrated-program: pingpong", "[path_costs."] {
            assert!(text.contains(line), "{file} lacks `{line}`");
        }
        schedsim::run::machine(&format!("{ROOT}/docs/{file}")).expect("the guest file parses");
    }
}

#[test]
fn the_two_hosts_calibrate_to_different_costs() {
    let intel = std::fs::read_to_string(format!("{ROOT}/docs/guest-2vcpu.toml")).expect("file");
    let epyc = std::fs::read_to_string(format!("{ROOT}/docs/guest-2vcpu-epyc.toml")).expect("file");
    let key = |t: &str, k: &str| {
        t.lines().find(|l| l.starts_with(k)).map(|l| l.split('#').next().unwrap().trim().to_string())
    };
    assert!(epyc.contains("AMD EPYC") && intel.contains("Intel(R) Xeon(R)"));
    // The IPI's delivery was measured on each host (docs/validate-guest.md, session 8).
    assert_ne!(key(&intel, "ipi_delivery_ns"), key(&epyc, "ipi_delivery_ns"));
    assert_ne!(key(&intel, "timer_wake_ns"), key(&epyc, "timer_wake_ns"));
    // And a program run on each is a different run.
    let (a, b) = (nanosleep_wake_latency("guest-2vcpu.toml"), nanosleep_wake_latency("guest-2vcpu-epyc.toml"));
    assert!(a.0 > 50 && b.0 > 50, "0.5 ms sleeps for 50 ms: {a:?} {b:?}");
    assert_ne!(a.1, b.1, "the median wakeup latency of a 0.5 ms nanosleep loop is the host's halted-vCPU wake");
}
