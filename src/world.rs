//! The world of one run: the kernel ([`Kernel`]: kernel state, its executor and its
//! instrumentation) and the programs it runs (`P`: a workload, background daemons), and the
//! loop that runs them ([`World::run`]): it pops actions off the kernel's queue in time order,
//! hands each to the executor or to its program, opens the measured window, and prefetches the
//! next actions' CPU state on large machines.
//!
//! The world is generic over its programs, so each program's step inlines into the executor
//! ([`crate::linux::engine::run_cpu`]). It dereferences to its kernel, so code that inspects
//! or prepares the kernel (tests, the command line's reports) reads `w.cpus` as `w.k.cpus`.

use crate::linux::engine::{self, Action};
use crate::linux::programs::Programs;
use crate::linux::{check, Kernel, PREFETCH_MIN_CPUS, PROGRESS_NS};
use crate::sim::{Perturbation, Prng, Time};

/// A kernel and its programs, run together.
pub struct World<P: Programs> {
    pub k: Kernel,
    pub progs: P,
    /// The run's simulated-time limit (absolute: actions after it are not processed).
    pub limit: Time,
    /// The measured window is open (the counters run; `Kernel::measure_from` has passed).
    measuring: bool,
    /// Prefetch the next action's CPU state: only on machines whose per-CPU state outgrows the
    /// host's caches (below that it costs instructions and saves nothing).
    pub(crate) prefetch: bool,
}

impl<P: Programs> std::ops::Deref for World<P> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        &self.k
    }
}

impl<P: Programs> std::ops::DerefMut for World<P> {
    fn deref_mut(&mut self) -> &mut Kernel {
        &mut self.k
    }
}

impl<P: Programs> World<P> {
    /// A booted kernel and its programs, not started: `k.measure_from` says when the measured
    /// window opens. [`World::start`] then creates the programs' tasks.
    pub fn new(k: Kernel, progs: P) -> World<P> {
        let measuring = k.measure_from == 0;
        let prefetch = k.m.topo.nr_cpus >= PREFETCH_MIN_CPUS;
        World { k, progs, limit: Time::MAX, measuring, prefetch }
    }

    /// Start the programs (they create their tasks and queue their first actions).
    pub fn start(&mut self) {
        self.progs.start(&mut self.k);
    }

    /// The programs have finished: the run is over.
    pub fn finished(&self) -> bool {
        self.progs.finished()
    }

    /// How far the executor may run a CPU ahead: the limit, or just before the measured window
    /// opens (the loop opens it before the first action at or after it).
    fn horizon(&self) -> Time {
        if self.measuring {
            self.limit
        } else {
            self.limit.min(self.k.measure_from - 1)
        }
    }

    /// Open the measured window (the kernel's counters start afresh).
    fn begin_measurement(&mut self) {
        self.measuring = true;
        self.k.begin_measurement();
        self.k.horizon = self.horizon();
    }

    /// Run until the programs finish, `limit` of simulated time passes, or nothing is left.
    /// `limit` counts from the measured window's start (after any warm-up).
    pub fn run(&mut self, limit: Time) {
        let limit = limit.saturating_add(self.k.measure_from);
        self.limit = limit;
        self.k.horizon = self.horizon();
        // The CPUs likely to run the next action and the one after it (see
        // `ActionQueue::next_cpu_hints`): a pipeline two actions deep. A CPU's `Cpu` is
        // requested two actions ahead, what it points to one action ahead, and its current
        // task's flag line as its action starts. A next CPU not guessed an action earlier
        // has its `Cpu` requested now and what it points to after this action (`late`):
        // reading a `Cpu` just requested would wait for it here (both stages at once measured
        // 3-4% slower per action on nanosleep and hackbench at 4096 CPUs, medians of two sets
        // of 9-15 alternated runs each).
        let (mut hint, mut hint2, mut late) = (None, None, None);
        while !self.progs.finished() {
            let k = &mut self.k;
            if let Some(c) = late.take() {
                k.prefetch_cpu_deep(c);
            }
            let Some((t, a)) = k.q.pop_by(limit) else { break };
            if !self.measuring && t >= self.k.measure_from {
                self.begin_measurement();
            }
            let k = &mut self.k;
            assert!(t >= k.now, "time went backwards");
            k.now = t;
            k.actions += 1;
            if k.actions & 0xf_ffff == 0 {
                PROGRESS_NS.store(t, std::sync::atomic::Ordering::Relaxed);
            }
            if self.prefetch {
                if let Some(c) = hint {
                    k.prefetch_cpu_task(c);
                }
                let (n1, n2) = k.q.next_cpu_hints(Action::owner);
                if let Some(c) = n1 {
                    if n1 != hint2 {
                        k.prefetch_cpu(c);
                        late = Some(c);
                    } else {
                        k.prefetch_cpu_deep(c);
                    }
                }
                if let Some(c) = n2 {
                    k.prefetch_cpu(c);
                }
                (hint, hint2) = (n1, n2);
            }
            engine::dispatch(k, &mut self.progs, a);
        }
        // A machine that is not done runs on to the limit: nothing more happens before it
        // (the next action is later, or none is left), but the time passes, as on a real idle
        // machine.
        if !self.progs.finished() && limit != Time::MAX && self.k.now < limit {
            self.k.now = limit;
        }
        if !self.measuring && self.k.now >= self.k.measure_from {
            self.begin_measurement();
        }
        engine::account_all(&mut self.k);
        check::on_run_end(&mut self.k);
    }

    /// Install a perturbation on a freshly built world: re-seed the salted CPUs' jitter streams
    /// and make `chooser` the chooser of same-time actions (owners: the actions' CPUs). A replay
    /// token names CPUs of the run it came from; another machine's is an error.
    pub fn perturb(
        &mut self,
        jitter: &[(u32, u32)],
        chooser: Box<dyn crate::sim::queue::ChoiceStrategy>,
    ) -> Result<(), String> {
        let k = &mut self.k;
        let nr = k.m.topo.nr_cpus;
        for &(cpu, salt) in jitter {
            if cpu >= nr {
                return Err(format!(
                    "--replay: the token re-seeds CPU {cpu}, but machine {} has {nr} CPUs (a token replays on the run it came from)",
                    k.m.name
                ));
            }
            let c = &mut k.cpus[cpu as usize];
            let base = c.rng.next_u64();
            c.rng = Prng::new(base ^ ((salt as u64) << 32 | salt as u64), 0x5A17_0000 + cpu as u64);
        }
        k.q.owner_of = Some(Action::owner);
        k.q.chooser = crate::sim::Chooser::Strategy(chooser);
        Ok(())
    }

    /// Replay a perturbation (`schedsim run --replay TOKEN`): its re-seeded jitter streams and
    /// its choices of same-time actions.
    pub fn replay(&mut self, p: &Perturbation) -> Result<(), String> {
        self.perturb(&p.jitter, Box::new(crate::sim::perturbation::ReplayPicks::new(p.picks.clone())))
    }
}
