// Shared by the fuzz targets (included with `include!`): run what parsed and built for a few
// simulated milliseconds on a small quiet machine, so overflow in what the model does with
// the numbers shows too (as tests/fuzz_parsers.rs does).

#[allow(dead_code)]
fn run_briefly(spec: &schedsim::run::RunSpec) {
    let mut s = spec.clone();
    s.limit_ns = s.limit_ns.min(2_000_000);
    s.background = Some("none".into());
    s.trace = false;
    if let Ok(m) = schedsim::run::machine(&s.machine) {
        if m.topo.nr_cpus > 64 {
            s.machine = "smp-4".into();
            s.idle_states.clear();
        }
    }
    let _ = schedsim::run::execute(&s);
}

/// Workloads the parameter and scenario targets may name (not `rtapp`, whose `file=` reads a
/// path: its parser has its own target).
#[allow(dead_code)]
const WORKLOADS: &[&str] =
    &["ipistorm", "spinners", "nanosleep", "rt-push", "hackbench", "schbench", "pingpong", "perf-pipe", "idle"];
