//! schedsim: a deterministic simulator of the Linux kernel scheduler's SMP machinery.
//!
//! See ARCHITECTURE.md for the codemap. In short: [`sim`] is the engine, [`hw`] the machine
//! facts, [`linux`] the kernel model (mirroring the Linux tree), [`workload`] the programs that
//! run on it, [`trace`] the trace records and their ftrace text, [`experiments`] the built-in
//! experiments, [`validate`] the model-versus-kernel figures, and [`cli`] the command line.

pub mod background;
pub mod cli;
pub mod crash;
pub mod experiments;
pub mod html;
pub mod hw;
pub mod linux;
pub mod report;
pub mod run;
pub mod sim;
pub mod sweep;
pub mod trace;
pub mod validate;
pub mod workload;
