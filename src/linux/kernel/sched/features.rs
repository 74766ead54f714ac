//! Models `kernel/sched/features.h` @ v6.10: the sched features the model reads, with the
//! kernel's names and defaults. `NO_<NAME>` turns one off, as writing to
//! /sys/kernel/debug/sched/features does.

macro_rules! sched_features {
    ($( $(#[doc = $doc:literal])* $name:ident = $default:expr ),* $(,)?) => {
        /// A scheduler feature bit.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u32)]
        pub enum SchedFeat { $( $(#[doc = $doc])* $name ),* }

        /// Every feature: name, default, description.
        pub const SCHED_FEATURES: &[(SchedFeat, &str, bool, &str)] = &[
            $( (SchedFeat::$name, stringify!($name), $default, concat!($($doc),*)) ),*
        ];
    };
}

sched_features! {
    /// Queue remote wakeups on the target CPU's wake list (off by default on PREEMPT_RT).
    TTWU_QUEUE = true,
    /// Use the LLC utilization to limit the idle-CPU search (select_idle_cpu).
    SIS_UTIL = true,
    /// Allow wakeup preemption of the fair class.
    WAKEUP_PREEMPTION = true,
    /// wake_affine: prefer an idle CPU between the waker's and the wakee's previous one.
    WA_IDLE = true,
    /// wake_affine: compare the two CPUs' loads.
    WA_WEIGHT = true,
    /// wake_affine: bias the load comparison toward the previous CPU by imbalance_pct/2.
    WA_BIAS = true,
    /// RT pull by irq_work: a CPU lowering its priority has the overloaded CPUs push to it
    /// (`tell_cpu_to_push()`) instead of locking their runqueues to pull.
    RT_PUSH_IPI = true,
}

/// The set of enabled features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features(u64);

impl Default for Features {
    fn default() -> Self {
        let mut bits = 0u64;
        for &(f, _, on, _) in SCHED_FEATURES {
            if on {
                bits |= 1 << f as u32;
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

    /// Apply `NAME` or `NO_NAME`.
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        let (name, on) = match spec.strip_prefix("NO_") {
            Some(n) => (n, false),
            None => (spec, true),
        };
        let Some(&(f, ..)) = SCHED_FEATURES.iter().find(|(_, n, ..)| *n == name) else {
            let known: Vec<&str> = SCHED_FEATURES.iter().map(|(_, n, ..)| *n).collect();
            return Err(format!("unknown sched feature '{spec}' (expected one of {} or NO_<name>)", known.join(", ")));
        };
        self.set(f, on);
        Ok(())
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
}
