//! Models `kernel/sched/stop_task.c` @ v6.10: the stop scheduling class, above every other
//! class, whose only task is the per-CPU stopper `migration/N` (its thread body and work
//! queue are in `kernel/stop_machine.rs`). `rq->stop_runnable` stands for `rq->stop->on_rq`.

use crate::linux::{CpuId, Kernel, TaskId};

/// Models `enqueue_task_stop()` (the stopper is the class's one task; `activate_task()`
/// counts it in `nr_running`).
pub fn enqueue_task_stop(k: &mut Kernel, cpu: CpuId) {
    k.cpus[cpu as usize].rq.stop_runnable = true;
}

/// Models `dequeue_task_stop()`.
pub fn dequeue_task_stop(k: &mut Kernel, cpu: CpuId) {
    k.cpus[cpu as usize].rq.stop_runnable = false;
}

/// Models `pick_task_stop()`: the stopper if it is runnable (`sched_stop_runnable()`).
pub fn pick_task_stop(k: &Kernel, cpu: CpuId) -> Option<TaskId> {
    let rq = &k.cpus[cpu as usize].rq;
    if rq.stop_runnable {
        Some(rq.stopper)
    } else {
        None
    }
}
