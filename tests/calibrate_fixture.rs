//! The calibration pipeline on a saved capture: `tests/fixtures/calibrate/bundle.txt.gz` is a
//! bundle `schedsim machine --from-host --calibrate --save` wrote on this project's 2-vCPU
//! guest, each capture trimmed (tests/fixtures/README.md says how). The pure analysis
//! (`schedsim::calibrate::analyze`) must turn it into the same machine file and profile every
//! time, the file must carry `[path_costs]` in the format `hw` reads, and `validate` must never
//! call a figure predicted when its program was an input of the solve.
//!
//! `UPDATE_FIXTURES=1 cargo test --test calibrate_fixture` rewrites the expected files after a
//! deliberate change of the analysis.

use schedsim::calibrate::{self, bundle};
use schedsim::cli::validate::figure_status;
use schedsim::validate::Status;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/calibrate");

fn bundle() -> bundle::Bundle {
    let bytes = std::fs::read(format!("{DIR}/bundle.txt.gz")).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).unwrap();
    bundle::read(&text, "bundle.txt.gz").unwrap()
}

fn expect(name: &str, got: &str) {
    let path = format!("{DIR}/{name}");
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert!(want == got, "{name} changed; the analysis now writes:\n{got}");
}

#[test]
fn a_saved_capture_turns_into_the_same_machine_file_every_time() {
    let b = bundle();
    let o = calibrate::analyze(&b, "host-background.toml").unwrap();
    let again = calibrate::analyze(&b, "host-background.toml").unwrap();
    assert_eq!(o.machine, again.machine);
    assert_eq!(o.profile, again.profile);
    expect("expected-machine.toml", &o.machine);
    let profile = o.profile.clone().expect("the fixture has a quiet idle capture");
    expect("expected-background.toml", &profile);
    // The profile and the machine file read back, [path_costs] and all.
    schedsim::background::parse(&profile, "profile").unwrap();
    let m = schedsim::hw::machine_from_toml(&o.machine, "machine").unwrap();
    schedsim::linux::cost::check_measured(&m, "machine").unwrap();
    assert_eq!(m.topo.nr_cpus, 2);
    assert_eq!(m.path_costs.len(), schedsim::linux::cost::PATH_COSTS.len());
    let doc: toml::Table = o.machine.parse().unwrap();
    assert!(doc["clock_mhz"].as_integer().unwrap() > 0);
    let pc = doc["path_costs"].as_table().unwrap();
    let fields: Vec<&str> = schedsim::linux::cost::path_cost_names().collect();
    assert_eq!(pc.len(), fields.len(), "every PathCosts field has a row");
    for (k, v) in pc {
        assert!(fields.contains(&k.as_str()), "{k} is not a PathCosts field");
        let t = v.as_table().unwrap();
        assert!(t["ns"].as_integer().unwrap() > 0, "{k}");
        assert_eq!(t["clock_mhz"].as_integer(), doc["clock_mhz"].as_integer(), "{k}");
        for key in t.keys() {
            assert!(["ns", "clock_mhz", "spread_ns", "samples", "method"].contains(&key.as_str()), "{k}.{key}");
        }
        if let Some(s) = t.get("spread_ns") {
            let s = s.as_array().unwrap();
            assert!(s[0].as_integer() <= t["ns"].as_integer() && t["ns"].as_integer() <= s[1].as_integer(), "{k}");
        }
    }
    // The measured ones are the fixture's, not defaults: the guest's null pair and csd.
    let sol = &o.solution;
    assert!(sol.record_ns > 0);
    assert_eq!(sol.cost("ttwu_activate").unwrap().how, calibrate::solve::How::Measured);
    assert!(sol.hw.iter().any(|h| h.key == "ipi_send_ns"), "{:?}", sol.notes);
    // The socket capture's paths solve the socket costs (not default x k).
    assert!(b.capture("sock-1cpu").is_some(), "the fixture has the socket capture");
    for name in ["unix_sendmsg", "unix_skb", "unix_recvmsg", "unix_skb_free"] {
        let c = sol.cost(name).unwrap();
        assert_eq!(c.how, calibrate::solve::How::Composite, "{name}: {}", c.method);
        assert!(c.samples >= calibrate::solve::MIN_SAMPLES, "{name}");
        assert!(pc[name].as_table().unwrap().contains_key("spread_ns"), "{name}");
    }
    // Its write(2)s and read(2)s are not pipe samples.
    let sock = &o.captures.iter().find(|(n, _)| n == "sock-1cpu").unwrap().1;
    assert!(!sock.samples.contains_key(&calibrate::paths::Path::PipeWrite));
    assert!(sock.samples[&calibrate::paths::Path::SockWrite].len() >= calibrate::solve::MIN_SAMPLES);
}

#[test]
fn the_calibration_report_names_every_solved_key() {
    let b = bundle();
    let o = calibrate::analyze(&b, "host-background.toml").unwrap();
    let html = schedsim::html::calibration_page(&b, &o);
    let sol = &o.solution;
    // The trimmed long-halt captures give the host's curve; the guest's needs more bands than
    // they keep, and the report says it was not measured (naming it all the same).
    assert!(sol.halt_curve.is_some(), "the fixture has long halts: {:?}", sol.notes);
    let mut keys: Vec<&str> = sol.costs.iter().map(|c| c.name).collect();
    keys.extend(sol.hw.iter().map(|h| h.key));
    keys.extend(["halt_wake_extra_ns", "halt_refill_extra_ns"]);
    for k in keys {
        assert!(html.contains(k), "the report does not name {k}");
    }
    // Each measured cost beside its default, the curves' points in their table.
    for c in sol.costs.iter().filter(|c| c.how != calibrate::solve::How::Scaled) {
        assert!(html.contains(&c.ns.to_string()) && html.contains(&c.default_ns.to_string()), "{}", c.name);
    }
    for c in [&sol.halt_curve, &sol.refill_curve].into_iter().flatten() {
        for p in &c.points[1..] {
            assert!(html.contains(&format!("<td>{}</td></tr>", p[1])), "point {p:?}");
        }
    }
    assert!(html.contains("The halted vCPU's wake by halt length"));
}

#[test]
fn no_figure_reported_as_predicted_was_an_input_of_the_solve() {
    let b = bundle();
    let o = calibrate::analyze(&b, "host-background.toml").unwrap();
    let listed = calibrate::calibrated_programs(&o.machine);
    // What the solve read: the programs of the bundle's captures (`host-run PROGRAM ...`).
    let inputs: Vec<String> = b
        .meta
        .captures
        .iter()
        .filter_map(|c| c.command.split_whitespace().skip_while(|w| *w != "host-run").nth(1).map(str::to_string))
        .collect();
    assert!(inputs.iter().any(|p| p == "pingpong"), "{inputs:?}");
    // The calibrating process's own loops (the getppid() and socket loops) are inputs too: none
    // of them is a program validate runs, and messaging, which uses the socket paths they
    // measure, stays a prediction (the one-CPU loop does not determine its two-CPU behaviour).
    let own: Vec<&str> = b
        .meta
        .captures
        .iter()
        .filter(|c| !c.command.contains("host-run") && c.name != "idle")
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(own, ["syscall", "sock-1cpu"], "{own:?}");
    for c in b.meta.captures.iter().filter(|c| own.contains(&c.name.as_str())) {
        for program in ["messaging", "perf-pipe", "rtapp", "netperf", "tbench", "hackbench"] {
            assert!(!c.command.contains(program), "{}: {}", c.name, c.command);
        }
    }
    assert!(!listed.iter().any(|p| p == "sock" || p == "syscall"), "{listed:?}");
    for program in ["pingpong", "perf-pipe", "nanosleep", "messaging", "rtapp"] {
        let status = figure_status(program, &listed).unwrap();
        if status == Status::Predicted {
            assert!(!inputs.iter().any(|p| p == program), "{program} is reported predicted but the solve read it");
        }
        if inputs.iter().any(|p| p == program) {
            assert_eq!(status, Status::Calibrated, "{program} was an input of the solve");
        }
    }
    assert_eq!(figure_status("messaging", &listed), Some(Status::Predicted));
    assert_eq!(figure_status("rtapp", &listed), Some(Status::Predicted));
    assert_eq!(figure_status("perf-pipe", &listed), Some(Status::Calibrated));
    // An uncalibrated file marks nothing.
    assert_eq!(figure_status("messaging", &calibrate::calibrated_programs(&b.host)), None);
}
