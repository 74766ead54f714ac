//! The simulation engine: virtual time, the action queue, seeded random streams and the
//! choice point for same-time actions.
//!
//! Vocabulary: the simulator *steps* through *actions*; it never "ticks" and has no "events"
//! (those words belong to the kernel: `sched_tick`, trace events).
//!
//! Architecture invariant: nothing in here knows about the kernel model.

pub mod perturbation;
pub mod prefetch;
pub mod queue;
pub mod rng;

pub use perturbation::Perturbation;
pub use queue::{ActionQueue, Chooser, Slot};
pub use rng::Prng;

/// Virtual time in integer nanoseconds since the start of the run.
pub type Time = u64;

/// One microsecond in [`Time`] units.
pub const NSEC_PER_USEC: Time = 1_000;
/// One millisecond in [`Time`] units.
pub const NSEC_PER_MSEC: Time = 1_000_000;
/// One second in [`Time`] units.
pub const NSEC_PER_SEC: Time = 1_000_000_000;
