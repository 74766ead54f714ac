//! Models `kernel/sched/features.h` @ v6.10: every sched feature of that file, with the
//! kernel's name and default, in its order, plus the two CFS features of v6.1 (START_DEBIT,
//! GENTLE_FAIR_SLEEPERS; removed with EEVDF in v6.6) that the model's CFS reads. `NO_<NAME>`
//! turns one off, as writing to /sys/kernel/debug/sched/features does. One table: the fair
//! class's features (PLACE_LAG, RUN_TO_PARITY, ...) are rows here too, handed to each cfs_rq
//! as [`FairFeatures`] when the machine boots.
//!
//! Each row says whether the model honours it (a code path reads it). `--feature` accepts only
//! those: a feature the model does not model is an error that says so, never silently
//! accepted; `schedsim list` shows the others as "not modelled".

use super::fair_class::FairFeatures;

macro_rules! sched_features {
    ($( $(#[doc = $doc:literal])* $name:ident = $default:literal, $modelled:ident ;)*) => {
        /// A scheduler feature bit.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u32)]
        pub enum SchedFeat { $( $(#[doc = $doc])* $name ),* }

        /// Every feature, in the order of features.h.
        pub const SCHED_FEATURES: &[SchedFeatInfo] = &[
            $( SchedFeatInfo {
                feat: SchedFeat::$name,
                name: stringify!($name),
                default: $default,
                modelled: sched_features!(@m $modelled),
                doc: concat!($($doc),*),
            } ),*
        ];
    };
    (@m modelled) => { true };
    (@m not_modelled) => { false };
}

/// One row of the feature table.
#[derive(Debug)]
pub struct SchedFeatInfo {
    pub feat: SchedFeat,
    /// The kernel's name (`/sys/kernel/debug/sched/features`).
    pub name: &'static str,
    /// The default in features.h (TTWU_QUEUE: off on PREEMPT_RT, see `run::build`).
    pub default: bool,
    /// Some model code path reads it; `--feature` accepts only these.
    pub modelled: bool,
    pub doc: &'static str,
}

sched_features! {
    /// EEVDF: keep a task's lag over sleep and wakeup (place_entity()).
    PLACE_LAG = true, modelled;
    /// EEVDF: a new task's first deadline is half a slice away.
    PLACE_DEADLINE_INITIAL = true, modelled;
    /// EEVDF: keep an eligible curr until it has used its request (pick_eevdf()).
    RUN_TO_PARITY = true, modelled;
    /// Prefer the task woken last (the model has no buddies).
    NEXT_BUDDY = false, not_modelled;
    /// Buddies count as cache hot in task_hot() (the model has no buddies).
    CACHE_HOT_BUDDY = true, not_modelled;
    /// Allow wakeup preemption of the fair class.
    WAKEUP_PREEMPTION = true, modelled;
    /// High-resolution slice ends for the fair class (no hrtick in the model).
    HRTICK = false, not_modelled;
    /// High-resolution slice ends for the deadline class (no deadline class in the model).
    HRTICK_DL = false, not_modelled;
    /// Run the tick's fair work twice (a debug feature).
    DOUBLE_TICK = false, not_modelled;
    /// Lower CPU capacity by IRQ and steal time (the model has no capacity scaling).
    NONTASK_CAPACITY = true, not_modelled;
    /// Queue remote wakeups on the target CPU's wake list (off by default on PREEMPT_RT).
    TTWU_QUEUE = true, modelled;
    /// Use the LLC utilization to limit the idle-CPU search (select_idle_cpu).
    SIS_UTIL = true, modelled;
    /// Warn when the rq clock is updated twice (a debug check).
    WARN_DOUBLE_CLOCK = false, not_modelled;
    /// RT pull by irq_work: a CPU lowering its priority has the overloaded CPUs push to it
    /// (`tell_cpu_to_push()`) instead of locking their runqueues to pull.
    RT_PUSH_IPI = true, modelled;
    /// RT runtime borrowing between CPUs (the model has no RT throttling).
    RT_RUNTIME_SHARE = false, not_modelled;
    /// Load balancing ignores tiny loads (the model balances by runnable counts).
    LB_MIN = false, not_modelled;
    /// Age a migrated task's PELT average on attach (always on in the model).
    ATTACH_AGE_LOAD = true, not_modelled;
    /// wake_affine: prefer an idle CPU between the waker's and the wakee's previous one.
    WA_IDLE = true, modelled;
    /// wake_affine: compare the two CPUs' loads.
    WA_WEIGHT = true, modelled;
    /// wake_affine: bias the load comparison toward the previous CPU by imbalance_pct/2.
    WA_BIAS = true, modelled;
    /// Utilization estimation (the model has no util_est).
    UTIL_EST = true, not_modelled;
    /// Warn on long resched latency (a debug check).
    LATENCY_WARN = false, not_modelled;
    /// Scale the CFS bandwidth period (the model has no bandwidth control).
    HZ_BW = true, not_modelled;
    /// CFS (features.h @ v6.1): a new task starts one vslice behind.
    START_DEBIT = true, modelled;
    /// CFS (features.h @ v6.1): a sleeper's credit is half the latency.
    GENTLE_FAIR_SLEEPERS = true, modelled;
    /// EEVDF (features.h @ v6.12, with 152e11f6df29): a task that sleeps while not eligible
    /// stays queued until picked or woken (read only with that patch).
    DELAY_DEQUEUE = true, modelled;
    /// EEVDF (features.h @ v6.12, with 54a58a787791): a delayed task's lag is clipped to at
    /// most 0 (read only with that patch).
    DELAY_ZERO = true, modelled;
}

impl SchedFeat {
    pub fn info(self) -> &'static SchedFeatInfo {
        &SCHED_FEATURES[self as usize]
    }
}

/// The set of enabled features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features(u64);

impl Default for Features {
    fn default() -> Self {
        let mut bits = 0u64;
        for f in SCHED_FEATURES {
            if f.default {
                bits |= 1 << f.feat as u32;
            }
        }
        Features(bits)
    }
}

impl Features {
    #[inline]
    pub fn has(self, f: SchedFeat) -> bool {
        self.0 & (1 << f as u32) != 0
    }

    pub fn set(&mut self, f: SchedFeat, on: bool) {
        if on {
            self.0 |= 1 << f as u32;
        } else {
            self.0 &= !(1 << f as u32);
        }
    }

    /// Apply `NAME` or `NO_NAME`. A feature the model does not read is an error.
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        let (name, on) = match spec.strip_prefix("NO_") {
            Some(n) => (n, false),
            None => (spec, true),
        };
        let modelled: Vec<&str> = SCHED_FEATURES.iter().filter(|f| f.modelled).map(|f| f.name).collect();
        let Some(f) = SCHED_FEATURES.iter().find(|f| f.name == name) else {
            return Err(format!(
                "unknown sched feature '{spec}' (expected one of {} or NO_<name>)",
                modelled.join(", ")
            ));
        };
        if !f.modelled {
            return Err(format!(
                "sched feature {name} is not modelled (no model code path reads it; the modelled ones are {})",
                modelled.join(", ")
            ));
        }
        self.set(f.feat, on);
        Ok(())
    }

    /// The fair class's own features, for each cfs_rq.
    pub fn fair(self) -> FairFeatures {
        FairFeatures {
            place_lag: self.has(SchedFeat::PLACE_LAG),
            place_deadline_initial: self.has(SchedFeat::PLACE_DEADLINE_INITIAL),
            run_to_parity: self.has(SchedFeat::RUN_TO_PARITY),
            start_debit: self.has(SchedFeat::START_DEBIT),
            gentle_fair_sleepers: self.has(SchedFeat::GENTLE_FAIR_SLEEPERS),
            wakeup_preemption: self.has(SchedFeat::WAKEUP_PREEMPTION),
            delay_dequeue: self.has(SchedFeat::DELAY_DEQUEUE),
            delay_zero: self.has(SchedFeat::DELAY_ZERO),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_no_prefix() {
        let mut f = Features::default();
        assert!(f.has(SchedFeat::TTWU_QUEUE));
        f.apply("NO_TTWU_QUEUE").unwrap();
        assert!(!f.has(SchedFeat::TTWU_QUEUE));
        f.apply("TTWU_QUEUE").unwrap();
        assert!(f.has(SchedFeat::TTWU_QUEUE));
        assert!(f.apply("NO_SUCH").unwrap_err().contains("unknown sched feature"));
    }

    #[test]
    fn rows_are_in_enum_order_and_unmodelled_features_are_refused() {
        for (i, f) in SCHED_FEATURES.iter().enumerate() {
            assert_eq!(f.feat as usize, i, "{}", f.name);
            assert_eq!(f.feat.info().name, f.name);
        }
        assert!(SCHED_FEATURES.len() <= 64, "Features is a u64 bit set");
        let mut f = Features::default();
        let e = f.apply("NO_UTIL_EST").unwrap_err();
        assert!(e.contains("UTIL_EST is not modelled"), "{e}");
        assert_eq!(f, Features::default());
    }

    #[test]
    fn the_fair_class_features_come_from_the_table() {
        // The defaults are the fair class's own defaults, but for the v6.12 features, which
        // the kernel's patch set gates (`KernelConfig::fair_features`).
        let d = FairFeatures { delay_dequeue: true, delay_zero: true, ..FairFeatures::default() };
        assert_eq!(Features::default().fair(), d);
        let mut f = Features::default();
        f.apply("NO_RUN_TO_PARITY").unwrap();
        f.apply("NO_GENTLE_FAIR_SLEEPERS").unwrap();
        let ff = f.fair();
        assert!(!ff.run_to_parity && !ff.gentle_fair_sleepers && ff.place_lag);
    }
}
