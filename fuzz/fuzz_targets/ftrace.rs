//! The ftrace text importer of `schedsim validate --from-trace FILE`: idle-silent CPUs, the
//! per-wakeup counts of a program (by pid with its forks, and by task name) and the figures.
#![no_main]
use libfuzzer_sys::fuzz_target;
use schedsim::validate::{analyze, figures, silent_idle_cpus, Program};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let silent = silent_idle_cpus(text, 20);
    let roots = [text.lines().find_map(|l| schedsim::validate::Line::parse(l)).map_or(1, |l| l.pid)];
    let c = analyze(text, &Program::Pids { roots: &roots, follow_forks: true }, &silent);
    let _ = figures(&c, &["POLL".to_string(), "C1".to_string()], Some(("time", 1.0)));
    let comms = ["hackbench".to_string(), "schbench".to_string()];
    let c = analyze(text, &Program::Comms(&comms), &silent);
    let _ = figures(&c, &[], None);
    let _ = c.foreign_share();
});
