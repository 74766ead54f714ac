//! perf pipe on the calibrated 2-vCPU guest (docs/guest-2vcpu.toml): with the guest's measured
//! idle search (`idle_search_in_idle_loop = false`, docs/validate-guest.md, "Wakeup placement
//! on the guest"), a pair that comes to share a vCPU stays on it while the other vCPU idles in
//! its idle loop; with the upstream search the wakee is moved to the idle vCPU and the pair
//! wakes across vCPUs again, an IPI per wakeup.

use schedsim::run::{execute, RunResult};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;

fn guest_file(upstream_search: bool) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/docs/guest-2vcpu.toml")).expect("the guest file");
    let line = text.lines().find(|l| l.starts_with("idle_search_in_idle_loop")).expect("the key is in the file");
    let text = text.replace(line, &format!("idle_search_in_idle_loop = {upstream_search}"));
    let dir = std::env::temp_dir().join(format!("schedsim-guest-wake-{}-{upstream_search}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // The machine file names its background profile relative to itself.
    std::fs::copy(format!("{root}/docs/guest-2vcpu-background.toml"), dir.join("guest-2vcpu-background.toml"))
        .expect("copy the background profile");
    let path = dir.join("guest.toml");
    std::fs::write(&path, text).expect("write the machine file");
    path.to_string_lossy().into_owned()
}

fn perf_pipe(machine: &str) -> RunResult {
    let mut s = RunSpec::new("perf-pipe");
    s.machine = machine.into();
    s.kernel = "v6.18".into();
    // The guest's own background (the machine file's): its tasks and interrupts are what
    // puts the pair on one vCPU now and then (a busy prev at a wakeup).
    s.seed = 1;
    s.params = Params::from_pairs(vec![("loops".into(), "4000".into())], "test");
    let r = execute(&s).expect("runs");
    assert!(r.finished);
    r
}

#[test]
fn on_the_guest_a_pair_sharing_a_vcpu_stays_and_upstream_spreads_it() {
    let guest = perf_pipe(&guest_file(false));
    let upstream = perf_pipe(&guest_file(true));
    // perf bench sched pipe, 4000 loops, one or two wakeups each: on the guest the pair ends
    // up sharing a vCPU and stays (seed 1: 552 IPIs); upstream's search spreads it again at
    // every wakeup after a busy prev brought it together (5387).
    assert!(guest.stats.ipis_sent < 1500, "guest search: {} IPIs for 4000 loops", guest.stats.ipis_sent);
    assert!(upstream.stats.ipis_sent > 4000, "upstream search: {} IPIs for 4000 loops", upstream.stats.ipis_sent);
}
