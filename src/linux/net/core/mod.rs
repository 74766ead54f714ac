//! `net/core/`: the device layer (`dev.rs`) and `struct sock` (`sock.rs`).
pub mod dev;
pub mod sock;
