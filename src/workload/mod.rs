//! Workloads: programs that run on the modelled machine as kernel threads or user tasks. They
//! reach the kernel model only through its entry points (`copy_process`, `wake_up_new_task`,
//! `smp_call_function_single`, `schedule`, `wake_up_process`, sleeps, `sched_setaffinity`,
//! `do_exit`), never by writing kernel state directly; the kernel reaches them only through
//! `linux::programs::Programs`, which the run's programs implement by dispatching to the
//! workload ([`Workload`]).
//!
//! Every workload is one row of the [`workloads!`] table below and one type implementing
//! [`Program`]: the table generates the [`Workload`] enum, the list of names and descriptions
//! ([`WORKLOADS`]), the parser ([`Workload::parse`]) and the dispatch of every [`Program`]
//! method. Adding a workload is a new file with its type and one row.

pub mod hackbench;
pub mod idle;
pub mod ipistorm;
pub mod nanosleep;
pub mod netperf;
pub mod params;
pub mod pipepair;
pub mod rtapp;
pub mod rtapp_json;
pub mod rtapp_summary;
pub mod rtpush;
pub mod schbench;
pub mod schbench23;
pub mod schbench23_stats;
pub mod schbench_stats;
pub mod spinners;
pub mod tbench;

use crate::hw::Machine;
use crate::linux::engine::Next;
use crate::linux::kernel::fork::copy_process;
pub use crate::linux::programs::TaskFrame;
use crate::linux::stats::Stats;
use crate::linux::{CpuId, Kernel};
use crate::sim::Time;
use params::Params;

/// What a workload's report needs of a finished run besides the workload's own state.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    pub stats: &'a Stats,
    /// Simulated time of the measured window, and of the warm-up before it.
    pub sim_ns: Time,
    pub warmup_ns: Time,
    pub nr_cpus: u32,
    /// CPU time of the workload's tasks (perf's task-clock).
    pub task_clock_ns: u64,
    /// The workload finished before the run's time limit.
    pub finished: bool,
}

/// A workload's primary figure: what `compare` and `sweep` tabulate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
    pub value: f64,
}

/// What each workload type implements (one row of [`workloads!`] names the type).
pub trait Program: Sized {
    /// Read the workload's parameters for machine `m`; `name` is the table row's (one type may
    /// serve several rows). Errors name the parameter and where it came from (`p.origin`).
    fn parse(name: &str, p: &Params, m: &Machine) -> Result<Self, String>;
    /// The workload's own command line after `--` as parameters (schbench's and hackbench's
    /// options), and an example of it for errors; `None` for workloads that take `key=value`
    /// only.
    fn own_args(_words: &[String]) -> Option<Vec<(String, String)>> {
        None
    }
    const OWN_ARGS_EXAMPLE: &'static str = "";
    /// What the workload will create, for the memory limit (`limits::check_memory`): the most
    /// tasks it starts, the bytes of its own per-task state beyond the kernel's, and the
    /// parameters that set the count (named in the error).
    fn planned_size(&self, nr_cpus: u32) -> (u64, u64, &'static str);
    /// Create the workload's tasks in a freshly booted kernel.
    fn start(&mut self, k: &mut Kernel);
    /// A workload action it queued fired.
    fn on_action(&mut self, _k: &mut Kernel, _what: u32) {}
    /// One step of a workload task's own code.
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next;
    /// The workload has ended the run itself (at once, rather than through [`all_exited`]).
    fn done(&self) -> bool {
        false
    }
    /// Whether a run is expected to end by itself (a warning is printed when it does not).
    const FINISHES: bool = true;
    /// The primary figure of a run.
    fn metric(&self, f: &RunFacts) -> Metric;
    /// The workload's part of `run --json`.
    fn json(&self, f: &RunFacts) -> serde_json::Value;
    /// The workload's own output in `run`'s report (what the benchmark prints).
    fn text(&self, f: &RunFacts) -> String;
}

/// The workload table: one row per workload, `Variant(type) = "name": "description"`. It
/// generates the [`Workload`] enum, [`WORKLOADS`], and the dispatch of [`Program`]'s methods.
macro_rules! workloads {
    ($($(#[$m:meta])* $v:ident($ty:ty) = $name:literal: $desc:literal,)+) => {
        /// The workload of a run.
        #[derive(Debug, Clone)]
        pub enum Workload {
            $($(#[$m])* $v($ty),)+
        }

        /// Every workload: (name, description), in the table's order.
        pub const WORKLOADS: &[(&str, &str)] = &[$(($name, $desc),)+];

        impl Workload {
            /// The workload named `name` with parameters `p` on machine `m`.
            pub fn parse(name: &str, p: &Params, m: &Machine) -> Result<Workload, String> {
                match name {
                    $($name => Ok(Workload::$v(<$ty as Program>::parse(name, p, m)?)),)+
                    w => Err(format!(
                        "unknown workload '{w}' (expected one of: {})",
                        WORKLOADS.iter().map(|w| w.0).collect::<Vec<_>>().join(", ")
                    )),
                }
            }

            /// The table's name of this workload.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Workload::$v(_) => $name,)+
                }
            }

            /// [`Program::own_args`] of the workload named `name` (`None` for an unknown name).
            pub fn own_args(name: &str, words: &[String]) -> Option<Vec<(String, String)>> {
                match name {
                    $($name => <$ty as Program>::own_args(words),)+
                    _ => None,
                }
            }

            /// [`Program::OWN_ARGS_EXAMPLE`] of the workload named `name`.
            pub fn own_args_example(name: &str) -> &'static str {
                match name {
                    $($name => <$ty as Program>::OWN_ARGS_EXAMPLE,)+
                    _ => "",
                }
            }

            pub fn planned_size(&self, nr_cpus: u32) -> (u64, u64, &'static str) {
                match self {
                    $(Workload::$v(w) => w.planned_size(nr_cpus),)+
                }
            }

            pub fn start(&mut self, k: &mut Kernel) {
                match self {
                    $(Workload::$v(w) => w.start(k),)+
                }
            }

            pub fn on_action(&mut self, k: &mut Kernel, what: u32) {
                match self {
                    $(Workload::$v(w) => w.on_action(k, what),)+
                }
            }

            /// One step of a workload task's code; `done` is set when the workload ended the
            /// run with this step. Inlined into the executor's dispatch: the branch to the
            /// running workload's own step.
            #[inline]
            pub fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, done: &mut bool) -> Next {
                match self {
                    $(Workload::$v(w) => {
                        let next = w.task_step(k, cpu, s);
                        if w.done() {
                            *done = true;
                        }
                        next
                    })+
                }
            }

            /// Whether a run of this workload is expected to end by itself.
            pub fn finishes(&self) -> bool {
                match self {
                    $(Workload::$v(_) => <$ty as Program>::FINISHES,)+
                }
            }

            pub fn metric(&self, f: &RunFacts) -> Metric {
                match self {
                    $(Workload::$v(w) => w.metric(f),)+
                }
            }

            pub fn json(&self, f: &RunFacts) -> serde_json::Value {
                match self {
                    $(Workload::$v(w) => w.json(f),)+
                }
            }

            pub fn text(&self, f: &RunFacts) -> String {
                match self {
                    $(Workload::$v(w) => w.text(f),)+
                }
            }
        }
    };
}

workloads! {
    Ipistorm(ipistorm::Ipistorm) = "ipistorm": "Anton Blanchard's IPI stress module: kthreads issuing smp_call_function_single()",
    Schbench(schbench::Schbench) = "schbench": "Chris Mason's wakeup-latency benchmark (2021-12 version): message threads and workers on futexes",
    Schbench23(schbench23::Schbench23) = "schbench23": "schbench as rewritten in 2023 (48aed1d, LKP's): workers usleep, then matrix work under a per-CPU lock; request latency p90",
    Spinners(spinners::Spinners) = "spinners": "N CPU-bound tasks started on chosen CPUs (tasks=, start=CPULIST, duration_ms=): overload setups",
    RtPush(rtpush::RtPush) = "rt-push": "a SCHED_FIFO task woken onto a pinned RT task's CPU: where it runs (pinned_cpu=, hold_us=, wake_delay_us=, ..._prio=)",
    Nanosleep(nanosleep::NanosleepLoop) = "nanosleep": "N processes looping nanosleep(1 us) with timer slack (procs=, ns=, duration_ms=)",
    Hackbench(hackbench::Hackbench) = "hackbench": "hackbench over pipes or AF_UNIX sockets (tool=rt-tests|old|perf, args=the tool's own arguments)",
    /// Two threads bouncing a byte through two pipes (`PipePair`).
    Pingpong(pipepair::PipePair) = "pingpong": "two threads pinned to two CPUs bouncing a byte through two pipes (iters=, sleep_us=, ping_cpu=, pong_cpu=)",
    /// `perf bench sched pipe` (`PipePair`).
    PerfPipe(pipepair::PipePair) = "perf-pipe": "perf bench sched pipe: two processes (threaded=1: threads) bouncing 4 bytes through two pipes (loops=)",
    /// Nothing runs: the machine idles (useful for tests of the idle path).
    Idle(idle::Idle) = "idle": "nothing runs; the machine idles (ticks, idle states)",
    RtApp(rtapp::RtApp) = "rtapp": "an rt-app JSON file (file=PATH, or `schedsim run --rtapp FILE.json`; logs=keep|summary: every log row, or per-thread sums and percentiles only): rt-app's threads, events and per-thread log",
    Netperf(netperf::Netperf) = "netperf": "netperf 2.7 over loopback TCP/UDP: clients= pairs (a count or N% of the CPUs) of netperf and netserver, netperf's own options after -- (-t TCP_RR|UDP_RR|TCP_STREAM|UDP_STREAM -l SECS -c -C -- -r -m -M -s -S -D)",
    Tbench(tbench::Tbench) = "tbench": "dbench 4.0's tbench over loopback TCP: tbench's own options after -- (-t SECS [-c LOADFILE] NPROCS), or clients= (a count or N% of the CPUs)",
}

/// Start a created task from `creator` (`wake_up_new_task`). The creating process (insmod,
/// the benchmark's main) is not itself modelled as running code; when the new task lands on
/// the creator's own CPU, a RESCHEDULE interrupt stands in for the creator reaching its next
/// preemption point there (otherwise an idle, sleeping CPU would not notice its own flag).
pub fn spawn(k: &mut Kernel, creator: CpuId, t: crate::linux::TaskId) {
    crate::linux::kernel::sched::core::wake_up_new_task(k, creator, t);
    if k.tasks[t as usize].cpu == creator {
        crate::linux::engine::send_ipi(k, creator, creator, crate::trace::Vector::Reschedule);
    }
}

/// Start a created task on `cpu` as `taskset -c CPU` would, then let it run anywhere: the
/// mask is set before `wake_up_new_task()` places it and reset to every CPU after
/// (`sched_setaffinity()` both times, from `cpu`; the creator's syscalls cost nothing, as
/// creation does).
pub fn spawn_on(k: &mut Kernel, cpu: CpuId, t: crate::linux::TaskId) {
    use crate::hw::cpumask::CpuMask;
    use crate::linux::kernel::sched::syscalls::sched_setaffinity;
    let nr = k.m.topo.nr_cpus;
    sched_setaffinity(k, cpu, t, &CpuMask::of(cpu, nr));
    spawn(k, cpu, t);
    sched_setaffinity(k, cpu, t, &CpuMask::full(nr));
}

/// Create `n` workload tasks named `comm` (roles 0..n), each starting in its workload code
/// after `ret_from_fork`.
pub fn new_tasks(k: &mut Kernel, n: u32, comm: &str) -> Vec<crate::linux::TaskId> {
    (0..n).map(|i| copy_process(k, comm.to_string(), 0, 120, None, i)).collect()
}

/// The instant a workload starts: after the background warm-up (the measured window's start,
/// `Kernel::measure_from`) and 1 ms, at a seed-dependent phase of the tick (stream `stream` of
/// CPU 0's seed), so seeds differ in the run's alignment with the tick.
pub fn load_time(k: &mut Kernel, stream: u64) -> crate::sim::Time {
    let tick = k.tick_nsec();
    let mut r = crate::sim::Prng::new(k.cpus[0].rng.next_u64(), stream);
    k.measure_from + crate::sim::NSEC_PER_MSEC + r.range(0, tick - 1)
}

/// Workload action: the run is over (the run's programs end it, `run::Userland`).
pub const FINISH: u32 = u32::MAX;

/// The workload's last task has exited: end the run once it has switched out (10 us later),
/// so its final `sched_switch` (prev_state=X) is part of the run.
pub fn all_exited(k: &mut Kernel) {
    k.q.push(k.now + 10_000, crate::linux::engine::Action::Program { what: FINISH });
}

/// The resume point of a task that has exited (every workload's `Exited`): it never runs again.
pub const EXITED: u8 = u8::MAX;

/// The current task exits (`do_exit` -> `schedule()`); it never runs again.
pub fn exit_current(k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    s.at = EXITED;
    Next::Call(0, crate::linux::kernel::exit::do_exit_unwaited(k, cpu, true))
}

#[cfg(test)]
mod tests {
    use crate::linux::programs::resume_points;

    resume_points! {
        enum TestAt {
            First,
            Second,
            Exited = super::EXITED,
        }
    }

    #[test]
    fn resume_points_read_back_what_was_stored() {
        assert_eq!(TestAt::from_u8(0), TestAt::First);
        assert_eq!(TestAt::from_u8(TestAt::Second as u8), TestAt::Second);
        assert_eq!(TestAt::from_u8(super::EXITED), TestAt::Exited);
        // A fresh frame resumes at the first variant.
        assert_eq!(TestAt::from_u8(super::TaskFrame::default().at), TestAt::First);
    }

    #[test]
    #[should_panic(expected = "bad resume point 2 for")]
    fn a_value_no_variant_has_is_refused() {
        TestAt::from_u8(2);
    }
}
