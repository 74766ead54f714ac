//! `reproduce ipistorm-arm` (issue 38 item 5): on `neoverse-n1-2s` (arm64: WFI idle, no
//! TIF_POLLING_NRFLAG) no ipistorm call completes through the polling path, whatever the
//! kernel: every call is a real IPI to a target halted in WFI or awake in its idle loop, and
//! neither SM_IDLE nor the TIF_NOTIFY_IPI RFC changes a single call.

use schedsim::experiments::ipistorm_arm::{spec, VARIANTS};
use schedsim::run::execute;
use schedsim::workload::ipistorm::{Ipistorm, TargetAt};
use schedsim::workload::params::Params;
use schedsim::workload::Workload;

const CALLS: u64 = 3000;

fn run(patches: &str) -> (Ipistorm, u64, u64) {
    let mut s = spec(patches);
    let pairs = [("numipi", "3000"), ("single", "1"), ("offset", "8"), ("cpulist", "8"), ("wait", "1")];
    s.params = Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), "test");
    let r = execute(&s).expect("valid spec");
    assert!(r.finished, "{patches}: ipistorm did not finish");
    let Workload::Ipistorm(w) = r.workload else { panic!("not ipistorm") };
    (w, r.stats.ipis_avoided, r.stats.halted_ns[16])
}

#[test]
fn no_call_completes_through_the_polling_path_on_arm64() {
    let mut totals = Vec::new();
    for (label, patches) in VARIANTS {
        let (w, avoided, halted_ns) = run(patches);
        assert_eq!(w.calls(), CALLS, "{label}");
        assert_eq!(w.calls_polling, 0, "{label}: a call notified through the polling flag");
        assert_eq!(avoided, 0, "{label}: an IPI avoided on a CPU that never polls");
        assert_eq!(w.calls_ipi + w.calls_coalesced, CALLS, "{label}");
        assert_eq!(w.target_at_call[TargetAt::PollIdle as usize], 0, "{label}: the target in poll_idle()");
        assert_eq!(w.target_at_call.iter().sum::<u64>(), CALLS, "{label}");
        assert_eq!(w.target_at_call[TargetAt::Busy as usize], 0, "{label}: {:?}", w.target_at_call);
        // Between calls the target halts in WFI.
        assert!(halted_ns > 0, "{label}: CPU16 never halted");
        totals.push((label, w.total_ns(), w.calls_ipi));
    }
    // Neither patch has a path to act on: the three runs are the same calls.
    assert!(totals.windows(2).all(|p| (p[0].1, p[0].2) == (p[1].1, p[1].2)), "{totals:?}");
}
