//! The Perfetto and trace.dat writers against the ftrace text writer of the same run, read back
//! by the reference readers: Perfetto's own Python classes (PyPI `perfetto`,
//! `perfetto_trace_pb2`) and Debian's `trace-cmd report`. `.ci/run` installs both; when one is
//! missing the test fails under CI (`CI` set) and is skipped with a message elsewhere.
//!
//! Runs hand their records over in small chunks here, so every writer crosses many chunk
//! boundaries (the streaming path), and the streamed text must equal the in-memory text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use schedsim::run;
use schedsim::spec::RunSpec;
use schedsim::trace::sink::TraceFormat;
use schedsim::workload::params::Params;

/// Records per hand-over in these tests (the default is 64K).
const CHUNK: usize = 700;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedsim-traceformats-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A reference reader is missing: fail under CI, skip (loudly) elsewhere.
fn missing(what: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{what} is missing, and CI is set: .ci/run must install it");
    }
    eprintln!("SKIPPED: {what} is missing (install it, or run .ci/run); the check did not run");
}

/// The runs compared: hackbench (switches, wakeups, migrations, IPIs, csds, softirqs, timer)
/// and ipistorm with multi-target calls (`ipi_send_cpumask`) on a 4-CPU machine.
fn specs() -> Vec<(&'static str, RunSpec)> {
    let mut hb = RunSpec::new("hackbench");
    hb.machine = "smp-4".into();
    let mut pairs = schedsim::spec::scenario::builtin("hackbench").unwrap().params.pairs().to_vec();
    pairs.extend(schedsim::workload::hackbench::command_line_params(&[
        "perf".into(),
        "-p".into(),
        "-g".into(),
        "2".into(),
        "-l".into(),
        "40".into(),
    ]));
    hb.params = Params::from_pairs(pairs, "test");
    let mut ipi = RunSpec::new("ipistorm");
    ipi.machine = "smp-4".into();
    ipi.params = Params::parse(["numipi=300", "single=0", "cpulist=0", "offset=1"], "test").unwrap();
    vec![("hackbench", hb), ("ipistorm-many", ipi)]
}

/// Run `spec` streaming to `dir/name.ext` in `format`; returns the path and the records written.
fn write(spec: &RunSpec, dir: &Path, name: &str, format: TraceFormat) -> (PathBuf, u64) {
    let ext = match format {
        TraceFormat::Text => "txt",
        TraceFormat::Perfetto => "perfetto-trace",
        TraceFormat::Dat => "dat",
    };
    let p = dir.join(format!("{name}.{ext}"));
    let (_, n) = run::execute_streaming_chunked(spec, &p, format, CHUNK).unwrap();
    (p, n)
}

/// One line of ftrace text (or of `trace-cmd report`), split into its columns.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    comm: String,
    pid: u32,
    cpu: u32,
    flags: String,
    ts: String,
    event: String,
    rest: String,
}

/// `"%16s-%-7d [%03d] FFFFF %5lu.%06lu: event: rest"`.
fn parse_text(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let open = l.find(" [").unwrap();
            let (comm, pid) = l[..open].trim().rsplit_once('-').unwrap();
            let close = open + l[open..].find("] ").unwrap();
            let cpu = l[open + 2..close].parse().unwrap();
            let flags = l[close + 2..close + 7].to_string();
            let after = &l[close + 8..];
            let (ts, after) = after.split_once(": ").unwrap();
            let (event, rest) = after.split_once(": ").unwrap_or((after.trim_end_matches(':'), ""));
            Line {
                comm: comm.to_string(),
                pid: pid.trim().parse().unwrap(),
                cpu,
                flags,
                ts: ts.trim().to_string(),
                event: event.to_string(),
                rest: rest.to_string(),
            }
        })
        .collect()
}

/// The CPUs of a cpumask in tracefs's `%*pb` form (hex words, most significant first).
fn cpus_of_pb(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, w) in s.split(',').rev().enumerate() {
        let v = u32::from_str_radix(w, 16).unwrap();
        out.extend((0..32).filter(|b| v & (1 << b) != 0).map(|b| i as u32 * 32 + b));
    }
    out.sort();
    out
}

/// The CPUs of a cpumask in list form (`0-7,9`), as libtraceevent prints it.
fn cpus_of_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out.sort();
    out
}

/// Event text with the representation differences of the readers taken out: `%pS` as
/// `sym+off/size` (tracefs) or `sym+off` (libtraceevent), `%p` zero-padded or `0x`-prefixed,
/// cpumasks as hex words or as a list, and column padding.
fn normalize(rest: &str, mask_is_list: bool) -> String {
    rest.split_whitespace()
        .map(|tok| {
            if let Some(v) = tok.strip_prefix("csd=") {
                let (v, comma) = v.strip_suffix(',').map_or((v, ""), |v| (v, ","));
                let n = u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap();
                return format!("csd={n}{comma}");
            }
            if let Some(v) = tok.strip_prefix("cpumask=") {
                let cpus = if mask_is_list { cpus_of_list(v) } else { cpus_of_pb(v) };
                return format!("cpumask={cpus:?}");
            }
            if let (Some(plus), Some(slash)) = (tok.find("+0x"), tok.rfind("/0x")) {
                if slash > plus {
                    return tok[..slash].to_string();
                }
            }
            tok.to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The flag columns in the legend of the libtraceevent that Debian's trace-cmd 3.1 uses (1.7):
/// it predates the 6.13 lazy/`n`/`p` split, so it prints `N` for TIF_NEED_RESCHED whether or
/// not PREEMPT_NEED_RESCHED is folded in, and knows no BH-disabled `b`/`D`. The bits in the
/// file are the same; only their letters differ.
fn old_legend(flags: &str) -> String {
    let c: Vec<char> = flags.chars().collect();
    let c1 = if matches!(c[0], 'd' | 'D') { 'd' } else { '.' };
    let c2 = if matches!(c[1], 'N' | 'n' | 'B' | 'b') { 'N' } else { '.' };
    format!("{c1}{c2}{}{}{}", c[2], c[3], c[4])
}

/// ns2usecs(): the text writer's microseconds.
fn usecs(ns: u64) -> String {
    let us = ns / 1000 + u64::from(ns % 1000 >= 500);
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

#[test]
fn streamed_text_equals_the_in_memory_text() {
    let dir = tmpdir("text");
    for (name, spec) in specs() {
        let (p, n) = write(&spec, &dir, name, TraceFormat::Text);
        let mut s = spec.clone();
        s.trace = true;
        let r = run::execute(&s).unwrap();
        assert_eq!(n as usize, r.trace.len());
        assert!(n as usize > 3 * CHUNK, "{name}: {n} records is too few to cross chunks");
        let whole = dir.join(format!("{name}-whole.txt"));
        run::write_trace_file(&r, &whole).unwrap();
        assert!(std::fs::read(&p).unwrap() == std::fs::read(&whole).unwrap(), "{name}: streamed text differs");
    }
    // Nothing but the finished files is left behind.
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("partial")));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `trace-cmd report` of our trace.dat prints, line for line, what the text writer prints:
/// same tasks, CPUs, flags, timestamps, events and fields.
#[test]
fn trace_cmd_reports_the_dat_file_as_the_text_writer_prints_it() {
    if Command::new("trace-cmd").arg("--version").output().is_err() {
        return missing("trace-cmd (Debian package trace-cmd)");
    }
    let dir = tmpdir("dat");
    for (name, spec) in specs() {
        let (txt, _) = write(&spec, &dir, name, TraceFormat::Text);
        let (dat, n) = write(&spec, &dir, name, TraceFormat::Dat);
        let report = |flag: &str| -> Vec<String> {
            let o = Command::new("trace-cmd").args(["report", "-N", flag, "-i"]).arg(&dat).output().unwrap();
            assert!(o.status.success(), "trace-cmd report {flag}: {}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with("cpus=") && !l.starts_with("version"))
                .map(String::from)
                .collect()
        };
        // -t: nanosecond timestamps; -l: the latency (flags) columns.
        let ns_lines = report("-t");
        let lat_lines = report("-l");
        let want = parse_text(&txt);
        assert_eq!(want.len() as u64, n);
        assert_eq!(ns_lines.len(), want.len(), "{name}: trace-cmd reports a different number of records");
        assert_eq!(lat_lines.len(), want.len());
        let mut got_lines = Vec::new();
        let mut last_ns = 0;
        for (l, lat) in ns_lines.iter().zip(&lat_lines) {
            // "%16s-%-5d [%03d] %5lu.%09lu: %-20s fields"
            let open = l.find(" [").unwrap();
            let (comm, pid) = l[..open].trim().rsplit_once('-').unwrap();
            let close = open + l[open..].find(']').unwrap();
            let (ts, after) = l[close + 1..].trim_start().split_once(": ").unwrap();
            let (sec, nsec) = ts.split_once('.').unwrap();
            let ns = sec.parse::<u64>().unwrap() * 1_000_000_000 + nsec.parse::<u64>().unwrap();
            let (mut event, mut rest) = after.split_once(':').map(|(e, r)| (e.trim(), r.trim())).unwrap();
            if event == "print" {
                // ftrace's print entry: "%ps: %s"; the text writer shows the function as the name.
                (event, rest) = rest.split_once(": ").unwrap();
            }
            // -l: "comm-pid  CPUflags ..." with the CPU number followed by five flag columns.
            let lat_cols = lat[lat.find('-').unwrap()..].split_whitespace().nth(1).unwrap();
            let flags = &lat_cols[lat_cols.len() - 5..];
            let got = Line {
                comm: comm.to_string(),
                pid: pid.trim().parse().unwrap(),
                cpu: l[open + 2..close].trim().parse().unwrap(),
                flags: flags.to_string(),
                ts: usecs(ns),
                event: event.to_string(),
                rest: normalize(rest, true),
            };
            assert!(ns >= last_ns, "{name}: trace-cmd's merge went back in time at {l}");
            last_ns = ns;
            got_lines.push((Line { flags: old_legend(&got.flags), ..got }, l.clone()));
        }
        // trace-cmd merges the per-CPU buffers by timestamp, as the kernel's own trace file does;
        // records of different CPUs at the same nanosecond may come in either order. Per CPU,
        // the order is the ring buffer's: it must be the text's, line for line.
        for cpu in 0..4 {
            let want: Vec<Line> = want
                .iter()
                .filter(|w| w.cpu == cpu)
                .map(|w| Line { rest: normalize(&w.rest, false), flags: old_legend(&w.flags), ..w.clone() })
                .collect();
            let got: Vec<&(Line, String)> = got_lines.iter().filter(|(g, _)| g.cpu == cpu).collect();
            assert_eq!(got.len(), want.len(), "{name}: CPU {cpu}: record count");
            for (i, (w, (g, l))) in want.iter().zip(got).enumerate() {
                assert_eq!(g, w, "{name}: CPU {cpu} record {i}:\n  trace-cmd: {l}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

const DECODE_PY: &str = r#"
import sys, json
try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:
    print("perfetto python package missing:", e, file=sys.stderr)
    sys.exit(3)
t = pb.Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
out = {"events": [], "threads": {}, "clocks": [], "primary_clock": None}
for p in t.packet:
    if p.HasField("clock_snapshot"):
        out["clocks"] = [c.clock_id for c in p.clock_snapshot.clocks]
        out["primary_clock"] = p.clock_snapshot.primary_trace_clock
    if p.HasField("system_info"):
        out["release"] = p.system_info.utsname.release
        out["num_cpus"] = p.system_info.num_cpus
    if p.HasField("process_tree"):
        for th in p.process_tree.threads:
            out["threads"][str(th.tid)] = [th.name, th.tgid]
    if p.HasField("ftrace_events"):
        b = p.ftrace_events
        for e in b.event:
            kind = e.WhichOneof("event")
            m = getattr(e, kind)
            if kind == "generic":
                name = m.event_name
                f = {}
                for fl in m.field:
                    vals = [v for fd, v in fl.ListFields() if fd.name != "name"]
                    f[fl.name] = str(vals[0])
            else:
                name = kind
                f = {fd.name: str(v) for fd, v in m.ListFields()}
            out["events"].append([b.cpu, e.timestamp, e.pid, e.common_flags, name, f])
json.dump(out, sys.stdout)
"#;

/// `sched_switch`'s prev_state as the print fmt renders it.
fn state_letters(state: u32) -> String {
    let bits = state & 0xff;
    let mut s = if bits == 0 {
        "R".to_string()
    } else {
        "SDTtXZPI"
            .chars()
            .enumerate()
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, c)| c.to_string())
            .collect::<Vec<_>>()
            .join("|")
    };
    if state & 0x100 != 0 {
        s.push('+');
    }
    s
}

/// Perfetto's own classes decode our file into the same records as the text writer prints:
/// per CPU, the same events in the same order with the same pid, timestamp and fields; every
/// task named by a thread descriptor; a clock snapshot naming the boot clock.
#[test]
fn perfetto_classes_decode_the_same_records_as_the_text() {
    let dir = tmpdir("perfetto");
    let script = dir.join("decode.py");
    std::fs::write(&script, DECODE_PY).unwrap();
    for (name, spec) in specs() {
        let (txt, _) = write(&spec, &dir, name, TraceFormat::Text);
        let (pf, n) = write(&spec, &dir, name, TraceFormat::Perfetto);
        let o = match Command::new("python3").arg(&script).arg(&pf).output() {
            Ok(o) => o,
            Err(_) => return missing("python3"),
        };
        if o.status.code() == Some(3) {
            return missing("the perfetto Python package (pip install perfetto)");
        }
        assert!(o.status.success(), "decode failed: {}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc["clocks"].as_array().unwrap()[0], 6, "BOOTTIME first");
        assert_eq!(doc["primary_clock"], 6);
        assert_eq!(doc["release"], schedsim::trace::perfetto::RELEASE);
        assert_eq!(doc["num_cpus"], 4);
        let events = doc["events"].as_array().unwrap();
        assert_eq!(events.len() as u64, n, "{name}: event count");
        let want = parse_text(&txt);
        assert_eq!(want.len(), events.len());
        // Per CPU, in order.
        let mut by_cpu: BTreeMap<u64, Vec<&serde_json::Value>> = BTreeMap::new();
        for e in events {
            by_cpu.entry(e[0].as_u64().unwrap()).or_default().push(e);
        }
        let mut next: BTreeMap<u64, usize> = BTreeMap::new();
        for (i, w) in want.iter().enumerate() {
            let cpu = u64::from(w.cpu);
            let k = next.entry(cpu).or_default();
            let e = by_cpu[&cpu][*k];
            *k += 1;
            let ctx = format!("{name}: record {i} {w:?} vs {e}");
            assert_eq!(usecs(e[1].as_u64().unwrap()), w.ts, "{ctx}");
            assert_eq!(e[2].as_u64().unwrap(), u64::from(w.pid), "{ctx}");
            let fields = e[5].as_object().unwrap();
            let ename = e[4].as_str().unwrap();
            if ename == "print" {
                assert_eq!(fields["buf"].as_str().unwrap(), format!("{}: {}\n", w.event, w.rest), "{ctx}");
                continue;
            }
            assert_eq!(ename, w.event, "{ctx}");
            let kv: Vec<(&str, &str)> = w
                .rest
                .split_whitespace()
                .filter_map(|t| t.trim_end_matches(',').split_once('='))
                .filter(|(k, _)| !k.is_empty() && !k.starts_with('['))
                // Perfetto's SchedProcessExitFtraceEvent has tgid where the 6.18 format has
                // group_dead: neither side has the other's field.
                .filter(|(k, _)| !(ename == "sched_process_exit" && *k == "group_dead"))
                .collect();
            let extra = usize::from(ename == "sched_process_exit" && fields.contains_key("tgid"));
            assert_eq!(kv.len() + extra, fields.len(), "{ctx}: field count");
            for (key, text_val) in kv {
                let got = fields.get(key).and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{ctx}: no field {key}"));
                let same = match key {
                    "prev_state" => state_letters(got.parse().unwrap()) == text_val,
                    "csd" => got.parse::<u64>().unwrap() == u64::from_str_radix(text_val, 16).unwrap(),
                    _ => match (got.parse::<i64>(), text_val.parse::<i64>()) {
                        (Ok(a), Ok(b)) => a == b,
                        _ => got == text_val,
                    },
                };
                assert!(same, "{ctx}: {key}: perfetto {got} vs text {text_val}");
            }
        }
        // Every task in the text has a thread descriptor with its comm.
        let threads = doc["threads"].as_object().unwrap();
        for w in want.iter().filter(|w| w.pid != 0) {
            assert_eq!(threads[&w.pid.to_string()][0].as_str().unwrap(), w.comm, "{name}: thread {}", w.pid);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The record buffer never grows past one chunk, however many records a run writes.
#[test]
fn the_record_buffer_stays_one_chunk() {
    let dir = tmpdir("bounded");
    let (name, spec) = specs().remove(0);
    let mut k = run::build(&spec).unwrap();
    k.trace.enabled = true;
    k.trace.chunk = 100;
    let p = dir.join(format!("{name}.dat"));
    k.trace.sink = Some(schedsim::trace::sink::open(&p, TraceFormat::Dat, 4).unwrap());
    k.run(spec.limit_ns);
    k.flush_trace();
    assert!(k.trace.records.capacity() <= 128, "buffer grew to {}", k.trace.records.capacity());
    let n = k.trace.sink.take().unwrap().finish().unwrap();
    assert!(n > 2000, "{n} records");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A write error ends the run with the file and the OS error named, and leaves nothing behind.
#[test]
fn write_errors_name_the_file_and_fail_the_command() {
    let bin = env!("CARGO_BIN_EXE_schedsim");
    for fmt in TraceFormat::NAMES {
        let o = Command::new(bin)
            .args(["run", "ipistorm", "numipi=50", "--trace", "/dev/full", "--trace-format", fmt])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{fmt}: /dev/full accepted");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("cannot write trace file /dev/full") && err.contains("os error 28"), "{fmt}: {err}");
    }
    let dir = tmpdir("err");
    let o = Command::new(bin)
        .args(["run", "ipistorm", "numipi=50", "--trace"])
        .arg(dir.join("no/such/dir/t.dat"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("No such file or directory"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
