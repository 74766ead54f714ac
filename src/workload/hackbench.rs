//! hackbench (docs/workloads.md §3) in its three forms, as their tasks behave:
//!
//! - rt-tests `hackbench` (src/hackbench/hackbench.c): `-p/--pipe`, `-s/--datasize` (100),
//!   `-l/--loops` (100), `-g/--groups` (10), `-f/--fds` (20), `-T/--threads`, `-P/--process`
//!   (the default).
//! - the old `hackbench [-pipe] <num groups> [process|thread] [loops]` (Rusty Russell, Ingo
//!   Molnar, Yanmin Zhang; the copy in LTP): 20 fds, 100-byte messages, 100 loops, sockets and
//!   processes by default.
//! - `perf bench sched messaging` (tools/perf/bench/sched-messaging.c): `-p/--pipe`,
//!   `-t/--thread`, `-g/--group` (10), `-l/--nr_loops` (100); 20 fds and 100 bytes fixed.
//!
//! All three run the same program. The main task makes a "ready" and a "wake" fdpair (pipes
//! with `-p`, else `socketpair(AF_UNIX, SOCK_STREAM)`), then per group one fdpair per receiver
//! and `fds` receivers followed by `fds` senders (forked, or `pthread_create`d in thread mode:
//! threads share main's address space, so only process mode pays `switch_mm` between them).
//! Each child writes one byte to "ready" and `poll()`s "wake". The main task reads one ready
//! byte per child, takes `gettimeofday()` (start), writes one byte to "wake" (waking every
//! poller at once), then reaps every child in creation order (`wait()` in process mode,
//! `pthread_join()` in thread mode) and takes `gettimeofday()` again (stop). A sender writes
//! `loops` times one `datasize`-byte message to each receiver of its group (retrying partial
//! writes); a receiver reads `fds * loops` messages (retrying partial reads). The printed time
//! is `stop - start` as `sec.msec`, both whole microseconds, the milliseconds truncated.
//!
//! Parameters: `tool` = `rt-tests` (default), `old` or `perf`, and `args` = the tool's own
//! arguments (`args = "-p -T -g 4"`). On the command line: `schedsim run hackbench -- [TOOL]
//! ARGS...` (`-- old 500`, `-- perf -p -t -g 4`, `-- rt-tests -s 64`).
//!
//! Output: the tool's own lines (rt-tests: "Running in process mode with 10 groups using 40
//! file descriptors each (== 400 tasks)", "Each sender will pass 100 messages of 100 bytes",
//! "Time: 0.123"; old: "Running with 10*40 (== 400) tasks.", "Time: 0.123"; perf: "# Running
//! 'sched/messaging' benchmark:", "# 20 sender and receiver processes per group", "# 10 groups
//! == 400 processes run", "", "     Total time: 0.123 \[sec\]"). Message accounting
//! ([`Hackbench::messages_sent`], [`Hackbench::messages_received`]) lets tests check the
//! `groups x fds x loops x fds` total.
//!
//! The main task creates the children one by one, as `group()` does: a receiver's fdpair,
//! then `fork()` (the syscall [`crate::linux::kernel::fork::kernel_clone`], charged
//! `PathCosts::fork` of `copy_process()`) or `pthread_create()`, the parent's `close()`s, the next.
//! Each child starts when its creator's syscall wakes it (fork balancing from the creator's
//! CPU), runs its start-up (a forked child's copy-on-write faults, `fork_child_faults`) and
//! sleeps in `poll()` while the parent forks on: on a 2-CPU machine the CPU it lands on idles
//! between forks, as the real program's does. A child process's exit charges `exit_mm()` and
//! `exit_files()` (`exit_head`, `exit_teardown`). The costs are measured on this project's
//! guest with perf's process and scaled to the model's bare-metal path costs (docs/costs.md);
//! the other tools use the same figures.
//!
//! Simplifications: the objects (fdpairs, task structs) cost nothing beyond those syscalls;
//! no page-fault, mm or TLB-shootdown activity is modelled beyond those charges (no
//! `flush_tlb_func` IPIs). Thread and process mode differ in how the main task reaps (futex
//! vs `wait()`) and in these charges, not in the cost of a context switch (no mm switch). The user code between
//! syscalls costs `PathCosts::user_op`. rt-tests' `-F/--fifo` (a SCHED_FIFO main task) is
//! refused: the model has no RT class.

use super::params::Params;
use super::TaskFrame;
use crate::linux::engine::{Action, Next};
use crate::linux::fs::{fdpair, prefetch_fd, sys_poll_in, sys_read, sys_write, Fd};
use crate::linux::kernel::exit::{link_child, signal_alloc, DoExit, SigId, Wait4};
use crate::linux::kernel::fork::KernelClone;
use crate::linux::kernel::futex::{futex_alloc, FutexId, FutexOp};
use crate::linux::programs::resume_points;
use crate::linux::{CpuId, Kernel, TaskId};
use crate::sim::{Time, NSEC_PER_USEC};
use crate::workload::rtapp::PTHREAD_CREATE_NS;

pub const PARAM_NAMES: &[&str] = &["tool", "args"];

/// Which hackbench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// rt-tests `hackbench` (getopt options).
    RtTests,
    /// The old `hackbench [-pipe] <num groups> [process|thread] [loops]`.
    Old,
    /// `perf bench sched messaging`.
    Perf,
}

impl Tool {
    /// The `tool` parameter's values.
    pub const NAMES: &'static [&'static str] = &["rt-tests", "old", "perf"];

    pub fn parse(name: &str) -> Option<Tool> {
        match name {
            "rt-tests" => Some(Tool::RtTests),
            "old" => Some(Tool::Old),
            "perf" => Some(Tool::Perf),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::RtTests => "rt-tests",
            Tool::Old => "old",
            Tool::Perf => "perf",
        }
    }

    /// The command as one would type it (without the arguments).
    pub fn program(self) -> &'static str {
        match self {
            Tool::RtTests | Tool::Old => "hackbench",
            Tool::Perf => "perf bench sched messaging",
        }
    }

    /// The tasks' `comm`: perf's `run_bench()` renames itself "sched-messaging" before running.
    pub fn comm(self) -> &'static str {
        match self {
            Tool::RtTests | Tool::Old => "hackbench",
            Tool::Perf => "sched-messaging",
        }
    }
}

/// The options of a run, whichever tool they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HackbenchOpts {
    pub tool: Tool,
    /// `pipe()` instead of `socketpair(AF_UNIX, SOCK_STREAM)`.
    pub pipe: bool,
    /// `pthread_create()` instead of `fork()`.
    pub threads: bool,
    pub groups: u32,
    /// Senders (= receivers) per group.
    pub fds: u32,
    /// Messages each sender writes to each receiver.
    pub loops: u32,
    /// Bytes per message.
    pub datasize: u32,
    /// The arguments as given.
    pub args: String,
}

/// The largest number of tasks a run may create (the workloads' shared cap).
pub use crate::limits::MAX_TASKS;

const RT_USAGE: &str = "Usage: hackbench [-p|--pipe] [-s|--datasize <bytes>] [-l|--loops <num loops>] \
     [-g|--groups <num groups] [-f|--fds <num fds>] [-T|--threads] [-P|--process] [--help]";
const OLD_USAGE: &str = "Usage: hackbench [-pipe] <num groups> [process|thread] [loops]";

impl HackbenchOpts {
    fn defaults(tool: Tool, args: &[&str]) -> HackbenchOpts {
        HackbenchOpts {
            tool,
            pipe: false,
            threads: false,
            groups: 10,
            fds: 20,
            loops: 100,
            datasize: 100,
            args: args.join(" "),
        }
    }

    /// Parse a tool's arguments (without the program name). Errors name the option.
    pub fn parse(tool: Tool, args: &[&str]) -> Result<HackbenchOpts, String> {
        let o = match tool {
            Tool::RtTests => Self::parse_rt_tests(args)?,
            Tool::Old => Self::parse_old(args)?,
            Tool::Perf => Self::parse_perf(args)?,
        };
        if o.tasks() > MAX_TASKS {
            return Err(format!(
                "hackbench: {} groups x {} fds make {} tasks; schedsim allows at most {MAX_TASKS}",
                o.groups,
                o.fds,
                o.tasks()
            ));
        }
        Ok(o)
    }

    /// rt-tests: `getopt_long(argc, argv, "ps:l:g:f:TPFh", ...)`; numeric options need an
    /// integer > 0.
    fn parse_rt_tests(args: &[&str]) -> Result<HackbenchOpts, String> {
        const LONG: &[(&str, char, bool)] = &[
            ("pipe", 'p', false),
            ("datasize", 's', true),
            ("loops", 'l', true),
            ("groups", 'g', true),
            ("fds", 'f', true),
            ("threads", 'T', false),
            ("processes", 'P', false),
            ("fifo", 'F', false),
            ("help", 'h', false),
        ];
        let mut o = Self::defaults(Tool::RtTests, args);
        let opts = getopt(args, "ps:l:g:f:TPFh", LONG, "hackbench")?;
        for (c, val) in opts {
            let num = |name: &str| -> Result<u32, String> {
                match val.as_deref().map(str::parse::<u32>) {
                    Some(Ok(n)) if n > 0 => Ok(n),
                    _ => Err(format!(
                        "hackbench: --{name}|-{c} requires an integer > 0 (got '{}')",
                        val.as_deref().unwrap_or("")
                    )),
                }
            };
            match c {
                'p' => o.pipe = true,
                's' => o.datasize = num("datasize")?,
                'l' => o.loops = num("loops")?,
                'g' => o.groups = num("groups")?,
                'f' => o.fds = num("fds")?,
                'T' => o.threads = true,
                'P' => o.threads = false,
                'F' => {
                    return Err("hackbench: -F/--fifo makes the main task SCHED_FIFO; schedsim has no RT class".into())
                }
                _ => return Err(format!("hackbench: -h/--help: {RT_USAGE}")),
            }
        }
        Ok(o)
    }

    /// The old hackbench: positional arguments.
    fn parse_old(args: &[&str]) -> Result<HackbenchOpts, String> {
        let mut o = Self::defaults(Tool::Old, args);
        let mut a = args;
        if a.first() == Some(&"-pipe") {
            o.pipe = true;
            a = &a[1..];
        }
        if let Some(g) = a.first() {
            o.groups = match g.parse::<u32>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("hackbench: <num groups> '{g}' is not a number > 0; {OLD_USAGE}")),
            };
        }
        if let Some(m) = a.get(1) {
            o.threads = match *m {
                "process" => false,
                "thread" => true,
                _ => return Err(format!("hackbench: mode '{m}' is neither 'process' nor 'thread'; {OLD_USAGE}")),
            };
        }
        if let Some(l) = a.get(2) {
            o.loops = l.parse::<u32>().map_err(|_| format!("hackbench: [loops] '{l}' is not a number; {OLD_USAGE}"))?;
        }
        if let Some(x) = a.get(3) {
            return Err(format!("hackbench: unexpected argument '{x}'; {OLD_USAGE}"));
        }
        Ok(o)
    }

    /// `perf bench sched messaging`: perf's parse-options (`OPT_BOOLEAN`, `OPT_UINTEGER`).
    fn parse_perf(args: &[&str]) -> Result<HackbenchOpts, String> {
        const LONG: &[(&str, char, bool)] =
            &[("pipe", 'p', false), ("thread", 't', false), ("group", 'g', true), ("nr_loops", 'l', true)];
        let mut o = Self::defaults(Tool::Perf, args);
        let opts = getopt(args, "ptg:l:", LONG, "perf bench sched messaging")?;
        for (c, val) in opts {
            let num = |name: &str| -> Result<u32, String> {
                val.as_deref().and_then(|v| v.parse::<u32>().ok()).ok_or_else(|| {
                    format!(
                        "perf bench sched messaging: option `{name}' (-{c}) expects an unsigned numerical value (got '{}')",
                        val.as_deref().unwrap_or("")
                    )
                })
            };
            match c {
                'p' => o.pipe = true,
                't' => o.threads = true,
                'g' => o.groups = num("group")?,
                _ => o.loops = num("nr_loops")?,
            }
        }
        if o.groups == 0 {
            return Err("perf bench sched messaging: option `group' (-g) 0 runs no task; give at least 1".into());
        }
        Ok(o)
    }

    /// Tasks created (not counting the main task).
    pub fn tasks(&self) -> u64 {
        self.groups as u64 * self.fds as u64 * 2
    }

    /// Messages written (and read) in a complete run: every sender writes `loops` messages to
    /// every receiver of its group.
    pub fn expected_messages(&self) -> u64 {
        self.groups as u64 * self.fds as u64 * self.loops as u64 * self.fds as u64
    }

    /// The command line, e.g. `hackbench -p -g 2`.
    pub fn command_line(&self) -> String {
        if self.args.is_empty() {
            self.tool.program().to_string()
        } else {
            format!("{} {}", self.tool.program(), self.args)
        }
    }

    /// "process"/"processes" vs "thread"/"threads" as each tool says it.
    fn mode_word(&self) -> &'static str {
        match (self.tool, self.threads) {
            (Tool::RtTests, true) => "threaded",
            (Tool::RtTests, false) => "process",
            (_, true) => "threads",
            (_, false) => "processes",
        }
    }
}

/// A minimal `getopt_long()`: short options (clustered, with the argument attached or next),
/// `--name`, `--name=value`, `--name value`, unique prefixes of long names, `--` ends the
/// options. Non-option arguments are refused (both tools would ignore them silently).
#[allow(clippy::type_complexity)]
pub(crate) fn getopt(
    args: &[&str],
    short: &str,
    long: &[(&str, char, bool)],
    prog: &str,
) -> Result<Vec<(char, Option<String>)>, String> {
    let takes_arg = |c: char| -> Option<bool> {
        let i = short.find(c)?;
        Some(short[i + c.len_utf8()..].starts_with(':'))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        i += 1;
        if a == "--" {
            if let Some(x) = args.get(i) {
                return Err(format!("{prog}: unexpected argument '{x}'"));
            }
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let exact = long.iter().find(|(n, ..)| *n == name);
            let cands: Vec<_> = long.iter().filter(|(n, ..)| n.starts_with(name)).collect();
            let (lname, c, has_arg) = match (exact, cands.as_slice()) {
                (Some(e), _) => *e,
                (None, [one]) => **one,
                (None, []) => return Err(format!("{prog}: unrecognized option '--{name}'")),
                (None, _) => return Err(format!("{prog}: option '--{name}' is ambiguous")),
            };
            if has_arg {
                let v = match inline {
                    Some(v) => v,
                    None => match args.get(i) {
                        Some(v) => {
                            i += 1;
                            v.to_string()
                        }
                        None => return Err(format!("{prog}: option '--{lname}' requires an argument")),
                    },
                };
                out.push((c, Some(v)));
            } else {
                if inline.is_some() {
                    return Err(format!("{prog}: option '--{lname}' doesn't allow an argument"));
                }
                out.push((c, None));
            }
            continue;
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) else {
            return Err(format!("{prog}: unexpected argument '{a}'"));
        };
        for (pos, c) in cluster.char_indices() {
            match takes_arg(c) {
                None => return Err(format!("{prog}: invalid option -- '{c}'")),
                Some(false) => out.push((c, None)),
                Some(true) => {
                    let rest = &cluster[pos + c.len_utf8()..];
                    let v = if !rest.is_empty() {
                        rest.to_string()
                    } else {
                        match args.get(i) {
                            Some(v) => {
                                i += 1;
                                v.to_string()
                            }
                            None => return Err(format!("{prog}: option requires an argument -- '{c}'")),
                        }
                    };
                    out.push((c, Some(v)));
                    break;
                }
            }
        }
    }
    Ok(out)
}

/// Split a command line given after `--` into the workload's parameters: a first word naming
/// a tool (`rt-tests`, `old`, `perf`) selects it; the rest are its arguments.
pub fn command_line_params(words: &[String]) -> Vec<(String, String)> {
    match words.first().and_then(|w| Tool::parse(w)) {
        Some(t) => vec![("tool".into(), t.name().into()), ("args".into(), words[1..].join(" "))],
        None => vec![("args".into(), words.join(" "))],
    }
}

/// A sender or receiver.
#[derive(Debug, Clone)]
pub struct Child {
    pub task: TaskId,
    pub sender: bool,
    pub group: u32,
    /// Index among the group's senders or receivers.
    pub index: u32,
    /// Thread mode: the `pthread` tid word the main task joins on.
    pub tid_futex: Option<FutexId>,
}

/// Run state and results.
#[derive(Debug, Clone)]
pub struct Hackbench {
    pub o: HackbenchOpts,
    pub main_task: TaskId,
    /// Senders and receivers in creation order (role `i + 1` of [`TaskFrame::task`]).
    pub children: Vec<Child>,
    /// The ready and wake fdpairs (read end, write end).
    pub ready: Option<(Fd, Fd)>,
    pub wake: Option<(Fd, Fd)>,
    /// One fdpair per receiver, `group * fds + index`.
    pub pairs: Vec<(Fd, Fd)>,
    /// Process mode: the main process's `signal_struct`.
    pub parent_sig: Option<SigId>,
    /// The main task's exec, and the end of the run (ns).
    pub exec_ns: Time,
    pub end_ns: Time,
    /// `gettimeofday()` of the timed section (us).
    pub start_us: Option<u64>,
    pub stop_us: Option<u64>,
    /// Children ready and running.
    pub ready_children: u32,
    /// Messages fully written / fully read, and bytes read.
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
    /// What the tool printed (stdout), in order.
    pub output: String,
    /// The main task has reaped its children and printed its footer: the run is over.
    pub done: bool,
}

impl Hackbench {
    pub fn new(o: HackbenchOpts) -> Hackbench {
        Hackbench {
            o,
            main_task: 0,
            children: Vec::new(),
            ready: None,
            wake: None,
            pairs: Vec::new(),
            parent_sig: None,
            exec_ns: 0,
            end_ns: 0,
            start_us: None,
            stop_us: None,
            ready_children: 0,
            messages_sent: 0,
            messages_received: 0,
            bytes_received: 0,
            output: String::new(),
            done: false,
        }
    }

    /// From the workload parameters `tool` and `args`.
    pub fn parse(p: &Params) -> Result<Hackbench, String> {
        p.check_known("hackbench", PARAM_NAMES)?;
        let tool_name = p.get("tool").unwrap_or("rt-tests");
        let tool = Tool::parse(tool_name).ok_or_else(|| {
            format!("{}: hackbench tool '{tool_name}' (expected one of: {})", p.origin, Tool::NAMES.join(", "))
        })?;
        let args: Vec<&str> = p.get("args").unwrap_or("").split_whitespace().collect();
        let o = HackbenchOpts::parse(tool, &args).map_err(|e| format!("{} [tool={}]: {e}", p.origin, tool.name()))?;
        Ok(Hackbench::new(o))
    }

    /// The measured time (us), once the run is complete.
    pub fn time_us(&self) -> Option<u64> {
        Some(self.stop_us? - self.start_us?)
    }

    /// The time as the tools print it: `sec.msec` with the milliseconds truncated.
    pub fn time_text(&self) -> Option<String> {
        let d = self.time_us()?;
        Some(format!("{}.{:03}", d / 1_000_000, d % 1_000_000 / 1000))
    }

    /// Wall time of the whole program, from exec to exit (perf stat's "time elapsed").
    pub fn elapsed_ns(&self) -> Time {
        self.end_ns.saturating_sub(self.exec_ns)
    }

    /// What the tool prints before it starts its children.
    pub fn header(&self) -> String {
        let o = &self.o;
        match o.tool {
            Tool::RtTests => format!(
                "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\n\
                 Each sender will pass {} messages of {} bytes\n",
                o.mode_word(),
                o.groups,
                2 * o.fds,
                o.tasks(),
                o.loops,
                o.datasize
            ),
            Tool::Old => format!("Running with {}*40 (== {}) tasks.\n", o.groups, o.tasks()),
            Tool::Perf => "# Running 'sched/messaging' benchmark:\n".to_string(),
        }
    }

    /// What the tool prints at the end.
    pub fn footer(&self) -> String {
        let t = self.time_text().unwrap_or_default();
        let o = &self.o;
        match o.tool {
            Tool::RtTests | Tool::Old => format!("Time: {t}\n"),
            Tool::Perf => format!(
                "# {} sender and receiver {} per group\n# {} groups == {} {} run\n\n {:>14}: {t} [sec]\n",
                o.fds,
                o.mode_word(),
                o.groups,
                o.tasks(),
                o.mode_word(),
                "Total time"
            ),
        }
    }
}

fn new_task(k: &mut Kernel, comm: &str, role: u32) -> TaskId {
    crate::linux::kernel::fork::copy_process(k, comm.to_string(), 0, 120, None, role)
}

/// The shell starts the program (its main task) at a seed-dependent instant after 1 ms.
pub fn start(w: &mut Hackbench, k: &mut Kernel) {
    let comm = w.o.tool.comm();
    let main = new_task(k, comm, 0);
    let load = super::load_time(k, 0x4ACB);
    w.main_task = main;
    w.exec_ns = load;
    k.q.push(load, Action::Program { what: 0 });
}

pub fn on_action(w: &mut Hackbench, k: &mut Kernel, _what: u32) {
    let main = w.main_task;
    super::spawn(k, 0, main);
}

pub fn task_step(w: &mut Hackbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    if s.task == 0 {
        main_step(w, k, cpu, s)
    } else {
        child_step(w, k, cpu, s, (s.task - 1) as usize)
    }
}

/// User code between two syscalls.
fn user(k: &Kernel, s: &mut TaskFrame) -> Next {
    s.user = true;
    Next::Cont(k.costs.user_op)
}

#[inline]
fn gettimeofday_us(k: &Kernel) -> u64 {
    k.now / NSEC_PER_USEC
}

resume_points! {
    /// Where the main task resumes.
    enum MainAt {
        /// Create the ready and wake fdpairs.
        Setup,
        /// Create the next child (its fdpair first, for a receiver) with `fork()` or
        /// `pthread_create()`, or go on once all exist.
        Spawn,
        /// The child is running: the parent closes the fds it no longer needs.
        Spawned,
        /// Read the children's ready bytes until all are in, then write "GO".
        WaitReady,
        /// A read of ready bytes returned: count them.
        ReadReady,
        /// Reap the next child (or print and exit once all are reaped).
        Reap,
        /// A child was reaped.
        Reaped,
        Exited = super::EXITED,
    }
}

resume_points! {
    /// Where a sender or a receiver resumes.
    enum ChildAt {
        /// ready(): write our ready byte.
        Ready,
        /// Wait for "GO".
        WaitGo,
        /// Send or receive the next message (or exit when all are done).
        Transfer,
        /// A write or read returned: count its bytes.
        Transferred,
        Exited = super::EXITED,
    }
}

/// The main task: `main()` of the tools.
fn main_step(w: &mut Hackbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
    match MainAt::from_u8(s.at) {
        MainAt::Setup => {
            setup(w, k, cpu);
            s.i = 0;
            s.at = MainAt::Spawn as u8;
            user(k, s)
        }
        MainAt::Spawn => {
            let n = s.i;
            if n == w.o.tasks() {
                s.i = 0;
                s.at = MainAt::WaitReady as u8;
                return user(k, s);
            }
            s.at = MainAt::Spawned as u8;
            spawn_child(w, k, cpu, n as u32)
        }
        MainAt::Spawned => {
            // Process mode: after forking a receiver the parent closes its read end; after a
            // group's last sender, the group's write ends (`close()` each).
            let o = &w.o;
            let (sender, index) = child_role(o, s.i as u32);
            let closes = match (o.threads, sender) {
                (true, _) => 0,
                (false, false) => 1,
                (false, true) => {
                    if index + 1 == o.fds {
                        o.fds
                    } else {
                        0
                    }
                }
            };
            s.i += 1;
            s.at = MainAt::Spawn as u8;
            s.user = true;
            // close(): below the guest's trace clock (1 us) beyond the syscall.
            Next::Cont(k.costs.user_op + closes as Time * k.costs.syscall)
        }
        MainAt::WaitReady => {
            // Wait for everyone to be ready: one byte per child.
            let now_us = gettimeofday_us(k);
            if s.i < w.o.tasks() {
                let fd = w.ready.expect("set up").0;
                s.at = MainAt::ReadReady as u8;
                return Next::Call(k.costs.user_op, sys_read(fd, 1));
            }
            w.start_us = Some(now_us);
            let fd = w.wake.expect("set up").1;
            s.i = 0;
            s.at = MainAt::Reap as u8;
            Next::Call(k.costs.user_op, sys_write(fd, 1))
        }
        MainAt::ReadReady => {
            s.i += k.tasks[k.curr(cpu) as usize].user_ret.max(0) as u64;
            s.at = MainAt::WaitReady as u8;
            user(k, s)
        }
        MainAt::Reap => {
            // Reap them all, in creation order.
            let (now, now_us) = (k.now, gettimeofday_us(k));
            let i = s.i as usize;
            if i == w.children.len() {
                w.stop_us = Some(now_us);
                w.end_ns = now;
                let f = w.footer();
                w.output.push_str(&f);
                w.done = true;
                return super::exit_current(k, cpu, s);
            }
            match (w.parent_sig, w.children[i].tid_futex) {
                (Some(sig), _) => {
                    s.at = MainAt::Reaped as u8;
                    Next::Call(k.costs.user_op, Wait4::any_child(sig))
                }
                (None, Some(f)) => {
                    // pthread_join(): FUTEX_WAIT on the tid while it is not 0.
                    let v = k.futexes[f as usize].val;
                    if v != 0 {
                        return Next::Call(k.costs.user_op, FutexOp::wait(f, v));
                    }
                    s.i += 1;
                    user(k, s)
                }
                (None, None) => unreachable!("a child with neither a parent nor a tid"),
            }
        }
        MainAt::Reaped => {
            s.i += 1;
            s.at = MainAt::Reap as u8;
            user(k, s)
        }
        MainAt::Exited => unreachable!("hackbench main ran after exit"),
    }
}

/// The ready and wake fdpairs and, in process mode, the main process's `signal_struct`; the
/// tool prints its header.
fn setup(w: &mut Hackbench, k: &mut Kernel, cpu: CpuId) {
    let o = w.o.clone();
    let ready = fdpair(k, cpu, o.pipe);
    let wake = fdpair(k, cpu, o.pipe);
    let parent_sig = (!o.threads).then(|| signal_alloc(k, cpu));
    w.ready = Some(ready);
    w.wake = Some(wake);
    w.parent_sig = parent_sig;
    let header = w.header();
    w.output.push_str(&header);
    w.children.reserve(o.tasks() as usize);
}

/// Child `n` in creation order (`group()` of the tools): each group's `fds` receivers, then
/// its `fds` senders. Returns (sender, index within the group's senders or receivers).
fn child_role(o: &HackbenchOpts, n: u32) -> (bool, u32) {
    let r = n % (2 * o.fds);
    (r >= o.fds, r % o.fds)
}

/// Create child `n` (`create_worker()`): a receiver's fdpair first (`pipe()` or
/// `socketpair()`), then `fork()` (the parent's [`KernelClone`] of `PathCosts::fork`) or
/// `pthread_create()` ([`PTHREAD_CREATE_NS`]); the child starts when the syscall wakes it.
fn spawn_child(w: &mut Hackbench, k: &mut Kernel, cpu: CpuId, n: u32) -> Next {
    let o = w.o.clone();
    let (sender, index) = child_role(&o, n);
    let group = n / (2 * o.fds);
    let mut c = k.costs.user_op;
    if !sender {
        let p = fdpair(k, cpu, o.pipe);
        w.pairs.push(p);
        // pipe() was not measured: charged as socketpair().
        c += k.costs.syscall + k.costs.socketpair;
    }
    let task = if o.threads {
        // pthread_create(): a thread of main's process.
        crate::linux::kernel::fork::copy_process_clone_vm(
            k,
            w.main_task,
            o.tool.comm().to_string(),
            0,
            120,
            None,
            n + 1,
        )
    } else {
        new_task(k, o.tool.comm(), n + 1)
    };
    let tid_futex = if o.threads {
        let pid = k.tasks[task as usize].pid as i64;
        Some(futex_alloc(k, cpu, pid))
    } else {
        let sig = w.parent_sig.expect("process mode");
        link_child(k, sig, task);
        None
    };
    w.children.push(Child { task, sender, group, index, tid_futex });
    let copy = if o.threads { PTHREAD_CREATE_NS } else { k.costs.fork };
    Next::Call(c, KernelClone::frame(task, copy as u32))
}

/// A sender or a receiver.
fn child_step(w: &mut Hackbench, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame, ci: usize) -> Next {
    match ChildAt::from_u8(s.at) {
        ChildAt::Ready => {
            // ready(): tell them we're ready... A forked child first pays the copy-on-write
            // faults of the pages it touches.
            let fd = w.ready.expect("set up").1;
            let faults = if w.o.threads { 0 } else { k.costs.fork_child_faults };
            s.at = ChildAt::WaitGo as u8;
            Next::Call(k.costs.user_op + faults, sys_write(fd, 1))
        }
        ChildAt::WaitGo => {
            // ...and wait for "GO".
            let fd = w.wake.expect("set up").0;
            let c = &w.children[ci];
            s.at = ChildAt::Transfer as u8;
            s.i = 0;
            s.mark[0] = 0;
            // The transfer loop's fixed facts, kept in the frame (which the host has at hand)
            // rather than read from `children` and `pairs` each message: the role, and a
            // receiver's fd or the index in `pairs` of a sender's group's first fdpair.
            let first = c.group * w.o.fds;
            s.mark[1] =
                if c.sender { (first as u64) << 1 | 1 } else { w.pairs[(first + c.index) as usize].0.to_bits() << 1 };
            // A sender's next receiver (`i % fds`, counted along with `i`).
            s.mark[2] = 0;
            w.ready_children += 1;
            Next::Call(k.costs.user_op, sys_poll_in(fd))
        }
        ChildAt::Transfer => {
            let o = &w.o;
            let total = o.loops as u64 * o.fds as u64;
            if s.i == total {
                let f = match (w.parent_sig, w.children[ci].tid_futex) {
                    (Some(sig), _) => {
                        DoExit::with_costs(DoExit::process(sig), k.costs.exit_head as u32, k.costs.exit_teardown as u32)
                    }
                    (None, Some(f)) => DoExit::thread(f),
                    (None, None) => unreachable!(),
                };
                s.at = ChildAt::Exited as u8;
                return Next::Call(k.costs.user_op, f);
            }
            let left = o.datasize - s.mark[0] as u32;
            let frame = if s.mark[1] & 1 != 0 {
                // Message i goes to receiver i % fds of the group.
                debug_assert_eq!(s.mark[2], s.i % o.fds as u64);
                let pair = (s.mark[1] >> 1) as usize;
                let fd = w.pairs[pair + s.mark[2] as usize].1;
                prefetch_fd(k, fd);
                sys_write(fd, left)
            } else {
                let fd = Fd::from_bits(s.mark[1] >> 1);
                prefetch_fd(k, fd);
                sys_read(fd, left)
            };
            s.at = ChildAt::Transferred as u8;
            Next::Call(k.costs.user_op, frame)
        }
        ChildAt::Transferred => {
            let n = k.tasks[k.curr(cpu) as usize].user_ret.max(0) as u64;
            s.mark[0] += n;
            let sender = s.mark[1] & 1 != 0;
            if !sender {
                w.bytes_received += n;
            }
            if s.mark[0] >= w.o.datasize as u64 {
                s.mark[0] = 0;
                s.i += 1;
                if sender {
                    s.mark[2] += 1;
                    if s.mark[2] == w.o.fds as u64 {
                        s.mark[2] = 0;
                    }
                    w.messages_sent += 1;
                } else {
                    w.messages_received += 1;
                }
            }
            s.at = ChildAt::Transfer as u8;
            user(k, s)
        }
        ChildAt::Exited => unreachable!("hackbench child ran after exit"),
    }
}

impl super::Program for Hackbench {
    fn parse(_name: &str, p: &Params, _m: &crate::hw::Machine) -> Result<Hackbench, String> {
        Hackbench::parse(p)
    }
    fn own_args(words: &[String]) -> Option<Vec<(String, String)>> {
        // The tool's own command line, optionally after a tool name (rt-tests, old, perf).
        Some(command_line_params(words))
    }
    const OWN_ARGS_EXAMPLE: &'static str = "-- rt-tests -p -g 4";
    fn planned_size(&self, _nr_cpus: u32) -> (u64, u64, &'static str) {
        (self.o.tasks().saturating_add(1), 0, "hackbench args= (groups x fds)")
    }
    fn start(&mut self, k: &mut Kernel) {
        start(self, k)
    }
    fn on_action(&mut self, k: &mut Kernel, what: u32) {
        on_action(self, k, what)
    }
    #[inline]
    fn task_step(&mut self, k: &mut Kernel, cpu: CpuId, s: &mut TaskFrame) -> Next {
        task_step(self, k, cpu, s)
    }
    #[inline]
    fn done(&self) -> bool {
        self.done
    }
    fn metric(&self, f: &super::RunFacts) -> super::Metric {
        let v = self.time_us().map_or(f.sim_ns / 1000, |t| t) as f64 / 1e3;
        super::Metric { name: "time", unit: "ms", lower_is_better: true, value: v }
    }
    fn json(&self, _f: &super::RunFacts) -> serde_json::Value {
        serde_json::json!({
            "name": "hackbench",
            "tool": self.o.tool.name(),
            "command": self.o.command_line(),
            "mode": if self.o.threads { "thread" } else { "process" },
            "transport": if self.o.pipe { "pipe" } else { "socket" },
            "groups": self.o.groups,
            "fds": self.o.fds,
            "loops": self.o.loops,
            "datasize": self.o.datasize,
            "tasks": self.o.tasks(),
            "messages_expected": self.o.expected_messages(),
            "messages_sent": self.messages_sent,
            "messages_received": self.messages_received,
            "bytes_received": self.bytes_received,
            "time_us": self.time_us(),
            "time": self.time_text(),
            "elapsed_ns": self.elapsed_ns(),
            "output": self.output,
        })
    }
    fn text(&self, f: &super::RunFacts) -> String {
        let elapsed =
            if self.end_ns > 0 { self.elapsed_ns() } else { (f.sim_ns + f.warmup_ns).saturating_sub(self.exec_ns) };
        let mut o = self.output.clone();
        o.push_str(&crate::report::perf_stat_text(
            &self.o.command_line(),
            f.task_clock_ns,
            f.stats.context_switches,
            f.stats.cpu_migrations,
            elapsed,
        ));
        o
    }
}
