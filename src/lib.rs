//! schedsim: a deterministic simulator of the Linux kernel scheduler's SMP machinery.
//!
//! See ARCHITECTURE.md for the codemap and the layers. In short: [`sim`] is the engine,
//! [`hw`] the machine facts, [`linux`] the kernel model (mirroring the Linux tree), [`world`] a
//! kernel with its programs, [`workload`] the programs benchmarks run, [`background`] what else
//! the machine runs, [`spec`] what decides a run, [`run`] one run from its spec, [`trace`] the
//! trace records and their writers, [`experiments`] the built-in experiments as plans,
//! [`explore`] the interleaving explorer, [`sweep`] grids of runs, [`validate`] the
//! model-versus-kernel figures, [`output`], [`report`] and [`html`] the output, [`unknowns`] the named set-up unknowns, and [`cli`] the
//! command line.

pub mod background;
pub mod calibrate;
pub mod cli;
pub mod crash;
pub mod experiments;
pub mod explore;
pub mod focus;
pub mod html;
pub mod hw;
pub mod import;
pub mod input;
pub mod limits;
pub mod linux;
pub mod output;
pub mod report;
pub mod run;
pub mod sim;
pub mod spec;
pub mod sweep;
pub mod trace;
pub mod unknowns;
pub mod validate;
pub mod workload;
pub mod world;
