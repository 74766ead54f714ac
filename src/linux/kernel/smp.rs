//! Models `kernel/smp.c` @ v6.10: single-target SMP function calls, the call-single queue
//! with its notify-once coalescing, the three-pass flush, and csd locking.

use crate::linux::csd_flags::*;
use crate::linux::engine::{local_irq_disable, local_irq_enable, send_ipi, watch, Frame, Next, WaitOn};
use crate::linux::kernel::sched::core::call_function_single_prep_ipi;
use crate::linux::kernel::sched::core::TtwuPending;
use crate::linux::kernel::softirq;
use crate::linux::{CpuId, CsdFunc, CsdId, Kernel};
use crate::sim::Time;
use crate::trace::{Event, Sym, Vector};

/// The symbol a csd's function prints as.
pub fn csd_func_sym(f: CsdFunc) -> Sym {
    match f {
        CsdFunc::DoNothingIpi => Sym::DoNothingIpi,
        CsdFunc::NohzCsdFunc(_) => Sym::NohzCsdFunc,
        CsdFunc::TtwuEntry(_) => Sym::SchedTtwuPending,
        CsdFunc::RtoPushIrqWork => Sym::RtoPushIrqWorkFunc,
    }
}

/// Models `send_call_function_single_ipi()` — kernel/smp.c @ v6.10: with b2a02fc43a1f, a
/// polling target only gets NEED_RESCHED (`call_function_single_prep_ipi()`); otherwise a
/// CALL_FUNCTION_SINGLE IPI. Returns the sender's cost.
pub fn send_call_function_single_ipi(k: &mut Kernel, cpu: CpuId, target: CpuId, callsite: Sym) -> Time {
    let mut c = 0;
    if k.cfg.polling_ipi_elision() {
        let (polling, pc) = call_function_single_prep_ipi(k, cpu, target);
        c += pc;
        if polling {
            crate::linux::check::on_ipi_elided(k, cpu, target);
            k.tp(cpu, Event::SchedWakeIdleWithoutIpi { cpu: target });
            k.stats.ipis_avoided += 1;
            return c;
        }
    }
    k.tp(cpu, Event::IpiSendCpu { cpu: target, callsite, callback: Sym::GenericSmpCallFunctionSingleInterrupt });
    k.stats.ipis_sent += 1;
    c + send_ipi(k, cpu, target, Vector::CallFunctionSingle)
}

/// Models `__smp_call_single_queue()` — kernel/smp.c @ v6.10: `llist_add()` the entry to the
/// target's call_single_queue and notify the target only if the list was empty; later
/// producers piggy-back on that notification until the target's `llist_del_all()`.
pub fn __smp_call_single_queue(k: &mut Kernel, cpu: CpuId, target: CpuId, csd: CsdId, callsite: Sym) -> Time {
    let func = csd_func_sym(k.csds[csd as usize].func);
    let addr = k.csds[csd as usize].addr;
    k.tp(cpu, Event::CsdQueueCpu { cpu: target, callsite, func, csd: addr });
    let line = k.cpus[target as usize].csq_line;
    let mut c = k.line_write(cpu, line);
    let q = &mut k.cpus[target as usize].csq;
    let was_empty = q.is_empty();
    q.push(csd);
    if was_empty {
        c += send_call_function_single_ipi(k, cpu, target, callsite);
    }
    c
}

/// `smp_call_function_single()` / `smp_call_function_many_cond()` resume points, in code
/// order (single target, then several; both end at `put_cpu()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmpCallAt {
    /// Single target: `get_cpu()`, then a local call or the choice of csd.
    GetCpu,
    /// Single target: `csd_lock()` (spinning while `csd_data` is in use) and queue it.
    CsdLock,
    /// Single target: `csd_lock_wait()` when waiting.
    CsdLockWait,
    /// Several targets: `get_cpu()` and the empty IPI mask.
    ManyGetCpu,
    /// Several targets: queue a csd on the next target.
    ManyQueue,
    /// Several targets: send the IPI(s).
    ManyNotify,
    /// Several targets: `csd_lock_wait()` on each target's csd in turn.
    ManyWait,
    /// `put_cpu()`: `preempt_enable()`, which may call `schedule()`.
    PutCpu,
    /// Back from the `schedule()` of the final `preempt_enable()`.
    Preempted,
}

/// `smp_call_function_single()` / `smp_call_function_many_cond()` in progress.
#[derive(Debug, Clone, Copy)]
pub struct SmpCallFunction {
    /// The target CPU, or [`ALL_BUT_SELF`].
    pub target: CpuId,
    pub wait: bool,
    pub func: CsdFunc,
    pub csd: CsdId,
    pub at: SmpCallAt,
    /// Multi-target: the CPU being queued or waited for, how many notifications were needed,
    /// and the last one.
    pub i: CpuId,
    pub nr_ipi: u32,
    pub last: CpuId,
}

/// `smp_call_function()`: every online CPU but the caller.
pub const ALL_BUT_SELF: CpuId = CpuId::MAX;

impl SmpCallFunction {
    pub fn single(target: CpuId, func: CsdFunc, wait: bool) -> Self {
        SmpCallFunction { target, wait, func, csd: 0, at: SmpCallAt::GetCpu, i: 0, nr_ipi: 0, last: 0 }
    }
    pub fn all_but_self(func: CsdFunc, wait: bool) -> Self {
        SmpCallFunction {
            target: ALL_BUT_SELF,
            wait,
            func,
            csd: 0,
            at: SmpCallAt::ManyGetCpu,
            i: 0,
            nr_ipi: 0,
            last: 0,
        }
    }
}

/// The per-(sender, target) csd of `cfd_data`, allocated on first use.
fn cfd_csd(k: &mut Kernel, cpu: CpuId, target: CpuId) -> CsdId {
    if k.cpus[cpu as usize].cfd.is_empty() {
        let nr = k.m.topo.nr_cpus;
        let v: Vec<CsdId> = (0..nr)
            .map(|t| {
                // cfd->csd is a per-CPU allocation: each target's csd lives in its area.
                let line = k.lines.alloc(t);
                k.alloc_csd(CsdFunc::DoNothingIpi, line)
            })
            .collect();
        k.cpus[cpu as usize].cfd = v;
    }
    k.cpus[cpu as usize].cfd[target as usize]
}

/// Models `smp_call_function_many_cond()` — kernel/smp.c @ v6.10 (as called by
/// `smp_call_function()`): queue a csd on every other online CPU, then notify: a single CPU
/// through `send_call_function_single_ipi()` (which may only set NEED_RESCHED on a polling
/// CPU), several through `send_call_function_ipi_mask()`, which always sends real
/// CALL_FUNCTION IPIs (x2APIC cluster mode: one ICR write per cluster of 16 CPUs); then wait
/// for every csd.
fn smp_call_function_many_cond(k: &mut Kernel, cpu: CpuId, s: &mut SmpCallFunction) -> Next {
    let nr = k.m.topo.nr_cpus;
    match s.at {
        SmpCallAt::ManyGetCpu => {
            k.cpus[cpu as usize].preempt_count += 1;
            s.i = 0;
            s.nr_ipi = 0;
            k.cpus[cpu as usize].cfd_ipi_mask = crate::hw::cpumask::CpuMask::new(nr);
            s.at = SmpCallAt::ManyQueue;
            Next::Cont(k.costs.smp_call_setup)
        }
        SmpCallAt::ManyQueue => {
            // Queue on the next target.
            while s.i < nr && s.i == cpu {
                s.i += 1;
            }
            if s.i >= nr {
                s.at = SmpCallAt::ManyNotify;
                return Next::Cont(0);
            }
            let t = s.i;
            let csd = cfd_csd(k, cpu, t);
            if k.csds[csd as usize].flags & CSD_FLAG_LOCK != 0 {
                let line = k.csds[csd as usize].line;
                watch(k, cpu, line);
                return Next::Wait(WaitOn::Spin);
            }
            let ty = if s.wait { CSD_TYPE_SYNC } else { CSD_TYPE_ASYNC };
            k.csds[csd as usize].flags = CSD_FLAG_LOCK | ty;
            crate::linux::check::on_csd_lock(k, csd);
            k.csds[csd as usize].func = s.func;
            let line = k.csds[csd as usize].line;
            let mut c = k.line_write(cpu, line);
            let func = csd_func_sym(s.func);
            let addr = k.csds[csd as usize].addr;
            k.tp(cpu, Event::CsdQueueCpu { cpu: t, callsite: Sym::SmpCallFunctionManyCond, func, csd: addr });
            let ql = k.cpus[t as usize].csq_line;
            c += k.line_write(cpu, ql);
            let q = &mut k.cpus[t as usize].csq;
            let was_empty = q.is_empty();
            q.push(csd);
            if was_empty {
                k.cpus[cpu as usize].cfd_ipi_mask.set(t);
                s.nr_ipi += 1;
                s.last = t;
            }
            s.i += 1;
            Next::Cont(c + k.costs.csd_call)
        }
        SmpCallAt::ManyNotify => {
            let mut c = 0;
            if s.nr_ipi == 1 {
                c += send_call_function_single_ipi(k, cpu, s.last, Sym::SmpCallFunctionManyCond);
            } else if s.nr_ipi > 1 {
                // send_call_function_ipi_mask(): no polling shortcut for several targets.
                let mask = std::mem::take(&mut k.cpus[cpu as usize].cfd_ipi_mask);
                if k.trace.enabled {
                    let id = k.trace.masks.len() as u32;
                    k.trace.masks.push(mask.clone());
                    k.tp(
                        cpu,
                        Event::IpiSendCpumask {
                            mask: id,
                            callsite: Sym::SmpCallFunctionManyCond,
                            callback: Sym::GenericSmpCallFunctionSingleInterrupt,
                        },
                    );
                }
                let mut clusters = std::collections::BTreeSet::new();
                for t in mask.iter() {
                    k.stats.ipis_sent += 1;
                    clusters.insert(t / 16);
                    let d = k.m.costs.ipi_delivery;
                    let lat = k.cpus[cpu as usize].rng.range(d.lo_ns, d.hi_ns);
                    k.q.push(k.now + lat, crate::linux::engine::Action::Irq { cpu: t, vector: Vector::CallFunction });
                }
                c += clusters.len() as Time * k.m.costs.ipi_send_ns;
            }
            s.i = 0;
            s.at = SmpCallAt::ManyWait;
            Next::Cont(c)
        }
        SmpCallAt::ManyWait => {
            if !s.wait {
                s.at = SmpCallAt::PutCpu;
                return Next::Cont(0);
            }
            while s.i < nr && s.i == cpu {
                s.i += 1;
            }
            if s.i >= nr {
                s.at = SmpCallAt::PutCpu;
                return Next::Cont(0);
            }
            // csd_lock_wait() on each target's csd in turn.
            let csd = cfd_csd(k, cpu, s.i);
            let line = k.csds[csd as usize].line;
            let c = k.line_read(cpu, line);
            if k.csds[csd as usize].flags & CSD_FLAG_LOCK != 0 {
                watch(k, cpu, line);
                return Next::Wait(WaitOn::Spin);
            }
            s.i += 1;
            Next::Cont(c)
        }
        SmpCallAt::Preempted => Next::Ret(0),
        SmpCallAt::PutCpu | SmpCallAt::GetCpu | SmpCallAt::CsdLock | SmpCallAt::CsdLockWait => {
            if let Some(f) = crate::linux::kernel::sched::core::preempt_enable(k, cpu) {
                s.at = SmpCallAt::Preempted;
                return Next::Call(0, f);
            }
            Next::Ret(0)
        }
    }
}

/// Models `smp_call_function_single()` + `generic_exec_single()` — kernel/smp.c @ v6.10.
///
/// Context: task, IRQs on, preemption disabled by `get_cpu()`. With `wait`, an on-stack csd
/// marked LOCK|SYNC and a spin in `csd_lock_wait()` for the whole remote latency; without,
/// the per-CPU `csd_data` after `csd_lock()`.
pub fn smp_call_function(k: &mut Kernel, cpu: CpuId, s: &mut SmpCallFunction) -> Next {
    if s.target == ALL_BUT_SELF {
        return smp_call_function_many_cond(k, cpu, s);
    }
    match s.at {
        SmpCallAt::GetCpu => {
            k.cpus[cpu as usize].preempt_count += 1; // get_cpu()
            if s.target == cpu {
                // generic_exec_single() on the local CPU: run the function with IRQs off.
                s.at = SmpCallAt::PutCpu;
                return Next::Cont(k.costs.smp_call_setup + k.costs.csd_call);
            }
            s.csd = if s.wait { k.cpus[cpu as usize].stack_csd } else { k.cpus[cpu as usize].csd_data };
            s.at = SmpCallAt::CsdLock;
            Next::Cont(0)
        }
        SmpCallAt::CsdLock => {
            let csd = s.csd;
            if !s.wait && k.csds[csd as usize].flags & CSD_FLAG_LOCK != 0 {
                // csd_lock(): wait for the previous use of csd_data to be released.
                let line = k.csds[csd as usize].line;
                watch(k, cpu, line);
                return Next::Wait(WaitOn::Spin);
            }
            let ty = if s.wait { CSD_TYPE_SYNC } else { CSD_TYPE_ASYNC };
            let d = &mut k.csds[csd as usize];
            // csd_lock(): the stack csd of a waiting call was released when the last one
            // returned; csd_data only after csd_lock_wait() above.
            assert!(d.flags & CSD_FLAG_LOCK == 0, "csd_lock(): csd {csd} is already locked");
            d.flags = CSD_FLAG_LOCK | ty;
            d.func = s.func;
            let line = d.line;
            crate::linux::check::on_csd_lock(k, csd);
            let mut c = k.line_write(cpu, line) + k.costs.smp_call_setup;
            c += __smp_call_single_queue(k, cpu, s.target, csd, Sym::GenericExecSingle);
            s.at = SmpCallAt::CsdLockWait;
            Next::Cont(c)
        }
        SmpCallAt::CsdLockWait => {
            if !s.wait {
                s.at = SmpCallAt::PutCpu;
                return Next::Cont(0);
            }
            // csd_lock_wait(): acquire-spin on the lock word.
            let line = k.csds[s.csd as usize].line;
            let c = k.line_read(cpu, line);
            if k.csds[s.csd as usize].flags & CSD_FLAG_LOCK != 0 {
                watch(k, cpu, line);
                return Next::Wait(WaitOn::Spin);
            }
            s.at = SmpCallAt::PutCpu;
            Next::Cont(c)
        }
        SmpCallAt::Preempted => Next::Ret(0),
        SmpCallAt::PutCpu
        | SmpCallAt::ManyGetCpu
        | SmpCallAt::ManyQueue
        | SmpCallAt::ManyNotify
        | SmpCallAt::ManyWait => {
            // put_cpu(): under full preemption a pending NEED_RESCHED is honoured here.
            if let Some(f) = crate::linux::kernel::sched::core::preempt_enable(k, cpu) {
                s.at = SmpCallAt::Preempted;
                return Next::Call(0, f);
            }
            Next::Ret(0)
        }
    }
}

/// `flush_smp_call_function_queue()` resume points, in code order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FlushSmpCallAt {
    /// About to save IRQs off, mark the flush and call `__flush_smp_call_function_queue()`.
    #[default]
    Flush,
    /// Back from the flush: clear the marks, then `do_softirq_post_smp_call_flush()`.
    PostFlush,
    /// Restore IRQs and return.
    Restore,
}

/// `flush_smp_call_function_queue()` in progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlushSmpCallFunctionQueue {
    pub at: FlushSmpCallAt,
    pub was_pending: u32,
    pub irqs_were_on: bool,
}

/// Models `flush_smp_call_function_queue()` — kernel/smp.c @ v6.10, the task-context flush
/// run by the idle loop: IRQs saved off, the flush, then `do_softirq_post_smp_call_flush()`.
/// With the softirq RFC v1, the per-CPU `will_do_softirq_post_flush` flag is set around the
/// flush (a store to its line each time, which false-shares when unaligned).
///
/// Context: task (the idle task); `in_interrupt()` is false here.
pub fn flush_smp_call_function_queue(k: &mut Kernel, cpu: CpuId, s: &mut FlushSmpCallFunctionQueue) -> Next {
    match s.at {
        FlushSmpCallAt::Flush => {
            let line = k.cpus[cpu as usize].csq_line;
            let mut c = k.line_read(cpu, line);
            if k.cpus[cpu as usize].csq.is_empty() {
                return Next::Ret(c);
            }
            s.irqs_were_on = !k.cpus[cpu as usize].x.irqs_off;
            local_irq_disable(k, cpu);
            s.was_pending = k.cpus[cpu as usize].softirq_pending;
            if k.cfg.softirq_flag() {
                k.cpus[cpu as usize].will_do_softirq_post_flush = true;
                let fl = k.cpus[cpu as usize].softirq_flag_line;
                c += k.line_write(cpu, fl);
            }
            if k.cfg.softirq_ctrl_rfc() {
                // RFC v2: the low bits of softirq_ctrl.cnt mark the flush.
                k.cpus[cpu as usize].softirq_ctrl_cnt += 1;
                let l = k.cpus[cpu as usize].softirq_ctrl_line;
                c += k.line_write(cpu, l);
            }
            s.at = FlushSmpCallAt::PostFlush;
            Next::Call(c + k.costs.flush, Frame::FlushQueue(FlushQueue::default()))
        }
        FlushSmpCallAt::PostFlush => {
            let mut c = 0;
            if k.cfg.softirq_flag() {
                k.cpus[cpu as usize].will_do_softirq_post_flush = false;
                let fl = k.cpus[cpu as usize].softirq_flag_line;
                c += k.line_write(cpu, fl);
            }
            if k.cfg.softirq_ctrl_rfc() {
                k.cpus[cpu as usize].softirq_ctrl_cnt -= 1;
                let l = k.cpus[cpu as usize].softirq_ctrl_line;
                c += k.line_write(cpu, l);
            }
            s.at = FlushSmpCallAt::Restore;
            if k.cpus[cpu as usize].softirq_pending != 0 {
                if let Some(f) = softirq::do_softirq_post_smp_call_flush(k, cpu, s.was_pending) {
                    return Next::Call(c, f);
                }
            }
            Next::Cont(c)
        }
        FlushSmpCallAt::Restore => {
            if s.irqs_were_on {
                local_irq_enable(k, cpu);
            }
            Next::Ret(0)
        }
    }
}

/// `__flush_smp_call_function_queue()` in progress: pass 1 (SYNC), pass 2 (ASYNC/IRQ_WORK),
/// pass 3 (TTWU batch).
#[derive(Debug, Clone, Copy, Default)]
pub struct FlushQueue {
    pub pass: u8,
    pub i: u16,
    /// Between a function's entry and exit records.
    pub in_func: bool,
}

/// Models `__flush_smp_call_function_queue()` — kernel/smp.c @ v6.10: take the whole queue
/// with `llist_del_all()`, reverse it to FIFO, then run SYNC entries (function, then unlock:
/// the waiter is released after the function), then ASYNC entries (unlock first, so the csd
/// can be reused while the function runs), then hand the TTWU entries to
/// `sched_ttwu_pending()` in one batch.
///
/// Context: IRQs off (hardirq or the idle task's flush).
pub fn __flush_smp_call_function_queue(k: &mut Kernel, cpu: CpuId, s: &mut FlushQueue) -> Next {
    if s.pass == 0 {
        assert!(
            k.cpus[cpu as usize].flush_list.is_empty(),
            "__flush_smp_call_function_queue(): a flush while another is in progress"
        );
        let line = k.cpus[cpu as usize].csq_line;
        let c = k.line_write(cpu, line);
        let c_ = &mut k.cpus[cpu as usize];
        // Our queue vector is already in arrival (FIFO) order. Swapped, not taken: the empty
        // flush list's storage becomes the queue's, so neither list allocates per flush.
        std::mem::swap(&mut c_.flush_list, &mut c_.csq);
        s.pass = 1;
        s.i = 0;
        return Next::Cont(c + k.costs.flush);
    }
    if s.pass <= 2 {
        loop {
            let list = &k.cpus[cpu as usize].flush_list;
            if s.i as usize >= list.len() {
                s.pass += 1;
                s.i = 0;
                return Next::Cont(0);
            }
            let e = list[s.i as usize];
            let ty = k.csds[e as usize].flags & CSD_FLAG_TYPE_MASK;
            let ours = if s.pass == 1 { ty == CSD_TYPE_SYNC } else { ty == CSD_TYPE_ASYNC || ty == CSD_TYPE_IRQ_WORK };
            if !ours {
                s.i += 1;
                continue;
            }
            let func = k.csds[e as usize].func;
            let sym = csd_func_sym(func);
            let addr = k.csds[e as usize].addr;
            let line = k.csds[e as usize].line;
            if !s.in_func {
                // Fetch the csd (func, info) from wherever it lives, then call.
                let mut c = k.line_read(cpu, line);
                if s.pass == 2 {
                    c += csd_unlock(k, cpu, e);
                }
                // irq_work entries run through irq_work_single(), without the csd tracepoints.
                let traced = ty != CSD_TYPE_IRQ_WORK;
                if traced {
                    k.tp(cpu, Event::CsdFunctionEntry { func: sym, csd: addr });
                }
                let (fc, wake) = run_csd_func(k, cpu, func);
                c += fc;
                s.in_func = true;
                if let Some(f) = wake {
                    return Next::Call(c + k.costs.csd_call, f);
                }
                return Next::Cont(c + k.costs.csd_call);
            }
            if ty != CSD_TYPE_IRQ_WORK {
                k.tp(cpu, Event::CsdFunctionExit { func: sym, csd: addr });
            }
            s.in_func = false;
            s.i += 1;
            let c = if s.pass == 1 { csd_unlock(k, cpu, e) } else { 0 };
            return Next::Cont(c);
        }
    }
    if s.pass == 3 {
        s.pass = 4;
        let any_ttwu = k.cpus[cpu as usize]
            .flush_list
            .iter()
            .any(|&e| k.csds[e as usize].flags & CSD_FLAG_TYPE_MASK == CSD_TYPE_TTWU);
        if any_ttwu {
            let first = k.cpus[cpu as usize]
                .flush_list
                .iter()
                .copied()
                .find(|&e| k.csds[e as usize].flags & CSD_FLAG_TYPE_MASK == CSD_TYPE_TTWU)
                .unwrap_or(0);
            let addr = k.csds[first as usize].addr;
            k.tp(cpu, Event::CsdFunctionEntry { func: Sym::SchedTtwuPending, csd: addr });
            s.i = first as u16;
            return Next::Call(0, Frame::TtwuPending(TtwuPending::default()));
        }
        return Next::Cont(0);
    }
    // Done.
    let list = std::mem::take(&mut k.cpus[cpu as usize].flush_list);
    if let Some(&first) = list.iter().find(|&&e| k.csds[e as usize].flags & CSD_FLAG_TYPE_MASK == CSD_TYPE_TTWU) {
        let addr = k.csds[first as usize].addr;
        k.tp(cpu, Event::CsdFunctionExit { func: Sym::SchedTtwuPending, csd: addr });
    }
    // Give the Vec's storage back for the next flush.
    let mut list = list;
    list.clear();
    k.cpus[cpu as usize].flush_list = list;
    Next::Ret(0)
}

/// Models `csd_unlock()` — kernel/smp.c @ v6.10: a release store clearing CSD_FLAG_LOCK; the
/// sender spinning in `csd_lock_wait()` sees it after the line transfer.
fn csd_unlock(k: &mut Kernel, cpu: CpuId, e: CsdId) -> Time {
    // The kernel's WARN_ON(!(csd_flags & CSD_FLAG_LOCK)): unlock pairs with one csd_lock().
    assert!(k.csds[e as usize].flags & CSD_FLAG_LOCK != 0, "csd_unlock(): csd {e} is not locked");
    k.csds[e as usize].flags &= !CSD_FLAG_LOCK;
    crate::linux::check::on_csd_unlock(k, cpu, e);
    let line = k.csds[e as usize].line;
    k.line_write(cpu, line)
}

/// Run a csd's function (the indirect call in the flush). Returns its cost and, if the
/// function wakes a task (ksoftirqd), the wakeup to call.
fn run_csd_func(k: &mut Kernel, cpu: CpuId, f: CsdFunc) -> (Time, Option<Frame>) {
    match f {
        // ipistorm's callback does nothing.
        CsdFunc::DoNothingIpi => (0, None),
        CsdFunc::NohzCsdFunc(_) => crate::linux::kernel::sched::core::nohz_csd_func(k, cpu),
        // TTWU entries never come here (pass 3 hands them to sched_ttwu_pending()).
        CsdFunc::TtwuEntry(_) => (0, None),
        CsdFunc::RtoPushIrqWork => (crate::linux::kernel::sched::rt::rto_push_irq_work_func(k, cpu), None),
    }
}
