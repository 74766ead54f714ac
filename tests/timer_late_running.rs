//! A KVM guest's local timer on a running vCPU (`timer_late_running_ns` in `[costs]`,
//! docs/costs.md, "Calibration"): KVM injects the expired timer at the vCPU's next VM entry,
//! so the guest takes it late; the model delivers the timer of a CPU that is not halted that
//! much after its expiry. A SCHED_FIFO thread whose timer expires while another thread runs
//! on its CPU wakes that much later (rt-app's `wu_lat`); a file without the key delivers at the
//! expiry, as every preset does.

use schedsim::run::execute;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use schedsim::workload::Workload;

const HOST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/validate/host.toml");

/// A busy SCHED_OTHER thread on CPU 0 for 0.3 s, and a SCHED_FIFO thread on CPU 0 waking every
/// 2 ms for 10 us: each of its timers expires while the busy one runs.
const JSON: &str = r#"{
  "global": { "duration": 1, "default_policy": "SCHED_OTHER", "logdir": "./", "log_basename": "late" },
  "tasks": {
    "busy": { "cpus": [0], "loop": 1, "run": 300000 },
    "tick": { "cpus": [0], "policy": "SCHED_FIFO", "priority": 50, "loop": 100,
              "run": 10, "timer": { "ref": "t", "period": 2000 } }
  }
}"#;

/// The FIFO thread's mean wu_lat (us) on the guest file with `extra` after its irq_exit_ns.
fn mean_wu_lat(dir: &std::path::Path, name: &str, extra: &str) -> f64 {
    let text = std::fs::read_to_string(HOST).unwrap();
    let mut out = String::new();
    for l in text.lines() {
        out.push_str(l);
        out.push('\n');
        if l.starts_with("irq_exit_ns") && !extra.is_empty() {
            out.push_str(extra);
            out.push('\n');
        }
    }
    let machine = dir.join(name);
    std::fs::write(&machine, out).unwrap();
    let mut s = RunSpec::new("rtapp");
    s.machine = machine.to_string_lossy().into_owned();
    s.background = Some("none".into());
    let file = dir.join("late.json");
    let pairs = vec![("file".to_string(), file.to_string_lossy().into_owned()), ("logs".into(), "keep".into())];
    s.params = Params::from_pairs(pairs, "test");
    let r = execute(&s).expect("valid spec");
    assert!(r.finished);
    let Workload::RtApp(w) = r.workload else { panic!("not an rt-app run") };
    let th = w.threads.iter().find(|t| t.name.starts_with("tick")).expect("the FIFO thread");
    assert!(th.rows.len() >= 90, "{} rows", th.rows.len());
    th.rows.iter().map(|r| r.wu_lat as f64).sum::<f64>() / th.rows.len() as f64
}

#[test]
fn a_timer_expiring_on_a_running_vcpu_is_taken_late_by_the_measured_key() {
    let dir = std::env::temp_dir().join(format!("schedsim-timer-late-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("late.json"), JSON).unwrap();
    let at_expiry = mean_wu_lat(&dir, "plain.toml", "");
    let late = mean_wu_lat(&dir, "late.toml", "timer_late_running_ns = [200000, 200000]");
    std::fs::remove_dir_all(&dir).unwrap();
    // Every activation's timer expires while `busy` runs: each wakeup is 200 us later.
    let d = late - at_expiry;
    assert!((190.0..=210.0).contains(&d), "wu_lat {at_expiry:.1} us at the expiry, {late:.1} us with the key");
}
