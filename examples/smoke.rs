use schedsim::run::*;
use schedsim::workload::params::Params;
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut s = RunSpec::new("ipistorm");
    s.params = Params::parse(["numipi=30", "single=1", "offset=8", "cpulist=8", "wait=1"], "cli").unwrap();
    if let Some(p) = args.first() { s.patches = p.clone(); }
    if let Some(m) = args.get(1) { s.machine = m.clone(); if m == "smp-4" { s.params = Params::parse(["numipi=2000","single=1","offset=1","cpulist=1"], "cli").unwrap(); } }
    s.trace = args.get(2).is_some();
    let t = std::time::Instant::now();
    let r = execute(&s).unwrap();
    let el = t.elapsed();
    if let schedsim::workload::Workload::Ipistorm(w) = &r.workload {
        println!("{} finished={} total={}ns per-call={}ns polling={} ipi={} coalesced={} mean_poll={} mean_ipi={}", r.kernel_label, r.finished, w.total_ns(), w.total_ns()/w.calls().max(1), w.calls_polling, w.calls_ipi, w.calls_coalesced, w.ns_polling/w.calls_polling.max(1), w.ns_ipi/w.calls_ipi.max(1));
    }
    println!("actions={} wall={:?} rate={:.1}M/s sim={}ns", r.actions, el, r.actions as f64/el.as_secs_f64()/1e6, r.sim_ns);
    let st = &r.stats;
    println!("ipis_sent={} avoided={} idle_exits={} sched_idle={} newidle={} ctxsw={} ticks={} tick_stops={}", st.ipis_sent, st.ipis_avoided, st.idle_exits, st.schedule_idle_calls, st.newidle_calls, st.context_switches, st.ticks, st.tick_stops);
    if s.trace { write_trace_file(&r, std::path::Path::new("/tmp/t.txt")).unwrap(); }
}
