//! Models the per-runqueue core of the fair scheduling class: EEVDF as in
//! `kernel/sched/fair.c` @ v6.10, the pre-6.6 CFS as in `kernel/sched/fair.c` @ v6.5, and PELT
//! as in `kernel/sched/pelt.c` + `pelt.h` + `sched-pelt.h` @ v6.10.
//!
//! Pure data and functions: integer arithmetic only (u64 / i64 / i128, no floats), no I/O,
//! deterministic. Virtual times are u64 and compared through signed differences, as the kernel
//! does, so they may wrap.
//!
//! # Design
//!
//! * Entities live in a caller-owned table `&mut [SchedEntity]` indexed by task id:
//!   `ents[id as usize].id == id`. One table can serve every CPU's [`CfsRq`]; an entity is on at
//!   most one of them at a time.
//! * A [`CfsRq`] keeps its queued, not-running entities in a balanced search tree ordered by the
//!   kernel's rb-tree key: the virtual deadline (EEVDF) or vruntime (CFS), ties in arrival order
//!   (the kernel inserts equal keys to the right; here each insertion takes a sequence number
//!   that breaks ties). The links live in the entities (`SchedEntity::node`, as the kernel's
//!   `run_node`), and each node carries the smallest vruntime of its subtree (the kernel's
//!   `min_vruntime` augmentation), so `pick_eevdf()` finds the first eligible entity in
//!   deadline order by the same heap search as the kernel, in O(log n). The tree is a treap
//!   (priorities hashed from the sequence number, so it is deterministic) rather than a
//!   red-black tree: the order, and so every pick, is the same; only the shape differs. Keys of
//!   queued entities never change while queued, so an entity is found again by its key.
//! * The running entity (`curr`) is not in the queue, as in the kernel: `set_next_entity()`
//!   takes it out, `put_prev_entity()` puts it back.
//! * Every operation that can call `resched_curr()` in the kernel returns `true` when it would.
//!   The caller sets NEED_RESCHED on the CPU's current task.
//!
//! # Simplifications (v6.10 EEVDF / v6.5 CFS)
//!
//! * No group scheduling: a single flat cfs_rq per CPU, so `h_nr_running == nr_running`, no
//!   `update_cfs_group()`/reweight, no task_group shares, no bandwidth control or throttling.
//! * No buddies: NEXT_BUDDY is off by default in both versions; the pre-6.6 LAST_BUDDY and
//!   skip buddy (yield) are not modelled, so CFS picks strictly the leftmost entity (or curr).
//! * No SCHED_IDLE/SCHED_BATCH policy special cases, no `reweight_entity()` (nice changes while
//!   queued), no `yield_task_fair()`, no HRTICK, no `sched_child_runs_first`.
//! * CFS `place_entity()`: the `entity_is_long_sleeper()` reset (sleeps of ~104 days) is omitted.
//! * CFS fork: the parent is taken to be this cfs_rq's `curr` (the kernel uses the forking task's
//!   cfs_rq, normalises, and renormalises on the target CPU); with no curr the child starts at
//!   vruntime 0 before placement, as after `__sched_fork()`.
//! * PELT runs on the unscaled task clock: no frequency or CPU-capacity invariance
//!   (`rq_clock_pelt()` == clock), no util_est, no `update_tg_load_avg()` propagation. The
//!   deferred `cfs_rq->removed` accounting of a waking migration is applied at once (after the
//!   same sync to the cfs_rq's last update, so the result is the same).
//! * The kernel marks a detached PELT average with `avg.last_update_time == 0`; here that is the
//!   explicit [`SchedEntity::avg_attached`] flag, so a simulation clock may start at 0.
//! * [`CfsRq::new`] starts `min_vruntime` at 0 (the kernel starts at `-(1 << 20)` to exercise
//!   wrap-around early; a test here does the same).
//! * If `pick_eevdf()` finds neither an eligible queued entity nor an eligible curr (impossible
//!   mathematically; the kernel would return NULL) the leftmost queued entity is returned.
//!
//! # Integration (how `core`/`fair` should call this)
//!
//! * Wakeup (`ttwu_do_activate` → `enqueue_task_fair`): `enqueue_entity(.., EnqueueFlags {
//!   wakeup: true, .. })`, then `check_preempt_wakeup(woken)` (`wakeup_preempt_fair`); resched
//!   if either returns true. A new task (`wake_up_new_task`) uses `initial: true`. A task woken
//!   on a different CPU than it slept on first gets `src.migrate_task_rq(..)` (the TASK_WAKING
//!   case of `migrate_task_rq_fair`) and then `dst.enqueue_entity(.., wakeup + migrated)`.
//! * Sleep (`deactivate_task` in `__schedule`): `dequeue_entity(.., DequeueFlags { sleep: true,
//!   .. })` on curr; then `pick_next_entity(now)`; then `put_prev_entity(now)` if nothing is
//!   picked (go idle), or `switch_to(next, now)`.
//! * Delayed dequeue (DELAY_DEQUEUE, 152e11f6df29, v6.12): with [`FairFeatures::delay_dequeue`]
//!   a sleep dequeue of an entity that is not eligible leaves it queued with
//!   [`SchedEntity::sched_delayed`] set (`dequeue_entity()` returns with it still `on_rq`); the
//!   caller keeps the task on the runqueue. A wakeup before it is picked calls
//!   [`CfsRq::requeue_delayed_entity`]; a pick that returns it must finish the dequeue with
//!   `dequeue_entity(.., DequeueFlags { sleep: true, delayed: true, .. })` and pick again.
//! * Load-balance migration of a queued task: `src.dequeue_entity(.., migrating)`, then
//!   `dst.enqueue_entity(.., migrated)` (no `wakeup`).
//! * Tick (`task_tick_fair` → `entity_tick`): `check_preempt_tick(now)`.
//! * `pick_next_task_fair`: `pick_next_entity(now)` (updates curr, considers it), then
//!   `switch_to(next, now)`, which does nothing if `next` is already curr, as in the kernel.
//! * `update_curr(now)` may be called at any time to charge curr (e.g. `update_curr_fair`).

/// `NICE_0_LOAD` after `scale_load_down()`: the weight of a nice-0 task.
pub const NICE_0_LOAD: u64 = 1024;
/// `SCHED_CAPACITY_SHIFT` / `SCHED_CAPACITY_SCALE`: full capacity of one CPU.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// `LOAD_AVG_PERIOD`: PELT half-life in periods (y^32 = 1/2).
pub const LOAD_AVG_PERIOD: u64 = 32;
/// `LOAD_AVG_MAX`: the maximum of a PELT sum of 1024-unit periods.
pub const LOAD_AVG_MAX: u64 = 47742;
/// `PELT_MIN_DIVIDER`.
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
/// One PELT period in nanoseconds: 1024 units of 1024 ns (the kernel shifts ns right by 10).
pub const PELT_PERIOD_NS: u64 = 1024 * 1024;

const WMULT_CONST: u64 = 0xffff_ffff;
const WMULT_SHIFT: i32 = 32;

/// `sched_prio_to_weight[]` — kernel/sched/core.c @ v6.10 (nice -20 .. 19).
#[rustfmt::skip]
const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291,
    29154, 23254, 18705, 14949, 11916,
    9548, 7620, 6100, 4904, 3906,
    3121, 2501, 1991, 1586, 1277,
    1024, 820, 655, 526, 423,
    335, 272, 215, 172, 137,
    110, 87, 70, 56, 45,
    36, 29, 23, 18, 15,
];

/// `sched_prio_to_wmult[]` (2^32 / weight) — kernel/sched/core.c @ v6.10.
#[rustfmt::skip]
const SCHED_PRIO_TO_WMULT: [u32; 40] = [
    48388, 59856, 76040, 92818, 118348,
    147320, 184698, 229616, 287308, 360437,
    449829, 563644, 704093, 875809, 1099582,
    1376151, 1717300, 2157191, 2708050, 3363326,
    4194304, 5237765, 6557202, 8165337, 10153587,
    12820798, 15790321, 19976592, 24970740, 31350126,
    39045157, 49367440, 61356676, 76695844, 95443717,
    119304647, 148102320, 186737708, 238609294, 286331153,
];

/// `runnable_avg_yN_inv[]` — kernel/sched/sched-pelt.h @ v6.10: (2^32 - 1) * y^n, y^32 = 1/2.
#[rustfmt::skip]
const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6,
    0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85,
    0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
    0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80,
    0x85aac367, 0x82cd8698,
];

/// The weight of a nice level, from `sched_prio_to_weight[]` — kernel/sched/core.c @ v6.10.
/// Nice values outside -20..=19 are clamped.
pub fn sched_prio_to_weight(nice: i32) -> u64 {
    SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// Which fair-class policy a [`CfsRq`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairPolicy {
    /// EEVDF, v6.6 and later (modelled on v6.10).
    Eevdf,
    /// The pre-6.6 CFS (modelled on v6.5).
    Cfs,
}

/// The fair-class sysctls after `update_sysctl()` scaling, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FairTunables {
    /// `sysctl_sched_base_slice` (EEVDF request size).
    pub base_slice_ns: u64,
    /// `sysctl_sched_latency` (CFS period).
    pub latency_ns: u64,
    /// `sysctl_sched_min_granularity` (CFS).
    pub min_granularity_ns: u64,
    /// `sysctl_sched_wakeup_granularity` (CFS).
    pub wakeup_granularity_ns: u64,
    /// `sched_nr_latency` (CFS): tasks per period before the period stretches.
    pub nr_latency: u64,
    /// `TICK_NSEC` (the lag clamp floor of EEVDF).
    pub tick_ns: u64,
}

impl FairTunables {
    /// Models `get_update_sysctl_factor()` with SCHED_TUNABLESCALING_LOG — kernel/sched/fair.c
    /// @ v6.10: 1 + ilog2(min(ncpus, 8)). `nr_cpus == 0` is treated as 1.
    pub fn factor(nr_cpus: u32) -> u64 {
        let cpus = nr_cpus.clamp(1, 8);
        1 + cpus.ilog2() as u64
    }

    /// Models `update_sysctl()` — kernel/sched/fair.c @ v6.10 (base slice) and @ v6.5 (latency,
    /// min and wakeup granularity), with HZ = 250.
    pub fn for_cpus(nr_cpus: u32) -> Self {
        Self::for_cpus_hz(nr_cpus, 250)
    }

    /// As [`FairTunables::for_cpus`] with an explicit HZ (for `TICK_NSEC`).
    pub fn for_cpus_hz(nr_cpus: u32, hz: u32) -> Self {
        let f = Self::factor(nr_cpus);
        FairTunables {
            base_slice_ns: 750_000 * f,
            latency_ns: 6_000_000 * f,
            min_granularity_ns: 750_000 * f,
            wakeup_granularity_ns: 1_000_000 * f,
            // Both latency and min_granularity scale by the same factor: DIV_ROUND_UP stays 8.
            nr_latency: 8,
            tick_ns: 1_000_000_000 / hz.max(1) as u64,
        }
    }
}

/// The scheduler features this module honours (`kernel/sched/features.h`), all true by
/// default in the version each applies to. Rows of the one `sched_features!` table
/// (`features.rs`, `Features::fair()`), so `--feature` reaches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FairFeatures {
    /// EEVDF PLACE_LAG: keep lag over sleep/wake.
    pub place_lag: bool,
    /// EEVDF PLACE_DEADLINE_INITIAL: new tasks get half a slice.
    pub place_deadline_initial: bool,
    /// EEVDF RUN_TO_PARITY: keep an eligible curr until it gets a new slice.
    pub run_to_parity: bool,
    /// CFS START_DEBIT: new tasks start one vslice behind.
    pub start_debit: bool,
    /// CFS GENTLE_FAIR_SLEEPERS: sleeper credit is half the latency.
    pub gentle_fair_sleepers: bool,
    /// WAKEUP_PREEMPTION (both).
    pub wakeup_preemption: bool,
    /// EEVDF DELAY_DEQUEUE (152e11f6df29, v6.12): a task that sleeps while not eligible stays
    /// queued until it is picked or woken.
    pub delay_dequeue: bool,
    /// EEVDF DELAY_ZERO (54a58a787791, v6.12): a delayed entity leaves (or is woken) with its
    /// lag clipped to at most 0.
    pub delay_zero: bool,
}

impl Default for FairFeatures {
    fn default() -> Self {
        FairFeatures {
            place_lag: true,
            place_deadline_initial: true,
            run_to_parity: true,
            start_debit: true,
            gentle_fair_sleepers: true,
            wakeup_preemption: true,
            // Features of v6.12, off unless the kernel has the patch (`KernelConfig::fair_features`).
            delay_dequeue: false,
            delay_zero: false,
        }
    }
}

/// `struct sched_avg` (the PELT signals) — include/linux/sched.h @ v6.10.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// ns; advanced in 1024-ns steps.
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u64,
    /// Units (1024 ns) of the current, incomplete period already accounted.
    pub period_contrib: u32,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
}

/// No entity (an empty subtree).
const NIL: u32 = u32::MAX;

/// An entity's links in its cfs_rq's tree (the kernel's `run_node` with the `min_vruntime`
/// augmentation), meaningful only while it is queued and not running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeNode {
    left: u32,
    right: u32,
    /// Insertion number on its cfs_rq: breaks key ties (arrival order) and seeds the priority.
    seq: u64,
    /// Smallest vruntime in this subtree (wrapping order).
    min_vruntime: u64,
}

impl TreeNode {
    #[inline]
    fn child(&self, left: bool) -> u32 {
        if left {
            self.left
        } else {
            self.right
        }
    }

    #[inline]
    fn set_child(&mut self, left: bool, c: u32) {
        if left {
            self.left = c;
        } else {
            self.right = c;
        }
    }
}

impl Default for TreeNode {
    fn default() -> Self {
        TreeNode { left: NIL, right: NIL, seq: 0, min_vruntime: 0 }
    }
}

/// The treap priority of the node inserted as number `seq` (SplitMix64 of it).
#[inline]
fn tree_prio(seq: u64) -> u64 {
    let mut z = seq.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `struct sched_entity` (the fields the fair class uses) — include/linux/sched.h @ v6.10.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedEntity {
    /// Task id; also this entity's index in the entity table.
    pub id: u32,
    /// `scale_load_down(load.weight)`.
    pub weight: u64,
    pub vruntime: u64,
    /// EEVDF virtual deadline.
    pub deadline: u64,
    /// EEVDF lag while dequeued; while running, a copy of the deadline at pick time
    /// (RUN_TO_PARITY).
    pub vlag: i64,
    /// EEVDF request size, ns.
    pub slice: u64,
    pub sum_exec_runtime: u64,
    pub exec_start: u64,
    pub prev_sum_exec_runtime: u64,
    /// On a cfs_rq (queued or running).
    pub on_rq: bool,
    /// `depth` (CONFIG_FAIR_GROUP_SCHED): the task's level in the cpu controller's hierarchy,
    /// 0 in the root group. The model keeps one flat runqueue per CPU and charges the walk over
    /// the group entities above it (`PathCosts::enqueue_level`, `dequeue_level`).
    pub depth: u8,
    /// DELAY_DEQUEUE: its task went to sleep but the entity stays queued (still `on_rq`)
    /// until a pick dequeues it or a wakeup requeues it.
    pub sched_delayed: bool,
    pub avg: SchedAvg,
    /// `avg` is attached to a cfs_rq's sums (the kernel: `avg.last_update_time != 0`).
    pub avg_attached: bool,
    /// Links in the cfs_rq's tree while queued.
    pub node: TreeNode,
}

impl SchedEntity {
    /// A fresh entity as after `__sched_fork()`.
    pub fn new(id: u32, weight: u64) -> Self {
        SchedEntity { id, weight: weight.max(1), ..Default::default() }
    }

    /// A fresh entity of a given nice level.
    pub fn with_nice(id: u32, nice: i32) -> Self {
        Self::new(id, sched_prio_to_weight(nice))
    }
}

/// `ENQUEUE_*` flags the model distinguishes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnqueueFlags {
    /// ENQUEUE_WAKEUP.
    pub wakeup: bool,
    /// ENQUEUE_MIGRATED: the entity comes from another CPU.
    pub migrated: bool,
    /// ENQUEUE_INITIAL: a new task (`wake_up_new_task`).
    pub initial: bool,
}

/// `DEQUEUE_*` flags the model distinguishes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DequeueFlags {
    /// DEQUEUE_SLEEP.
    pub sleep: bool,
    /// The task leaves for another CPU (`task_on_rq_migrating()`): detach its PELT average.
    pub migrating: bool,
    /// DEQUEUE_DELAYED: finish the dequeue of a delayed entity (from the pick).
    pub delayed: bool,
    /// DEQUEUE_SPECIAL: the task sleeps in a state other than TASK_NORMAL (e.g. TASK_DEAD),
    /// which must not be delayed (a delayed task relies on a spurious wakeup being harmless).
    pub special: bool,
}

/// `struct cfs_rq` (flat, one per CPU) — kernel/sched/sched.h @ v6.10.
#[derive(Debug, Clone)]
pub struct CfsRq {
    pub policy: FairPolicy,
    pub tun: FairTunables,
    pub feat: FairFeatures,
    pub min_vruntime: u64,
    /// EEVDF: sum over queued (not running) entities of (vruntime - min_vruntime) * weight.
    pub avg_vruntime: i64,
    /// EEVDF: sum of the weights in `avg_vruntime`.
    pub avg_load: u64,
    /// `load.weight`: all entities on the cfs_rq, curr included.
    pub load_weight: u64,
    /// `nr_running`: curr included.
    pub nr_running: u32,
    /// Entities on the cfs_rq that are `sched_delayed` (DELAY_DEQUEUE): `h_nr_queued -
    /// h_nr_runnable` of v6.13+ (`cfs_h_nr_delayed()`), flat.
    pub nr_delayed: u32,
    /// Root of the tree of queued, not-running entities (NIL: empty).
    root: u32,
    /// The leftmost queued entity (`rb_root_cached`), NIL if none.
    leftmost: u32,
    /// Number of queued entities.
    nr_queued: u32,
    /// Insertions so far (tree tie-break and priority).
    seq: u64,
    pub curr: Option<u32>,
    /// The cfs_rq's PELT average.
    pub avg: SchedAvg,
}

#[inline]
fn mul_u64_u32_shr(a: u64, b: u32, shift: u32) -> u64 {
    ((a as u128 * b as u128) >> shift) as u64
}

#[inline]
fn fls64(x: u64) -> i32 {
    64 - x.leading_zeros() as i32
}

/// Models `__update_inv_weight()` — kernel/sched/fair.c @ v6.10 (weights of a cfs_rq).
fn raw_inv_weight(w: u64) -> u64 {
    if w >= WMULT_CONST {
        1
    } else {
        // A zero weight gets the largest inverse.
        WMULT_CONST.checked_div(w).unwrap_or(WMULT_CONST)
    }
}

/// A task's `load.inv_weight`: `set_load_weight()` stores `sched_prio_to_wmult[]` for table
/// weights (kernel/sched/core.c @ v6.10); other weights fall back to `__update_inv_weight()`.
fn task_inv_weight(w: u64) -> u64 {
    match SCHED_PRIO_TO_WEIGHT.iter().position(|&x| x == w) {
        Some(i) => SCHED_PRIO_TO_WMULT[i] as u64,
        None => raw_inv_weight(w),
    }
}

/// Models `__calc_delta()` — kernel/sched/fair.c @ v6.10: `delta * weight / lw` computed as a
/// 32-bit fixed-point multiply by the inverse `inv` of `lw`.
fn calc_delta(delta: u64, weight: u64, inv: u64) -> u64 {
    let mut fact = weight;
    let mut shift = WMULT_SHIFT;
    let hi = fact >> 32;
    if hi != 0 {
        let fs = fls64(hi);
        shift -= fs;
        fact >>= fs;
    }
    fact = (fact & 0xffff_ffff) * (inv & 0xffff_ffff);
    let hi = fact >> 32;
    if hi != 0 {
        let fs = fls64(hi);
        shift -= fs;
        fact >>= fs;
    }
    mul_u64_u32_shr(delta, fact as u32, shift.max(0) as u32)
}

/// Models `calc_delta_fair()` — kernel/sched/fair.c @ v6.10: wall time to virtual time for an
/// entity of `weight` (identity for nice 0).
pub fn calc_delta_fair(delta: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        delta
    } else {
        calc_delta(delta, NICE_0_LOAD, task_inv_weight(weight))
    }
}

/// `(s64)(a - b) < 0` on wrapping u64 virtual times.
#[inline]
fn vbefore(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// Models `max_vruntime()` — kernel/sched/fair.c @ v6.5.
#[inline]
fn max_vruntime(max: u64, v: u64) -> u64 {
    if (v.wrapping_sub(max) as i64) > 0 {
        v
    } else {
        max
    }
}

/// Models `min_vruntime()` — kernel/sched/fair.c @ v6.10.
#[inline]
fn min_vruntime(min: u64, v: u64) -> u64 {
    if vbefore(v, min) {
        v
    } else {
        min
    }
}

impl CfsRq {
    /// An empty cfs_rq (`init_cfs_rq()`, but with `min_vruntime` 0; see the module notes).
    pub fn new(policy: FairPolicy, tun: FairTunables) -> Self {
        CfsRq {
            policy,
            tun,
            feat: FairFeatures::default(),
            min_vruntime: 0,
            avg_vruntime: 0,
            avg_load: 0,
            load_weight: 0,
            nr_running: 0,
            nr_delayed: 0,
            root: NIL,
            leftmost: NIL,
            nr_queued: 0,
            seq: 0,
            curr: None,
            avg: SchedAvg::default(),
        }
    }

    /// Queued, not-running entity ids in tree order (deadline for EEVDF, vruntime for CFS).
    /// Allocates: for tests and checks; the balancing paths walk with [`CfsRq::next_queued`].
    pub fn queued(&self, ents: &[SchedEntity]) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.nr_queued as usize);
        let mut stack = Vec::new();
        let mut n = self.root;
        while n != NIL || !stack.is_empty() {
            while n != NIL {
                stack.push(n);
                n = ents[n as usize].node.left;
            }
            let x = stack.pop().expect("stack is not empty");
            out.push(x);
            n = ents[x as usize].node.right;
        }
        out
    }

    /// Number of queued, not-running entities.
    pub fn nr_queued(&self) -> u32 {
        self.nr_queued
    }

    /// The first queued entity in tree order (the leftmost).
    pub fn first_queued(&self) -> Option<u32> {
        (self.leftmost != NIL).then_some(self.leftmost)
    }

    /// The queued entity following the one whose tree position was `after` (its
    /// [`CfsRq::tree_pos`], taken while it was queued; it may have left since), or the first
    /// with None: a walk in tree order that stays valid while the walker dequeues what it
    /// visits. O(log n) per step.
    pub fn next_queued(&self, ents: &[SchedEntity], after: Option<(u64, u64)>) -> Option<u32> {
        let Some(after) = after else {
            return self.first_queued();
        };
        let mut best = NIL;
        let mut n = self.root;
        while n != NIL {
            if self.pos_before(after, self.tree_pos(&ents[n as usize])) {
                best = n;
                n = ents[n as usize].node.left;
            } else {
                n = ents[n as usize].node.right;
            }
        }
        (best != NIL).then_some(best)
    }

    /// A queued entity's position in the tree order: (key, insertion number).
    pub fn tree_pos(&self, se: &SchedEntity) -> (u64, u64) {
        let key = match self.policy {
            FairPolicy::Eevdf => se.deadline,
            FairPolicy::Cfs => se.vruntime,
        };
        (key, se.node.seq)
    }

    /// Tree order on positions: the key (wrapping), then the insertion number.
    #[inline]
    fn pos_before(&self, a: (u64, u64), b: (u64, u64)) -> bool {
        vbefore(a.0, b.0) || (a.0 == b.0 && a.1 < b.1)
    }

    /// Whether `id` is in the queue (on the rq and not curr).
    pub fn is_queued(&self, ents: &[SchedEntity], id: u32) -> bool {
        self.find(ents, id)
    }

    /// Is `id` in this tree? (Descends by its position.)
    fn find(&self, ents: &[SchedEntity], id: u32) -> bool {
        let pos = self.tree_pos(&ents[id as usize]);
        let mut n = self.root;
        while n != NIL {
            if n == id {
                return true;
            }
            n = if self.pos_before(pos, self.tree_pos(&ents[n as usize])) {
                ents[n as usize].node.left
            } else {
                ents[n as usize].node.right
            };
        }
        false
    }

    /// Recompute `n`'s subtree minimum vruntime from its own and its children's.
    #[inline]
    fn tree_update(ents: &mut [SchedEntity], n: u32) {
        let se = &ents[n as usize];
        let mut m = se.vruntime;
        for c in [se.node.left, se.node.right] {
            if c != NIL {
                m = min_vruntime(m, ents[c as usize].node.min_vruntime);
            }
        }
        ents[n as usize].node.min_vruntime = m;
    }

    /// Insert `x` into the subtree `t`; returns the subtree's new root.
    fn tree_insert(&self, ents: &mut [SchedEntity], t: u32, x: u32) -> u32 {
        if t == NIL {
            return x;
        }
        let xp = self.tree_pos(&ents[x as usize]);
        let tp = self.tree_pos(&ents[t as usize]);
        // Descend on the side `x` sorts to; if the child coming back outranks `t`, rotate it up
        // (a right rotation for a left child, a left rotation for a right child).
        let left = self.pos_before(xp, tp);
        let c = self.tree_insert(ents, ents[t as usize].node.child(left), x);
        ents[t as usize].node.set_child(left, c);
        let root = if tree_prio(ents[c as usize].node.seq) > tree_prio(ents[t as usize].node.seq) {
            let inner = ents[c as usize].node.child(!left);
            ents[t as usize].node.set_child(left, inner);
            ents[c as usize].node.set_child(!left, t);
            Self::tree_update(ents, t);
            c
        } else {
            t
        };
        Self::tree_update(ents, root);
        root
    }

    /// Join two subtrees, every entity of `a` before every entity of `b`.
    fn tree_merge(ents: &mut [SchedEntity], a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if tree_prio(ents[a as usize].node.seq) > tree_prio(ents[b as usize].node.seq) {
            let r = Self::tree_merge(ents, ents[a as usize].node.right, b);
            ents[a as usize].node.right = r;
            Self::tree_update(ents, a);
            a
        } else {
            let l = Self::tree_merge(ents, a, ents[b as usize].node.left);
            ents[b as usize].node.left = l;
            Self::tree_update(ents, b);
            b
        }
    }

    /// Remove `x` (at position `xp`) from the subtree `t`; returns the new root and whether
    /// it was found.
    fn tree_remove(&self, ents: &mut [SchedEntity], t: u32, x: u32, xp: (u64, u64)) -> (u32, bool) {
        if t == NIL {
            return (NIL, false);
        }
        if t == x {
            let n = ents[x as usize].node;
            return (Self::tree_merge(ents, n.left, n.right), true);
        }
        let found = if self.pos_before(xp, self.tree_pos(&ents[t as usize])) {
            let (l, f) = self.tree_remove(ents, ents[t as usize].node.left, x, xp);
            ents[t as usize].node.left = l;
            f
        } else {
            let (r, f) = self.tree_remove(ents, ents[t as usize].node.right, x, xp);
            ents[t as usize].node.right = r;
            f
        };
        if found {
            Self::tree_update(ents, t);
        }
        (t, found)
    }

    /// The leftmost entity of the tree.
    fn tree_leftmost(&self, ents: &[SchedEntity]) -> u32 {
        let mut n = self.root;
        if n == NIL {
            return NIL;
        }
        while ents[n as usize].node.left != NIL {
            n = ents[n as usize].node.left;
        }
        n
    }

    /// The first entity in tree order whose vruntime is eligible: the kernel's `pick_eevdf()`
    /// heap search. Eligibility is monotone in vruntime, so a subtree holds an eligible entity
    /// iff its minimum vruntime is eligible.
    fn first_eligible(&self, ents: &[SchedEntity]) -> Option<u32> {
        let mut n = self.root;
        while n != NIL {
            let node = ents[n as usize].node;
            if node.left != NIL && self.vruntime_eligible(ents, ents[node.left as usize].node.min_vruntime) {
                n = node.left;
                continue;
            }
            if self.vruntime_eligible(ents, ents[n as usize].vruntime) {
                return Some(n);
            }
            if node.right != NIL && self.vruntime_eligible(ents, ents[node.right as usize].node.min_vruntime) {
                n = node.right;
                continue;
            }
            return None;
        }
        None
    }

    fn curr_on_rq<'a>(&self, ents: &'a [SchedEntity]) -> Option<&'a SchedEntity> {
        self.curr.map(|c| &ents[c as usize]).filter(|se| se.on_rq)
    }

    /// Models `entity_key()` — kernel/sched/fair.c @ v6.10.
    #[inline]
    fn entity_key(&self, se: &SchedEntity) -> i64 {
        se.vruntime.wrapping_sub(self.min_vruntime) as i64
    }

    /// The tree order: `entity_before()` on deadline (v6.10) or vruntime (v6.5).
    #[inline]
    fn tree_before(&self, a: &SchedEntity, b: &SchedEntity) -> bool {
        match self.policy {
            FairPolicy::Eevdf => vbefore(a.deadline, b.deadline),
            FairPolicy::Cfs => vbefore(a.vruntime, b.vruntime),
        }
    }

    /// Models `avg_vruntime_add()` — kernel/sched/fair.c @ v6.10.
    fn avg_vruntime_add(&mut self, se: &SchedEntity) {
        let key = self.entity_key(se);
        self.avg_vruntime = self.avg_vruntime.wrapping_add(key.wrapping_mul(se.weight as i64));
        self.avg_load += se.weight;
    }

    /// Models `avg_vruntime_sub()` — kernel/sched/fair.c @ v6.10.
    fn avg_vruntime_sub(&mut self, se: &SchedEntity) {
        let key = self.entity_key(se);
        self.avg_vruntime = self.avg_vruntime.wrapping_sub(key.wrapping_mul(se.weight as i64));
        self.avg_load -= se.weight;
    }

    /// Models `__enqueue_entity()` — kernel/sched/fair.c @ v6.10.
    fn enqueue_tree(&mut self, ents: &mut [SchedEntity], id: u32) {
        debug_assert_eq!(ents[id as usize].id, id, "entity table must be indexed by id");
        // After every entity whose key is not later than ours (equal keys go right): the
        // insertion number is larger than every queued one.
        self.seq += 1;
        let v = ents[id as usize].vruntime;
        ents[id as usize].node = TreeNode { left: NIL, right: NIL, seq: self.seq, min_vruntime: v };
        self.root = self.tree_insert(ents, self.root, id);
        self.nr_queued += 1;
        if self.leftmost == NIL || self.tree_before(&ents[id as usize], &ents[self.leftmost as usize]) {
            self.leftmost = id;
        }
        self.avg_vruntime_add(&ents[id as usize]);
    }

    /// Models `__dequeue_entity()` — kernel/sched/fair.c @ v6.10. Returns false if not queued.
    fn dequeue_tree(&mut self, ents: &mut [SchedEntity], id: u32) -> bool {
        let pos = self.tree_pos(&ents[id as usize]);
        let (root, found) = self.tree_remove(ents, self.root, id, pos);
        if !found {
            return false;
        }
        self.root = root;
        self.nr_queued -= 1;
        if self.leftmost == id {
            self.leftmost = self.tree_leftmost(ents);
        }
        self.avg_vruntime_sub(&ents[id as usize]);
        true
    }

    /// Σ key·w and Σ w including an on-rq curr.
    fn avg_sums(&self, ents: &[SchedEntity]) -> (i128, i128) {
        let mut avg = self.avg_vruntime as i128;
        let mut load = self.avg_load as i128;
        if let Some(c) = self.curr_on_rq(ents) {
            avg += self.entity_key(c) as i128 * c.weight as i128;
            load += c.weight as i128;
        }
        (avg, load)
    }

    /// Models `avg_vruntime()` — kernel/sched/fair.c @ v6.10: the load-weighted mean vruntime
    /// V, rounded towards -inf so that an entity at V is eligible.
    pub fn avg_vruntime(&self, ents: &[SchedEntity]) -> u64 {
        let (mut avg, load) = self.avg_sums(ents);
        if load != 0 {
            if avg < 0 {
                avg -= load - 1;
            }
            avg /= load;
        }
        self.min_vruntime.wrapping_add(avg as i64 as u64)
    }

    /// Models `vruntime_eligible()` — kernel/sched/fair.c @ v6.10: V >= vruntime, without the
    /// division.
    fn vruntime_eligible(&self, ents: &[SchedEntity], vruntime: u64) -> bool {
        let (avg, load) = self.avg_sums(ents);
        avg >= (vruntime.wrapping_sub(self.min_vruntime) as i64) as i128 * load
    }

    /// Models `entity_eligible()` — kernel/sched/fair.c @ v6.10: lag >= 0.
    pub fn entity_eligible(&self, ents: &[SchedEntity], id: u32) -> bool {
        self.vruntime_eligible(ents, ents[id as usize].vruntime)
    }

    /// The lag `V - v` of an on-rq entity, in virtual ns (unclamped).
    pub fn entity_lag(&self, ents: &[SchedEntity], id: u32) -> i64 {
        self.avg_vruntime(ents).wrapping_sub(ents[id as usize].vruntime) as i64
    }

    /// Models `update_min_vruntime()` — kernel/sched/fair.c @ v6.10 (`__update_min_vruntime()`
    /// shifting `avg_vruntime`; tree minimum = smallest queued vruntime) and @ v6.5 (leftmost).
    fn update_min_vruntime(&mut self, ents: &[SchedEntity]) {
        let curr = self.curr_on_rq(ents).map(|c| c.vruntime);
        let mut v = curr.unwrap_or(self.min_vruntime);
        let tree_min = match self.policy {
            FairPolicy::Cfs => self.first_queued().map(|q| ents[q as usize].vruntime),
            FairPolicy::Eevdf => (self.root != NIL).then(|| ents[self.root as usize].node.min_vruntime),
        };
        if let Some(tv) = tree_min {
            v = match curr {
                None => tv,
                Some(_) => min_vruntime(v, tv),
            };
        }
        let delta = v.wrapping_sub(self.min_vruntime) as i64;
        if delta > 0 {
            // Every key shrinks by delta: avg_vruntime -= avg_load * delta.
            self.avg_vruntime = self.avg_vruntime.wrapping_sub((self.avg_load as i64).wrapping_mul(delta));
            self.min_vruntime = v;
        }
    }

    /// Models `update_deadline()` — kernel/sched/fair.c @ v6.10: once curr's vruntime reaches
    /// its deadline it gets a new slice; returns true (resched) if others are runnable.
    fn update_deadline(&mut self, ents: &mut [SchedEntity], id: u32) -> bool {
        let se = &mut ents[id as usize];
        if vbefore(se.vruntime, se.deadline) {
            return false;
        }
        se.slice = self.tun.base_slice_ns;
        se.deadline = se.vruntime.wrapping_add(calc_delta_fair(se.slice, se.weight));
        self.nr_running > 1
    }

    /// Models `update_curr()` — kernel/sched/fair.c @ v6.10 / v6.5: charge the time since
    /// `exec_start` to curr (sum_exec_runtime, vruntime += calc_delta_fair), EEVDF
    /// `update_deadline()`, then `update_min_vruntime()`. Returns true if the kernel would call
    /// `resched_curr()` (EEVDF: curr used up its request and others wait).
    pub fn update_curr(&mut self, ents: &mut [SchedEntity], now: u64) -> bool {
        let Some(c) = self.curr else {
            return false;
        };
        let se = &mut ents[c as usize];
        let delta = now.wrapping_sub(se.exec_start) as i64;
        if delta <= 0 {
            return false;
        }
        let delta = delta as u64;
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        se.vruntime = se.vruntime.wrapping_add(calc_delta_fair(delta, se.weight));
        let resched = match self.policy {
            FairPolicy::Eevdf => self.update_deadline(ents, c),
            FairPolicy::Cfs => false,
        };
        self.update_min_vruntime(ents);
        resched
    }

    /// Models `sched_slice()` — kernel/sched/fair.c @ v6.5 (ALT_PERIOD and BASE_SLICE on, no
    /// hierarchy): the entity's weighted share of `__sched_period()`, at least min_granularity.
    pub fn sched_slice(&self, se: &SchedEntity) -> u64 {
        let nr = self.nr_running as u64 + u64::from(!se.on_rq);
        // __sched_period()
        let period = if nr > self.tun.nr_latency { nr * self.tun.min_granularity_ns } else { self.tun.latency_ns };
        let load = self.load_weight + if se.on_rq { 0 } else { se.weight };
        let slice = calc_delta(period, se.weight, raw_inv_weight(load));
        slice.max(self.tun.min_granularity_ns)
    }

    /// Models `sched_vslice()` — kernel/sched/fair.c @ v6.5.
    pub fn sched_vslice(&self, se: &SchedEntity) -> u64 {
        calc_delta_fair(self.sched_slice(se), se.weight)
    }

    /// Models `place_entity()` — kernel/sched/fair.c @ v6.10 (EEVDF): vruntime = V - lag, with
    /// the lag inflated by (W + w) / W so that it survives the entity's own effect on V
    /// (PLACE_LAG); deadline = vruntime + vslice, halved for new tasks (PLACE_DEADLINE_INITIAL).
    fn place_entity_eevdf(&mut self, ents: &mut [SchedEntity], id: u32, initial: bool) {
        let vruntime = self.avg_vruntime(ents);
        let curr_w = self.curr_on_rq(ents).map_or(0, |c| c.weight);
        let nr_running = self.nr_running;
        let se = &mut ents[id as usize];
        se.slice = self.tun.base_slice_ns;
        let mut vslice = calc_delta_fair(se.slice, se.weight);
        let mut lag: i64 = 0;
        if self.feat.place_lag && nr_running > 0 {
            let mut load = (self.avg_load + curr_w) as i128;
            let num = se.vlag as i128 * (load + se.weight as i128);
            if load == 0 {
                load = 1;
            }
            lag = (num / load) as i64;
        }
        se.vruntime = vruntime.wrapping_sub(lag as u64);
        if self.feat.place_deadline_initial && initial {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// Models `place_entity()` — kernel/sched/fair.c @ v6.5 (CFS): new tasks start one vslice
    /// after min_vruntime (START_DEBIT); wakers get at most latency/2 of sleeper credit
    /// (GENTLE_FAIR_SLEEPERS); never placed backwards.
    fn place_entity_cfs(&mut self, ents: &mut [SchedEntity], id: u32, initial: bool) {
        let mut vruntime = self.min_vruntime;
        if initial && self.feat.start_debit {
            vruntime = vruntime.wrapping_add(self.sched_vslice(&ents[id as usize]));
        }
        if !initial {
            let mut thresh = self.tun.latency_ns;
            if self.feat.gentle_fair_sleepers {
                thresh >>= 1;
            }
            vruntime = vruntime.wrapping_sub(thresh);
        }
        let se = &mut ents[id as usize];
        se.vruntime = max_vruntime(se.vruntime, vruntime);
    }

    /// Models `update_entity_lag()` — kernel/sched/fair.c @ v6.10: vlag = V - v clamped to
    /// ±calc_delta_fair(max(2 * slice, TICK_NSEC)).
    fn update_entity_lag(&self, ents: &mut [SchedEntity], id: u32) {
        let avg = self.avg_vruntime(ents);
        let se = &mut ents[id as usize];
        let vlag = avg.wrapping_sub(se.vruntime) as i64;
        let limit = calc_delta_fair((2 * se.slice).max(self.tun.tick_ns), se.weight) as i64;
        se.vlag = vlag.clamp(-limit, limit);
    }

    /// Models `update_load_avg()` for one entity and this cfs_rq (no attach/detach).
    fn update_load_avg_se(&mut self, ents: &mut [SchedEntity], id: u32, now: u64) {
        let running = self.curr == Some(id);
        let se = &mut ents[id as usize];
        if se.avg_attached {
            update_load_avg(&mut se.avg, now, running, se.on_rq, se.weight);
        }
        self.update_cfs_avg(now);
    }

    /// Models `update_cfs_rq_load_avg()` → `__update_load_avg_cfs_rq()` — kernel/sched/pelt.c
    /// @ v6.10.
    pub fn update_cfs_avg(&mut self, now: u64) -> bool {
        update_cfs_rq_load_avg(&mut self.avg, now, self.load_weight, self.nr_running as u64, self.curr.is_some())
    }

    /// Models `enqueue_entity()` — kernel/sched/fair.c @ v6.10 (EEVDF) / @ v6.5 (CFS), with the
    /// `task_fork_fair()` placement for `initial` and `wake_up_new_task()`'s PELT init.
    ///
    /// EEVDF: `place_entity()` from the entity's `vlag`. CFS: renormalise vruntime by this
    /// `min_vruntime` unless it is a same-CPU wakeup, then sleeper credit for wakeups. Returns
    /// true if `update_curr()` asked for a resched of curr.
    pub fn enqueue_entity(&mut self, ents: &mut [SchedEntity], id: u32, now: u64, flags: EnqueueFlags) -> bool {
        debug_assert!(!ents[id as usize].on_rq, "entity {id} is already on a cfs_rq");
        let is_curr = self.curr == Some(id);
        let mut resched = false;
        if flags.initial {
            // __sched_fork()
            let se = &mut ents[id as usize];
            se.vruntime = 0;
            se.vlag = 0;
            se.sum_exec_runtime = 0;
            se.prev_sum_exec_runtime = 0;
        }
        match self.policy {
            FairPolicy::Eevdf => {
                if is_curr {
                    self.place_entity_eevdf(ents, id, flags.initial);
                }
                resched |= self.update_curr(ents, now);
                self.enqueue_load_avg(ents, id, now, flags.initial);
                if !is_curr {
                    self.place_entity_eevdf(ents, id, flags.initial);
                }
                self.account_entity_enqueue(&ents[id as usize]);
            }
            FairPolicy::Cfs => {
                if flags.initial {
                    // task_fork_fair(): inherit the parent's vruntime, then START_DEBIT.
                    resched |= self.update_curr(ents, now);
                    let parent_v = self.curr_on_rq(ents).map_or(0, |c| c.vruntime);
                    ents[id as usize].vruntime = parent_v;
                    self.place_entity_cfs(ents, id, true);
                } else {
                    let renorm = !flags.wakeup || flags.migrated;
                    if renorm && is_curr {
                        let se = &mut ents[id as usize];
                        se.vruntime = se.vruntime.wrapping_add(self.min_vruntime);
                    }
                    resched |= self.update_curr(ents, now);
                    if renorm && !is_curr {
                        let se = &mut ents[id as usize];
                        se.vruntime = se.vruntime.wrapping_add(self.min_vruntime);
                    }
                }
                self.enqueue_load_avg(ents, id, now, flags.initial);
                self.account_entity_enqueue(&ents[id as usize]);
                if flags.wakeup && !flags.initial {
                    self.place_entity_cfs(ents, id, false);
                }
            }
        }
        if flags.migrated {
            ents[id as usize].exec_start = 0;
        }
        if !is_curr {
            self.enqueue_tree(ents, id);
        }
        ents[id as usize].on_rq = true;
        resched
    }

    /// Models `account_entity_enqueue()` — kernel/sched/fair.c @ v6.10.
    fn account_entity_enqueue(&mut self, se: &SchedEntity) {
        self.load_weight += se.weight;
        self.nr_running += 1;
    }

    /// Models `account_entity_dequeue()` — kernel/sched/fair.c @ v6.10.
    fn account_entity_dequeue(&mut self, se: &SchedEntity) {
        self.load_weight -= se.weight;
        self.nr_running -= 1;
    }

    /// The PELT part of enqueue: `update_load_avg(cfs_rq, se, UPDATE_TG | DO_ATTACH)`, or for a
    /// new task `init_entity_runnable_average()` + `post_init_entity_util_avg()` +
    /// `attach_entity_cfs_rq()` — kernel/sched/fair.c @ v6.10.
    fn enqueue_load_avg(&mut self, ents: &mut [SchedEntity], id: u32, now: u64, initial: bool) {
        let se = &mut ents[id as usize];
        if initial {
            init_entity_runnable_average(&mut se.avg, se.weight);
            post_init_entity_util_avg(&self.avg, &mut se.avg, se.weight);
            se.avg_attached = false;
        }
        self.update_load_avg_se(ents, id, now);
        let se = &mut ents[id as usize];
        if !se.avg_attached {
            attach_entity_load_avg(&mut self.avg, &mut se.avg, se.weight);
            se.avg_attached = true;
        }
    }

    /// Models `dequeue_entity()` — kernel/sched/fair.c @ v6.10 (EEVDF: `update_entity_lag()`)
    /// / @ v6.5 (CFS: vruntime made relative to `min_vruntime` unless sleeping). With
    /// `migrating`, the PELT average is detached from this cfs_rq (DO_DETACH) and the entity is
    /// marked for attach on the destination. Returns true if `update_curr()` asked for a resched.
    ///
    /// With DELAY_DEQUEUE (EEVDF, v6.12): a sleep dequeue (not DEQUEUE_SPECIAL) of an entity
    /// that is not eligible only marks it `sched_delayed` and leaves it queued (the caller sees
    /// it still `on_rq`); DEQUEUE_DELAYED finishes such a dequeue, and with DELAY_ZERO clips a
    /// positive lag to 0 (`finish_delayed_dequeue_entity()`).
    pub fn dequeue_entity(&mut self, ents: &mut [SchedEntity], id: u32, now: u64, flags: DequeueFlags) -> bool {
        debug_assert!(ents[id as usize].on_rq, "entity {id} is not on a cfs_rq");
        let resched = self.update_curr(ents, now);
        debug_assert_eq!(flags.delayed, ents[id as usize].sched_delayed, "DEQUEUE_DELAYED is for delayed entities");
        if !flags.delayed
            && flags.sleep
            && !flags.special
            && self.feat.delay_dequeue
            && self.policy == FairPolicy::Eevdf
            && !self.entity_eligible(ents, id)
        {
            // update_load_avg(cfs_rq, se, 0); set_delayed(se).
            self.update_load_avg_se(ents, id, now);
            ents[id as usize].sched_delayed = true;
            self.nr_delayed += 1;
            return resched;
        }
        self.update_load_avg_se(ents, id, now);
        if flags.migrating {
            let se = &mut ents[id as usize];
            if se.avg_attached {
                detach_entity_load_avg(&mut self.avg, &mut se.avg, se.weight);
                se.avg_attached = false;
            }
        }
        if self.policy == FairPolicy::Eevdf {
            self.update_entity_lag(ents, id);
        }
        if self.curr != Some(id) {
            self.dequeue_tree(ents, id);
        }
        ents[id as usize].on_rq = false;
        self.account_entity_dequeue(&ents[id as usize]);
        if self.policy == FairPolicy::Cfs && !flags.sleep {
            let se = &mut ents[id as usize];
            se.vruntime = se.vruntime.wrapping_sub(self.min_vruntime);
        }
        if flags.migrating {
            // migrate_task_rq_fair(): no longer cache hot here.
            ents[id as usize].exec_start = 0;
        }
        self.update_min_vruntime(ents);
        if flags.delayed {
            // finish_delayed_dequeue_entity(): clear_delayed(), DELAY_ZERO.
            self.nr_delayed -= 1;
            let se = &mut ents[id as usize];
            se.sched_delayed = false;
            if self.feat.delay_zero && se.vlag > 0 {
                se.vlag = 0;
            }
        }
        resched
    }

    /// Models `requeue_delayed_entity()` — kernel/sched/fair.c @ v6.12, for a wakeup of a
    /// delayed entity (`ttwu_runnable()` -> `enqueue_task(ENQUEUE_DELAYED)`): it never left
    /// the queue, so only its mark goes; with DELAY_ZERO an entity that became eligible while
    /// it slept (positive lag) is placed again at lag 0, with a new deadline.
    pub fn requeue_delayed_entity(&mut self, ents: &mut [SchedEntity], id: u32, now: u64) {
        debug_assert!(ents[id as usize].sched_delayed && ents[id as usize].on_rq, "entity {id} is not delayed");
        if self.feat.delay_zero {
            self.update_entity_lag(ents, id);
            if ents[id as usize].vlag > 0 {
                let is_curr = self.curr == Some(id);
                self.nr_running -= 1;
                if !is_curr {
                    self.dequeue_tree(ents, id);
                }
                ents[id as usize].vlag = 0;
                self.place_entity_eevdf(ents, id, false);
                if !is_curr {
                    self.enqueue_tree(ents, id);
                }
                self.nr_running += 1;
            }
        }
        self.update_load_avg_se(ents, id, now);
        ents[id as usize].sched_delayed = false;
        self.nr_delayed -= 1;
    }

    /// Models `reweight_entity()` — kernel/sched/fair.c @ v6.10 for an entity that is not on
    /// the cfs_rq (its caller, `set_user_nice()` or `__sched_setscheduler()` ->
    /// `set_load_weight()`, dequeued it first): EEVDF scales its lag by old/new weight, and its
    /// PELT load average is rebuilt from its load sum at the new weight (taken out of the
    /// cfs_rq's load and put back when it is attached here).
    pub fn reweight_dequeued_entity(&mut self, ents: &mut [SchedEntity], id: u32, weight: u64) {
        let weight = weight.max(1);
        let divider = pelt_divider(&self.avg);
        let se = &mut ents[id as usize];
        debug_assert!(!se.on_rq, "reweight_dequeued_entity() of a queued entity");
        let old = se.weight;
        if old == weight {
            return;
        }
        if self.policy == FairPolicy::Eevdf {
            se.vlag = ((se.vlag as i128 * old as i128) / weight as i128) as i64;
        }
        if se.avg_attached {
            self.avg.load_avg = self.avg.load_avg.saturating_sub(se.avg.load_avg);
            self.avg.load_sum = self.avg.load_sum.saturating_sub(old * se.avg.load_sum);
            self.avg.load_sum = self.avg.load_sum.max(self.avg.load_avg * PELT_MIN_DIVIDER);
        }
        se.weight = weight;
        se.avg.load_avg = weight * se.avg.load_sum / divider.max(1);
        if se.avg_attached {
            self.avg.load_avg += se.avg.load_avg;
            self.avg.load_sum += weight * se.avg.load_sum;
        }
    }

    /// Models the TASK_WAKING case of `migrate_task_rq_fair()` — kernel/sched/fair.c @ v6.10 /
    /// v6.5: a blocked entity that will be woken on another CPU leaves this (its previous)
    /// cfs_rq. CFS makes its vruntime relative to this `min_vruntime`; both remove its PELT
    /// contribution (`remove_entity_load_avg()`). Call only for entities that are not on_rq;
    /// queued entities migrate with `dequeue_entity(.., migrating)`.
    pub fn migrate_task_rq(&mut self, ents: &mut [SchedEntity], id: u32) {
        let se = &mut ents[id as usize];
        debug_assert!(!se.on_rq, "migrate_task_rq() is for blocked entities");
        if self.policy == FairPolicy::Cfs {
            se.vruntime = se.vruntime.wrapping_sub(self.min_vruntime);
        }
        if se.avg_attached {
            remove_entity_load_avg(&mut self.avg, &mut se.avg, se.weight);
            se.avg_attached = false;
        }
        se.exec_start = 0;
    }

    /// Models `pick_eevdf()` — kernel/sched/fair.c @ v6.10: the eligible entity with the
    /// earliest virtual deadline, curr included if still eligible; with RUN_TO_PARITY an
    /// eligible curr that has not been given a new slice since it was picked
    /// (`vlag == deadline`) is kept.
    pub fn pick_eevdf(&self, ents: &[SchedEntity]) -> Option<u32> {
        let curr = self.curr.filter(|&c| ents[c as usize].on_rq);
        let first = self.first_queued();
        if self.nr_running == 1 {
            return curr.or(first);
        }
        let curr = curr.filter(|&c| self.entity_eligible(ents, c));
        if let Some(c) = curr {
            let se = &ents[c as usize];
            if self.feat.run_to_parity && se.vlag as u64 == se.deadline {
                return Some(c);
            }
        }
        let best = self.first_eligible(ents);
        match (best, curr) {
            (Some(b), Some(c)) if vbefore(ents[c as usize].deadline, ents[b as usize].deadline) => Some(c),
            (Some(b), _) => Some(b),
            (None, c) => c.or(first),
        }
    }

    /// Models `pick_next_entity()` — kernel/sched/fair.c @ v6.5 without buddies: the leftmost
    /// (smallest vruntime) entity, or curr if it is strictly left of it.
    fn pick_cfs(&self, ents: &[SchedEntity]) -> Option<u32> {
        let curr = self.curr.filter(|&c| ents[c as usize].on_rq);
        let left = self.first_queued();
        match (left, curr) {
            (Some(l), Some(c)) if vbefore(ents[c as usize].vruntime, ents[l as usize].vruntime) => Some(c),
            (Some(l), _) => Some(l),
            (None, c) => c,
        }
    }

    /// The entity the policy would run next, without updating curr first.
    pub fn peek_next_entity(&self, ents: &[SchedEntity]) -> Option<u32> {
        match self.policy {
            FairPolicy::Eevdf => self.pick_eevdf(ents),
            FairPolicy::Cfs => self.pick_cfs(ents),
        }
    }

    /// Models the flat-hierarchy step of `pick_next_task_fair()` — kernel/sched/fair.c @ v6.10:
    /// `update_curr()` if curr is still on the rq, then `pick_next_entity()` (curr considered;
    /// NEXT_BUDDY off). Returns None if nothing is runnable.
    pub fn pick_next_entity(&mut self, ents: &mut [SchedEntity], now: u64) -> Option<u32> {
        if self.curr_on_rq(ents).is_some() {
            self.update_curr(ents, now);
        }
        self.peek_next_entity(ents)
    }

    /// Models `set_next_entity()` — kernel/sched/fair.c @ v6.10: take `id` out of the queue and
    /// make it curr; EEVDF stashes its deadline in `vlag` (the RUN_TO_PARITY marker); starts a
    /// new run (`exec_start`, `prev_sum_exec_runtime`). A different curr is put back first.
    pub fn set_next_entity(&mut self, ents: &mut [SchedEntity], id: u32, now: u64) {
        if self.curr.is_some_and(|c| c != id) {
            self.put_prev_entity(ents, now);
        }
        if ents[id as usize].on_rq {
            self.dequeue_tree(ents, id);
            self.update_load_avg_se(ents, id, now);
            if self.policy == FairPolicy::Eevdf {
                let se = &mut ents[id as usize];
                se.vlag = se.deadline as i64;
            }
        }
        self.curr = Some(id);
        let se = &mut ents[id as usize];
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// Models `put_prev_entity()` — kernel/sched/fair.c @ v6.10: charge curr and, if it is still
    /// runnable, put it back in the queue; curr becomes None.
    pub fn put_prev_entity(&mut self, ents: &mut [SchedEntity], now: u64) {
        let Some(c) = self.curr else {
            return;
        };
        if ents[c as usize].on_rq {
            self.update_curr(ents, now);
            self.enqueue_tree(ents, c);
            self.update_load_avg_se(ents, c, now);
        }
        self.curr = None;
    }

    /// Switch to `next` as `pick_next_task_fair()` does: nothing if it already is curr,
    /// otherwise `put_prev_entity()` + `set_next_entity()`.
    pub fn switch_to(&mut self, ents: &mut [SchedEntity], next: u32, now: u64) {
        if self.curr == Some(next) {
            return;
        }
        self.put_prev_entity(ents, now);
        self.set_next_entity(ents, next, now);
    }

    /// Models `wakeup_preempt_entity()` — kernel/sched/fair.c @ v6.5: 1 if `curr` is ahead of
    /// `se` by more than the wakeup granularity scaled to `se`'s weight (`wakeup_gran()`), -1
    /// if not ahead at all, else 0.
    pub fn wakeup_preempt_entity(&self, ents: &[SchedEntity], curr: u32, se: u32) -> i32 {
        let c = &ents[curr as usize];
        let s = &ents[se as usize];
        let vdiff = c.vruntime.wrapping_sub(s.vruntime) as i64;
        if vdiff <= 0 {
            return -1;
        }
        let gran = calc_delta_fair(self.tun.wakeup_granularity_ns, s.weight) as i64;
        i32::from(vdiff > gran)
    }

    /// Models `wakeup_preempt_fair()` — kernel/sched/fair.c @ v6.10 (EEVDF: preempt iff
    /// `pick_eevdf()` now picks the woken entity, which RUN_TO_PARITY can prevent) and
    /// `check_preempt_wakeup()` @ v6.5 (CFS: `wakeup_preempt_entity() == 1`). `woken` must
    /// already be enqueued. Returns true if curr should be rescheduled (including a resched from
    /// `update_curr()`); true also when the cfs_rq has no curr (the CPU runs its idle task).
    pub fn check_preempt_wakeup(&mut self, ents: &mut [SchedEntity], woken: u32, now: u64) -> bool {
        let Some(c) = self.curr else {
            return true;
        };
        if c == woken || !self.feat.wakeup_preemption {
            return false;
        }
        let resched = self.update_curr(ents, now);
        let preempt = match self.policy {
            FairPolicy::Eevdf => self.pick_eevdf(ents) == Some(woken),
            FairPolicy::Cfs => self.wakeup_preempt_entity(ents, c, woken) == 1,
        };
        resched || preempt
    }

    /// Models `yield_task_fair()` — kernel/sched/fair.c @ v6.10 (EEVDF): unless curr is alone,
    /// charge it (`update_curr()`) and push its virtual deadline one request further, so the
    /// `schedule()` that follows prefers any other eligible entity. CFS (v6.5) marks curr as
    /// the skip buddy instead; the model has no buddies, so on CFS yield only charges curr.
    pub fn yield_task(&mut self, ents: &mut [SchedEntity], now: u64) {
        let Some(c) = self.curr else {
            return;
        };
        if self.nr_running <= 1 {
            return;
        }
        self.update_curr(ents, now);
        if self.policy == FairPolicy::Eevdf {
            let se = &mut ents[c as usize];
            se.deadline = se.deadline.wrapping_add(calc_delta_fair(se.slice, se.weight));
        }
    }

    /// Models `entity_tick()` — kernel/sched/fair.c @ v6.10 / v6.5: `update_curr()`, PELT
    /// update, and for CFS `check_preempt_tick()` when others are runnable. Returns true if the
    /// kernel would `resched_curr()`: EEVDF when curr reached its deadline (`update_deadline()`),
    /// CFS as in [`CfsRq::check_preempt_tick_cfs`].
    pub fn check_preempt_tick(&mut self, ents: &mut [SchedEntity], now: u64) -> bool {
        let Some(c) = self.curr else {
            return false;
        };
        let mut resched = self.update_curr(ents, now);
        self.update_load_avg_se(ents, c, now);
        if self.policy == FairPolicy::Cfs && self.nr_running > 1 {
            resched |= self.check_preempt_tick_cfs(ents);
        }
        resched
    }

    /// Models `check_preempt_tick()` — kernel/sched/fair.c @ v6.5: resched once curr has run
    /// more than `ideal = min(sched_slice(), latency)` since it was picked; or, after at least
    /// min_granularity, once its vruntime is more than `ideal` ahead of the leftmost's.
    pub fn check_preempt_tick_cfs(&self, ents: &[SchedEntity]) -> bool {
        let Some(c) = self.curr else {
            return false;
        };
        let se = &ents[c as usize];
        let ideal = self.sched_slice(se).min(self.tun.latency_ns);
        let delta_exec = se.sum_exec_runtime.wrapping_sub(se.prev_sum_exec_runtime);
        if delta_exec > ideal {
            return true;
        }
        if delta_exec < self.tun.min_granularity_ns {
            return false;
        }
        let Some(l) = self.first_queued() else {
            return false;
        };
        let delta = se.vruntime.wrapping_sub(ents[l as usize].vruntime) as i64;
        delta >= 0 && delta as u64 > ideal
    }
}

// ---------------------------------------------------------------------------------------------
// PELT
// ---------------------------------------------------------------------------------------------

/// Models `decay_load()` — kernel/sched/pelt.c @ v6.10: val * y^n, y^32 = 1/2, in 32-bit fixed
/// point; 0 after 2016 periods.
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut val = val;
    let mut n = n;
    if n >= LOAD_AVG_PERIOD {
        val >>= n / LOAD_AVG_PERIOD;
        n %= LOAD_AVG_PERIOD;
    }
    mul_u64_u32_shr(val, RUNNABLE_AVG_YN_INV[n as usize], 32)
}

/// Models `__accumulate_pelt_segments()` — kernel/sched/pelt.c @ v6.10: the contribution of
/// the old period's remainder `d1` (decayed `periods` times), the full periods in between, and
/// the new period's part `d3`.
fn accumulate_pelt_segments(periods: u64, d1: u32, d3: u32) -> u32 {
    let c1 = decay_load(d1 as u64, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    (c1 + c2) as u32 + d3
}

/// Models `accumulate_sum()` — kernel/sched/pelt.c @ v6.10. `delta` is in 1024-ns units.
/// Returns the number of period boundaries crossed.
fn accumulate_sum(delta: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: bool) -> u64 {
    // With no period crossed, delta < 1024 and is the whole contribution.
    let mut contrib = delta as u32;
    let mut delta = delta + sa.period_contrib as u64;
    let periods = delta / 1024;
    if periods != 0 {
        sa.load_sum = decay_load(sa.load_sum, periods);
        sa.runnable_sum = decay_load(sa.runnable_sum, periods);
        sa.util_sum = decay_load(sa.util_sum, periods);
        delta %= 1024;
        if load != 0 {
            contrib = accumulate_pelt_segments(periods, 1024 - sa.period_contrib, delta as u32);
        }
    }
    sa.period_contrib = delta as u32;
    if load != 0 {
        sa.load_sum += load * contrib as u64;
    }
    if runnable != 0 {
        sa.runnable_sum += (runnable * contrib as u64) << SCHED_CAPACITY_SHIFT;
    }
    if running {
        sa.util_sum += (contrib as u64) << SCHED_CAPACITY_SHIFT;
    }
    periods
}

/// Models `___update_load_sum()` — kernel/sched/pelt.c @ v6.10: advance the sums to `now`
/// (ns, consumed in 1024-ns units). Returns true if a period boundary was crossed.
fn update_load_sum(now: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: bool) -> bool {
    let delta = now.wrapping_sub(sa.last_update_time);
    if (delta as i64) < 0 {
        // The clock went backwards (migration between unsynchronised clocks): resync.
        sa.last_update_time = now;
        return false;
    }
    let delta = delta >> 10;
    if delta == 0 {
        return false;
    }
    sa.last_update_time += delta << 10;
    // Not runnable implies neither runnable nor running.
    let (runnable, running) = if load == 0 { (0, false) } else { (runnable, running) };
    accumulate_sum(delta, sa, load, runnable, running) != 0
}

/// Models `get_pelt_divider()` — kernel/sched/pelt.h @ v6.10.
#[inline]
pub fn pelt_divider(sa: &SchedAvg) -> u64 {
    PELT_MIN_DIVIDER + sa.period_contrib as u64
}

/// Models `___update_load_avg()` — kernel/sched/pelt.c @ v6.10.
fn update_load_avg_from_sums(sa: &mut SchedAvg, load: u64) {
    let divider = pelt_divider(sa);
    sa.load_avg = load * sa.load_sum / divider;
    sa.runnable_avg = sa.runnable_sum / divider;
    sa.util_avg = sa.util_sum / divider;
}

/// Models `__update_load_avg_se()` — kernel/sched/pelt.c @ v6.10 for a task entity: the load
/// and runnable signals follow `runnable` (on_rq), util follows `running` (curr); `load_avg`
/// is scaled by `weight`. Returns true if the averages were recomputed (a period boundary was
/// crossed).
pub fn update_load_avg(avg: &mut SchedAvg, now_ns: u64, running: bool, runnable: bool, weight: u64) -> bool {
    let r = u64::from(runnable);
    if update_load_sum(now_ns, avg, r, r, running) {
        update_load_avg_from_sums(avg, weight);
        true
    } else {
        false
    }
}

/// Models `__update_load_avg_cfs_rq()` — kernel/sched/pelt.c @ v6.10: load follows the
/// cfs_rq's total weight, runnable its `nr_running`, util whether it has a curr.
pub fn update_cfs_rq_load_avg(
    avg: &mut SchedAvg,
    now_ns: u64,
    load_weight: u64,
    nr_running: u64,
    running: bool,
) -> bool {
    if update_load_sum(now_ns, avg, load_weight, nr_running, running) {
        update_load_avg_from_sums(avg, 1);
        true
    } else {
        false
    }
}

/// Models `init_entity_runnable_average()` — kernel/sched/fair.c @ v6.10: a new task starts
/// with full load so it looks heavy until it has history.
pub fn init_entity_runnable_average(se: &mut SchedAvg, weight: u64) {
    *se = SchedAvg { load_avg: weight, ..SchedAvg::default() };
}

/// Models `post_init_entity_util_avg()` — kernel/sched/fair.c @ v6.10 (CPU capacity 1024): a
/// new task's util is extrapolated from its cfs_rq's, capped at half the spare capacity.
pub fn post_init_entity_util_avg(cfs: &SchedAvg, se: &mut SchedAvg, weight: u64) {
    let cap = (SCHED_CAPACITY_SCALE as i64 - cfs.util_avg as i64) / 2;
    if cap > 0 {
        if cfs.util_avg != 0 {
            let util = cfs.util_avg * weight / (cfs.load_avg + 1);
            se.util_avg = util.min(cap as u64);
        } else {
            se.util_avg = cap as u64;
        }
    }
    se.runnable_avg = se.util_avg;
}

/// Models `attach_entity_load_avg()` + `enqueue_load_avg()` — kernel/sched/fair.c @ v6.10:
/// align the entity's window to the cfs_rq's, rebuild its sums from its averages, and add it to
/// the cfs_rq. The cfs_rq average should have been updated to now first.
pub fn attach_entity_load_avg(cfs: &mut SchedAvg, se: &mut SchedAvg, weight: u64) {
    let divider = pelt_divider(cfs);
    se.last_update_time = cfs.last_update_time;
    se.period_contrib = cfs.period_contrib;
    se.util_sum = se.util_avg * divider;
    se.runnable_sum = se.runnable_avg * divider;
    se.load_sum = se.load_avg * divider;
    if weight < se.load_sum {
        se.load_sum /= weight;
    } else {
        se.load_sum = 1;
    }
    cfs.load_avg += se.load_avg;
    cfs.load_sum += weight * se.load_sum;
    cfs.util_avg += se.util_avg;
    cfs.util_sum += se.util_sum;
    cfs.runnable_avg += se.runnable_avg;
    cfs.runnable_sum += se.runnable_sum;
}

/// Models `detach_entity_load_avg()` + `dequeue_load_avg()` — kernel/sched/fair.c @ v6.10:
/// subtract the entity's averages and sums from the cfs_rq, keeping each sum at least
/// avg * PELT_MIN_DIVIDER.
pub fn detach_entity_load_avg(cfs: &mut SchedAvg, se: &mut SchedAvg, weight: u64) {
    cfs.load_avg = cfs.load_avg.saturating_sub(se.load_avg);
    cfs.load_sum = cfs.load_sum.saturating_sub(weight * se.load_sum);
    cfs.load_sum = cfs.load_sum.max(cfs.load_avg * PELT_MIN_DIVIDER);
    cfs.util_avg = cfs.util_avg.saturating_sub(se.util_avg);
    cfs.util_sum = cfs.util_sum.saturating_sub(se.util_sum);
    cfs.util_sum = cfs.util_sum.max(cfs.util_avg * PELT_MIN_DIVIDER);
    cfs.runnable_avg = cfs.runnable_avg.saturating_sub(se.runnable_avg);
    cfs.runnable_sum = cfs.runnable_sum.saturating_sub(se.runnable_sum);
    cfs.runnable_sum = cfs.runnable_sum.max(cfs.runnable_avg * PELT_MIN_DIVIDER);
}

/// Models `remove_entity_load_avg()` and its application in `update_cfs_rq_load_avg()` —
/// kernel/sched/fair.c @ v6.10: sync a blocked entity to the cfs_rq's last update
/// (`sync_entity_load_avg()`), then take its averages out of the cfs_rq (applied immediately
/// here instead of through `cfs_rq->removed`).
pub fn remove_entity_load_avg(cfs: &mut SchedAvg, se: &mut SchedAvg, weight: u64) {
    if update_load_sum(cfs.last_update_time, se, 0, 0, false) {
        update_load_avg_from_sums(se, weight);
    }
    let divider = pelt_divider(cfs);
    cfs.load_avg = cfs.load_avg.saturating_sub(se.load_avg);
    cfs.load_sum = cfs.load_sum.saturating_sub(se.load_avg * divider);
    cfs.load_sum = cfs.load_sum.max(cfs.load_avg * PELT_MIN_DIVIDER);
    cfs.util_avg = cfs.util_avg.saturating_sub(se.util_avg);
    cfs.util_sum = cfs.util_sum.saturating_sub(se.util_avg * divider);
    cfs.util_sum = cfs.util_sum.max(cfs.util_avg * PELT_MIN_DIVIDER);
    cfs.runnable_avg = cfs.runnable_avg.saturating_sub(se.runnable_avg);
    cfs.runnable_sum = cfs.runnable_sum.saturating_sub(se.runnable_avg * divider);
    cfs.runnable_sum = cfs.runnable_sum.max(cfs.runnable_avg * PELT_MIN_DIVIDER);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn ents(weights: &[u64]) -> Vec<SchedEntity> {
        weights.iter().enumerate().map(|(i, &w)| SchedEntity::new(i as u32, w)).collect()
    }

    fn wake() -> EnqueueFlags {
        EnqueueFlags { wakeup: true, ..Default::default() }
    }

    fn new_task() -> EnqueueFlags {
        EnqueueFlags { initial: true, ..Default::default() }
    }

    fn sleep() -> DequeueFlags {
        DequeueFlags { sleep: true, ..Default::default() }
    }

    /// Check the cfs_rq's incremental sums against a recomputation.
    fn check_invariants(rq: &CfsRq, e: &[SchedEntity]) {
        let mut avg: i64 = 0;
        let mut load = 0;
        for &q in &rq.queued(e) {
            let se = &e[q as usize];
            assert!(se.on_rq);
            avg += se.vruntime.wrapping_sub(rq.min_vruntime) as i64 * se.weight as i64;
            load += se.weight;
        }
        assert_eq!(rq.avg_vruntime, avg);
        assert_eq!(rq.avg_load, load);
        let mut on: Vec<&SchedEntity> = rq.queued(e).iter().map(|&q| &e[q as usize]).collect();
        on.extend(rq.curr.map(|c| &e[c as usize]).filter(|c| c.on_rq));
        assert_eq!(rq.nr_running as usize, on.len());
        assert_eq!(rq.load_weight, on.iter().map(|s| s.weight).sum::<u64>());
        for w in rq.queued(e).windows(2) {
            assert!(!rq.tree_before(&e[w[1] as usize], &e[w[0] as usize]), "queue out of order");
        }
    }

    /// The tree against the old sorted `Vec` (binary-search insertion after equal keys,
    /// linear removal and eligibility scan): same order, same leftmost, same first eligible,
    /// same minimum vruntime, same walk while dequeuing, for any sequence of operations with
    /// many equal keys, under both policies.
    #[derive(Debug, Clone)]
    enum TreeOp {
        Insert {
            id: u32,
            key: u64,
            vruntime: u64,
        },
        Remove {
            id: u32,
        },
        /// Walk in order from the start, dequeuing every `nth` entity visited.
        WalkRemove {
            nth: usize,
        },
    }

    fn tree_op() -> impl proptest::strategy::Strategy<Value = TreeOp> {
        use proptest::prelude::*;
        prop_oneof![
            5 => (0..48u32, 0..12u64, 0..40u64).prop_map(|(id, key, vruntime)| TreeOp::Insert { id, key, vruntime }),
            3 => (0..48u32).prop_map(|id| TreeOp::Remove { id }),
            1 => (2..5usize).prop_map(|nth| TreeOp::WalkRemove { nth }),
        ]
    }

    proptest::proptest! {
        #[test]
        fn tree_agrees_with_a_sorted_vec(cfs in proptest::bool::ANY, ops in proptest::collection::vec(tree_op(), 1..300)) {
            let policy = if cfs { FairPolicy::Cfs } else { FairPolicy::Eevdf };
            let mut rq = CfsRq::new(policy, FairTunables::for_cpus(8));
            let mut e = ents(&[1024; 48]);
            for (i, se) in e.iter_mut().enumerate() {
                se.weight = 1024 + 335 * (i as u64 % 3);
            }
            let mut reference: Vec<u32> = Vec::new();
            let base = u64::MAX - 20; // keys straddle the wrap of u64
            for op in ops {
                match op {
                    TreeOp::Insert { id, key, vruntime } => {
                        if reference.contains(&id) {
                            continue;
                        }
                        let k = base.wrapping_add(key * 1000);
                        e[id as usize].deadline = k;
                        e[id as usize].vruntime = if cfs { k } else { base.wrapping_add(vruntime * 100) };
                        let se = e[id as usize].clone();
                        let pos = reference.partition_point(|&q| !rq.tree_before(&se, &e[q as usize]));
                        reference.insert(pos, id);
                        rq.enqueue_tree(&mut e, id);
                    }
                    TreeOp::Remove { id } => {
                        let was = reference.iter().position(|&q| q == id);
                        proptest::prop_assert_eq!(rq.is_queued(&e, id), was.is_some());
                        if let Some(i) = was {
                            reference.remove(i);
                        }
                        proptest::prop_assert_eq!(rq.dequeue_tree(&mut e, id), was.is_some());
                    }
                    TreeOp::WalkRemove { nth } => {
                        let snapshot = reference.clone();
                        let mut visited = Vec::new();
                        let mut after = None;
                        while let Some(p) = rq.next_queued(&e, after) {
                            after = Some(rq.tree_pos(&e[p as usize]));
                            if visited.len() % nth == 0 {
                                rq.dequeue_tree(&mut e, p);
                                reference.retain(|&q| q != p);
                            }
                            visited.push(p);
                        }
                        proptest::prop_assert_eq!(visited, snapshot);
                    }
                }
                proptest::prop_assert_eq!(rq.queued(&e), reference.clone());
                proptest::prop_assert_eq!(rq.nr_queued() as usize, reference.len());
                proptest::prop_assert_eq!(rq.first_queued(), reference.first().copied());
                let want = reference.iter().copied().find(|&q| rq.entity_eligible(&e, q));
                proptest::prop_assert_eq!(rq.first_eligible(&e), want);
                let min = reference.iter().map(|&q| e[q as usize].vruntime).reduce(min_vruntime);
                proptest::prop_assert_eq!((rq.root != NIL).then(|| e[rq.root as usize].node.min_vruntime), min);
            }
        }
    }

    /// Run a cfs_rq with ticks every `tick` ns until `end`, switching on every resched.
    /// Returns the (start, id) of each run.
    fn run(rq: &mut CfsRq, e: &mut [SchedEntity], start: u64, end: u64, tick: u64) -> Vec<(u64, u32)> {
        let mut runs = Vec::new();
        let next = rq.pick_next_entity(e, start).unwrap();
        rq.switch_to(e, next, start);
        runs.push((start, next));
        let mut t = start;
        while t < end {
            t += tick;
            if rq.check_preempt_tick(e, t) {
                let next = rq.pick_next_entity(e, t).unwrap();
                if rq.curr != Some(next) {
                    rq.switch_to(e, next, t);
                    runs.push((t, next));
                }
            }
            check_invariants(rq, e);
        }
        runs
    }

    // --- tunables and weights -----------------------------------------------------------

    #[test]
    fn base_slice_scales_with_log_cpus() {
        let s = |n| FairTunables::for_cpus(n).base_slice_ns;
        assert_eq!(s(1), 750 * US);
        assert_eq!(s(2), 1_500 * US);
        assert_eq!(s(4), 2_250 * US);
        assert_eq!(s(8), 3 * MS);
        assert_eq!(s(32), 3 * MS);
        assert_eq!(s(0), 750 * US);
        assert_eq!(s(3), 1_500 * US);
    }

    #[test]
    fn cfs_tunables_scale_with_log_cpus() {
        let t1 = FairTunables::for_cpus(1);
        assert_eq!((t1.latency_ns, t1.min_granularity_ns, t1.wakeup_granularity_ns), (6 * MS, 750 * US, MS));
        let t4 = FairTunables::for_cpus(4);
        assert_eq!((t4.latency_ns, t4.min_granularity_ns, t4.wakeup_granularity_ns), (18 * MS, 2_250 * US, 3 * MS));
        // docs/workloads.md 9.4: 24 ms / 3 ms / 4 ms on a large machine.
        let t128 = FairTunables::for_cpus(128);
        assert_eq!((t128.latency_ns, t128.min_granularity_ns, t128.wakeup_granularity_ns), (24 * MS, 3 * MS, 4 * MS));
        assert_eq!(t128.nr_latency, 8);
        assert_eq!(t1.tick_ns, 4 * MS);
        assert_eq!(FairTunables::for_cpus_hz(1, 1000).tick_ns, MS);
    }

    #[test]
    fn weight_table_and_calc_delta_fair() {
        assert_eq!(sched_prio_to_weight(0), NICE_0_LOAD);
        assert_eq!(sched_prio_to_weight(-20), 88761);
        assert_eq!(sched_prio_to_weight(19), 15);
        assert_eq!(sched_prio_to_weight(-5), 3121);
        assert_eq!(sched_prio_to_weight(-99), 88761);
        assert_eq!(calc_delta_fair(3 * MS, 1024), 3 * MS);
        // 3e6 * (1024 * 1376151) >> 32 = 984299.6 -> 984299 (~3e6 * 1024/3121 = 984300.5).
        assert_eq!(calc_delta_fair(3 * MS, 3121), 984_299);
        // nice 5: 3e6 * (1024 * 12820798) >> 32 = 9170149.1 (~3e6 * 1024/335).
        assert_eq!(calc_delta_fair(3 * MS, 335), 9_170_149);
    }

    // --- EEVDF --------------------------------------------------------------------------

    #[test]
    fn eevdf_new_task_gets_half_a_slice() {
        let mut e = ents(&[1024, 3121]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        // Empty rq: V = min_vruntime = 0; deadline = 0 + 750us / 2.
        assert_eq!((e[0].vruntime, e[0].deadline, e[0].slice), (0, 375 * US, 750 * US));
        rq.set_next_entity(&mut e, 0, 0);
        rq.update_curr(&mut e, 100 * US);
        rq.enqueue_entity(&mut e, 1, 100 * US, new_task());
        // V = curr's vruntime = 100us; nice -5 vslice = 750us * 1024/3121 = 246074; half 123037.
        assert_eq!(e[1].vruntime, 100 * US);
        assert_eq!(e[1].deadline, 100 * US + 246_074 / 2);
        check_invariants(&rq, &e);
    }

    #[test]
    fn eevdf_two_nice0_tasks_alternate_with_equal_slices() {
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.enqueue_entity(&mut e, 1, 0, new_task());
        let runs = run(&mut rq, &mut e, 0, 30 * MS, 25 * US);
        // Both start with half a slice (375us); afterwards every run is a full 750us slice.
        let starts: Vec<u64> = runs.iter().map(|r| r.0).collect();
        assert_eq!(&starts[..4], &[0, 375 * US, 750 * US, 1_500 * US]);
        for w in runs.windows(2) {
            assert_ne!(w[0].1, w[1].1, "runs alternate");
            if w[0].0 >= 750 * US {
                assert_eq!(w[1].0 - w[0].0, 750 * US);
            }
        }
        // Nice 0: vruntime advances 1:1 with run time, and both got the same time.
        rq.update_curr(&mut e, 30 * MS);
        for se in &e {
            assert_eq!(se.vruntime, se.sum_exec_runtime);
        }
        assert_eq!(e[0].sum_exec_runtime + e[1].sum_exec_runtime, 30 * MS);
        assert!(e[0].sum_exec_runtime.abs_diff(e[1].sum_exec_runtime) <= 750 * US);
    }

    #[test]
    fn eevdf_nice_minus5_vs_nice0_vruntime_inverse_to_weight() {
        let mut e = ents(&[3121, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(8));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.enqueue_entity(&mut e, 1, 0, new_task());
        // Exactly 3 ms of each: nice -5 gains 984299 virtual ns, nice 0 gains 3e6.
        rq.set_next_entity(&mut e, 0, 0);
        rq.update_curr(&mut e, 3 * MS);
        assert_eq!(e[0].vruntime, 984_299);
        rq.switch_to(&mut e, 1, 3 * MS);
        rq.update_curr(&mut e, 6 * MS);
        assert_eq!(e[1].vruntime, 3 * MS);
        // Over a long run the CPU splits ~3121:1024 (75.3% : 24.7%).
        let mut e = ents(&[3121, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(8));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.enqueue_entity(&mut e, 1, 0, new_task());
        run(&mut rq, &mut e, 0, 1000 * MS, 100 * US);
        let share = e[0].sum_exec_runtime * 1000 / (e[0].sum_exec_runtime + e[1].sum_exec_runtime);
        assert!((745..=760).contains(&share), "nice -5 share {share}/1000");
        // Virtual times stay together: both within a few slices of V.
        assert!(e[0].vruntime.abs_diff(e[1].vruntime) < 2 * 3 * MS);
    }

    /// A runs alone (protected by RUN_TO_PARITY); then B wakes.
    fn eevdf_one_running(vlag_b: i64) -> (CfsRq, Vec<SchedEntity>) {
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        assert!(!rq.update_curr(&mut e, 200 * US), "alone: no resched");
        e[1].vlag = vlag_b;
        (rq, e)
    }

    #[test]
    fn eevdf_wakeup_with_positive_lag_and_earlier_deadline_preempts() {
        let (mut rq, mut e) = eevdf_one_running(500 * US as i64);
        rq.enqueue_entity(&mut e, 1, 200 * US, wake());
        // V = 200us; lag inflated by (W + w) / W = 2: B.vruntime = 200us - 1ms.
        assert_eq!(e[1].vruntime, (200 * US).wrapping_sub(MS));
        assert_eq!(e[1].deadline, (200 * US).wrapping_sub(MS) + 750 * US);
        assert!(vbefore(e[1].deadline, e[0].deadline));
        // After placement B's lag is what it had: V' = 200us - 500us.
        assert_eq!(rq.entity_lag(&e, 1), 500 * US as i64);
        // A is now ahead of V, so not eligible: B wins.
        assert!(!rq.entity_eligible(&e, 0));
        assert!(rq.check_preempt_wakeup(&mut e, 1, 200 * US));
        assert_eq!(rq.pick_next_entity(&mut e, 200 * US), Some(1));
        check_invariants(&rq, &e);
    }

    #[test]
    fn eevdf_wakeup_with_later_deadline_does_not_preempt() {
        // A got a new request while alone (375us -> 1250us), so RUN_TO_PARITY no longer
        // protects it.
        let (mut rq, mut e) = eevdf_one_running(0);
        rq.update_curr(&mut e, 500 * US);
        assert_eq!(e[0].deadline, 1_250 * US);
        assert_ne!(e[0].vlag as u64, e[0].deadline);
        // B wakes with zero lag at 600us: vruntime V = 600us, deadline 1350us > 1250us.
        rq.enqueue_entity(&mut e, 1, 600 * US, wake());
        assert_eq!((e[1].vruntime, e[1].deadline), (600 * US, 1_350 * US));
        assert!(rq.entity_eligible(&e, 0));
        assert!(!rq.check_preempt_wakeup(&mut e, 1, 600 * US));
        // A keeps running (EEVDF ticks only renew requests) until its deadline, then B runs.
        assert!(!rq.check_preempt_tick(&mut e, 1_249 * US));
        assert!(rq.check_preempt_tick(&mut e, 1_250 * US));
        assert_eq!(rq.pick_next_entity(&mut e, 1_250 * US), Some(1));
        // Equal deadlines: entity_before() is strict, so the queued entity wins the tie.
        let (mut rq, mut e) = eevdf_one_running(0);
        rq.update_curr(&mut e, 500 * US);
        rq.enqueue_entity(&mut e, 1, 500 * US, wake());
        assert_eq!(e[1].deadline, e[0].deadline);
        assert!(rq.check_preempt_wakeup(&mut e, 1, 500 * US));
    }

    /// A and B (nice 0) on a 1-CPU cfs_rq with DELAY_DEQUEUE and DELAY_ZERO: B joins at 0,
    /// A runs alone from 0 to 300us and goes to sleep there, ahead of V (V = 150us).
    fn eevdf_a_sleeps_ineligible(delay: bool) -> (CfsRq, Vec<SchedEntity>) {
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.feat.delay_dequeue = delay;
        rq.feat.delay_zero = delay;
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        rq.enqueue_entity(&mut e, 1, 0, new_task());
        rq.update_curr(&mut e, 300 * US);
        assert_eq!(rq.avg_vruntime(&e), 150 * US);
        assert!(!rq.entity_eligible(&e, 0), "A ran ahead of V");
        rq.dequeue_entity(&mut e, 0, 300 * US, sleep());
        (rq, e)
    }

    #[test]
    fn eevdf_delay_dequeue_keeps_an_ineligible_sleeper_queued_until_it_is_picked() {
        let (mut rq, mut e) = eevdf_a_sleeps_ineligible(true);
        // Still queued, still counted, still in V: its negative lag keeps competing.
        assert!(e[0].on_rq && e[0].sched_delayed);
        assert_eq!((rq.nr_running, rq.load_weight), (2, 2048));
        assert_eq!(rq.avg_vruntime(&e), 150 * US);
        check_invariants(&rq, &e);
        // The pick passes it over (not eligible) for B, which runs 400us.
        assert_eq!(rq.pick_next_entity(&mut e, 300 * US), Some(1));
        rq.switch_to(&mut e, 1, 300 * US);
        assert!(rq.is_queued(&e, 0), "put_prev_entity() put the delayed A back in the tree");
        rq.update_curr(&mut e, 700 * US);
        // V = (300 + 400) / 2 = 350us: A is eligible again, so the pick reaches it, and the
        // caller must finish its dequeue (pick_next_entity() -> dequeue_entities()).
        assert_eq!(rq.pick_next_entity(&mut e, 700 * US), Some(0));
        let done = DequeueFlags { sleep: true, delayed: true, ..Default::default() };
        rq.dequeue_entity(&mut e, 0, 700 * US, done);
        assert!(!e[0].on_rq && !e[0].sched_delayed);
        // It left 50us ahead of its share; DELAY_ZERO keeps no positive lag.
        assert_eq!(e[0].vlag, 0);
        assert_eq!(rq.nr_running, 1);
        check_invariants(&rq, &e);
        // Without DELAY_DEQUEUE the same sleep leaves at once, with its negative lag kept.
        let (rq, e) = eevdf_a_sleeps_ineligible(false);
        assert!(!e[0].on_rq && !e[0].sched_delayed);
        assert_eq!((rq.nr_running, e[0].vlag), (1, -(150 * US as i64)));
        // A special sleep (not TASK_NORMAL, e.g. exit) is never delayed.
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.feat.delay_dequeue = true;
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        rq.enqueue_entity(&mut e, 1, 0, new_task());
        rq.update_curr(&mut e, 300 * US);
        rq.dequeue_entity(&mut e, 0, 300 * US, DequeueFlags { sleep: true, special: true, ..Default::default() });
        assert!(!e[0].on_rq && !e[0].sched_delayed);
    }

    #[test]
    fn eevdf_a_delayed_entity_woken_is_requeued_in_place_or_at_zero_lag() {
        // Woken at once: still behind (lag -150us), so it keeps its place and deadline.
        let (mut rq, mut e) = eevdf_a_sleeps_ineligible(true);
        let (v, d) = (e[0].vruntime, e[0].deadline);
        rq.requeue_delayed_entity(&mut e, 0, 300 * US);
        assert!(e[0].on_rq && !e[0].sched_delayed);
        assert_eq!((e[0].vruntime, e[0].deadline, rq.nr_running), (v, d, 2));
        check_invariants(&rq, &e);
        // Woken after B ran 600us (V = 450us, A's lag +150us): DELAY_ZERO places it again at
        // the 0-lag point of the others (V without A: B's 600us), with a new request.
        let (mut rq, mut e) = eevdf_a_sleeps_ineligible(true);
        rq.switch_to(&mut e, 1, 300 * US);
        rq.update_curr(&mut e, 900 * US);
        assert_eq!(rq.avg_vruntime(&e), 450 * US);
        rq.requeue_delayed_entity(&mut e, 0, 900 * US);
        assert!(!e[0].sched_delayed);
        assert_eq!(e[0].vruntime, 600 * US);
        assert_eq!(e[0].deadline, 600 * US + 750 * US);
        assert_eq!((e[0].vlag, rq.nr_running), (0, 2));
        check_invariants(&rq, &e);
    }

    #[test]
    fn eevdf_run_to_parity_protects_an_eligible_curr() {
        // A (nice 0) picked at t=0 with deadline 375us; at 100us B (nice -10, zero lag) wakes
        // at V with a much shorter virtual request: an earlier deadline, while A is still
        // eligible (A is exactly at V) and within the request it was picked with.
        let mut e = ents(&[1024, 9548]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        rq.enqueue_entity(&mut e, 1, 100 * US, wake());
        let vslice_b = calc_delta_fair(750 * US, 9548);
        assert_eq!((e[1].vruntime, e[1].deadline), (100 * US, 100 * US + vslice_b));
        assert!(e[1].deadline < e[0].deadline);
        assert!(rq.entity_eligible(&e, 0));
        assert_eq!(e[0].vlag as u64, e[0].deadline);
        assert!(!rq.check_preempt_wakeup(&mut e, 1, 100 * US));
        // Without RUN_TO_PARITY the earliest eligible deadline wins.
        rq.feat.run_to_parity = false;
        assert!(rq.check_preempt_wakeup(&mut e, 1, 100 * US));
        // With it, A keeps the CPU until its request ends.
        rq.feat.run_to_parity = true;
        assert!(rq.check_preempt_tick(&mut e, 375 * US));
        assert_eq!(rq.pick_next_entity(&mut e, 375 * US), Some(1));
    }

    #[test]
    fn eevdf_curr_past_its_deadline_loses_at_the_tick() {
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.enqueue_entity(&mut e, 1, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        assert!(!rq.check_preempt_tick(&mut e, 374 * US));
        // vruntime 375us reaches the deadline 375us: new request, resched.
        assert!(rq.check_preempt_tick(&mut e, 375 * US));
        assert_eq!(e[0].deadline, 1_125 * US);
        assert_eq!(rq.pick_next_entity(&mut e, 375 * US), Some(1));
        // Alone, the same overrun does not resched.
        let mut e = ents(&[1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        assert!(!rq.check_preempt_tick(&mut e, 10 * MS));
    }

    #[test]
    fn eevdf_lag_is_clamped_on_dequeue_and_kept_over_sleep() {
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.enqueue_entity(&mut e, 1, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        // A runs 20 ms without a tick: V = 10ms, B's lag 10ms, A's -10ms.
        rq.update_curr(&mut e, 20 * MS);
        rq.dequeue_entity(&mut e, 1, 20 * MS, sleep());
        // limit = max(2 * 750us, TICK_NSEC = 4ms) = 4ms.
        assert_eq!(e[1].vlag, 4 * MS as i64);
        // B wakes again at once: placed so that its lag is exactly 4ms (inflated by 2).
        rq.enqueue_entity(&mut e, 1, 20 * MS, wake());
        assert_eq!(rq.entity_lag(&e, 1), 4 * MS as i64);
        assert_eq!(e[1].vruntime, 20 * MS - 8 * MS);
        rq.dequeue_entity(&mut e, 0, 20 * MS, sleep());
        assert_eq!(e[0].vlag, -(4 * MS as i64));
        check_invariants(&rq, &e);
    }

    #[test]
    fn eevdf_survives_vruntime_wraparound() {
        let mut e = ents(&[1024, 1024, 3121]);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, FairTunables::for_cpus(4));
        rq.min_vruntime = 0u64.wrapping_sub(1 << 20); // the kernel's init_cfs_rq() value
        for id in 0..3 {
            rq.enqueue_entity(&mut e, id, 0, new_task());
        }
        run(&mut rq, &mut e, 0, 200 * MS, 100 * US);
        let total: u64 = e.iter().map(|s| s.sum_exec_runtime).sum();
        assert_eq!(total, 200 * MS);
        assert!(rq.min_vruntime < 1 << 40, "min_vruntime wrapped past zero");
        let share = e[2].sum_exec_runtime * 1000 / total;
        assert!((580..=620).contains(&share), "nice -5 share {share}/1000 (3121/5169 = 604)");
    }

    #[test]
    fn eevdf_migration_keeps_lag() {
        let mut e = ents(&[1024, 1024, 1024]);
        let t = FairTunables::for_cpus(2);
        let mut src = CfsRq::new(FairPolicy::Eevdf, t);
        let mut dst = CfsRq::new(FairPolicy::Eevdf, t);
        src.enqueue_entity(&mut e, 0, 0, new_task());
        src.enqueue_entity(&mut e, 1, 0, new_task());
        dst.enqueue_entity(&mut e, 2, 0, new_task());
        dst.set_next_entity(&mut e, 2, 0);
        src.set_next_entity(&mut e, 0, 0);
        src.update_curr(&mut e, MS);
        // Load balance moves the waiting task 1: lag 500us goes with it.
        src.dequeue_entity(&mut e, 1, MS, DequeueFlags { migrating: true, ..Default::default() });
        assert_eq!(e[1].vlag, 500 * US as i64);
        assert!(!e[1].avg_attached);
        dst.update_curr(&mut e, MS);
        dst.enqueue_entity(&mut e, 1, MS, EnqueueFlags { migrated: true, ..Default::default() });
        assert_eq!(dst.entity_lag(&e, 1), 500 * US as i64);
        assert!(e[1].avg_attached);
        check_invariants(&src, &e);
        check_invariants(&dst, &e);
    }

    // --- CFS ----------------------------------------------------------------------------

    /// A cfs_rq with the given (vruntime, weight) entities woken at t=0; entity 0 is curr.
    fn cfs_rq(cpus: u32, v: &[(u64, u64)]) -> (CfsRq, Vec<SchedEntity>) {
        let mut e: Vec<SchedEntity> = ents(&v.iter().map(|x| x.1).collect::<Vec<_>>());
        let mut rq = CfsRq::new(FairPolicy::Cfs, FairTunables::for_cpus(cpus));
        for (i, &(vr, _)) in v.iter().enumerate() {
            e[i].vruntime = vr;
            rq.enqueue_entity(&mut e, i as u32, 0, wake());
            assert_eq!(e[i].vruntime, vr, "placement must not move it in these tests");
        }
        rq.set_next_entity(&mut e, 0, 0);
        (rq, e)
    }

    #[test]
    fn cfs_wakeup_preempts_only_beyond_wakeup_gran() {
        // curr A at 5ms; B woken 1ms behind: not more than the 1ms granularity.
        let (mut rq, mut e) = cfs_rq(1, &[(5 * MS, 1024), (4 * MS, 1024)]);
        assert_eq!(rq.wakeup_preempt_entity(&e, 0, 1), 0);
        assert!(!rq.check_preempt_wakeup(&mut e, 1, 0));
        // 1ns further behind: preempts.
        let (mut rq, mut e) = cfs_rq(1, &[(5 * MS, 1024), (4 * MS - 1, 1024)]);
        assert_eq!(rq.wakeup_preempt_entity(&e, 0, 1), 1);
        assert!(rq.check_preempt_wakeup(&mut e, 1, 0));
        // The other way round (B ahead of A): -1.
        assert_eq!(rq.wakeup_preempt_entity(&e, 1, 0), -1);
        // curr is charged first: B 0.5ms behind at t=0, but A has run 0.6ms by the wakeup.
        let (mut rq, mut e) = cfs_rq(1, &[(5 * MS, 1024), (4_500 * US, 1024)]);
        assert!(rq.check_preempt_wakeup(&mut e, 1, 600 * US));
    }

    #[test]
    fn cfs_wakeup_gran_scales_with_woken_weight_and_cpus() {
        // Nice -5 wakee: gran = 1ms * 1024/3121 = 328099 virtual ns.
        for (vdiff, expect) in [(328_099, false), (328_100, true)] {
            let (mut rq, mut e) = cfs_rq(1, &[(5 * MS, 1024), (5 * MS - vdiff, 3121)]);
            rq.set_next_entity(&mut e, 0, 0);
            assert_eq!(rq.check_preempt_wakeup(&mut e, 1, 0), expect, "vdiff {vdiff}");
        }
        // 4 CPUs: gran 3ms for nice 0.
        for (vdiff, expect) in [(3 * MS, false), (3 * MS + 1, true)] {
            let (mut rq, mut e) = cfs_rq(4, &[(10 * MS, 1024), (10 * MS - vdiff, 1024)]);
            assert_eq!(rq.check_preempt_wakeup(&mut e, 1, 0), expect, "vdiff {vdiff}");
        }
    }

    #[test]
    fn cfs_tick_preempts_after_sched_slice_two_and_three_tasks() {
        // Two nice-0: slice = 6ms * 1024/2048 via 2^32/2048 fixed point = 2999998ns.
        let (mut rq, mut e) = cfs_rq(1, &[(0, 1024), (0, 1024)]);
        assert_eq!(rq.sched_slice(&e[0]), 2_999_998);
        assert!(!rq.check_preempt_tick(&mut e, 2_999_998));
        assert!(rq.check_preempt_tick(&mut e, 2_999_999));
        // Three nice-0: 6ms / 3 = 1999999ns.
        let (mut rq, mut e) = cfs_rq(1, &[(0, 1024), (0, 1024), (0, 1024)]);
        assert_eq!(rq.sched_slice(&e[0]), 1_999_999);
        assert!(!rq.check_preempt_tick(&mut e, 1_999_999));
        assert!(rq.check_preempt_tick(&mut e, 2_000_000));
        // Nine tasks stretch the period: 9 * 0.75ms, slice 0.75ms (= min_granularity).
        let (rq, e) = cfs_rq(1, &[(0, 1024); 9]);
        assert_eq!(rq.sched_slice(&e[0]), 750 * US);
        // Alone: no tick preemption at all.
        let (mut rq, mut e) = cfs_rq(1, &[(0, 1024)]);
        assert!(!rq.check_preempt_tick(&mut e, 100 * MS));
    }

    #[test]
    fn cfs_tick_min_granularity_and_vruntime_rule() {
        // curr 2.5ms ahead of the leftmost: once it has run min_granularity (750us) its lead is
        // 3.25ms > ideal 2999998ns.
        let (mut rq, mut e) = cfs_rq(1, &[(2_500 * US, 1024), (0, 1024)]);
        assert!(!rq.check_preempt_tick(&mut e, 749_999));
        assert!(rq.check_preempt_tick(&mut e, 750 * US));
        // A 2.2ms lead is still within ideal at 750us (2.95ms), beyond it at 800us (3.0ms).
        let (mut rq, mut e) = cfs_rq(1, &[(2_200 * US, 1024), (0, 1024)]);
        assert!(!rq.check_preempt_tick(&mut e, 750 * US));
        assert!(!rq.check_preempt_tick(&mut e, 799_998));
        assert!(rq.check_preempt_tick(&mut e, 799_999));
    }

    #[test]
    fn cfs_sleeper_credit_is_capped_at_half_latency() {
        let mut e = ents(&[1024, 1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Cfs, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, wake());
        rq.set_next_entity(&mut e, 0, 0);
        rq.update_curr(&mut e, 20 * MS);
        assert_eq!(rq.min_vruntime, 20 * MS);
        // Long sleeper (vruntime 0): placed latency/2 = 3ms behind min_vruntime.
        rq.enqueue_entity(&mut e, 1, 20 * MS, wake());
        assert_eq!(e[1].vruntime, 17 * MS);
        // Short sleeper (1ms behind): keeps its vruntime.
        e[2].vruntime = 19 * MS;
        rq.enqueue_entity(&mut e, 2, 20 * MS, wake());
        assert_eq!(e[2].vruntime, 19 * MS);
        // 8 CPUs: latency 24ms, credit 12ms.
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Cfs, FairTunables::for_cpus(8));
        rq.enqueue_entity(&mut e, 0, 0, wake());
        rq.set_next_entity(&mut e, 0, 0);
        rq.update_curr(&mut e, 50 * MS);
        rq.enqueue_entity(&mut e, 1, 50 * MS, wake());
        assert_eq!(e[1].vruntime, 38 * MS);
        // Without GENTLE_FAIR_SLEEPERS the full latency.
        rq.dequeue_entity(&mut e, 1, 50 * MS, sleep());
        e[1].vruntime = 0;
        rq.feat.gentle_fair_sleepers = false;
        rq.enqueue_entity(&mut e, 1, 50 * MS, wake());
        assert_eq!(e[1].vruntime, 26 * MS);
    }

    #[test]
    fn cfs_new_task_starts_one_vslice_behind() {
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Cfs, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, wake());
        rq.set_next_entity(&mut e, 0, 0);
        rq.update_curr(&mut e, 4 * MS);
        // Parent at 4ms; vslice for 2 runnable = 2999998 -> child at 4ms + 2999998.
        rq.enqueue_entity(&mut e, 1, 4 * MS, new_task());
        assert_eq!(e[1].vruntime, 4 * MS + 2_999_998);
        assert!(!rq.check_preempt_wakeup(&mut e, 1, 4 * MS));
        check_invariants(&rq, &e);
    }

    #[test]
    fn cfs_two_tasks_share_the_cpu_in_slices() {
        let mut e = ents(&[1024, 1024]);
        let mut rq = CfsRq::new(FairPolicy::Cfs, FairTunables::for_cpus(1));
        rq.enqueue_entity(&mut e, 0, 0, wake());
        rq.enqueue_entity(&mut e, 1, 0, wake());
        let runs = run(&mut rq, &mut e, 0, 60 * MS, MS);
        // 1ms ticks: the tick at 3ms sees delta_exec 3ms > ideal 2999998ns, so runs are 3ms.
        for w in runs.windows(2) {
            assert_eq!(w[1].0 - w[0].0, 3 * MS);
            assert_ne!(w[0].1, w[1].1);
        }
        assert_eq!(e[0].sum_exec_runtime, 30 * MS);
        assert_eq!(e[1].sum_exec_runtime, 30 * MS);
    }

    #[test]
    fn cfs_migration_renormalises_vruntime() {
        let mut e = ents(&[1024, 1024, 1024]);
        let t = FairTunables::for_cpus(2);
        let mut src = CfsRq::new(FairPolicy::Cfs, t);
        let mut dst = CfsRq::new(FairPolicy::Cfs, t);
        src.enqueue_entity(&mut e, 0, 0, wake());
        src.set_next_entity(&mut e, 0, 0);
        src.update_curr(&mut e, 10 * MS);
        dst.enqueue_entity(&mut e, 2, 0, wake());
        dst.set_next_entity(&mut e, 2, 0);
        dst.update_curr(&mut e, 50 * MS);
        // Task 1 queued on src 1ms behind its min_vruntime, then pulled to dst.
        e[1].vruntime = 9 * MS;
        src.enqueue_entity(&mut e, 1, 10 * MS, wake());
        src.dequeue_entity(&mut e, 1, 10 * MS, DequeueFlags { migrating: true, ..Default::default() });
        assert_eq!(e[1].vruntime as i64, -(MS as i64));
        dst.enqueue_entity(&mut e, 1, 50 * MS, EnqueueFlags { migrated: true, ..Default::default() });
        assert_eq!(e[1].vruntime, 49 * MS);
        // Waking migration: sleep on dst, wake on src.
        dst.dequeue_entity(&mut e, 1, 50 * MS, sleep());
        dst.migrate_task_rq(&mut e, 1);
        assert_eq!(e[1].vruntime as i64, -(MS as i64));
        src.enqueue_entity(&mut e, 1, 10 * MS, EnqueueFlags { wakeup: true, migrated: true, ..Default::default() });
        assert_eq!(e[1].vruntime, 9 * MS);
        check_invariants(&src, &e);
        check_invariants(&dst, &e);
    }

    // --- PELT ---------------------------------------------------------------------------

    fn running_avg(periods: u64) -> SchedAvg {
        let mut sa = SchedAvg::default();
        for p in 1..=periods {
            update_load_avg(&mut sa, p * PELT_PERIOD_NS, true, true, 1024);
        }
        sa
    }

    #[test]
    fn pelt_decay_load() {
        assert_eq!(decay_load(1024, 0), 1023); // (2^32 - 1) / 2^32
        assert_eq!(decay_load(1024, 1), 1002);
        assert_eq!(decay_load(1024, 32), 511);
        assert_eq!(decay_load(47742, 1), 46718);
        assert_eq!(decay_load(u64::MAX, 32 * 63 + 1), 0);
    }

    #[test]
    fn pelt_one_period_exact() {
        let sa = running_avg(1);
        // The whole first period is "old" by one decay step: 1024 * y = 1002.
        assert_eq!(sa.load_sum, 1002);
        assert_eq!(sa.util_sum, 1002 << 10);
        assert_eq!(sa.period_contrib, 0);
        // 1002 * 1024 / 46718 = 21.96
        assert_eq!((sa.util_avg, sa.load_avg, sa.runnable_avg), (21, 21, 21));
        // Half a period more (512 units): contributes undecayed, divider grows by 512.
        let mut sa2 = sa;
        update_load_avg(&mut sa2, PELT_PERIOD_NS + 512 * 1024, true, true, 1024);
        assert_eq!(sa2.period_contrib, 512);
        assert_eq!(sa2.load_sum, 1002 + 512);
        assert_eq!(sa2.util_avg, sa.util_avg, "no period crossed: averages not recomputed");
    }

    #[test]
    fn pelt_32_periods_exact() {
        let sa = running_avg(32);
        assert_eq!(sa.load_sum, 23_369);
        assert_eq!(sa.util_sum, 23_941_816);
        // (1 - y^32) = 1/2 of the maximum.
        assert_eq!(sa.util_avg, 512);
        assert_eq!(sa.load_avg, 512);
        // One update spanning the same 32 periods: d1 = 1024 decayed 32 times (511) plus the
        // closed form for the 31 full periods in between (22848).
        let mut one = SchedAvg::default();
        update_load_avg(&mut one, 32 * PELT_PERIOD_NS, true, true, 1024);
        assert_eq!(one.load_sum, 23_359);
        assert_eq!(one.util_avg, 512);
    }

    #[test]
    fn pelt_always_running_converges() {
        let sa = running_avg(2000);
        // Per-period updates add 1002 (1024 * y) a period and converge to a load_sum of 46715
        // against a divider of 46718: load_avg 1023. util_sum carries 10 more bits, so its
        // truncations cost less: util_avg reaches the full 1024.
        assert_eq!(sa.load_sum, 46_715);
        assert_eq!(sa.util_sum, 47_883_609);
        assert_eq!(sa.util_avg, 1024);
        assert_eq!(sa.load_avg, 1023);
        let mut later = running_avg(3000);
        later.last_update_time = sa.last_update_time;
        assert_eq!(later, sa, "fixed point");
        // A nice -5 task: load_avg scales with weight, util does not.
        let mut w = SchedAvg::default();
        for p in 1..=2000 {
            update_load_avg(&mut w, p * PELT_PERIOD_NS, true, true, 3121);
        }
        assert_eq!((w.util_avg, w.load_avg), (1024, 3120));
    }

    #[test]
    fn pelt_halves_after_32_idle_periods() {
        let mut sa = running_avg(2000);
        let before = sa;
        update_load_avg(&mut sa, 2032 * PELT_PERIOD_NS, false, false, 1024);
        assert_eq!(sa.util_sum, (before.util_sum >> 1) - 1);
        assert_eq!(sa.util_avg, 512);
        assert_eq!(sa.load_avg, 511);
        // Runnable but not running (waiting): load stays, util decays.
        let mut w = before;
        update_load_avg(&mut w, 2032 * PELT_PERIOD_NS, false, true, 1024);
        assert_eq!((w.load_avg, w.util_avg), (1023, 512));
    }

    #[test]
    fn pelt_attach_detach_round_trip() {
        let mut cfs = SchedAvg::default();
        let mut se = SchedAvg::default();
        init_entity_runnable_average(&mut se, 1024);
        post_init_entity_util_avg(&cfs, &mut se, 1024);
        assert_eq!((se.load_avg, se.util_avg, se.runnable_avg), (1024, 512, 512));
        attach_entity_load_avg(&mut cfs, &mut se, 1024);
        assert_eq!((cfs.load_avg, cfs.util_avg), (1024, 512));
        assert_eq!(cfs.util_sum, 512 * PELT_MIN_DIVIDER);
        // A second task's util is extrapolated from the cfs_rq's and capped at half the spare.
        let mut se2 = SchedAvg::default();
        init_entity_runnable_average(&mut se2, 1024);
        post_init_entity_util_avg(&cfs, &mut se2, 1024);
        assert_eq!(se2.util_avg, 256); // min(512 * 1024 / 1025 = 511, (1024 - 512) / 2)
        detach_entity_load_avg(&mut cfs, &mut se, 1024);
        assert_eq!((cfs.load_avg, cfs.util_avg, cfs.util_sum, cfs.load_sum), (0, 0, 0, 0));
    }

    #[test]
    fn pelt_in_cfs_rq_follows_running_and_migration() {
        let mut e = ents(&[1024, 1024]);
        let t = FairTunables::for_cpus(1);
        let mut rq = CfsRq::new(FairPolicy::Eevdf, t);
        rq.enqueue_entity(&mut e, 0, 0, new_task());
        rq.set_next_entity(&mut e, 0, 0);
        for p in 1..=400 {
            rq.check_preempt_tick(&mut e, p * PELT_PERIOD_NS);
        }
        assert!(e[0].avg.util_avg >= 1020, "running task util {}", e[0].avg.util_avg);
        assert!(rq.avg.util_avg >= 1020, "cfs_rq util {}", rq.avg.util_avg);
        // It sleeps for 32 periods: both decay to about half.
        let t0 = 400 * PELT_PERIOD_NS;
        rq.dequeue_entity(&mut e, 0, t0, sleep());
        rq.put_prev_entity(&mut e, t0);
        rq.update_cfs_avg(t0 + 32 * PELT_PERIOD_NS);
        assert!((505..=515).contains(&rq.avg.util_avg), "cfs_rq util {}", rq.avg.util_avg);
        // Woken elsewhere: its contribution leaves this cfs_rq.
        rq.migrate_task_rq(&mut e, 0);
        assert!(rq.avg.util_avg <= 1 && rq.avg.load_avg <= 1, "{:?}", rq.avg);
        let mut dst = CfsRq::new(FairPolicy::Eevdf, t);
        let now = t0 + 32 * PELT_PERIOD_NS;
        dst.enqueue_entity(&mut e, 0, now, EnqueueFlags { wakeup: true, migrated: true, ..Default::default() });
        assert_eq!(dst.avg.util_avg, e[0].avg.util_avg);
        assert!((505..=515).contains(&dst.avg.util_avg));
    }
}
