//! `schedsim machine --from-host`: a machine file describing the machine schedsim runs on,
//! read from `/sys` and `/proc`. What the kernel exposes is read (topology and Linux CPU
//! numbering, SMT, LLCs, NUMA distances, the cpuidle driver, governor and states with their
//! latencies and disable flags, the haltpoll governor's parameters, CONFIG_HZ and NO_HZ from
//! the kernel config, the hypervisor flag); what it does not expose (cache-line transfer,
//! IPI and wake-up costs) is taken from the closest preset and every such value is marked
//! `# guess:` with its source. The text is checked by [`crate::hw::machine_from_toml`] before
//! it is returned, so it always reads back through `--machine FILE.toml`.
//!
//! All reads go through [`HostFs`], rooted at `/` normally and at a directory of copied files
//! in tests.

use crate::hw::cpumask::parse_cpulist;
use crate::hw::{self, Governor, HaltpollParams};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

/// `schedsim machine`.
#[derive(clap::Args, Debug)]
pub struct MachineArgs {
    /// Read this machine's topology, idle states and kernel settings from /sys and /proc.
    #[arg(long, conflicts_with = "scaled_epyc")]
    pub from_host: bool,
    /// Instead: the EPYC 7763 preset scaled to N CPUs (a multiple of 8), the machine of
    /// `bench --scaling` at that size.
    #[arg(long, value_name = "N")]
    pub scaled_epyc: Option<u32>,
    /// The machine's name in the file (--from-host).
    #[arg(long, default_value = "host")]
    pub name: String,
    /// Write the file here (completely or not at all) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// With --from-host: also measure this host's path costs and background under tracefs
    /// (root; about half a minute) and write them into the file, the background profile beside
    /// it as FILE-background.toml (docs/costs.md, "Calibration").
    #[arg(long, requires = "from_host")]
    pub calibrate: bool,
    /// With --calibrate: a report of each measured cost beside the model's default.
    #[arg(long, value_name = "FILE", requires = "calibrate")]
    pub html: Option<PathBuf>,
    /// With --calibrate: keep everything captured in this bundle (gzipped text).
    #[arg(long, value_name = "FILE", requires = "calibrate")]
    pub save: Option<PathBuf>,
    /// With --calibrate: analyze a saved bundle instead of capturing (no root needed).
    #[arg(long, value_name = "FILE", requires = "calibrate")]
    pub from_capture: Option<PathBuf>,
    /// With --calibrate: discard a capture in which other tasks used more than this share of
    /// the CPUs (percent; default 5), and try again.
    #[arg(long, value_name = "PCT", requires = "calibrate")]
    pub max_foreign: Option<u64>,
}

/// `schedsim machine --from-host | --scaled-epyc N [-o FILE]`.
pub fn cmd_machine(a: MachineArgs) -> Result<(), String> {
    if a.calibrate {
        return super::calibrate::cmd_calibrate(&a);
    }
    let text = match a.scaled_epyc {
        Some(n) => super::bench::scaled_machine_toml(n)?,
        None if a.from_host => machine_toml_from_host(&HostFs::real(), &a.name)?,
        None => {
            return Err("machine: give --from-host or --scaled-epyc N (a preset's file is printed by \
                        `schedsim list --machine NAME`)"
                .into())
        }
    };
    match &a.output {
        None => super::emit(&text),
        Some(p) => write_atomically(p, text.as_bytes())?,
    }
    Ok(())
}

/// Write `bytes` to `path` completely or not at all, with the trace files' discipline
/// ([`crate::trace::sink::Output`]: a temporary file renamed into place, and a target that is
/// not a regular file, such as `/dev/null`, written in place rather than replaced).
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let res = crate::trace::sink::Output::create(path).and_then(|mut o| {
        o.w().write_all(bytes)?;
        o.commit()
    });
    res.map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Files of the host, under `root`.
pub struct HostFs {
    pub root: PathBuf,
}

impl HostFs {
    pub fn real() -> HostFs {
        HostFs { root: PathBuf::from("/") }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }

    /// The trimmed contents of a file, or None when it cannot be read.
    pub fn read(&self, p: &str) -> Option<String> {
        std::fs::read_to_string(self.path(p)).ok().map(|s| s.trim().to_string())
    }

    fn read_u64(&self, p: &str) -> Option<u64> {
        self.read(p)?.parse().ok()
    }

    fn exists(&self, p: &str) -> bool {
        self.path(p).exists()
    }

    /// Names in a directory, sorted.
    fn list(&self, p: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path(p))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The kernel config as text: /proc/config.gz or
    /// /boot/config-RELEASE. Returns (text, where it came from).
    fn kernel_config(&self, release: &str) -> Option<(String, String)> {
        if let Ok(f) = std::fs::File::open(self.path("/proc/config.gz")) {
            let mut text = String::new();
            if std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut text).is_ok() {
                return Some((text, "/proc/config.gz".into()));
            }
        }
        let boot = format!("/boot/config-{release}");
        self.read(&boot).map(|t| (t, boot))
    }
}

fn config_value<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

fn cpus_in(list: &str) -> Vec<u32> {
    parse_cpulist(list, 65536).map(|m| m.iter().collect()).unwrap_or_default()
}

/// What was read about one CPU.
#[derive(Debug, Clone)]
struct HostCpu {
    id: u32,
    package: u32,
    siblings: Vec<u32>,
    llc: Vec<u32>,
    node: u32,
}

/// Build the machine file text from the host's files. `name` is the machine's name.
pub fn machine_toml_from_host(fs: &HostFs, name: &str) -> Result<String, String> {
    let mut notes: Vec<String> = Vec::new();
    let release = fs.read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let cpuinfo = fs.read("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let vendor = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("vendor_id").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_default();
    let flags: BTreeSet<&str> = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags").and_then(|r| r.split_once(':')).map(|(_, v)| v))
        .map(|v| v.split_whitespace().collect())
        .unwrap_or_default();
    let hypervisor = flags.contains("hypervisor");

    // CPUs and their topology.
    let online = fs.read("/sys/devices/system/cpu/online").ok_or("cannot read /sys/devices/system/cpu/online")?;
    let ids = cpus_in(&online);
    if ids.is_empty() {
        return Err(format!("/sys/devices/system/cpu/online reads `{online}`: no CPU"));
    }
    if ids.iter().enumerate().any(|(i, &c)| i as u32 != c) {
        return Err(format!(
            "online CPUs are {online}: the model numbers CPUs 0..N-1 without holes (bring the offline CPUs up first)"
        ));
    }
    let node_of = |cpu: u32| -> Option<u32> {
        fs.list("/sys/devices/system/node").iter().filter_map(|n| n.strip_prefix("node")?.parse::<u32>().ok()).find(
            |n| {
                fs.read(&format!("/sys/devices/system/node/node{n}/cpulist"))
                    .is_some_and(|l| cpus_in(&l).contains(&cpu))
            },
        )
    };
    let mut cpus = Vec::new();
    let mut llc_level_used = 0;
    for &c in &ids {
        let t = format!("/sys/devices/system/cpu/cpu{c}/topology");
        let package = fs.read_u64(&format!("{t}/physical_package_id")).unwrap_or(0) as u32;
        let siblings = fs.read(&format!("{t}/thread_siblings_list")).map(|l| cpus_in(&l)).unwrap_or_else(|| vec![c]);
        // The LLC: the highest-level unified or data cache's sharing list.
        let cache = format!("/sys/devices/system/cpu/cpu{c}/cache");
        let mut best: Option<(u64, Vec<u32>)> = None;
        for idx in fs.list(&cache).iter().filter(|n| n.starts_with("index")) {
            let level = fs.read_u64(&format!("{cache}/{idx}/level")).unwrap_or(0);
            let ty = fs.read(&format!("{cache}/{idx}/type")).unwrap_or_default();
            if ty == "Instruction" {
                continue;
            }
            if let Some(l) = fs.read(&format!("{cache}/{idx}/shared_cpu_list")) {
                if best.as_ref().is_none_or(|(bl, _)| level > *bl) {
                    best = Some((level, cpus_in(&l)));
                }
            }
        }
        let llc = match best {
            Some((level, l)) => {
                llc_level_used = level;
                l
            }
            None => siblings.clone(),
        };
        let node = node_of(c).unwrap_or(0);
        cpus.push(HostCpu { id: c, package, siblings, llc, node });
    }
    let nr = cpus.len() as u32;
    let packages: BTreeSet<u32> = cpus.iter().map(|c| c.package).collect();
    let nodes: BTreeSet<u32> = cpus.iter().map(|c| c.node).collect();
    let llcs: BTreeSet<Vec<u32>> = cpus.iter().map(|c| c.llc.clone()).collect();
    let threads = cpus[0].siblings.len() as u32;
    if cpus.iter().any(|c| c.siblings.len() as u32 != threads) {
        notes.push("CPUs differ in their number of SMT siblings; the model assumes one value".into());
    }
    let sockets = packages.len() as u32;
    let cores = nr / threads.max(1);
    let cores_per_socket = cores / sockets.max(1);
    let cores_per_llc = (cpus[0].llc.len() as u32 / threads.max(1)).max(1);
    let nodes_per_socket = (nodes.len() as u32 / sockets.max(1)).max(1);
    let adjacent = threads > 1 && cpus[0].siblings.get(1) == Some(&1);

    // NUMA distances: same socket / remote, read from node0's row.
    let mut numa_lines = String::new();
    if nodes.len() > 1 {
        let row: Vec<u32> = fs
            .read("/sys/devices/system/node/node0/distance")
            .map(|r| r.split_whitespace().filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default();
        let node_package = |n: u32| cpus.iter().find(|c| c.node == n).map(|c| c.package);
        let p0 = node_package(0);
        let same = nodes.iter().skip(1).find(|&&n| node_package(n) == p0).and_then(|&n| row.get(n as usize));
        let remote = nodes.iter().find(|&&n| node_package(n) != p0).and_then(|&n| row.get(n as usize));
        numa_lines.push_str("\n[numa]\n# /sys/devices/system/node/node0/distance reads ");
        numa_lines.push_str(&format!("{row:?}\n"));
        if let Some(d) = same {
            numa_lines.push_str(&format!("node_distance_same_socket = {d}\n"));
        }
        if let Some(d) = remote {
            numa_lines.push_str(&format!("node_distance_remote = {d}\n"));
        }
    }

    // Kernel config.
    let config = fs.kernel_config(&release);
    let mut hz_line = String::new();
    let mut config_notes = Vec::new();
    match &config {
        Some((text, from)) => {
            match config_value(text, "CONFIG_HZ") {
                Some(v) => {
                    hz_line.push_str(&kv("hz", v, &format!("CONFIG_HZ={v} ({from})")));
                }
                None => hz_line.push_str(&kv(
                    "hz",
                    "250",
                    &format!("guess: no CONFIG_HZ in {from}; 250 is the x86 default"),
                )),
            }
            let nohz: Vec<String> = ["CONFIG_NO_HZ_IDLE", "CONFIG_NO_HZ_FULL", "CONFIG_HZ_PERIODIC"]
                .iter()
                .filter(|k| config_value(text, k) == Some("y"))
                .map(|k| format!("{k}=y"))
                .collect();
            config_notes.push(format!(
                "Tick: {} ({from}). The model stops the tick of idle CPUs as NO_HZ_IDLE does.",
                if nohz.is_empty() { "no NO_HZ option set".to_string() } else { nohz.join(", ") }
            ));
            let preempt: Vec<String> = [
                "CONFIG_PREEMPT_NONE",
                "CONFIG_PREEMPT_VOLUNTARY",
                "CONFIG_PREEMPT",
                "CONFIG_PREEMPT_LAZY",
                "CONFIG_PREEMPT_RT",
                "CONFIG_PREEMPT_DYNAMIC",
            ]
            .iter()
            .filter(|k| config_value(text, k) == Some("y"))
            .map(|k| format!("{k}=y"))
            .collect();
            config_notes.push(format!("Preemption: {} ({from}).", preempt.join(", ")));
        }
        None => {
            hz_line.push_str(&kv(
                "hz",
                "250",
                &format!("guess: the kernel config is unreadable (no /proc/config.gz, no /boot/config-{release}); 250 is the x86 default"),
            ));
        }
    }
    if let Some(mode) = fs.read("/sys/kernel/debug/sched/preempt") {
        config_notes.push(format!("Preemption in force: {mode} (/sys/kernel/debug/sched/preempt; the bracketed one)."));
    }
    let cmdline = fs.read("/proc/cmdline").unwrap_or_default();
    let preempt_line = preempt_from(fs, config.as_ref(), &cmdline);
    for w in cmdline.split_whitespace().filter(|w| w.starts_with("haltpoll.") || w.starts_with("cpuidle")) {
        config_notes.push(format!("Kernel command line: {w}."));
    }
    if let Some(p) = cmdline.split_whitespace().find(|w| w.starts_with("preempt=")) {
        config_notes.push(format!("Kernel command line: {p}."));
    }

    // cpuidle.
    let driver = fs.read("/sys/devices/system/cpu/cpuidle/current_driver");
    let gov_name = fs
        .read("/sys/devices/system/cpu/cpuidle/current_governor")
        .or_else(|| fs.read("/sys/devices/system/cpu/cpuidle/current_governor_ro"));
    let (governor, gov_line) = match gov_name.as_deref() {
        Some("haltpoll") => {
            (Governor::Haltpoll, kv("governor", "\"haltpoll\"", "/sys/devices/system/cpu/cpuidle/current_governor"))
        }
        Some("menu") => {
            (Governor::Menu, kv("governor", "\"menu\"", "/sys/devices/system/cpu/cpuidle/current_governor"))
        }
        Some(other) => (
            Governor::Menu,
            kv(
                "governor",
                "\"menu\"",
                &format!("guess: the host runs the `{other}` governor, which the model does not have; menu stands in"),
            ),
        ),
        None => (
            Governor::Menu,
            kv("governor", "\"menu\"", "guess: no cpuidle governor in /sys (no cpuidle driver); menu stands in"),
        ),
    };
    let hp_dir = "/sys/module/haltpoll/parameters";
    let mut haltpoll_lines = String::new();
    if governor == Governor::Haltpoll || fs.exists(hp_dir) {
        let d = HaltpollParams::default();
        haltpoll_lines.push_str(
            "\n[haltpoll]\n# The haltpoll governor's module parameters (drivers/cpuidle/governors/haltpoll.c).\n",
        );
        let mut one = |key: &str, default: String| {
            let p = format!("{hp_dir}/{key}");
            match fs.read(&p) {
                Some(v) => {
                    let v = match v.as_str() {
                        "Y" => "true".to_string(),
                        "N" => "false".to_string(),
                        _ => v,
                    };
                    haltpoll_lines.push_str(&kv(key, &v, &p));
                }
                None => haltpoll_lines.push_str(&kv(key, &default, &format!("guess: {p} unreadable; kernel default"))),
            }
        };
        one("guest_halt_poll_ns", d.guest_halt_poll_ns.to_string());
        one("guest_halt_poll_shrink", d.guest_halt_poll_shrink.to_string());
        one("guest_halt_poll_grow", d.guest_halt_poll_grow.to_string());
        one("guest_halt_poll_grow_start", d.guest_halt_poll_grow_start.to_string());
        one("guest_halt_poll_allow_shrink", d.guest_halt_poll_allow_shrink.to_string());
    }

    // Costs: the closest preset. A guest pays VM exits for IPIs and halts.
    let (cost_preset, why) = if hypervisor {
        ("icx-vm-32", "a KVM guest: IPIs are VM exits and a halted vCPU is woken through the host")
    } else if vendor == "AuthenticAMD" {
        ("epyc-7763-2s", "bare-metal AMD")
    } else if vendor == "GenuineIntel" {
        ("intel-240-2s", "bare-metal Intel")
    } else {
        ("smp-4", "no closer preset")
    };
    let pm = hw::preset(cost_preset)?;
    let c = &pm.costs;
    let r = |l: hw::LatencyNs| format!("[{}, {}]", l.lo_ns, l.hi_ns);
    let src = format!("guess: preset {cost_preset} ({why}); `schedsim list --machine {cost_preset}` gives its sources");

    // Idle states, from CPU 0 (checked against the others).
    let mut states_text = String::new();
    let base = "/sys/devices/system/cpu/cpu0/cpuidle";
    let state_dirs: Vec<String> = fs.list(base).into_iter().filter(|n| n.starts_with("state")).collect();
    let mut state_dirs = state_dirs;
    state_dirs.sort_by_key(|n| n[5..].parse::<u32>().unwrap_or(u32::MAX));
    let mut names_used: BTreeSet<String> = BTreeSet::new();
    let mut prev_lat = 0u64;
    let mut prev_res = 0u64;
    if state_dirs.is_empty() {
        states_text.push_str(&format!(
            "# guess: no cpuidle states in {base} (cpuidle driver: {}); the kernel idles in default_idle(),\n# modelled as POLL plus one HLT state.\n",
            driver.as_deref().unwrap_or("none")
        ));
        states_text.push_str(&state_block("POLL", "CPUIDLE CORE POLL IDLE", "poll", 0, 0, "[0, 0]", false, ""));
        let hlt = pm.idle_states.iter().find(|s| s.kind == hw::IdleKind::Hlt).map(|s| s.wake);
        let wake = hlt.unwrap_or(hw::LatencyNs::new(1_000, 2_000));
        states_text.push_str(&state_block(
            "HLT",
            "default_idle",
            "hlt",
            1_000,
            1_000,
            &format!("{:<23}# {src}", r(wake)),
            false,
            "",
        ));
    }
    for (i, dir) in state_dirs.iter().enumerate() {
        let p = format!("{base}/{dir}");
        let sys_name = fs.read(&format!("{p}/name")).unwrap_or_else(|| format!("S{i}"));
        let desc = fs.read(&format!("{p}/desc")).unwrap_or_default();
        let lat = fs.read_u64(&format!("{p}/latency")).unwrap_or(0) * 1000;
        let res = fs.read_u64(&format!("{p}/residency")).unwrap_or(0) * 1000;
        let disabled = fs.read(&format!("{p}/disable")).is_some_and(|v| v != "0");
        let (kind, kind_why) = if i == 0 {
            ("poll", "state0 is POLL on x86")
        } else if desc.contains("MWAIT") {
            ("mwait", "desc names MWAIT")
        } else if desc.contains("IOPORT") {
            ("ioport", "desc names an I/O port")
        } else if desc.contains("HLT") || desc == "default architecture idle" {
            ("hlt", "desc: HLT (default_idle)")
        } else {
            ("hlt", "guess: the desc does not say; HLT assumed")
        };
        // A name usable with --cstate NAME=off: the sysfs name's first word when unique.
        let mut short = sys_name.split_whitespace().next().unwrap_or("S").to_string();
        if names_used.contains(&short) {
            short = sys_name.replace(' ', "-");
        }
        names_used.insert(short.clone());
        // The model requires non-decreasing latencies.
        let lat_fixed = lat.max(prev_lat);
        let res_fixed = res.max(prev_res);
        prev_lat = lat_fixed;
        prev_res = res_fixed;
        let wake = if kind == "poll" {
            "[0, 0]".to_string()
        } else {
            let same = pm
                .idle_states
                .iter()
                .find(|s| s.kind.is_polling() == (kind == "mwait") && s.kind != hw::IdleKind::Poll);
            match same {
                Some(s) => format!("{:<23}# {src} (its `{}` state)", r(s.wake), s.name),
                None => format!(
                    "{:<23}# guess: half the advertised exit latency to all of it",
                    format!("[{}, {}]", lat_fixed / 2, lat_fixed)
                ),
            }
        };
        let mut extra = format!(
            "# {p}: name \"{sys_name}\", latency {} us, residency {} us, disable {}; kind: {kind_why}\n",
            lat / 1000,
            res / 1000,
            disabled as u8
        );
        if lat_fixed != lat || res_fixed != res {
            extra.push_str("# raised to the previous state's value: the model requires non-decreasing latencies\n");
        }
        // Disable flags that differ between CPUs.
        let differ: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&c| {
                fs.read(&format!("/sys/devices/system/cpu/cpu{c}/cpuidle/{dir}/disable"))
                    .is_some_and(|v| (v != "0") != disabled)
            })
            .collect();
        if !differ.is_empty() {
            extra.push_str(&format!(
                "# note: CPUs {differ:?} have the opposite disable flag; the model has one table for all CPUs\n"
            ));
        }
        states_text.push_str(&state_block(&short, &desc, kind, lat_fixed, res_fixed, &wake, disabled, &extra));
    }

    // The model's view of the numbering, checked against the host's.
    let mut t = String::new();
    let host_name = fs.read("/proc/sys/kernel/hostname").unwrap_or_else(|| "host".into());
    let _ = writeln!(t, "# Machine file read from this host by `schedsim machine --from-host` (host `{host_name}`,");
    let _ = writeln!(t, "# Linux {release}). Values the kernel exposes are read and their file is named; values it");
    let _ = writeln!(t, "# does not expose are marked `guess:` with their source. Edit freely; `--machine FILE.toml`");
    let _ = writeln!(t, "# reads it back. Units are in the key names; [lo, hi] ranges draw uniformly inside.");
    let _ = writeln!(
        t,
        "# CPU: {model} ({vendor}); hypervisor flag in /proc/cpuinfo: {}.",
        if hypervisor { "yes" } else { "no" }
    );
    let _ = writeln!(
        t,
        "# cpuidle driver: {} (/sys/devices/system/cpu/cpuidle/current_driver).",
        driver.as_deref().unwrap_or("none")
    );
    for n in &config_notes {
        let _ = writeln!(t, "# {n}");
    }
    for n in &notes {
        let _ = writeln!(t, "# note: {n}");
    }
    let _ = writeln!(t);
    let _ = writeln!(t, "name = {}", toml_str(name));
    let _ = writeln!(
        t,
        "description = {}",
        toml_str(&format!(
            "{model}, {nr} CPUs{}, Linux {release}, cpuidle {} / {}",
            if hypervisor { " (guest)" } else { "" },
            driver.as_deref().unwrap_or("none"),
            gov_name.as_deref().unwrap_or("none")
        ))
    );
    t.push_str(&hz_line);
    t.push_str(&clock_line(fs, &cpuinfo));
    let polling = !matches!(std::env::consts::ARCH, "aarch64" | "arm");
    t.push_str(&kv(
        "polling_idle",
        &polling.to_string(),
        &format!(
            "TIF_POLLING_NRFLAG: {} ({})",
            if polling { "x86 has it" } else { "arm64 has none" },
            std::env::consts::ARCH
        ),
    ));
    if let Some(w) = cmdline.split_whitespace().find(|w| w.starts_with("sched_vcpu_pack=")) {
        // Not an upstream parameter: what it does was measured on the one guest that has it.
        t.push_str(&kv(
            "idle_search_in_idle_loop",
            "false",
            &format!(
                "guess: {w} on /proc/cmdline (no upstream kernel has it); on the guest where it was \
                 traced, select_idle_sibling()'s search took an idle vCPU only while it handled an \
                 interrupt (docs/validate-guest.md, \"Wakeup placement on the guest\")"
            ),
        ));
    }
    t.push_str(&gov_line);
    t.push_str(&preempt_line);
    t.push_str(&kv(
        "background",
        "\"server\"",
        "guess: the generic distro-kernel profile (src/background/profiles/); tools/measure measures your own",
    ));
    t.push_str(&haltpoll_lines);
    let _ = writeln!(t, "\n[topology]");
    let _ = writeln!(
        t,
        "# From /sys/devices/system/cpu/cpuN/topology (physical_package_id, thread_siblings_list),\n# cpuN/cache/index*/shared_cpu_list (the level-{llc_level_used} cache is the LLC) and\n# /sys/devices/system/node/nodeN/cpulist."
    );
    let _ = writeln!(t, "sockets = {sockets}");
    let _ = writeln!(t, "nodes_per_socket = {nodes_per_socket}");
    let _ = writeln!(t, "cores_per_socket = {cores_per_socket}");
    t.push_str(&kv(
        "cores_per_llc",
        &cores_per_llc.to_string(),
        &format!("{} LLC(s) of {} CPUs", llcs.len(), cpus[0].llc.len()),
    ));
    let _ = writeln!(t, "threads_per_core = {threads}");
    if threads > 1 {
        t.push_str(&kv(
            "smt_siblings_adjacent",
            &adjacent.to_string(),
            &format!("CPU 0's siblings: {:?}", cpus[0].siblings),
        ));
    }
    t.push_str(&numa_lines);
    let _ = writeln!(t, "\n[costs]\n# Not exposed by the kernel: every value below is a {src}.");
    let _ = writeln!(t, "line_smt_ns = {}", r(c.line[1]));
    let _ = writeln!(t, "line_llc_ns = {}", r(c.line[2]));
    let _ = writeln!(t, "line_socket_ns = {}", r(c.line[3]));
    let _ = writeln!(t, "line_remote_ns = {}", r(c.line[4]));
    let _ = writeln!(t, "ipi_send_ns = {}", c.ipi_send_ns);
    let _ = writeln!(t, "ipi_delivery_ns = {}", r(c.ipi_delivery));
    let _ = writeln!(t, "irq_entry_ns = {}", c.irq_entry_ns);
    let _ = writeln!(t, "irq_exit_ns = {}", c.irq_exit_ns);
    let _ = writeln!(t, "\n# Idle states as the cpuidle driver advertises them ({base}/state*).");
    t.push_str(&states_text);

    // It must read back, and describe the host's numbering.
    let m = hw::machine_from_toml(&t, "machine --from-host")
        .map_err(|e| format!("the generated machine file does not read back: {e}\n{t}"))?;
    let mut mismatch = Vec::new();
    for hc in &cpus {
        let smt: Vec<u32> = m.topo.smt_mask(hc.id).iter().collect();
        let llc: Vec<u32> = m.topo.llc_mask(hc.id).iter().collect();
        if smt != hc.siblings {
            mismatch.push(format!("CPU {}: SMT siblings {:?} on the host, {:?} in the model", hc.id, hc.siblings, smt));
        }
        if llc != hc.llc {
            mismatch.push(format!("CPU {}: LLC {:?} on the host, {:?} in the model", hc.id, hc.llc, llc));
        }
        if m.topo.cpu_to_node(hc.id) != hc.node {
            mismatch.push(format!(
                "CPU {}: node {} on the host, {} in the model",
                hc.id,
                hc.node,
                m.topo.cpu_to_node(hc.id)
            ));
        }
    }
    if !mismatch.is_empty() {
        let _ = writeln!(
            t,
            "\n# warning: the host numbers its CPUs in a way the model's layouts cannot express:\n{}",
            mismatch.iter().take(8).map(|l| format!("#   {l}\n")).collect::<String>()
        );
    }
    Ok(t)
}

/// The `preempt = ...` line: the model in force from /sys/kernel/debug/sched/preempt (the
/// bracketed word) when debugfs is mounted, else the kernel config's choice with `preempt=` of
/// the command line on top.
fn preempt_from(fs: &HostFs, config: Option<&(String, String)>, cmdline: &str) -> String {
    let dynamic = config.is_some_and(|(t, _)| config_value(t, "CONFIG_PREEMPT_DYNAMIC") == Some("y"));
    let name = |m: &str| if dynamic { format!("dynamic-{m}") } else { m.to_string() };
    let debugfs = "/sys/kernel/debug/sched/preempt";
    if let Some(line) = fs.read(debugfs) {
        if let Some(m) = line.split_whitespace().find_map(|w| w.strip_prefix('(')?.strip_suffix(')')) {
            if matches!(m, "none" | "voluntary" | "full") {
                return kv("preempt", &format!("\"{}\"", name(m)), &format!("{debugfs} reads `{line}`"));
            }
            return kv(
                "preempt",
                &format!("\"{}\"", name("full")),
                &format!("guess: {debugfs} reads `{line}`; `{m}` is modelled as full"),
            );
        }
    }
    if let Some(m) = cmdline.split_whitespace().find_map(|w| w.strip_prefix("preempt=")) {
        if dynamic && matches!(m, "none" | "voluntary" | "full") {
            return kv(
                "preempt",
                &format!("\"{}\"", name(m)),
                &format!("preempt={m} on /proc/cmdline, CONFIG_PREEMPT_DYNAMIC=y"),
            );
        }
    }
    match config {
        Some((t, from)) => {
            let on = |k: &str| config_value(t, k) == Some("y");
            let (m, why) = if on("CONFIG_PREEMPT_RT") {
                ("full", "CONFIG_PREEMPT_RT=y (give --preempt-rt for the RT softirq paths)")
            } else if on("CONFIG_PREEMPT_NONE") {
                ("none", "CONFIG_PREEMPT_NONE=y")
            } else if on("CONFIG_PREEMPT_VOLUNTARY") {
                ("voluntary", "CONFIG_PREEMPT_VOLUNTARY=y")
            } else if on("CONFIG_PREEMPT") {
                ("full", "CONFIG_PREEMPT=y")
            } else if on("CONFIG_PREEMPT_LAZY") {
                ("full", "guess: CONFIG_PREEMPT_LAZY=y, modelled as full")
            } else {
                ("voluntary", "guess: no CONFIG_PREEMPT_* choice found")
            };
            let dyn_note = if dynamic { ", CONFIG_PREEMPT_DYNAMIC=y booting it" } else { "" };
            kv("preempt", &format!("\"{}\"", name(m)), &format!("{why}{dyn_note} ({from})"))
        }
        None => kv("preempt", "\"voluntary\"", "guess: the kernel config is unreadable; the x86 distro default"),
    }
}

#[allow(clippy::too_many_arguments)]
fn state_block(
    name: &str,
    desc: &str,
    kind: &str,
    lat: u64,
    res: u64,
    wake: &str,
    disabled: bool,
    extra: &str,
) -> String {
    let mut s = String::from("\n[[idle_state]]\n");
    s.push_str(extra);
    s.push_str(&format!("name = {}\ndesc = {}\nkind = \"{kind}\"\n", toml_str(name), toml_str(desc)));
    s.push_str(&format!("exit_latency_ns = {lat}\ntarget_residency_ns = {res}\nwake_ns = {wake}\n"));
    if disabled {
        s.push_str("disabled = true\n");
    }
    s
}

/// The `clock_mhz = ...` line: the highest clock CPU 0's cpufreq policy allows (what a busy CPU
/// runs at under the performance governor), else `cpu MHz` of /proc/cpuinfo (a guest without
/// cpufreq reports its TSC clock there), else the default, marked as a guess.
fn clock_line(fs: &HostFs, cpuinfo: &str) -> String {
    let policy = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq";
    let from_policy = fs.read_u64(policy).map(|khz| (khz.div_ceil(1000), format!("{policy} ({khz} kHz)")));
    let from_cpuinfo = || {
        let v = cpuinfo.lines().find_map(|l| l.strip_prefix("cpu MHz").and_then(|r| r.split_once(':')))?.1.trim();
        let mhz = v.parse::<f64>().ok().filter(|f| f.is_finite() && *f >= 0.0)?.round() as u64;
        Some((mhz, format!("/proc/cpuinfo `cpu MHz` of CPU 0 ({v})")))
    };
    let range = hw::CLOCK_MHZ_RANGE;
    match from_policy.or_else(from_cpuinfo) {
        Some((mhz, from)) if range.contains(&(mhz.min(u64::from(u32::MAX)) as u32)) => {
            kv("clock_mhz", &mhz.to_string(), &format!("{from}; the software path costs are scaled to it"))
        }
        found => kv(
            "clock_mhz",
            &hw::DEFAULT_CLOCK_MHZ.to_string(),
            &format!(
                "guess: {}; the software cost table's reference clock (docs/costs.md)",
                found.map_or("no cpufreq policy or `cpu MHz`".to_string(), |(m, from)| format!(
                    "{from} gives {m} MHz, outside {}..={}",
                    range.start(),
                    range.end()
                ))
            ),
        ),
    }
}

/// One `key = value` line with its comment in a column.
fn kv(key: &str, value: &str, comment: &str) -> String {
    format!("{:<37} # {comment}\n", format!("{key} = {value}"))
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if c.is_control() => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regular target is replaced whole; a target that is not a regular file (here a FIFO,
    /// as `/dev/null` or `/dev/stdout` would be) is written in place and stays what it was,
    /// never renamed over (as root, `-o /dev/null` used to replace the device with a file).
    #[test]
    fn write_atomically_writes_special_files_in_place() {
        use std::os::unix::fs::FileTypeExt;
        let dir = std::env::temp_dir().join(format!("schedsim-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.toml");
        std::fs::write(&file, "old, longer contents").unwrap();
        write_atomically(&file, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path in a directory of our own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(&fifo).unwrap())
        };
        write_atomically(&fifo, b"through the pipe").unwrap();
        // Checked before joining: a replaced FIFO would leave the reader waiting for a writer.
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fake /sys and /proc of a 2-vCPU haltpoll guest like the one this was written on.
    fn fake_guest(dir: &std::path::Path, guest_halt_poll_ns: &str) {
        let w = |p: &str, v: &str| {
            let f = dir.join(p.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, format!("{v}\n")).unwrap();
        };
        w("/proc/sys/kernel/osrelease", "6.18.44-test");
        w("/proc/sys/kernel/hostname", "vm");
        w(
            "/proc/cpuinfo",
            "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2595.998\nflags\t\t: fpu ht hypervisor\n",
        );
        w(
            "/boot/config-6.18.44-test",
            "CONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_NO_HZ_IDLE=y\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n",
        );
        w("/sys/devices/system/cpu/online", "0-1");
        for c in 0..2 {
            let t = format!("/sys/devices/system/cpu/cpu{c}");
            w(&format!("{t}/topology/physical_package_id"), "0");
            w(&format!("{t}/topology/thread_siblings_list"), &c.to_string());
            w(&format!("{t}/cache/index0/level"), "1");
            w(&format!("{t}/cache/index0/type"), "Data");
            w(&format!("{t}/cache/index0/shared_cpu_list"), &c.to_string());
            w(&format!("{t}/cache/index3/level"), "3");
            w(&format!("{t}/cache/index3/type"), "Unified");
            w(&format!("{t}/cache/index3/shared_cpu_list"), "0-1");
            for (i, (n, d, l)) in
                [("POLL", "CPUIDLE CORE POLL IDLE", "0"), ("haltpoll idle", "default architecture idle", "1")]
                    .iter()
                    .enumerate()
            {
                let s = format!("{t}/cpuidle/state{i}");
                w(&format!("{s}/name"), n);
                w(&format!("{s}/desc"), d);
                w(&format!("{s}/latency"), l);
                w(&format!("{s}/residency"), l);
                w(&format!("{s}/disable"), "0");
            }
        }
        w("/sys/devices/system/node/node0/cpulist", "0-1");
        w("/sys/devices/system/node/node0/distance", "10");
        w("/sys/devices/system/cpu/cpuidle/current_driver", "haltpoll");
        w("/sys/devices/system/cpu/cpuidle/current_governor", "haltpoll");
        w("/sys/module/haltpoll/parameters/guest_halt_poll_ns", guest_halt_poll_ns);
        w("/sys/module/haltpoll/parameters/guest_halt_poll_allow_shrink", "Y");
        w("/sys/module/haltpoll/parameters/guest_halt_poll_grow", "2");
        w("/sys/module/haltpoll/parameters/guest_halt_poll_shrink", "2");
        // grow_start left out: it must come out as a marked guess.
    }

    #[test]
    fn a_guest_reads_back_with_its_haltpoll_parameters_and_marks_its_guesses() {
        let dir = std::env::temp_dir().join(format!("schedsim-fromhost-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fake_guest(&dir, "0");
        let text = machine_toml_from_host(&HostFs { root: dir.clone() }, "vm").unwrap();
        let m = hw::machine_from_toml(&text, "t").unwrap();
        assert_eq!(m.topo.nr_cpus, 2);
        assert_eq!(m.topo.nr_llcs(), 1);
        assert_eq!(m.topo.nr_cores(), 2, "no SMT: two cores");
        assert_eq!(m.hz, 250);
        assert_eq!(m.clock_mhz, 2596, "cpu MHz, rounded: the guest has no cpufreq");
        assert_eq!(m.governor, Governor::Haltpoll);
        assert_eq!(m.haltpoll.guest_halt_poll_ns, 0);
        assert_eq!(m.haltpoll.guest_halt_poll_grow_start, 50_000);
        assert!(m.idle_search_in_idle_loop, "no sched_vcpu_pack: the upstream search");
        assert_eq!(m.preempt, "dynamic-none");
        assert_eq!(m.background, "server");
        assert!(
            text.lines().any(|l| l.starts_with("guest_halt_poll_grow_start = 50000 ") && l.contains("# guess:")),
            "{text}"
        );
        assert_eq!(m.idle_states.len(), 2);
        assert_eq!(m.idle_states[1].name, "haltpoll");
        assert_eq!(m.idle_states[1].kind, hw::IdleKind::Hlt);
        assert_eq!(m.idle_states[1].exit_latency_ns, 1_000);
        assert!(text.contains("CONFIG_HZ=250 (/boot/config-6.18.44-test)"), "{text}");
        assert!(text.contains("CONFIG_NO_HZ_IDLE=y"), "{text}");
        // Costs are guesses from the KVM guest preset.
        assert!(text.contains("guess: preset icx-vm-32"), "{text}");
        assert_eq!(m.costs.ipi_send_ns, hw::preset("icx-vm-32").unwrap().costs.ipi_send_ns);
        assert!(!text.contains("warning:"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A guest whose kernel command line has the non-upstream `sched_vcpu_pack=` gets the
    /// idle search measured on such a guest, marked as a guess.
    #[test]
    fn a_guest_with_sched_vcpu_pack_gets_the_measured_idle_search() {
        let dir = std::env::temp_dir().join(format!("schedsim-fromhost-pack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fake_guest(&dir, "0");
        std::fs::write(dir.join("proc/cmdline"), "console=ttyS0 sched_vcpu_pack=15 quiet\n").unwrap();
        let text = machine_toml_from_host(&HostFs { root: dir.clone() }, "vm").unwrap();
        let m = hw::machine_from_toml(&text, "t").unwrap();
        assert!(!m.idle_search_in_idle_loop);
        assert!(
            text.lines().any(|l| l.starts_with("idle_search_in_idle_loop = false") && l.contains("# guess: sched_vcpu_pack=15")),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// With cpufreq, the policy's highest clock; with neither source, the default, as a guess.
    #[test]
    fn the_clock_comes_from_cpufreq_then_cpuinfo_then_the_default() {
        let dir = std::env::temp_dir().join(format!("schedsim-fromhost-clock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fake_guest(&dir, "0");
        let policy = dir.join("sys/devices/system/cpu/cpu0/cpufreq");
        std::fs::create_dir_all(&policy).unwrap();
        std::fs::write(policy.join("scaling_max_freq"), "3500000\n").unwrap();
        let fs = HostFs { root: dir.clone() };
        let text = machine_toml_from_host(&fs, "vm").unwrap();
        assert_eq!(hw::machine_from_toml(&text, "t").unwrap().clock_mhz, 3500, "{text}");
        std::fs::remove_dir_all(&policy).unwrap();
        std::fs::write(dir.join("proc/cpuinfo"), "model name\t: X\n").unwrap();
        let text = machine_toml_from_host(&fs, "vm").unwrap();
        assert_eq!(hw::machine_from_toml(&text, "t").unwrap().clock_mhz, hw::DEFAULT_CLOCK_MHZ);
        assert!(text.lines().any(|l| l.starts_with("clock_mhz = ") && l.contains("# guess:")), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn holes_in_the_cpu_numbering_are_refused() {
        let dir = std::env::temp_dir().join(format!("schedsim-fromhost-holes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fake_guest(&dir, "200000");
        std::fs::write(dir.join("sys/devices/system/cpu/online"), "0,2\n").unwrap();
        let e = machine_toml_from_host(&HostFs { root: dir.clone() }, "vm").unwrap_err();
        assert!(e.contains("without holes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
