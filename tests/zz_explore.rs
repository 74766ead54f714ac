use schedsim::run::{build, RunSpec};
use schedsim::workload::params::Params;
use schedsim::linux::engine::dispatch;

fn walk(kernel: &str, patches: &str) {
    let mut s = RunSpec::new("ipistorm");
    s.machine = "epyc-7763-2s".into();
    s.kernel = kernel.into();
    s.patches = patches.into();
    s.params = Params::parse(["numipi=1000", "single=1", "offset=8", "cpulist=8"], "t").unwrap();
    s.trace = true;
    let mut k = build(&s).unwrap();
    println!("=== {kernel} {patches}");
    let mut last = String::new();
    while let Some((t, a)) = k.q.pop() {
        if k.finished { break; }
        k.now = t;
        dispatch(&mut k, a);
        if t > 3_527_000 && t < 3_531_000 {
            let st: Vec<String> = k.cpus[16].x.stack.iter().map(|f| { let s = format!("{:?}", f); s.chars().take(60).collect() }).collect();
            let cur = format!("{:?} w={:?} flags={:x}", st, k.cpus[16].x.waiting, k.tasks[k.cpus[16].rq.idle as usize].ti_flags);
            if cur != last { println!("{t} {cur}"); last = cur; }
        }
    }
}

#[test]
fn explore() {
    walk("v6.10", "+rfc-tif-notify-ipi");
    walk("v6.12", "");
}
