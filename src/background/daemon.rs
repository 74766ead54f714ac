//! The kinds of background source that are user programs: `daemon` (a user task that sleeps
//! in `nanosleep()` with the default 50 us timer slack, then runs its share in user mode,
//! where a return from interrupt may preempt it) and `pinned-hog` (the same task bound to one
//! CPU by `sched_setaffinity()`, which once its first timer has woken it runs user code for
//! ever, one run-time draw after another: `pinned.rs`). [`Daemons`] boots every such source of
//! the kernel's profile and runs their tasks' code; like a workload, it reaches the kernel only
//! through its entry points.

use super::{Kind, Source};
use crate::linux::background::{first_phase, instance_cpus};
use crate::linux::engine::Next;
use crate::linux::kernel::fork::user_task_asleep_in_nanosleep;
use crate::linux::kernel::futex::Nanosleep;
use crate::linux::programs::{resume_points, TaskFrame};
use crate::linux::{CpuId, Kernel};

/// The program number of daemon tasks in their [`TaskFrame::prog`] (the run's other program,
/// the workload, has 0).
pub const PROG: u8 = 1;

resume_points! {
    /// Where a daemon resumes, in code order.
    enum DaemonAt {
        /// Draw the next interval and sleep for it.
        Sleep,
        /// Woken: run for a draw of the run-time distribution.
        Run,
        /// The run is over: sleep again.
        Done,
    }
}

/// The daemons of the kernel's background profile.
#[derive(Debug, Clone, Default)]
pub struct Daemons;

impl Daemons {
    /// Boot every `daemon` source of the kernel's profile, in profile order, after the kernel's
    /// own sources (`linux::background::boot`): each instance is a task asleep in
    /// `nanosleep()` until a uniformly drawn phase of its period.
    pub fn start(&mut self, k: &mut Kernel) {
        let sources: Vec<(usize, Source)> = k
            .cfg
            .background
            .sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind.is_program())
            .map(|(i, s)| (i, s.clone()))
            .collect();
        for (i, s) in sources {
            for c in instance_cpus(k, &s) {
                let phase = first_phase(k, c, &s);
                let hog = s.kind == Kind::PinnedHog;
                // A hog is bound by its affinity mask (below), not kthread_bind().
                let pinned = (s.cpus != super::Cpus::Any && !hog).then_some(c);
                let comm = if s.cpus == super::Cpus::All { format!("{}/{c}", s.name) } else { s.name.clone() };
                let frame = TaskFrame { prog: PROG, at: DaemonAt::Run as u8, task: i as u32, ..Default::default() };
                let t = user_task_asleep_in_nanosleep(k, comm, pinned, c, frame, phase);
                if hog {
                    super::pinned::bind(k, t, c);
                }
            }
        }
    }

    /// One step of a daemon's code.
    #[inline]
    pub fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
        let src = &k.cfg.background.sources[s.task as usize];
        match DaemonAt::from_u8(s.at) {
            DaemonAt::Sleep => {
                let next = src.next_interval(&mut k.cpus[cpu as usize].bg_rng);
                s.at = DaemonAt::Run as u8;
                Next::Call(0, Nanosleep::with_timer_slack(next))
            }
            DaemonAt::Run => {
                let run = src.runtime.draw(&mut k.cpus[cpu as usize].bg_rng);
                // A pinned hog never sleeps again: one user-mode stretch after another.
                s.at = if src.kind == Kind::PinnedHog { DaemonAt::Run } else { DaemonAt::Done } as u8;
                s.user = true;
                Next::Cont(run)
            }
            DaemonAt::Done => {
                s.at = DaemonAt::Sleep as u8;
                Next::Cont(0)
            }
        }
    }
}
