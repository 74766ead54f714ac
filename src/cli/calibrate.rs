//! `schedsim machine --from-host --calibrate -o FILE [--html FILE]`: run the calibration set
//! ([`crate::calibrate::CAPTURES`]) under tracefs on the `x86-tsc` trace clock, discard the
//! captures other work on the machine disturbed, and turn what is left into this host's
//! machine file (measured costs in it) and its background profile beside it. The analysis is
//! [`crate::calibrate`]; this file only captures (root, tracefs, the programs) and writes.
//! `--from-capture BUNDLE` re-runs the analysis on a saved bundle without root.

use super::host::{machine_toml_from_host, write_atomically, HostFs, MachineArgs};
use super::validate::{gzip, run_child, run_child_on, Tracefs};
use crate::calibrate::bundle::{self, Bundle, CaptureMeta, Discarded, Meta};
use crate::calibrate::{self, CaptureSpec, CAPTURES, IDLE_SECONDS};

/// Attempts per capture before giving up on a quiet one.
const ATTEMPTS: usize = 3;

/// `machine --from-host --calibrate`.
pub fn cmd_calibrate(a: &MachineArgs) -> Result<(), String> {
    let Some(out) = &a.output else {
        return Err(
            "machine --calibrate writes the machine file and its background profile beside it: give -o FILE.toml"
                .into(),
        );
    };
    if out.extension().is_none_or(|e| e != "toml") {
        return Err(format!(
            "-o {}: the machine file's name must end in .toml (`--machine FILE.toml` reads it)",
            out.display()
        ));
    }
    let started = std::time::Instant::now();
    let b = match &a.from_capture {
        Some(p) => {
            let gz = p.extension().is_some_and(|e| e == "gz");
            let text = crate::input::read_input(p, "calibration bundle", MAX_BUNDLE_BYTES, gz)?;
            bundle::read(&text, &p.display().to_string())?
        }
        None => capture(a)?,
    };
    if let Some(s) = &a.save {
        write_atomically(s, &gzip(&bundle::write(&b)))?;
    }
    let stem = out.file_stem().map_or("host".into(), |s| s.to_string_lossy().into_owned());
    let profile_name = format!("{stem}-background.toml");
    let profile_path = out.with_file_name(&profile_name);
    let o = calibrate::analyze(&b, &profile_name)?;
    if let Some(p) = &o.profile {
        write_atomically(&profile_path, p.as_bytes())?;
    }
    write_atomically(out, o.machine.as_bytes())?;
    if let Some(h) = &a.html {
        crate::html::write(h, &crate::html::calibration_page(&b, &o))?;
    }
    super::emit(&format!(
        "{}wrote {}{} in {:.1} s\n",
        o.summary,
        out.display(),
        if o.profile.is_some() { format!(" and {}", profile_path.display()) } else { String::new() },
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// A bundle is at most this large (a calibration's captures are a few tens of MB).
const MAX_BUNDLE_BYTES: u64 = 1 << 30;

/// The `x86-tsc` counter rate, kHz, against CLOCK_MONOTONIC_RAW between two readings.
struct TscClock {
    tsc: u64,
    ns: u64,
}

impl TscClock {
    fn now() -> TscClock {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: t is a valid timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut t) };
        TscClock { tsc: rdtsc(), ns: t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64 }
    }

    fn khz_since(&self, start: &TscClock) -> u64 {
        let dns = self.ns.saturating_sub(start.ns).max(1);
        ((self.tsc.saturating_sub(start.tsc)) as u128 * 1_000_000 / dns as u128) as u64
    }
}

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

/// A forked child that loops until killed, pinned to `cpu` (named `calib-spin`).
struct Spinner(i32);

impl Spinner {
    fn start(cpu: u32) -> Result<Spinner, String> {
        // SAFETY: the child only makes system calls and spins.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork(): {}", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: plain system calls in the child.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu as usize, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                libc::prctl(libc::PR_SET_NAME, c"calib-spin".as_ptr() as libc::c_ulong, 0, 0, 0);
            }
            loop {
                std::hint::spin_loop();
            }
        }
        Ok(Spinner(pid))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        // SAFETY: our own child.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

/// A forked child looping `getppid()` `loops` times (named `calib-syscall`); returns its pid
/// after it ended.
fn syscall_loop(loops: u64) -> Result<u32, String> {
    // SAFETY: the child only makes system calls and leaves with _exit().
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork(): {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: plain system calls in the child.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, c"calib-syscall".as_ptr() as libc::c_ulong, 0, 0, 0);
            for _ in 0..loops {
                libc::syscall(libc::SYS_getppid);
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    Ok(pid as u32)
}

/// A forked child, pinned to `cpu` (named `calib-sock`), that writes
/// [`calibrate::SOCK_MSG_BYTES`] to one end of an AF_UNIX stream socketpair and reads them from
/// the other, `loops` times: every write queues one skb and wakes nobody, every read finds it
/// and frees it. Returns its pid after it ended.
fn sock_loop(loops: u64, cpu: u32) -> Result<u32, String> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) } != 0 {
        return Err(format!("socketpair(): {}", std::io::Error::last_os_error()));
    }
    // SAFETY: the child only makes system calls and leaves with _exit().
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: our own descriptors.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        return Err(format!("fork(): {e}"));
    }
    if pid == 0 {
        // SAFETY: plain system calls in the child on its own buffer.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            libc::prctl(libc::PR_SET_NAME, c"calib-sock".as_ptr() as libc::c_ulong, 0, 0, 0);
            let n = calibrate::SOCK_MSG_BYTES as usize;
            let mut buf = [b'x'; 4096];
            for _ in 0..loops {
                if libc::write(fds[0], buf.as_ptr().cast(), n) != n as isize
                    || libc::read(fds[1], buf.as_mut_ptr().cast(), n) != n as isize
                {
                    libc::_exit(1);
                }
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: our own child and descriptors.
    unsafe {
        libc::waitpid(pid, &mut status, 0);
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err("the socket loop of the calibration failed (a short write or read)".into());
    }
    Ok(pid as u32)
}

fn param(spec: &CaptureSpec, key: &str) -> Option<u64> {
    spec.params.iter().find_map(|p| p.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

/// Run one capture of the set: (its command as text, root pids, trace).
fn run_one(t: &Tracefs, spec: &CaptureSpec, exe: &str) -> Result<(String, Vec<u32>, String), String> {
    match spec.program {
        "idle" => {
            let ((), trace) = t.capture_with(|| {
                std::thread::sleep(std::time::Duration::from_secs(IDLE_SECONDS));
                Ok(())
            })?;
            Ok((format!("sleep {IDLE_SECONDS}"), Vec::new(), trace))
        }
        "syscall" => {
            let loops = param(spec, "loops").unwrap_or(20_000);
            let (pid, trace) = t.capture_with(|| syscall_loop(loops))?;
            Ok((format!("getppid() x {loops}"), vec![pid], trace))
        }
        "sock" => {
            let loops = param(spec, "loops").unwrap_or(20_000);
            let cpu = param(spec, "cpu").unwrap_or(0) as u32;
            let (pid, trace) = t.capture_with(|| sock_loop(loops, cpu))?;
            Ok((
                format!(
                    "socketpair(AF_UNIX, SOCK_STREAM): write({n}) then read({n}) x {loops} on CPU {cpu}",
                    n = calibrate::SOCK_MSG_BYTES
                ),
                vec![pid],
                trace,
            ))
        }
        prog => {
            let mut cmd = vec![exe.to_string(), "host-run".into(), prog.into()];
            cmd.extend(spec.params.iter().map(|p| p.to_string()));
            let spinner = match spec.spinner_cpu {
                Some(c) => Some(Spinner::start(c)?),
                None => None,
            };
            let mut roots = Vec::new();
            if let Some(s) = &spinner {
                roots.push(s.0 as u32);
                // Let it start spinning before the trace starts.
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let ((_, pid), trace) = t.capture_with(|| match spec.cpu {
                Some(c) => run_child_on(&cmd, c),
                None => run_child(&cmd),
            })?;
            drop(spinner);
            roots.push(pid);
            let mut text = cmd[1..].join(" ");
            if let Some(c) = spec.cpu {
                text.push_str(&format!(" (bound to CPU {c})"));
            }
            if let Some(c) = spec.spinner_cpu {
                text.push_str(&format!(" (and a busy loop on CPU {c})"));
            }
            Ok((text, roots, trace))
        }
    }
}

/// Run the calibration set under tracefs and keep the quiet captures.
fn capture(a: &MachineArgs) -> Result<Bundle, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the schedsim binary: {e}"))?;
    let exe = exe.to_string_lossy().into_owned();
    let nr_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if nr_cpus < 2 {
        return Err("calibration needs at least 2 CPUs (its ping-pongs cross CPUs 0 and 1)".into());
    }
    let host = machine_toml_from_host(&HostFs::real(), &a.name)?;
    let mut t = Tracefs::open()?;
    t.buffer_kb = 32768;
    let clocks = t.clocks();
    if !clocks.iter().any(|c| c == "x86-tsc") {
        return Err(format!(
            "calibration needs the x86-tsc trace clock (ns resolution, consistent across CPUs); this kernel offers: {}",
            clocks.join(" ")
        ));
    }
    t.write("trace_clock", "x86-tsc")?;
    let fs = HostFs::real();
    let clocksource = fs.read("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap_or_default();
    let cpuinfo = fs.read("/proc/cpuinfo").unwrap_or_default();
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags").and_then(|r| r.split_once(':')).map(|(_, v)| v))
        .map(|v| v.split_whitespace().collect())
        .unwrap_or_default();
    let has = |f: &str| flags.contains(&f);
    let clock_note = if clocksource == "tsc" && has("constant_tsc") && has("nonstop_tsc") {
        "Consistent across CPUs: the kernel's clocksource is the TSC (it checked at boot that the CPUs' TSCs agree) and /proc/cpuinfo has constant_tsc and nonstop_tsc.".to_string()
    } else {
        format!(
            "warning: the clocksource is `{clocksource}` and /proc/cpuinfo has{} constant_tsc and{} nonstop_tsc: the TSCs may not agree across CPUs, so the cross-CPU pairs (IPI delivery, wake) may be off.",
            if has("constant_tsc") { "" } else { " no" },
            if has("nonstop_tsc") { "" } else { " no" }
        )
    };
    let missing = t.set_events(calibrate::EVENTS)?;
    let t0 = TscClock::now();
    let max = a.max_foreign.unwrap_or(5);
    let mut meta = Meta {
        clock: "x86-tsc".into(),
        clock_note,
        kernel: fs.read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        max_foreign_pct: max,
        ..Default::default()
    };
    let mut captures = Vec::new();
    for spec in CAPTURES {
        if spec.program == "idle" {
            t.set_events(calibrate::IDLE_EVENTS)?;
        }
        let mut kept = false;
        for attempt in 1..=ATTEMPTS {
            let (command, roots, trace) = run_one(&t, spec, &exe)?;
            // The foreign share: the pass of the analysis, at a provisional counter rate.
            let khz = TscClock::now().khz_since(&t0).max(1);
            let r = calibrate::paths::collect(&trace, &roots, Some(khz));
            let share = r.foreign_permille();
            if share > max * 10 {
                meta.discarded.push(Discarded { name: spec.name.into(), foreign_permille: share });
                eprintln!(
                    "calibrate: {} attempt {attempt}: other tasks used {}.{}% of the CPUs; discarded",
                    spec.name,
                    share / 10,
                    share % 10
                );
                // Give the other work a moment to end.
                std::thread::sleep(std::time::Duration::from_secs(2));
                continue;
            }
            meta.captures.push(CaptureMeta {
                name: spec.name.into(),
                command,
                roots,
                foreign_permille: share,
                lost_events: r.lost_events,
            });
            captures.push((spec.name.to_string(), trace));
            kept = true;
            break;
        }
        if !kept && spec.program == "idle" {
            // The path costs stand without it: the file keeps its background guess.
            eprintln!("calibrate: no quiet idle capture in {ATTEMPTS} attempts: the background is not measured");
            continue;
        }
        if !kept {
            let shares: Vec<String> = meta
                .discarded
                .iter()
                .filter(|d| d.name == spec.name)
                .map(|d| format!("{}.{}%", d.foreign_permille / 10, d.foreign_permille % 10))
                .collect();
            return Err(format!(
                "no quiet capture of `{}` in {ATTEMPTS} attempts: other tasks used {} of the CPUs (--max-foreign {max}); calibrate on a quieter machine",
                spec.name,
                shares.join(", ")
            ));
        }
    }
    meta.tsc_khz = TscClock::now().khz_since(&t0);
    meta.clock_mhz = (meta.tsc_khz + 500) / 1000;
    if !missing.is_empty() {
        eprintln!("calibrate: this kernel has no {} trace event(s); their paths are not measured", missing.join(", "));
    }
    drop(t);
    Ok(Bundle { meta, host, captures })
}
