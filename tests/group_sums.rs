//! The balancing sums (`linux::kernel::sched::group_sums`) against a rescan of the runqueues
//! through whole hackbench runs: every group of every CPU's domains, the idle mask, the compact
//! `cfs_h_nr_running` and the overload count.

use schedsim::linux::kernel::sched::group_sums::{debug_check_group, debug_check_overloaded};
use schedsim::linux::Kernel;
use schedsim::run::{build, RunWorld};
use schedsim::spec::RunSpec;

fn assert_matches_rescan(k: &Kernel) {
    for cpu in 0..k.m.topo.nr_cpus {
        assert_eq!(k.sd.sums.cfs_h_nr_running(cpu), k.cpus[cpu as usize].rq.cfs_h_nr_running);
        for (level, d) in k.sd.domains(cpu).iter().enumerate() {
            assert_eq!(k.sd.sums.local_group(cpu, level), d.groups.iter().position(|g| g.test(cpu)));
            for gi in 0..d.groups.len() {
                debug_check_group(k, cpu, level, gi);
            }
        }
    }
    let idle: Vec<u32> = (0..k.m.topo.nr_cpus).filter(|&c| schedsim::linux::kernel::sched::idle_cpu(k, c)).collect();
    assert_eq!(k.sd.sums.idle_mask().iter().collect::<Vec<_>>(), idle);
    debug_check_overloaded(k);
}

fn hackbench_on(machine: &str, args: &str) -> RunWorld {
    let mut s = RunSpec::new("hackbench");
    s.machine = machine.into();
    s.background = Some("server".into());
    s.params.set("tool".into(), "perf".into());
    s.params.set("args".into(), args.into());
    build(&s).expect("valid spec")
}

#[test]
fn the_sums_equal_a_rescan_through_a_hackbench_run_with_numa_levels() {
    // 4 nodes: NUMA levels with overlapping groups; processes and threads mode.
    for args in ["-p -g 4 -l 30", "-g 2 -l 30"] {
        let mut w = hackbench_on("xeon-128-4n", args);
        assert_matches_rescan(&w);
        let mut checked = 0;
        let mut t = 0;
        while !w.finished() && checked < 400 {
            t += 50_000;
            w.run(t);
            assert_matches_rescan(&w);
            checked += 1;
        }
        // The run went through busy and idle phases, not just boot.
        assert!(w.stats.context_switches > 1000, "{args}: {}", w.stats.context_switches);
    }
}

#[test]
fn group_ids_are_shared_by_cpus_that_share_a_group_mask() {
    let k = hackbench_on("epyc-7763-2s", "-g 1 -l 1");
    // CPUs 0 and 1 (different cores of one LLC) see the same MC-level groups.
    let (a, b) = (k.sd.domains(0), k.sd.domains(1));
    let mc = a.iter().position(|d| d.name == "MC").expect("MC level");
    assert_eq!(b[mc].name, "MC");
    for (ga, g) in a[mc].groups.iter().enumerate() {
        let gb = b[mc].groups.iter().position(|h| std::sync::Arc::ptr_eq(g, h)).expect("same groups");
        assert_eq!(k.sd.sums.group_id(0, mc, ga), k.sd.sums.group_id(1, mc, gb));
    }
}
