//! schedsim: a deterministic simulator of the Linux kernel scheduler's SMP machinery.
//!
//! See ARCHITECTURE.md for the codemap. In short: [`sim`] is the engine, [`hw`] the machine
//! facts, [`linux`] the kernel model (mirroring the Linux tree), [`workload`] the programs that
//! run on it, [`background`] what else the machine runs, [`run`] one run from its spec, [`trace`]
//! the trace records and their writers, [`experiments`] the built-in experiments, [`explore`] the
//! interleaving explorer, [`sweep`] grids of runs, [`validate`] the model-versus-kernel figures,
//! [`report`] and [`html`] the output, and [`cli`] the command line.

pub mod background;
pub mod calibrate;
pub mod cli;
pub mod crash;
pub mod experiments;
pub mod explore;
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
