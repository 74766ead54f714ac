//! `schedsim run ipistorm`'s "busiest CPUs" table lists the CPUs that worked: the sender (CPU8)
//! and the target (CPU16), not idle CPUs whose IRQs-off idle state (MWAIT) once ranked them
//! first (issue 15).

#[test]
fn the_busiest_cpus_of_ipistorm_are_the_sender_and_the_target() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_schedsim"))
        .args(["run", "ipistorm", "numipi=300", "--quiet", "--background", "none"])
        .output()
        .expect("schedsim runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let table = out.split("busiest CPUs").nth(1).expect("the table is printed");
    let cpus: Vec<&str> = table.lines().skip(2).take(2).filter_map(|l| l.split_whitespace().next()).collect();
    let mut cpus = cpus;
    cpus.sort();
    assert_eq!(cpus, ["16", "8"], "{table}");
}
