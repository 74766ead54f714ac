//! The executor's frames (docs/design.md, "The executor"): a CPU's running frame lives in its
//! slot of `engine::TopFrames` and the frames below it in `Exec::stack`, and a context switch
//! is completed by the executor after the switch step. Between actions, every CPU's frames
//! must be whole.

use schedsim::linux::engine::{cpu_frames, Frame, Phase};
use schedsim::run::build;
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;

/// Between actions: each CPU's running task has no saved frames left (they are the CPU's),
/// `Exec::irq_phase` is the innermost interrupt-context frame's phase, and a task switched out
/// has its own `__schedule()` frame on top of its saved stack (the switch step moves only the
/// frames below the running one; the executor puts the running one there when the step
/// returns).
#[test]
fn frames_stay_whole_across_context_switches() {
    let mut s = RunSpec::new("hackbench");
    s.machine = "i7-4c8t".into();
    s.params =
        Params::from_pairs(vec![("tool".into(), "perf".into()), ("args".into(), "-p -g 2 -l 20".into())], "test");
    let mut k = build(&s).expect("valid spec");
    assert_eq!(k.tops.len(), k.cpus.len());
    let (mut t, mut switched_out) = (0, 0);
    while !k.finished() && t < 1_000_000_000 {
        t += 20_000;
        k.run(t);
        let mut curr = vec![false; k.tasks.len()];
        for c in 0..k.cpus.len() {
            let frames = cpu_frames(&k, c);
            let innermost = frames.iter().rev().find_map(|f| match f {
                Frame::HardIrq(_) => Some(Phase::HardIrq),
                Frame::HandleSoftirqs(_) => Some(Phase::Softirq),
                _ => None,
            });
            assert_eq!(k.cpus[c].x.irq_phase, innermost, "cpu {c} at {}", k.now);
            let r = k.cpus[c].rq.curr as usize;
            curr[r] = true;
            assert!(k.tasks[r].saved.is_empty(), "cpu {c} runs task {r}, which still has saved frames");
        }
        for (i, task) in k.tasks.iter().enumerate() {
            if !curr[i] && matches!(task.saved.last(), Some(Frame::Schedule(_))) {
                switched_out += 1;
            }
        }
    }
    assert!(k.finished(), "hackbench did not finish");
    assert!(switched_out > 0, "no task was seen switched out");
}
