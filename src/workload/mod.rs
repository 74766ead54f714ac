//! Workloads: programs that run on the modelled machine as kernel threads or user tasks. They
//! reach the kernel model only through its entry points (`copy_process`, `wake_up_new_task`,
//! `smp_call_function_single`, `schedule`, `wake_up_process`, sleeps, `sched_setaffinity`,
//! `do_exit`), never by writing kernel state directly; the kernel reaches them only through
//! [`registry`].

/// Declares a workload task's resume points: a one-byte enum whose variants say what the
/// code does next, in code order. It is stored in [`TaskFrame::at`] as `X as u8` (so the frame
/// stays one small `Copy` struct shared by every workload; a fresh frame's 0 is the first
/// variant) and read back with `X::from_u8`, which panics on a value no variant has.
macro_rules! resume_points {
    ($(#[$m:meta])* enum $name:ident { $($(#[$vm:meta])* $v:ident $(= $d:expr)?),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        enum $name {
            $($(#[$vm])* $v $(= $d)?),+
        }
        impl $name {
            /// The resume point stored in `TaskFrame::at` as `v`.
            fn from_u8(v: u8) -> Self {
                $(if v == $name::$v as u8 {
                    return $name::$v;
                })+
                panic!("bad resume point {} for {}::{}", v, module_path!(), stringify!($name))
            }
        }
    };
}

pub mod hackbench;
pub mod ipistorm;
pub mod nanosleep;
pub mod params;
pub mod pipepair;
pub mod registry;
pub mod rtapp;
pub mod rtapp_json;
pub mod rtpush;
pub mod schbench;
pub mod schbench_stats;
pub mod spinners;

use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::fork::copy_process;
use crate::linux::kernel::sched::core::ScheduleCaller;
use crate::linux::{CpuId, Kernel};

/// The workload of a run.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Nothing runs: the machine idles (useful for tests of the idle path).
    Idle,
    Ipistorm(ipistorm::Ipistorm),
    Schbench(Box<schbench::Schbench>),
    Spinners(spinners::Spinners),
    Nanosleep(nanosleep::NanosleepLoop),
    Hackbench(Box<hackbench::Hackbench>),
    RtPush(Box<rtpush::RtPush>),
    /// `pingpong` and `perf-pipe`: two tasks bouncing a token through two pipes.
    PipePair(Box<pipepair::PipePair>),
    RtApp(Box<rtapp::RtApp>),
}

/// The frame of a workload task's own code: a resume point and a loop counter.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskFrame {
    /// The resume point: a variant of the running workload's own `resume_points!` enum, as
    /// `u8` ([`EXITED`] once the task has exited).
    pub at: u8,
    pub i: u64,
    /// Loop start and counter snapshots.
    pub mark: [u64; 3],
    /// The task is in user mode for the current step (a return from interrupt may preempt it).
    pub user: bool,
    /// A return to user mode found NEED_RESCHED: schedule before going on.
    pub preempt: bool,
    /// User time still to run of the step an interrupt preempted.
    pub remaining: u64,
    /// Which task of the workload this is.
    pub task: u32,
    /// A wall-clock spin in progress ends here (0: none): after a preemption the spin only
    /// runs what is left of it.
    pub spin_until: u64,
    // The return value of the task's last syscall is the task's `Task::user_ret`, and a
    // workload's per-operation timestamps are its own state (ipistorm's `call_start`), not
    // fields here: 56 bytes leave `Frame` room for a tag word of its own within one 64-byte
    // host cache line.
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

/// The instant a workload starts: after the background warm-up
/// ([`crate::linux::Kernel::workload_start_offset`]) and 1 ms, at a seed-dependent phase of the tick (stream
/// `stream` of CPU 0's seed), so seeds differ in the run's alignment with the tick.
pub fn load_time(k: &mut Kernel, stream: u64) -> crate::sim::Time {
    let tick = k.tick_nsec();
    let mut r = crate::sim::Prng::new(k.cpus[0].rng.next_u64(), stream);
    k.workload_start_offset() + crate::sim::NSEC_PER_MSEC + r.range(0, tick - 1)
}

/// Workload action: the run is over.
pub const FINISH: u32 = u32::MAX;

/// The workload's last task has exited: end the run once it has switched out (10 us later),
/// so its final `sched_switch` (prev_state=X) is part of the run.
pub fn all_exited(k: &mut Kernel) {
    k.q.push(k.now + 10_000, crate::linux::engine::Action::Workload { what: FINISH });
}

/// The resume point of a task that has exited (every workload's `Exited`): it never runs again.
pub const EXITED: u8 = u8::MAX;

/// The current task exits (`do_exit` -> `schedule()`); it never runs again.
pub fn exit_current(k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    s.at = EXITED;
    Next::Call(0, crate::linux::kernel::exit::do_exit_unwaited(k, cpu, true))
}

/// Create the workload's tasks in a freshly booted kernel.
pub fn start(k: &mut Kernel) {
    match k.wl {
        Workload::Ipistorm(_) => ipistorm::start(k),
        Workload::Schbench(_) => schbench::start(k),
        Workload::Spinners(_) => spinners::start(k),
        Workload::Nanosleep(_) => nanosleep::start(k),
        Workload::Hackbench(_) => hackbench::start(k),
        Workload::RtPush(_) => rtpush::start(k),
        Workload::PipePair(_) => pipepair::start(k),
        Workload::RtApp(_) => rtapp::start(k),
        Workload::Idle => {}
    }
}

/// A workload-level action fired.
pub fn on_action(k: &mut Kernel, what: u32) {
    if what == FINISH {
        k.finished = true;
        return;
    }
    match k.wl {
        Workload::Ipistorm(_) => ipistorm::on_action(k, what),
        Workload::Schbench(_) => schbench::on_action(k, what),
        Workload::Spinners(_) => spinners::on_action(k, what),
        Workload::Nanosleep(_) => nanosleep::on_action(k, what),
        Workload::Hackbench(_) => hackbench::on_action(k, what),
        Workload::RtPush(_) => rtpush::on_action(k, what),
        Workload::PipePair(_) => pipepair::on_action(k, what),
        Workload::RtApp(_) => rtapp::on_action(k, what),
        Workload::Idle => {}
    }
}

/// Run one step of a workload task's code. User tasks first honour a pending preemption
/// (`exit_to_user_mode_loop()` -> `schedule()`) and finish the user time an interrupt cut.
/// Inlined into the executor's dispatch: it is only the test of those two cases and the
/// branch to the running workload's own step.
#[inline]
pub fn task_step(k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    if s.preempt {
        s.preempt = false;
        s.user = false;
        return Next::Call(0, Frame::ScheduleCaller(ScheduleCaller::schedule()));
    }
    if s.remaining > 0 {
        s.user = true;
        let r = std::mem::take(&mut s.remaining);
        // A wall-clock spin only runs what is left of it; other user work resumes its rest.
        let r = if s.spin_until > 0 { s.spin_until.saturating_sub(k.now) } else { r };
        return Next::Cont(r);
    }
    s.user = false;
    match k.wl {
        Workload::Ipistorm(_) => ipistorm::kthread_step(k, cpu, s),
        Workload::Schbench(_) => schbench::task_step(k, cpu, s),
        Workload::Spinners(_) => spinners::task_step(k, cpu, s),
        Workload::Nanosleep(_) => nanosleep::task_step(k, cpu, s),
        Workload::Hackbench(_) => hackbench::task_step(k, cpu, s),
        Workload::RtPush(_) => rtpush::task_step(k, cpu, s),
        Workload::PipePair(_) => pipepair::task_step(k, cpu, s),
        Workload::RtApp(_) => rtapp::task_step(k, cpu, s),
        Workload::Idle => unreachable!("the idle workload has no tasks"),
    }
}

impl Workload {
    /// What the workload will create, for the memory limit (`params::check_memory`): the most
    /// tasks it starts, the bytes of its own per-task state beyond the kernel's, and the
    /// parameters that set the count (named in the error).
    pub fn planned_size(&self, nr_cpus: u32) -> (u64, u64, &'static str) {
        let nr_cpus = u64::from(nr_cpus);
        match self {
            Workload::Idle => (0, 0, "the workload"),
            // At most one kthread per CPU of its cpulist.
            Workload::Ipistorm(_) => (nr_cpus, 0, "ipistorm cpulist="),
            Workload::Spinners(s) => (u64::from(s.tasks), 0, "spinners tasks="),
            Workload::Nanosleep(n) => (u64::from(n.procs), 0, "nanosleep procs="),
            Workload::Hackbench(h) => (h.o.tasks().saturating_add(1), 0, "hackbench args= (groups x fds)"),
            Workload::Schbench(s) => {
                let workers = s.o.message_threads.saturating_mul(s.o.worker_threads);
                let tasks = s.o.message_threads.saturating_add(workers).saturating_add(1);
                // Each worker's latency histogram, kept twice (the run's and the result's copy).
                let hist = 2 * (schbench_stats::PLAT_NR * std::mem::size_of::<u32>()) as u64;
                (tasks, workers.saturating_mul(hist), "schbench -m x -t")
            }
            Workload::RtPush(_) | Workload::PipePair(_) => (8, 0, "the workload"),
            Workload::RtApp(r) => {
                // Every instance, plus rt-app's fork limit for each instance that forks.
                let mut tasks = 0u64;
                for t in &r.cfg.tasks {
                    let forks =
                        t.phases.iter().flat_map(|p| &p.events).any(|e| matches!(e.ev, rtapp_json::Event::Fork(_)));
                    let per = if forks { 1 + u64::from(rtapp::FORKS_LIMIT) } else { 1 };
                    tasks = tasks.saturating_add(u64::from(t.instance).saturating_mul(per));
                }
                (tasks, 0, "the rt-app file's instances and forks")
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
