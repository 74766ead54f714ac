//! Built-in experiments.
