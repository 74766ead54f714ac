//! Models the task-exit paths of `kernel/exit.c` @ v6.10 that a parent waiting for its
//! children observes: `do_exit()` (the `clear_child_tid` futex wake of `mm_release()` for
//! threads, `exit_notify()` -> `do_notify_parent()` -> `__wake_up_parent()` for processes,
//! `do_task_dead()`), and `do_wait()` for `wait()`/`wait4()` on any child.
//!
//! `__wake_up_parent()` is `__wake_up_sync_key(&parent->signal->wait_chldexit, ...)`: a WF_SYNC
//! wakeup of the waiting parent, but the waker has PF_EXITING set, so `select_task_rq_fair()`
//! drops the sync hint (`sync = (wake_flags & WF_SYNC) && !(current->flags & PF_EXITING)`).
//! The model's task has no PF_EXITING for `select_task_rq_fair()` to test, so this wakeup is
//! passed without WF_SYNC, which is what placement sees in the kernel. SIGCHLD with its
//! default disposition is ignored (`sig_task_ignored()`), so it wakes nobody by itself.
//! `do_wait()` queues a
//! `child_wait_callback()` entry, then loops: TASK_INTERRUPTIBLE, walk `->children` (oldest
//! first) for a zombie, reap the first found (`release_task()` unlinks it), else schedule.
//!
//! Costs: the exit work itself (`exit_mm`, `exit_files`, ...) is not charged unless the program
//! gives its times ([`DoExit::with_costs`]: hackbench's processes). `wait4()` is
//! `PathCosts::wait4` = 150 ns beyond the syscall (tasklist lock, `wait_task_zombie()`, rusage) plus
//! `PathCosts::wait_per_child` = 10 ns per child `wait_consider_task()` looks at (a few loads of
//! the child's `task_struct`, mostly cache hits). Estimates of the instruction counts, in
//! line with `PathCosts::futex` (100 ns) for a comparable hash/list walk.

use super::futex::FutexId;
use super::sched::core::{ScheduleCaller, TryToWakeUp};
use super::sched::{TASK_DEAD, TASK_INTERRUPTIBLE, TASK_RUNNING};
use super::wait::{add_wait_queue, init_waitqueue_head, remove_wait_queue, WakeFn, WakeUp, WqId};
use crate::linux::engine::{Frame, Next};
use crate::linux::kernel::entry::common::{syscall_enter, syscall_exit_to_user_mode};
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::Time;

/// Index of a [`SignalStruct`] in [`crate::linux::fs::Ipc::signals`].
pub type SigId = u32;

/// No parent to notify / no `clear_child_tid`.
pub const NONE: u32 = u32::MAX;

/// `-ECHILD`.
pub const ECHILD: i64 = -10;

/// A child on its parent's `->children` list.
#[derive(Debug, Clone, Copy)]
pub struct Child {
    pub task: TaskId,
    pub zombie: bool,
}

/// The parts of a process's `signal_struct` and `->children` list that `wait()` uses.
///
/// The kernel's list unlinks a reaped child and finds an exiting one from the child's side in
/// O(1). Here a child keeps its position for good (a reaped one leaves a hole), a map finds a
/// child's position, an ordered set holds the zombies' positions and a Fenwick tree counts the
/// unreaped children before a position, so linking, marking a zombie and reaping cost
/// O(log n) however many children a process has (hackbench's main process has one per task).
#[derive(Debug, Clone)]
pub struct SignalStruct {
    pub wait_chldexit: WqId,
    /// Every child ever linked, oldest first (reaped ones stay as holes).
    children: Vec<Child>,
    /// The position in `children` of each unreaped child.
    slot: std::collections::BTreeMap<TaskId, u32>,
    /// Positions of the unreaped zombies.
    zombies: std::collections::BTreeSet<u32>,
    /// Fenwick tree over positions, 1-based (`live[0]` unused): 1 for each unreaped child.
    live: Vec<u32>,
}

impl SignalStruct {
    fn new(wait_chldexit: WqId) -> Self {
        SignalStruct {
            wait_chldexit,
            children: Vec::new(),
            slot: Default::default(),
            zombies: Default::default(),
            live: vec![0],
        }
    }

    /// Unreaped children.
    pub fn nr_children(&self) -> usize {
        self.slot.len()
    }

    /// Unreaped children at positions below `pos`.
    fn live_before(&self, pos: u32) -> u32 {
        let (mut i, mut n) = (pos as usize, 0);
        while i > 0 {
            n += self.live[i];
            i &= i - 1;
        }
        n
    }

    /// Link `task` as the youngest child.
    fn push(&mut self, task: TaskId) {
        let pos = self.children.len() as u32;
        self.children.push(Child { task, zombie: false });
        self.slot.insert(task, pos);
        // The new Fenwick node covers the positions (i - lowbit(i), i], this child included.
        let i = pos as usize + 1;
        let low = i & i.wrapping_neg();
        let covered = self.live_before(pos) - self.live_before((i - low) as u32);
        self.live.push(covered + 1);
    }

    /// The unreaped child `task` has exited.
    fn mark_zombie(&mut self, task: TaskId) {
        if let Some(&pos) = self.slot.get(&task) {
            self.children[pos as usize].zombie = true;
            self.zombies.insert(pos);
        }
    }

    /// The oldest zombie: its position and how many unreaped children a walk from the oldest
    /// looks at to reach it (itself included).
    fn first_zombie(&self) -> Option<(u32, u32)> {
        let pos = *self.zombies.first()?;
        Some((pos, self.live_before(pos) + 1))
    }

    /// `release_task()`: unlink the child at `pos`; returns its task.
    fn reap(&mut self, pos: u32) -> TaskId {
        let task = self.children[pos as usize].task;
        self.zombies.remove(&pos);
        self.slot.remove(&task);
        let mut i = pos as usize + 1;
        while i < self.live.len() {
            self.live[i] -= 1;
            i += i & i.wrapping_neg();
        }
        task
    }
}

/// A process's `signal_struct` (its wait queue homed on `cpu`).
pub fn signal_alloc(k: &mut Kernel, cpu: CpuId) -> SigId {
    let wait_chldexit = init_waitqueue_head(k, cpu);
    k.ipc.signals.push(SignalStruct::new(wait_chldexit));
    (k.ipc.signals.len() - 1) as SigId
}

/// `copy_process()` for a new process: link it at the tail of its parent's children.
pub fn link_child(k: &mut Kernel, parent: SigId, task: TaskId) {
    k.ipc.signals[parent as usize].push(task);
}

/// `do_exit()` resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoExitAt {
    /// The work before the `sched_process_exit` record (only when it is charged,
    /// [`DoExit::with_costs`]).
    ExitMm,
    /// `mm_release()`: clear and wake `clear_child_tid`.
    MmRelease,
    /// The work between the record and `exit_notify()` (only when it is charged).
    ExitFiles,
    /// `exit_notify()`: wake the waiting parent.
    ExitNotify,
    /// `do_task_dead()`: the final `schedule()`.
    TaskDead,
    /// Never reached: a dead task does not run again.
    Dead,
}

/// A `do_exit()` in progress.
#[derive(Debug, Clone, Copy)]
pub struct DoExit {
    /// The parent process to notify ([`NONE`] for a thread: threads are autoreaped).
    pub parent: SigId,
    /// `clear_child_tid` ([`NONE`] if not set).
    pub clear_child_tid: u32,
    /// The time of `do_exit()`'s own work before its `sched_process_exit` record, and between
    /// the record and `exit_notify()` (`exit_mm()` tearing down the address space,
    /// `exit_files()`, ...; which side of the record `exit_mm()` falls on depends on the
    /// kernel version), ns; 0 unless the workload charges them ([`DoExit::with_costs`]).
    pub exit_mm_ns: u32,
    pub exit_files_ns: u32,
    pub at: DoExitAt,
}

impl DoExit {
    /// A forked child process exiting.
    pub fn process(parent: SigId) -> Frame {
        Frame::DoExit(DoExit {
            parent,
            clear_child_tid: NONE,
            exit_mm_ns: 0,
            exit_files_ns: 0,
            at: DoExitAt::MmRelease,
        })
    }
    /// A thread created with CLONE_CHILD_CLEARTID (pthread_create) exiting.
    pub fn thread(tid_futex: FutexId) -> Frame {
        Frame::DoExit(DoExit {
            parent: NONE,
            clear_child_tid: tid_futex,
            exit_mm_ns: 0,
            exit_files_ns: 0,
            at: DoExitAt::MmRelease,
        })
    }
    /// The same exit charging its work before and after the `sched_process_exit` record (the
    /// workload's measured times).
    pub fn with_costs(frame: Frame, exit_mm_ns: u32, exit_files_ns: u32) -> Frame {
        let Frame::DoExit(mut d) = frame else { unreachable!("DoExit::with_costs() of a DoExit frame") };
        d.exit_mm_ns = exit_mm_ns;
        d.exit_files_ns = exit_files_ns;
        if exit_mm_ns > 0 {
            d.at = DoExitAt::ExitMm;
        }
        Frame::DoExit(d)
    }
}

/// Models `do_exit()` — kernel/exit.c @ v6.10, for the parts seen by others (module doc).
pub fn do_exit(k: &mut Kernel, cpu: CpuId, s: &mut DoExit) -> Next {
    let me = k.curr(cpu);
    match s.at {
        DoExitAt::ExitMm => {
            s.at = DoExitAt::MmRelease;
            Next::Cont(s.exit_mm_ns as Time)
        }
        DoExitAt::MmRelease => {
            s.at = if s.exit_files_ns > 0 { DoExitAt::ExitFiles } else { DoExitAt::ExitNotify };
            // A process (not a thread of one) is its group's last thread.
            trace_sched_process_exit(k, cpu, s.parent != NONE);
            if s.clear_child_tid != NONE {
                // mm_release(): put_user(0, tidptr); futex_wake(tidptr, 1) (in-kernel).
                let f = s.clear_child_tid as usize;
                k.futexes[f].val = 0;
                let line = k.futexes[f].line;
                let c = k.line_write(cpu, line) + k.costs.futex;
                if let Some(w) = k.futexes[f].waiters.pop_front() {
                    return Next::Call(c, Frame::TryToWakeUp(TryToWakeUp::new(w, 0)));
                }
                return Next::Cont(c);
            }
            Next::Cont(0)
        }
        DoExitAt::ExitFiles => {
            // exit_files(), exit_fs(), ... before exit_notify().
            s.at = DoExitAt::ExitNotify;
            Next::Cont(s.exit_files_ns as Time)
        }
        DoExitAt::ExitNotify => {
            s.at = DoExitAt::TaskDead;
            if s.parent != NONE {
                // exit_notify() -> do_notify_parent() -> __wake_up_parent().
                let sig = &mut k.ipc.signals[s.parent as usize];
                sig.mark_zombie(me);
                let wq = sig.wait_chldexit;
                // WF_SYNC, cleared by PF_EXITING for placement (module doc).
                return Next::Call(0, WakeUp::frame(wq, 0, 1, 0));
            }
            Next::Cont(0)
        }
        DoExitAt::TaskDead => {
            s.at = DoExitAt::Dead;
            Next::Call(0, do_task_dead(k, cpu))
        }
        DoExitAt::Dead => unreachable!("a dead task ran again"),
    }
}

/// Models `do_task_dead()` — kernel/sched/core.c @ v6.10: the current task becomes TASK_DEAD;
/// returns its final `schedule()` (`__schedule(SM_NONE)`, after which it never runs again).
pub fn do_task_dead(k: &mut Kernel, cpu: CpuId) -> Frame {
    let me = k.curr(cpu);
    k.tasks[me as usize].state = TASK_DEAD;
    Frame::ScheduleCaller(ScheduleCaller::schedule())
}

/// Models `do_exit()` — kernel/exit.c @ v6.10 — for a task whose exit nobody waits for (a
/// kernel thread returning from its function, a thread without `clear_child_tid` whose parent
/// does not `wait()`), done in the caller's step: its `sched_process_exit` record and
/// `do_task_dead()`. `group_dead`: it is the last thread of its group. Returns the final
/// `schedule()` for the caller to call.
pub fn do_exit_unwaited(k: &mut Kernel, cpu: CpuId, group_dead: bool) -> Frame {
    trace_sched_process_exit(k, cpu, group_dead);
    do_task_dead(k, cpu)
}

/// Models `trace_sched_process_exit()` in `do_exit()` — kernel/exit.c @ v6.10: the exiting
/// task's record. `group_dead`: it was the last thread of its group.
pub fn trace_sched_process_exit(k: &mut Kernel, cpu: CpuId, group_dead: bool) {
    let me = k.curr(cpu) as usize;
    let (pid, prio) = (k.tasks[me].pid, k.tasks[me].prio);
    k.tp(cpu, crate::trace::Event::SchedProcessExit { pid, prio, group_dead });
}

/// `do_wait()` resume points, in code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait4At {
    /// Syscall entry: queue on `wait_chldexit`.
    Enter,
    /// The loop: look for a zombie child, else sleep (and come back here).
    Scan,
}

/// A `wait4(-1, ...)` in progress.
#[derive(Debug, Clone, Copy)]
pub struct Wait4 {
    pub sig: SigId,
    pub at: Wait4At,
}

impl Wait4 {
    pub fn any_child(sig: SigId) -> Frame {
        Frame::Wait4(Wait4 { sig, at: Wait4At::Enter })
    }
}

/// Models `do_wait()` for any child — kernel/exit.c @ v6.10. Returns the reaped child's pid,
/// or -ECHILD.
pub fn do_wait(k: &mut Kernel, cpu: CpuId, s: &mut Wait4) -> Next {
    let me = k.curr(cpu);
    let wq = k.ipc.signals[s.sig as usize].wait_chldexit;
    let mut c = 0;
    if s.at == Wait4At::Enter {
        c = syscall_enter(k) + k.costs.wait4;
        add_wait_queue(k, wq, me, WakeFn::ChildWait);
        s.at = Wait4At::Scan;
    }
    k.tasks[me as usize].state = TASK_INTERRUPTIBLE;
    let sig = &mut k.ipc.signals[s.sig as usize];
    // wait_consider_task() on each child from the oldest until a zombie.
    let found = sig.first_zombie();
    c += k.costs.wait_per_child * found.map_or(sig.nr_children() as u32, |(_, looked)| looked) as Time;
    let ret = match found {
        Some((pos, _)) => {
            let t = sig.reap(pos);
            Some(k.tasks[t as usize].pid as i64)
        }
        None if sig.nr_children() == 0 => Some(ECHILD),
        None => None,
    };
    match ret {
        Some(r) => {
            k.tasks[me as usize].state = TASK_RUNNING;
            remove_wait_queue(k, wq, me);
            Next::Ret(c + syscall_exit_to_user_mode(k, cpu, r))
        }
        None => Next::Call(c, Frame::ScheduleCaller(ScheduleCaller::schedule())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::Prng;

    /// The children bookkeeping against the plain list it replaced (a Vec in fork order, a
    /// linear find on exit, the first zombie's index as the count looked at, `remove` to reap),
    /// over random forks, exits and waits.
    #[test]
    fn children_match_a_plain_list() {
        for seed in 0..20 {
            let mut rng = Prng::new(seed, 7);
            let mut sig = SignalStruct::new(0);
            let mut list: Vec<Child> = Vec::new();
            let mut next_task: TaskId = 0;
            for _ in 0..3000 {
                match rng.range(0, 2) {
                    0 => {
                        sig.push(next_task);
                        list.push(Child { task: next_task, zombie: false });
                        next_task += 1;
                    }
                    1 if !list.is_empty() => {
                        let i = rng.range(0, list.len() as u64 - 1) as usize;
                        list[i].zombie = true;
                        sig.mark_zombie(list[i].task);
                    }
                    _ => {
                        let want = list.iter().position(|c| c.zombie);
                        let got = sig.first_zombie();
                        assert_eq!(got.map(|(_, looked)| looked as usize), want.map(|i| i + 1));
                        if let (Some(i), Some((pos, _))) = (want, got) {
                            assert_eq!(sig.reap(pos), list.remove(i).task);
                        }
                    }
                }
                assert_eq!(sig.nr_children(), list.len());
            }
        }
    }
}
