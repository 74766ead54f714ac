//! `net/`: the socket families workloads use. Only AF_UNIX stream sockets so far.
pub mod unix;
