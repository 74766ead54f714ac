//! `arch/`: the x86 parts the model needs.
pub mod x86;
