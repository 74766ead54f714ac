//! The command line.
pub fn main() -> i32 { 0 }
