//! schbench end to end (docs/workloads.md §2.1): `schbench -m 1 -t 4 -r 7` on the 32-vCPU Ice Lake
//! VM finishes, prints the warmup message and then the final percentile block, every worker
//! records samples and the median wakeup latency is plausible; and the command line runs it
//! (exit code 0) or rejects bad schbench options with exit code 2 and a one-line error.

mod support;

use schedsim::run::{execute, RunResult};
use schedsim::workload::schbench_stats::WARMUP_MESSAGE;
use std::process::{Command, Output};
use support::*;

const ARGS: &str = "-m 1 -t 4 -r 7";

fn run(kernel: &str, trace: bool) -> RunResult {
    let r = execute(&schbench_spec("icx-vm-32", kernel, "", ARGS, trace)).expect("valid spec");
    assert!(r.finished, "{kernel}: schbench did not finish");
    r
}

#[test]
fn runs_to_completion_and_prints_the_final_block() {
    for kernel in ["v6.2", "v6.10"] {
        let r = run(kernel, false);
        let w = schbench_of(&r);
        let out = &w.output;
        let warm = out.find(WARMUP_MESSAGE).unwrap_or_else(|| panic!("{kernel}: no warmup message:\n{out}"));
        let block = out
            .find("Latency percentiles (usec) runtime 7 (s)")
            .unwrap_or_else(|| panic!("{kernel}: no final block:\n{out}"));
        assert!(warm < block, "{kernel}: the warmup message comes first:\n{out}");
        assert_eq!(out.matches("Latency percentiles").count(), 1, "{kernel}: one report for a 7 s run:\n{out}");
        // The simulated run lasts the runtime (plus the start and the joins).
        assert!(r.sim_ns >= 7_000_000_000 && r.sim_ns < 8_000_000_000, "{kernel}: {} ns", r.sim_ns);

        assert_eq!(w.workers.len(), 4);
        assert_eq!(w.msgs.len(), 1);
        for (i, wk) in w.workers.iter().enumerate() {
            assert!(wk.hist.nr_samples() > 0, "{kernel}: worker {i} recorded nothing");
        }
        let h = w.final_hist.as_ref().expect("the final histogram");
        assert_eq!(h.nr_samples(), w.workers.iter().map(|x| x.hist.nr_samples()).sum::<u64>());
        assert!(out.contains(&format!("({} total samples)", h.nr_samples())), "{kernel}:\n{out}");
        let p50 = h.percentile(500);
        assert!((1..=1000).contains(&p50), "{kernel}: p50 = {p50} us");
        assert!(h.min() <= p50 && p50 <= h.max());
    }
}

/// Worker threads leave with `pthread_exit()`: not group leaders, so `exit_notify()` reaps them
/// at once (`exit_state = EXIT_DEAD`) and their last `sched_switch` reports `prev_state=X`
/// (`__trace_sched_switch_state()` reports `exit_state` for a task in TASK_DEAD).
#[test]
fn exiting_worker_threads_switch_out_as_dead() {
    let r = run("v6.10", true);
    let workers = worker_pids(&r);
    assert_eq!(workers.len(), 4);
    for pid in workers {
        let last = r
            .trace
            .iter()
            .rev()
            .find_map(|x| match x.event {
                schedsim::trace::Event::SchedSwitch { prev_pid, prev_state, .. } if prev_pid == pid => Some(prev_state),
                _ => None,
            })
            .expect("the worker ran");
        assert_eq!(last, 0x10, "worker pid {pid}: last switch prev_state {last:#x}, want X (EXIT_DEAD)");
    }
}

/// The pids of the worker threads: schbench creates main, the message threads, then the
/// workers, and pids are handed out in creation order after the per-CPU kthreads.
fn worker_pids(r: &RunResult) -> Vec<u32> {
    let mut schbench: Vec<u32> = r.comms.iter().filter(|(_, c)| c == "schbench").map(|(p, _)| *p).collect();
    schbench.sort_unstable();
    let w = schbench_of(r);
    let first_worker = 1 + w.msgs.len();
    assert_eq!(schbench.len(), first_worker + w.workers.len());
    schbench[first_worker..].to_vec()
}

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedsim")).args(args).output().expect("run schedsim")
}

#[test]
fn cli_runs_schbench() {
    let o = cli(&["run", "schbench", "--machine", "icx-vm-32", "--", "-m", "1", "-t", "4", "-r", "7"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("warmup done, zeroing stats"), "{stdout}");
    assert!(stdout.contains("Latency percentiles (usec) runtime 7 (s)"), "{stdout}");
}

#[test]
fn cli_runs_schbench_with_its_default_scenario() {
    // `cargo run -- run schbench -- -m 1 -t 4 -r 7`: the built-in scenario's machine.
    let o = cli(&["run", "schbench", "--", "-m", "1", "-t", "4", "-r", "7"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Latency percentiles (usec) runtime 7 (s)"));
}

#[test]
fn cli_rejects_bad_schbench_options_with_exit_code_2() {
    for (args, names) in [
        (&["-m", "0"][..], "-m"),
        (&["-m", "1", "-Z", "3"][..], "Z"),
        (&["-m", "1", "--bogus"][..], "--bogus"),
        (&["-r", "0"][..], "-r"),
    ] {
        let mut argv = vec!["run", "schbench", "--machine", "icx-vm-32", "--"];
        argv.extend_from_slice(args);
        let o = cli(&argv);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: stderr: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: a one-line error: {stderr}");
        assert!(lines[0].starts_with("schedsim: error:"), "{args:?}: {stderr}");
        assert!(lines[0].contains(names), "{args:?}: the error names the option: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}

/// schbench's `usec_spin()` polls `gettimeofday()` until the wall clock passes the spin time,
/// so interrupts that land during the spin (the 1000 Hz tick here) do not lengthen it: the
/// spin ends at its deadline. With one worker on an otherwise idle VM, every on-CPU stretch of
/// the worker (switch-in to the switch-out of its next FUTEX_WAIT) is the 30 ms spin, the
/// spin's sub-microsecond overshoot and msg_and_wait(): a few microseconds over 30 ms, not
/// 30 ms plus the ~30 tick handlers it absorbed. The recorded latency (wakeup delay plus
/// overshoot) stays at a few microseconds too.
#[test]
fn interrupts_do_not_lengthen_a_wall_clock_spin() {
    // A quiet machine: a background kworker preempting the worker would split a stretch.
    let mut s = schbench_spec("icx-vm-32", "v6.2", "", "-m 1 -t 1 -r 7", true);
    s.background = Some("none".into());
    let r = execute(&s).expect("valid spec");
    assert!(r.finished);
    let worker = *worker_pids(&r).first().expect("one worker");
    let mut on_cpu: Option<(u64, u32)> = None;
    let mut stretches = 0;
    for (i, x) in r.trace.iter().enumerate() {
        let schedsim::trace::Event::SchedSwitch { prev_pid, next_pid, prev_state, .. } = x.event else { continue };
        if next_pid == worker {
            on_cpu = Some((x.ts_ns, i as u32));
        } else if prev_pid == worker && prev_state == 0x1 {
            let Some((t0, i0)) = on_cpu.take() else { continue };
            if t0 < 2_000_000_000 {
                continue; // the first loop starts with msg_and_wait(), not a spin
            }
            let ticks = r.trace[i0 as usize..i]
                .iter()
                .filter(|y| {
                    y.cpu == x.cpu
                        && matches!(
                            y.event,
                            schedsim::trace::Event::VectorEntry { vector: schedsim::trace::Vector::LocalTimer }
                        )
                })
                .count();
            assert!(ticks >= 25, "scenario: the tick interrupts the 30 ms spin ({ticks} ticks)");
            let d = x.ts_ns - t0;
            assert!(
                (30_000_000..30_005_000).contains(&d),
                "worker on CPU {} for {d} ns from {t0}: the spin must end at its deadline",
                x.cpu
            );
            stretches += 1;
        }
    }
    assert!(stretches > 40, "{stretches} spins checked");
    let h = schbench_of(&r).final_hist.as_ref().expect("the final histogram");
    assert!(h.max() <= 20, "one worker on an idle VM: max latency {} us", h.max());
}

/// The simulator's tail attribution (printed after the schbench block) accounts for exactly
/// the samples of 1 ms or more in the histogram, and on the early-clear kernel with two
/// groups overlapping on 32 vCPUs it finds stacked wakees behind them.
#[test]
fn tail_attribution_covers_the_tail_samples() {
    use schedsim::workload::schbench::TAIL_US;
    use schedsim::workload::schbench_stats::plat_idx_range;
    let r = execute(&schbench_spec("icx-vm-32", "v6.1", "", "-m 2 -t 16 -r 8", false)).expect("valid spec");
    assert!(r.finished);
    let w = schbench_of(&r);
    let h = w.final_hist.as_ref().expect("the final histogram");
    let mut tail = 0u64;
    let mut idx = 0;
    while let Some((lo, _)) = plat_idx_range(idx) {
        if lo as u64 >= TAIL_US {
            tail += h.bucket(idx) as u64;
        }
        idx += 1;
    }
    assert_eq!(w.tail.total(), tail, "{:?}", w.tail);
    assert!(tail > 0, "this seed has a tail on v6.1");
    assert!(w.tail.stacked + w.tail.stacked_none_left > 0, "{:?}", w.tail);
}
