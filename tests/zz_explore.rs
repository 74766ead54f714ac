use schedsim::run::{build, execute, RunSpec};
use schedsim::workload::params::Params;

fn go(p: &[&str]) {
    let mut s = RunSpec::new("ipistorm");
    s.machine = "smp-4".into();
    s.params = Params::parse(p.iter().copied(), "t").unwrap();
    s.idle_states = vec![("C2".into(), false)];
    let r = execute(&s).unwrap();
    if let schedsim::workload::Workload::Ipistorm(w) = &r.workload {
        println!("{p:?} finished={} sim_ns={} calls={} running={}", r.finished, r.sim_ns, w.calls(), w.running);
    }
    let mut k = build(&s).unwrap();
    k.run(s.limit_ns);
    let idle0 = k.cpus[0].rq.idle as usize;
    println!("  cpu0 idle flags={:x} waiting={:?} pnr={} nr_running={} qlen={}", k.tasks[idle0].ti_flags, k.cpus[0].x.waiting, k.cpus[0].pnr, k.cpus[0].rq.nr_running, k.q.len());
}

#[test]
fn explore() {
    go(&["numipi=5", "single=1", "cpulist=0"]);
    go(&["numipi=5", "single=1", "cpulist=0-1"]);
    go(&["numipi=5", "single=1", "cpulist=1"]);
}
