//! Processes and threads differ as in the kernel (issue 38 item 2b): a switch between tasks of
//! two processes pays `switch_mm_irqs_off()` (`PathCosts::switch_mm`, src/linux/arch/x86/mm.rs),
//! one between threads of one process does not. `perf bench sched pipe` on a one-CPU machine
//! switches at every half round trip, so its process form runs `2 x switch_mm` slower per loop
//! than its thread form (`-T`), and nothing else differs inside the loop.

use schedsim::linux::cost::PathCosts;
use schedsim::run::{execute, RunResult};
use schedsim::spec::RunSpec;
use schedsim::workload::params::Params;
use schedsim::workload::Workload;

/// smp-4 cut down to one CPU (same costs, clock and background), as a machine file.
fn one_cpu_machine() -> String {
    let text = schedsim::hw::preset_text("smp-4").expect("preset");
    let text = text
        .replace("name = \"smp-4\"", "name = \"smp-1\"")
        .replace("cores_per_socket = 4", "cores_per_socket = 1")
        .replace("cores_per_llc = 2", "cores_per_llc = 1");
    let path = std::env::temp_dir().join(format!("schedsim-switch-mm-{}.toml", std::process::id()));
    std::fs::write(&path, text).expect("write the machine file");
    path.to_string_lossy().into_owned()
}

fn perf_pipe(machine: &str, loops: u64, threaded: bool) -> RunResult {
    let mut s = RunSpec::new("perf-pipe");
    s.machine = machine.into();
    s.background = Some("none".into());
    s.params = Params::from_pairs(
        vec![("loops".into(), loops.to_string()), ("threaded".into(), u32::from(threaded).to_string())],
        "test",
    );
    let r = execute(&s).expect("runs");
    assert_eq!(r.nr_cpus, 1);
    r
}

/// perf's timed section, ns (whole microseconds, as its `gettimeofday()` gives them).
fn elapsed(r: &RunResult) -> i64 {
    match &r.workload {
        Workload::PerfPipe(w) => {
            assert!(w.finished && w.done > 0);
            (w.stop_ns - w.start_ns) as i64
        }
        w => panic!("not perf-pipe: {}", w.name()),
    }
}

#[test]
fn a_process_ping_pong_pays_switch_mm_per_switch_and_a_thread_ping_pong_does_not() {
    let machine = one_cpu_machine();
    let m = schedsim::run::machine(&machine).expect("the machine file");
    let switch_mm = PathCosts::for_machine(&m).switch_mm as i64;
    assert!(switch_mm > 0);
    let (l1, l2) = (2_000u64, 4_000u64);
    let p1 = perf_pipe(&machine, l1, false);
    let p2 = perf_pipe(&machine, l2, false);
    let t1 = perf_pipe(&machine, l1, true);
    let t2 = perf_pipe(&machine, l2, true);
    // Every switch inside the process form's loop changes address space; the thread form's
    // switch none (its workers share main's mm, and main sleeps in pthread_join()).
    let per_loop = |a: &RunResult, b: &RunResult| (b.stats.mm_switches - a.stats.mm_switches) as f64 / (l2 - l1) as f64;
    assert!((per_loop(&p1, &p2) - 2.0).abs() < 0.01, "process: {} mm switches per loop", per_loop(&p1, &p2));
    assert!(t2.stats.mm_switches <= 4, "threads: {} mm switches", t2.stats.mm_switches);
    assert!(t2.stats.context_switches >= 2 * l2, "the thread form switches as often");
    // The extra loops' cost: the process form's exceeds the thread form's by 2 x switch_mm per
    // loop (within 10%: the loops are the same code; the rest is the hardware model's jitter,
    // drawn differently once the timings differ).
    let slope = |a: &RunResult, b: &RunResult| (elapsed(b) - elapsed(a)) as f64 / (l2 - l1) as f64;
    let diff = slope(&p1, &p2) - slope(&t1, &t2);
    let want = 2.0 * switch_mm as f64;
    assert!((diff - want).abs() <= 0.1 * want, "process - thread per loop {diff:.1} ns, want {want} ns");
    let _ = std::fs::remove_file(&machine);
}
