// 6675ce20046d "softirq: Allow raising SCHED_SOFTIRQ from SMP-call-function on RT kernel"
// (v6.13; part of the 2024 nohz series).
// See: 6675ce20046d
//
// Pins: on PREEMPT_RT, `do_softirq_post_smp_call_flush()` warns when the flush raised a
// softirq — except SCHED_SOFTIRQ with this patch — and then hands the work to ksoftirqd
// (`invoke_softirq()`) (docs/kernel-model.md §2.3, F7 step 4, F9, §5.1). Once ea9cffc0a154
// lets a kick delivered by polling raise SCHED_SOFTIRQ from `nohz_csd_func()` in the idle
// task's flush, v6.10-rt hits that WARN_ON_ONCE (the splat reported at boot on
// 6.10-rc6-rt11); with this patch the raise is expected and nothing warns. Without
// ea9cffc0a154 the kick is lost instead and nothing is raised, so nothing warns either.
//
// Setup (support::ilb_polling_spec with CONFIG_PREEMPT_RT): spinners started on CPU 0 of
// smp-4 with C2 off; CPU 1 is the idle load balancer and polls.

mod support;

use schedsim::linux::engine::Frame;
use schedsim::linux::kernel::softirq::{do_softirq_post_smp_call_flush, SCHED_SOFTIRQ, TIMER_SOFTIRQ};
use schedsim::run::{build, RunResult};
use schedsim::trace::{flags, Event, Sym, WarnSite};
use support::*;

fn run(kernel: &str, patches: &str, rt: bool) -> RunResult {
    let r = ilb_polling_run(kernel, patches, rt);
    let ks = kicks(&r.trace);
    assert!(!ks.is_empty(), "{kernel}{patches}: scenario: no ILB kick");
    assert!(ks.iter().all(|k| k.polling), "{kernel}{patches}: scenario: every kick by polling: {ks:?}");
    r
}

fn warned(r: &RunResult) -> bool {
    r.stats.warned_sites.contains(&WarnSite::DoSoftirqPostSmpCallFlush)
}

#[test]
fn rt_with_ea9cffc0a154_a_polling_kick_warns_in_the_flush() {
    let r = run("v6.10", "+ea9cffc0a154", true);
    let s = &r.stats;
    assert!(s.nohz_kicks_raised_softirq > 0, "scenario: the kicks raise SCHED_SOFTIRQ");
    assert!(s.warns > 0, "{s:?}");
    assert!(warned(&r), "{:?}", s.warned_sites);
    assert!(s.warns <= s.nohz_kicks_raised_softirq, "only raises from polling kicks warn: {s:?}");
    // The warning is recorded on a kicked CPU, in its idle task's flush, after nohz_csd_func.
    let t = &r.trace;
    let w = t
        .iter()
        .position(|x| matches!(x.event, Event::Warning { site: WarnSite::DoSoftirqPostSmpCallFlush }))
        .expect("a Warning record");
    let cpu = t[w].cpu;
    assert_eq!(t[w].pid, 0, "in the idle task:\n{}", render(t, &[cpu], 40));
    assert!(!has_flag(&t[w], flags::HARDIRQ));
    let exit = t[..w]
        .iter()
        .rposition(|x| is_csd_exit(x, cpu, Sym::NohzCsdFunc))
        .unwrap_or_else(|| panic!("no nohz_csd_func before the warning:\n{}", render(t, &[cpu], 40)));
    assert!(
        !t[exit..w].iter().any(|x| is_switch(x, cpu) || matches!(x.event, Event::CpuIdle { .. }) && x.cpu == cpu),
        "the warning belongs to the same flush:\n{}",
        render(&t[exit..], &[cpu], 20)
    );
}

#[test]
fn rt_with_the_patch_sched_softirq_from_the_flush_is_expected() {
    let r = run("v6.10", "+ea9cffc0a154,+6675ce20046d", true);
    assert!(r.stats.nohz_kicks_raised_softirq > 0, "scenario: the kicks still raise SCHED_SOFTIRQ");
    assert_eq!(r.stats.warns, 0, "{:?}", r.stats.warned_sites);
    assert!(!r.trace.iter().any(|x| matches!(x.event, Event::Warning { .. })));
    // On RT the raised softirq goes to ksoftirqd.
    assert!(r.stats.ksoftirqd_wakeups > 0);
}

#[test]
fn rt_without_ea9cffc0a154_the_kick_is_lost_and_nothing_warns() {
    let r = run("v6.10", "", true);
    assert_eq!(r.stats.nohz_kicks_raised_softirq, 0);
    assert!(r.stats.nohz_kicks_lost > 0);
    assert_eq!(r.stats.warns, 0, "{:?}", r.stats.warned_sites);
}

#[test]
fn rt_v6_13_does_not_warn() {
    let r = run("v6.13", "", true);
    assert!(r.stats.nohz_kicks_raised_softirq > 0);
    assert_eq!(r.stats.warns, 0, "{:?}", r.stats.warned_sites);
}

#[test]
fn non_rt_never_warns_there() {
    let r = run("v6.10", "+ea9cffc0a154", false);
    assert!(r.stats.nohz_kicks_raised_softirq > 0);
    assert_eq!(r.stats.warns, 0, "!RT runs the softirq inline: {:?}", r.stats.warned_sites);
}

// ---------------------------------------------------------------------------------------
// do_softirq_post_smp_call_flush() on RT
// ---------------------------------------------------------------------------------------

fn rt_kernel(patches: &str) -> schedsim::run::RunWorld {
    let mut spec = idle_spec("smp-4", "v6.10", patches);
    spec.preempt_rt = true;
    build(&spec).expect("valid spec")
}

/// Raise `bits` during a (pretend) flush that started with `was` pending; returns whether it
/// warned and what it asked for.
fn after_flush(patches: &str, was: u32, now: u32) -> (bool, Option<Frame>) {
    let mut k = rt_kernel(patches);
    k.cpus[ILB_CPU as usize].softirq_pending = now;
    let f = do_softirq_post_smp_call_flush(&mut k, ILB_CPU, was);
    (k.stats.warns > 0, f)
}

#[test]
fn rt_post_flush_warns_on_new_bits_but_sched_softirq_with_the_patch() {
    let sched = 1 << SCHED_SOFTIRQ;
    let timer = 1 << TIMER_SOFTIRQ;
    for (patches, sched_warns) in [("", true), ("+6675ce20046d", false)] {
        let (w, f) = after_flush(patches, 0, sched);
        assert_eq!(w, sched_warns, "{patches}: SCHED_SOFTIRQ raised by the flush");
        assert!(matches!(f, Some(Frame::TryToWakeUp(_))), "{patches}: RT hands it to ksoftirqd: {f:?}");
        let (w, _) = after_flush(patches, 0, timer);
        assert!(w, "{patches}: any other softirq raised by the flush still warns");
        let (w, _) = after_flush(patches, timer, timer | sched);
        assert_eq!(w, sched_warns, "{patches}: only the new bits count");
        let (w, _) = after_flush(patches, sched, sched);
        assert!(!w, "{patches}: nothing new");
    }
}

/// Both before and after the patch the RT function acts only if the flush changed the pending
/// mask: `if (WARN_ON_ONCE(was_pending != local_softirq_pending())) invoke_softirq();` in
/// v6.10, `if (unlikely(was_pending != is_pending)) { WARN_ON_ONCE(...); invoke_softirq(); }`
/// with the patch. Softirqs already pending before the flush are not handed to ksoftirqd
/// again from here.
#[test]
fn rt_post_flush_with_nothing_new_does_nothing() {
    let timer = 1 << TIMER_SOFTIRQ;
    for patches in ["", "+6675ce20046d"] {
        let (w, f) = after_flush(patches, timer, timer);
        assert!(!w, "{patches}");
        assert!(f.is_none(), "{patches}: unchanged pending mask: no invoke_softirq(): {f:?}");
    }
}
