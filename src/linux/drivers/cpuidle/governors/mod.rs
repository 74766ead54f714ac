//! `drivers/cpuidle/governors/`.
pub mod menu;
