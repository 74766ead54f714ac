//! The RT push case of Steven Rostedt's 2013 `ok_to_push_task` patch (docs/kernel-model.md
//! 2.10, 5.4): a SCHED_FIFO task is woken onto the CPU of a *pinned* RT task it outranks, while
//! the waker's CPU is about to become free. Where does the woken task run?
//!
//! The cast, all SCHED_FIFO (user priorities; kernel `prio = 99 - rtprio`):
//! - `pinned` (rtprio `pinned_prio`, bound to `pinned_cpu`): spins in user mode, then at
//!   `hold_at_us` enters a `hold_us` non-preemptible kernel section (a spinlock-held syscall);
//!   NEED_RESCHED set meanwhile is honoured only on its way back to user mode.
//! - `woken` (rtprio `woken_prio`, any CPU): started on `pinned_cpu`, it blocks on a futex at
//!   once (or after `woken_first_us`), so that CPU is its previous CPU (`task_cpu()`).
//! - `waker` (rtprio `waker_prio`, bound to `waker_cpu`): spins, `wake_delay_us` into the
//!   pinned task's section does FUTEX_WAKE on the woken task, then (after `block_delay_us`)
//!   blocks on its own futex.
//! - `hogs` (rtprio `hog_prio`, one bound to each other CPU; `hogs=false` leaves them idle):
//!   spin, so the waker's CPU is the only one that can become lower than the woken task.
//!
//! At the wakeup no CPU runs below the woken task except the pinned one, so
//! `select_task_rq_rt()` keeps it there and `wakeup_preempt_rt()` marks the pinned task for
//! preemption. The waker then blocks: its CPU's priority drops and `pull_rt_task()` sends the
//! RT_PUSH_IPI irq_work to the overloaded pinned CPU, whose `push_rt_task()` decides.

use super::params::Params;
use super::TaskFrame;
use crate::limits::MAX_SIM_NS;
use crate::linux::engine::{Action, Next};
use crate::linux::kernel::futex::{futex_alloc, FutexId, FutexOp};
use crate::linux::kernel::sched::rt::fifo_prio;
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_USEC};

pub const PARAM_NAMES: &[&str] = &[
    "pinned_cpu",
    "waker_cpu",
    "pinned_prio",
    "woken_prio",
    "waker_prio",
    "hog_prio",
    "hold_at_us",
    "hold_us",
    "wake_delay_us",
    "run_us",
    "hogs",
    "block_delay_us",
    "woken_first_us",
];

/// Roles (the `task` field of each task's frame).
const PINNED: u32 = 0;
const WOKEN: u32 = 1;
const WAKER: u32 = 2;
const HOG: u32 = 3;

#[derive(Debug, Clone)]
pub struct RtPush {
    pub pinned_cpu: CpuId,
    pub waker_cpu: CpuId,
    pub pinned_prio: i32,
    pub woken_prio: i32,
    pub waker_prio: i32,
    pub hog_prio: i32,
    pub hold_at_ns: Time,
    pub hold_ns: Time,
    pub wake_delay_ns: Time,
    pub run_ns: Time,
    /// Bind a `hog_prio` spinner to every other CPU (off: those CPUs idle).
    pub hogs_on: bool,
    /// How long the waker runs on after FUTEX_WAKE before it blocks.
    pub block_delay_ns: Time,
    /// How long the woken task runs at its start before it first blocks.
    pub woken_first_ns: Time,
    pub start_ns: Time,
    pub pinned: TaskId,
    pub woken: TaskId,
    pub waker: TaskId,
    pub hogs: Vec<TaskId>,
    futex_woken: FutexId,
    futex_waker: FutexId,
    /// When the waker called FUTEX_WAKE, and where and when the woken task first ran.
    pub woken_at_ns: Option<Time>,
    pub woken_ran_on: Option<CpuId>,
    pub woken_ran_at_ns: Option<Time>,
    /// Whether the pinned task had to give up its CPU while the woken task ran.
    pub pinned_preempted: bool,
}

impl RtPush {
    /// One line saying who runs where at which FIFO priority, from the parameters in force.
    pub fn setup(&self, nr_cpus: u32) -> String {
        let others: Vec<String> =
            (0..nr_cpus).filter(|&c| c != self.pinned_cpu && c != self.waker_cpu).map(|c| c.to_string()).collect();
        let hogs = match (self.hogs_on, others.len()) {
            (false, _) | (_, 0) => "no hogs".to_string(),
            (true, 1) => format!("a FIFO {} hog on CPU {}", self.hog_prio, others[0]),
            (true, _) => format!("FIFO {} hogs on CPUs {}", self.hog_prio, others.join(",")),
        };
        format!(
            "FIFO {} woken onto CPU {} while a FIFO {} task bound to CPU {} is in a {} us non-preemptible section; {hogs}; the FIFO {} waker on CPU {} then blocks",
            self.woken_prio,
            self.pinned_cpu,
            self.pinned_prio,
            self.pinned_cpu,
            self.hold_ns / NSEC_PER_USEC,
            self.waker_prio,
            self.waker_cpu,
        )
    }

    pub fn parse(p: &Params, nr_cpus: u32) -> Result<RtPush, String> {
        p.check_known("rt-push", PARAM_NAMES)?;
        if nr_cpus < 2 {
            return Err(format!("{}: rt-push needs at least 2 CPUs (the machine has {nr_cpus})", p.origin));
        }
        let cpu = |key: &str, default: u64| -> Result<CpuId, String> {
            let c = p.u64_or(key, default)?;
            if c >= nr_cpus as u64 {
                return Err(format!("{}: parameter {key}: CPU {c} does not exist (0..{})", p.origin, nr_cpus - 1));
            }
            Ok(c as CpuId)
        };
        let prio = |key: &str, default: u64| -> Result<i32, String> {
            let r = p.u64_or(key, default)?;
            if !(1..=99).contains(&r) {
                return Err(format!("{}: parameter {key}: SCHED_FIFO priority must be 1..99, got {r}", p.origin));
            }
            Ok(r as i32)
        };
        let pinned_cpu = cpu("pinned_cpu", 1)?;
        let waker_cpu = cpu("waker_cpu", 0)?;
        if pinned_cpu == waker_cpu {
            return Err(format!("{}: pinned_cpu and waker_cpu must differ", p.origin));
        }
        let w = RtPush {
            pinned_cpu,
            waker_cpu,
            pinned_prio: prio("pinned_prio", 50)?,
            woken_prio: prio("woken_prio", 60)?,
            waker_prio: prio("waker_prio", 70)?,
            hog_prio: prio("hog_prio", 90)?,
            hold_at_ns: p.time_ns("hold_at_us", 200, NSEC_PER_USEC, "us", MAX_SIM_NS)?,
            hold_ns: p.time_ns("hold_us", 100, NSEC_PER_USEC, "us", MAX_SIM_NS)?,
            wake_delay_ns: p.time_ns("wake_delay_us", 20, NSEC_PER_USEC, "us", MAX_SIM_NS)?,
            run_ns: p.time_ns("run_us", 100, NSEC_PER_USEC, "us", MAX_SIM_NS)?,
            hogs_on: p.bool_or("hogs", true)?,
            block_delay_ns: p.time_ns("block_delay_us", 0, NSEC_PER_USEC, "us", MAX_SIM_NS)?,
            woken_first_ns: p.time_ns("woken_first_us", 0, NSEC_PER_USEC, "us", MAX_SIM_NS)?,
            start_ns: 0,
            pinned: 0,
            woken: 0,
            waker: 0,
            hogs: Vec::new(),
            futex_woken: 0,
            futex_waker: 0,
            woken_at_ns: None,
            woken_ran_on: None,
            woken_ran_at_ns: None,
            pinned_preempted: false,
        };
        if w.hold_at_ns < 100 * NSEC_PER_USEC {
            return Err(format!("{}: hold_at_us must be at least 100 (the tasks start first)", p.origin));
        }
        Ok(w)
    }

    /// From the FUTEX_WAKE to the woken task's first instruction.
    pub fn wakeup_to_run_ns(&self) -> Option<Time> {
        Some(self.woken_ran_at_ns? - self.woken_at_ns?)
    }

    /// The result in words (`schedsim run rt-push`).
    pub fn summary(&self, stats: &crate::linux::stats::Stats) -> String {
        match (self.woken_ran_on, self.wakeup_to_run_ns()) {
            (Some(c), Some(lat)) => format!(
                "rt-push: woken task (FIFO {}) ran on CPU {} ({}), {:.1} us after its wakeup; pinned task (FIFO {}, CPU {}) {}; {} RT push(es), {} push irq_work(s)\n",
                self.woken_prio,
                c,
                if c == self.pinned_cpu { "the pinned task's CPU" } else { "pushed away" },
                lat as f64 / 1e3,
                self.pinned_prio,
                self.pinned_cpu,
                if self.pinned_preempted { "was preempted" } else { "kept its CPU" },
                stats.rt_pushes,
                stats.rt_push_ipis,
            ),
            _ => "rt-push: the woken task never ran\n".to_string(),
        }
    }

    /// The woken task ran on the pinned task's CPU.
    pub fn woken_task_cpu_is_pinned_cpu(&self) -> Option<bool> {
        self.woken_ran_on.map(|c| c == self.pinned_cpu)
    }
}

fn new_rt_task(k: &mut Kernel, comm: String, rtprio: i32, role: u32, pinned: Option<CpuId>) -> TaskId {
    crate::linux::kernel::fork::copy_process(k, comm, 1, fifo_prio(rtprio), pinned, role)
}

pub fn start(w: &mut RtPush, k: &mut Kernel) {
    let nr = k.m.topo.nr_cpus;
    let pinned = new_rt_task(k, "pinned".into(), w.pinned_prio, PINNED, Some(w.pinned_cpu));
    let woken = new_rt_task(k, "woken".into(), w.woken_prio, WOKEN, None);
    let waker = new_rt_task(k, "waker".into(), w.waker_prio, WAKER, Some(w.waker_cpu));
    let hogs: Vec<TaskId> = (0..nr)
        .filter(|&c| w.hogs_on && c != w.pinned_cpu && c != w.waker_cpu)
        .map(|c| new_rt_task(k, format!("hog/{c}"), w.hog_prio, HOG, Some(c)))
        .collect();
    let fw = futex_alloc(k, w.pinned_cpu, 0);
    let fk = futex_alloc(k, w.waker_cpu, 0);
    let load = super::load_time(k, 0x2715);
    w.pinned = pinned;
    w.woken = woken;
    w.waker = waker;
    w.hogs = hogs;
    w.futex_woken = fw;
    w.futex_waker = fk;
    w.start_ns = load;
    k.q.push(load, Action::Program { what: 0 });
    k.q.push(load + 50 * NSEC_PER_USEC, Action::Program { what: 1 });
}

/// 0: start the woken task on the pinned CPU (it blocks at once), the waker and the hogs;
/// 1: start the pinned task.
pub fn on_action(w: &mut RtPush, k: &mut Kernel, what: u32) {
    let w = w.clone();
    if what == 0 {
        // Started under taskset on the pinned CPU, then given every CPU.
        super::spawn_on(k, w.pinned_cpu, w.woken);
        super::spawn(k, w.waker_cpu, w.waker);
        for &h in &w.hogs {
            let c = k.tasks[h as usize].pinned.expect("hogs are bound");
            super::spawn(k, c, h);
        }
    } else {
        super::spawn(k, w.pinned_cpu, w.pinned);
    }
}

/// A user-mode wall-clock spin of `d` (nothing if 0): it ends at its deadline even if
/// interrupts or preemption cut into it.
fn wall_spin(k: &Kernel, s: &mut TaskFrame, d: Time) -> Next {
    if d == 0 {
        return Next::Cont(0);
    }
    s.user = true;
    s.spin_until = k.now + d;
    Next::Cont(d)
}

resume_points! {
    /// Where the pinned task resumes.
    enum PinnedAt {
        /// Spin in user mode until the hold starts.
        Start,
        /// Past the hold's start: the non-preemptible kernel section.
        Hold,
        /// Return to user mode.
        ExitToUser,
        /// Spin until the run ends.
        SpinToEnd,
    }
}

resume_points! {
    /// Where the woken task resumes.
    enum WokenAt {
        /// Spin for `woken_first_us`.
        Start,
        /// Wait on its futex.
        Wait,
        /// Woken: note where it ran, then run.
        Run,
        /// Exit.
        Exit,
        Exited = super::EXITED,
    }
}

resume_points! {
    /// Where the waker resumes.
    enum WakerAt {
        /// Spin until its wakeup time.
        Start,
        /// At its wakeup time: FUTEX_WAKE the woken task.
        Wake,
        /// Back from FUTEX_WAKE: run on.
        RunOn,
        /// Block on its own futex.
        Block,
    }
}

pub fn task_step(w: &mut RtPush, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    let hold_start = w.start_ns + w.hold_at_ns;
    let end = hold_start + w.hold_ns + w.run_ns + 200 * NSEC_PER_USEC;
    let w_delay = w.wake_delay_ns;
    // Spin in user mode until `until`; past it, in 1 ms slices until the run ends.
    let spin_to = |k: &Kernel, s: &mut TaskFrame, until: Time| -> Next {
        s.user = true;
        Next::Cont(if until > k.now { until - k.now } else { crate::sim::NSEC_PER_MSEC })
    };
    match s.task {
        PINNED => match PinnedAt::from_u8(s.at) {
            PinnedAt::Start => {
                s.at = PinnedAt::Hold as u8;
                spin_to(k, s, hold_start)
            }
            PinnedAt::Hold if k.now < hold_start => spin_to(k, s, hold_start),
            PinnedAt::Hold => {
                // The non-preemptible kernel section.
                s.at = PinnedAt::ExitToUser as u8;
                s.user = false;
                Next::Cont(w.hold_ns)
            }
            PinnedAt::ExitToUser => {
                // Back to user mode: exit_to_user_mode_loop() honours NEED_RESCHED.
                s.at = PinnedAt::SpinToEnd as u8;
                let c = crate::linux::kernel::entry::common::syscall_exit_to_user_mode(k, cpu, 0);
                if crate::linux::kernel::sched::need_resched(k, cpu) {
                    s.preempt = true;
                }
                Next::Cont(c)
            }
            PinnedAt::SpinToEnd => spin_to(k, s, end),
        },
        // A hog only spins: its resume point stays the initial one.
        HOG => spin_to(k, s, end),
        WOKEN => match WokenAt::from_u8(s.at) {
            WokenAt::Start => {
                s.at = WokenAt::Wait as u8;
                let d = w.woken_first_ns;
                wall_spin(k, s, d)
            }
            WokenAt::Wait => {
                s.spin_until = 0;
                s.at = WokenAt::Run as u8;
                let f = w.futex_woken;
                Next::Call(k.costs.user_op, FutexOp::wait(f, 0))
            }
            WokenAt::Run => {
                let now = k.now;
                if w.woken_ran_on.is_none() {
                    w.woken_ran_on = Some(cpu);
                    w.woken_ran_at_ns = Some(now);
                }
                s.at = WokenAt::Exit as u8;
                let run = w.run_ns;
                wall_spin(k, s, run)
            }
            WokenAt::Exit => {
                let (pinned, pcpu) = (w.pinned, w.pinned_cpu);
                w.pinned_preempted = k.tasks[pinned as usize].on_rq && k.curr(pcpu) != pinned;
                super::all_exited(k);
                super::exit_current(k, cpu, s)
            }
            WokenAt::Exited => unreachable!("rt-push woken task ran after exit"),
        },
        WAKER => match WakerAt::from_u8(s.at) {
            WakerAt::Start => {
                s.at = WakerAt::Wake as u8;
                let t = hold_start + w.wake_delay_ns;
                spin_to(k, s, t)
            }
            WakerAt::Wake if k.now < hold_start + w_delay => spin_to(k, s, hold_start + w_delay),
            WakerAt::Wake => {
                s.at = WakerAt::RunOn as u8;
                let now = k.now;
                w.woken_at_ns = Some(now);
                let f = w.futex_woken;
                k.futexes[f as usize].val = 1;
                Next::Call(k.costs.user_op, FutexOp::wake(f, 1))
            }
            WakerAt::RunOn => {
                // Back from FUTEX_WAKE: run on for block_delay_us, then block.
                s.at = WakerAt::Block as u8;
                let d = w.block_delay_ns;
                wall_spin(k, s, d)
            }
            WakerAt::Block => {
                s.spin_until = 0;
                let f = w.futex_waker;
                Next::Call(k.costs.user_op, FutexOp::wait(f, 0))
            }
        },
        _ => unreachable!("rt-push has four roles"),
    }
}

impl super::Program for RtPush {
    fn parse(_name: &str, p: &Params, m: &crate::hw::Machine) -> Result<RtPush, String> {
        RtPush::parse(p, m.topo.nr_cpus)
    }
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (8, 0, "the workload")
    }
    fn start(&mut self, k: &mut Kernel) {
        start(self, k)
    }
    fn on_action(&mut self, k: &mut Kernel, what: u32) {
        on_action(self, k, what)
    }
    #[inline]
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
        task_step(self, k, cpu, s)
    }
    fn metric(&self, f: &super::RunFacts) -> super::Metric {
        let v = self.wakeup_to_run_ns().unwrap_or(f.sim_ns) as f64 / 1e6;
        super::Metric { name: "wakeup_to_run", unit: "ms", lower_is_better: true, value: v }
    }
    fn json(&self, f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": "rt-push",
            "pinned_cpu": self.pinned_cpu,
            "woken_task_cpu": self.woken_ran_on,
            "woken_task_cpu_is_pinned_cpu": self.woken_task_cpu_is_pinned_cpu(),
            "pinned_task_preempted": self.pinned_preempted,
            "wakeup_to_run_ns": self.wakeup_to_run_ns(),
            "rt_pushes": f.stats.rt_pushes,
            "rt_push_ipis": f.stats.rt_push_ipis,
        })
    }
    fn text(&self, f: &super::RunFacts) -> String {
        self.summary(f.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)], nr: u32) -> RtPush {
        let p = Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), "test");
        RtPush::parse(&p, nr).unwrap()
    }

    #[test]
    fn the_setup_line_follows_the_parameters() {
        assert_eq!(
            parse(&[], 4).setup(4),
            "FIFO 60 woken onto CPU 1 while a FIFO 50 task bound to CPU 1 is in a 100 us non-preemptible \
             section; FIFO 90 hogs on CPUs 2,3; the FIFO 70 waker on CPU 0 then blocks"
        );
        let w = parse(&[("pinned_cpu", "2"), ("woken_prio", "55"), ("hold_us", "40")], 3);
        assert_eq!(
            w.setup(3),
            "FIFO 55 woken onto CPU 2 while a FIFO 50 task bound to CPU 2 is in a 40 us non-preemptible \
             section; a FIFO 90 hog on CPU 1; the FIFO 70 waker on CPU 0 then blocks"
        );
        assert!(parse(&[("hogs", "false")], 4).setup(4).contains("; no hogs;"));
    }
}
