//! hackbench end to end (docs/workloads.md §3): the three forms (rt-tests, the old `hackbench N`,
//! `perf bench sched messaging`) deliver every message (groups x 20 senders x loops x 20
//! receivers) over pipes and AF_UNIX sockets, in process and thread mode; the wakeups of
//! fs/pipe.c and net/unix/af_unix.c are sync wakeups (WF_SYNC) of the sleeping reader; the
//! output has each tool's layout; bad options are rejected with an error naming the option.

use schedsim::linux::fs::Fd;
use schedsim::linux::kernel::sched::WF_SYNC;
use schedsim::linux::net::unix::{unix_skb_truesize, SK_WMEM_MAX};
use schedsim::run::{build, execute, RunResult};
use schedsim::spec::RunSpec;
use schedsim::workload::hackbench::Hackbench;
use schedsim::workload::params::Params;
use schedsim::workload::Workload;
use std::process::Command;

const LIMIT_NS: u64 = 10_000_000_000;

fn spec(tool: &str, args: &str) -> RunSpec {
    let mut s = RunSpec::new("hackbench");
    s.machine = "i7-4c8t".into();
    s.params = Params::from_pairs(vec![("tool".into(), tool.into()), ("args".into(), args.into())], "test");
    s.limit_ns = LIMIT_NS;
    s
}

fn hb(r: &RunResult) -> &Hackbench {
    match &r.workload {
        Workload::Hackbench(w) => w,
        other => panic!("not a hackbench run: {other:?}"),
    }
}

fn hb_of(k: &schedsim::run::RunWorld) -> &Hackbench {
    match &k.progs.workload {
        Workload::Hackbench(w) => w,
        other => panic!("not a hackbench run: {other:?}"),
    }
}

fn run(tool: &str, args: &str) -> RunResult {
    let r = execute(&spec(tool, args)).unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
    assert!(r.finished, "{tool} {args}: did not finish");
    r
}

/// Build and run a kernel, keeping it for inspection of the IPC objects.
fn run_kernel(tool: &str, args: &str) -> schedsim::run::RunWorld {
    let mut k = build(&spec(tool, args)).unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
    k.run(LIMIT_NS);
    assert!(k.finished(), "{tool} {args}: did not finish");
    k
}

fn check_accounting(w: &Hackbench, groups: u64, loops: u64, what: &str) {
    let expected = groups * 20 * loops * 20;
    assert_eq!(w.o.expected_messages(), expected, "{what}");
    assert_eq!(w.messages_sent, expected, "{what}: messages written");
    assert_eq!(w.messages_received, expected, "{what}: messages read");
    assert_eq!(w.bytes_received, expected * 100, "{what}: bytes read");
    assert_eq!(w.ready_children as u64, groups * 40, "{what}: every child got ready");
    let t = w.time_us().unwrap_or_else(|| panic!("{what}: no time"));
    assert!(t > 0, "{what}: the timed section took no time");
}

#[test]
fn every_form_delivers_groups_x_20_x_loops_x_20_messages() {
    for (tool, args, groups, loops) in [
        ("rt-tests", "-g 2 -l 3", 2, 3),
        ("rt-tests", "-p -T -g 1 -l 4", 1, 4),
        ("old", "2 process 3", 2, 3),
        ("old", "-pipe 1 thread 4", 1, 4),
        ("perf", "-g 2 -l 3", 2, 3),
        ("perf", "-p -t -g 1 -l 4", 1, 4),
    ] {
        let r = run(tool, args);
        check_accounting(hb(&r), groups, loops, &format!("{tool} {args}"));
    }
}

#[test]
fn pipe_and_socket_modes_finish_and_drain_their_objects() {
    for args in ["-p -g 2 -l 5", "-g 2 -l 5", "-p -T -g 2 -l 5", "-T -g 2 -l 5"] {
        let k = run_kernel("rt-tests", args);
        let w = hb_of(&k);
        check_accounting(w, 2, 5, args);
        // Every data pipe/socket is empty; "ready" is drained; "wake" still holds its GO byte.
        let (wake_rd, _) = w.wake.unwrap();
        for (i, p) in k.ipc.pipes.iter().enumerate() {
            let expect = if Fd::PipeRead(i as u32) == wake_rd { 1 } else { 0 };
            assert_eq!(p.unread(), expect, "{args}: pipe {i}");
        }
        for i in 0..k.ipc.socks.len() as u32 {
            let expect = if Fd::Sock(i) == wake_rd { 1 } else { 0 };
            let queued: u64 = k.ipc.socks.receive_queue(i).map(|b| (b.len - b.consumed) as u64).sum();
            assert_eq!(queued, expect, "{args}: socket {i}");
        }
        assert!(k.ipc.wqs.iter().all(|q| q.is_empty()), "{args}: a task is still queued");
    }
}

/// Over pipes, a receiver sleeps in pipe_read() on its empty pipe and a sender's pipe_write()
/// wakes it with a sync wakeup from the sender's own context. (With one sender and one
/// receiver the reader never catches the writer: the last poller forked, the sender, is the
/// first GO wakes, and both copy at the same speed; 20 senders take turns.)
#[test]
fn receiver_blocked_on_empty_pipe_is_woken_by_the_writer_with_wf_sync() {
    let k = run_kernel("rt-tests", "-p -g 1 -l 20");
    let w = hb_of(&k);
    assert_eq!(w.messages_received, 8000);
    let senders: Vec<_> = w.children.iter().filter(|c| c.sender).map(|c| c.task).collect();
    let mut woken = 0;
    for (i, rx) in w.children.iter().filter(|c| !c.sender).enumerate() {
        let Fd::PipeRead(p) = w.pairs[i].0 else { panic!("a pipe") };
        let rd_wait = k.ipc.pipes[p as usize].rd_wait;
        for r in k.ipc.wake_log.iter().filter(|r| r.wq == rd_wait) {
            assert_eq!(r.wakee, rx.task, "only its receiver sleeps on a pipe's rd_wait");
            assert!(senders.contains(&r.waker), "a writer wakes it");
            assert_ne!(r.wake_flags & WF_SYNC, 0, "pipe_write() wakes with WF_SYNC");
            woken += 1;
        }
    }
    assert!(woken > 0, "no receiver ever slept on its empty pipe");
}

#[test]
fn socket_reader_is_woken_by_sock_def_readable_with_wf_sync() {
    let k = run_kernel("rt-tests", "-g 1 -f 1 -l 50");
    let w = hb_of(&k);
    let (rx, tx) = (&w.children[0], &w.children[1]);
    let Fd::Sock(s) = w.pairs[0].0 else { panic!("a socket") };
    let wq = k.ipc.socks[s as usize].wq;
    let wakes: Vec<_> = k.ipc.wake_log.iter().filter(|r| r.wq == wq).collect();
    assert!(!wakes.is_empty(), "the receiver never slept in unix_stream_data_wait()");
    assert!(wakes.iter().all(|r| r.wakee == rx.task && r.waker == tx.task && r.wake_flags & WF_SYNC != 0));
}

/// "GO": the main task's single write to the wake fd wakes every child polling it at once.
#[test]
fn the_go_write_wakes_every_poller() {
    for args in ["-p -g 1 -l 1", "-g 1 -l 1"] {
        let k = run_kernel("rt-tests", args);
        let w = hb_of(&k);
        let wq = match w.wake.unwrap().0 {
            Fd::PipeRead(p) => k.ipc.pipes[p as usize].rd_wait,
            Fd::Sock(s) => k.ipc.socks[s as usize].wq,
            Fd::PipeWrite(_) => unreachable!(),
        };
        let wakes: Vec<_> = k.ipc.wake_log.iter().filter(|r| r.wq == wq).collect();
        assert_eq!(wakes.len(), 40, "{args}: one wakeup per poller");
        assert!(wakes.iter().all(|r| r.waker == w.main_task && r.wake_flags & WF_SYNC != 0), "{args}");
        let mut woken: Vec<_> = wakes.iter().map(|r| r.wakee).collect();
        woken.sort();
        woken.dedup();
        assert_eq!(woken.len(), 40, "{args}: each child once");
    }
}

/// AF_UNIX flow control is in bytes of skb truesize against the sender's sk_sndbuf.
#[test]
fn socket_write_space_is_counted_in_truesize() {
    assert_eq!(SK_WMEM_MAX, 212_992);
    assert_eq!(unix_skb_truesize(100), 896);
    assert_eq!(unix_skb_truesize(1), 896);
    assert!(unix_skb_truesize(4000) > 4000);
    // About 238 100-byte messages fit before a sender blocks.
    assert_eq!(SK_WMEM_MAX.div_ceil(896), 238);
}

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

fn is_time(t: &str) -> bool {
    let Some((s, ms)) = t.split_once('.') else { return false };
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && ms.len() == 3 && ms.bytes().all(|b| b.is_ascii_digit())
}

#[test]
fn output_has_each_tools_layout() {
    let r = run("rt-tests", "-g 1 -l 2");
    let w = hb(&r);
    let l = lines(&w.output);
    assert_eq!(l.len(), 3, "{}", w.output);
    assert_eq!(l[0], "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)");
    assert_eq!(l[1], "Each sender will pass 2 messages of 100 bytes");
    let t = l[2].strip_prefix("Time: ").expect("Time: line");
    assert!(is_time(t), "{t}");
    assert_eq!(Some(t.to_string()), w.time_text());

    let r = run("rt-tests", "-T -p -s 64 -g 1 -l 2");
    let l = lines(&hb(&r).output);
    assert_eq!(l[0], "Running in threaded mode with 1 groups using 40 file descriptors each (== 40 tasks)");
    assert_eq!(l[1], "Each sender will pass 2 messages of 64 bytes");

    let r = run("old", "1 thread 2");
    let l = lines(&hb(&r).output);
    assert_eq!(l.len(), 2);
    assert_eq!(l[0], "Running with 1*40 (== 40) tasks.");
    assert!(is_time(l[1].strip_prefix("Time: ").expect("Time: line")));

    for (args, word) in [("-g 1 -l 2", "processes"), ("-t -g 1 -l 2", "threads")] {
        let r = run("perf", args);
        let w = hb(&r);
        let l = lines(&w.output);
        assert_eq!(l.len(), 5, "{}", w.output);
        assert_eq!(l[0], "# Running 'sched/messaging' benchmark:");
        assert_eq!(l[1], format!("# 20 sender and receiver {word} per group"));
        assert_eq!(l[2], format!("# 1 groups == 40 {word} run"));
        assert_eq!(l[3], "");
        let t = l[4].strip_prefix("     Total time: ").and_then(|x| x.strip_suffix(" [sec]")).expect("Total time line");
        assert!(is_time(t), "{t}");
    }
}

/// The printed time is gettimeofday() after the ready bytes to gettimeofday() after the last
/// reap, in whole microseconds, shown as sec.msec with the milliseconds truncated.
#[test]
fn time_is_measured_from_go_to_the_last_reap() {
    let r = run("rt-tests", "-p -g 1 -l 20");
    let w = hb(&r);
    let (start, stop) = (w.start_us.unwrap(), w.stop_us.unwrap());
    // Timestamps are absolute: the run ends at the warm-up plus the measured window.
    assert!(w.exec_ns / 1000 <= start && start < stop && stop <= (r.warmup_ns + r.sim_ns) / 1000);
    let d = stop - start;
    assert_eq!(w.time_text().unwrap(), format!("{}.{:03}", d / 1_000_000, d % 1_000_000 / 1000));
    assert!(w.elapsed_ns() >= d * 1000);
}

#[test]
fn same_seed_same_run() {
    let (a, b) = (run("old", "1 process 5"), run("old", "1 process 5"));
    assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
    assert_eq!(format!("{:?}", a.workload), format!("{:?}", b.workload));
    assert_eq!((a.sim_ns, a.actions), (b.sim_ns, b.actions));
}

#[test]
fn bad_options_are_errors_naming_the_option() {
    let err = |tool: &str, args: &str| match execute(&spec(tool, args)) {
        Ok(_) => panic!("{tool} {args}: accepted"),
        Err(e) => e,
    };
    for (tool, args, needle) in [
        ("rt-tests", "-g 0", "--groups|-g requires an integer > 0"),
        ("rt-tests", "--loops=x", "--loops|-l requires an integer > 0"),
        ("rt-tests", "-s", "option requires an argument -- 's'"),
        ("rt-tests", "-x", "invalid option -- 'x'"),
        ("rt-tests", "--grops 2", "unrecognized option '--grops'"),
        ("rt-tests", "--p", "option '--p' is ambiguous"),
        ("rt-tests", "-F", "-F/--fifo"),
        ("rt-tests", "10", "unexpected argument '10'"),
        ("old", "abc", "<num groups> 'abc'"),
        ("old", "2 proc", "mode 'proc'"),
        ("old", "2 process x", "[loops] 'x'"),
        ("perf", "-g x", "option `group' (-g)"),
        ("perf", "--nr_loops -1", "option `nr_loops' (-l)"),
        ("perf", "-T", "invalid option -- 'T'"),
        ("perf", "-g 0", "option `group' (-g)"),
    ] {
        let e = err(tool, args);
        assert!(e.contains(needle), "{tool} {args}: {e}");
    }
    let mut s = spec("rt-tests", "");
    s.params = Params::from_pairs(vec![("tool".into(), "lmbench".into())], "test");
    let e = execute(&s).err().expect("unknown tool");
    assert!(e.contains("hackbench tool 'lmbench'"), "{e}");
    s.params = Params::from_pairs(vec![("groups".into(), "2".into())], "test");
    let e = execute(&s).err().expect("unknown parameter");
    assert!(e.contains("unknown hackbench parameter 'groups'"), "{e}");
}

/// The command line: `schedsim run hackbench -- TOOL ARGS` prints the tool's output and the
/// perf stat block; bad options exit with code 2.
#[test]
fn command_line_runs_each_tool() {
    let exe = env!("CARGO_BIN_EXE_schedsim");
    let out = Command::new(exe).args(["run", "hackbench", "--", "perf", "-p", "-g", "1", "-l", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# 1 groups == 40 processes run\n"), "{text}");
    assert!(text.contains(" Performance counter stats for 'perf bench sched messaging -p -g 1 -l 2':"), "{text}");
    for counter in ["msec task-clock", "context-switches", "cpu-migrations", "seconds time elapsed"] {
        assert!(text.contains(counter), "{counter}: {text}");
    }
    let out =
        Command::new(exe).args(["run", "hackbench", "--json", "--", "old", "1", "process", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["workload"]["messages_received"], 800);
    assert_eq!(v["workload"]["messages_expected"], 800);
    assert_eq!(v["workload"]["tool"], "old");
    let out = Command::new(exe).args(["run", "hackbench", "--", "rt-tests", "-g", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--groups|-g"));
}

/// `__wake_up_common_lock()` holds the queue's lock for the whole walk, the wakeups it makes
/// included: a second waker of the same queue (two senders writing to one receiver at once)
/// spins until the first walk ends, so walks of one queue never interleave (`wake_up()`
/// asserts it in debug builds) and a waiter is never visited by two walks at once. Before,
/// the model let a second walk start while the first was still inside `try_to_wake_up()`, and
/// both walked the same entries.
#[test]
fn wake_up_walks_of_one_queue_hold_its_lock() {
    let k = run_kernel("old", "10");
    check_accounting(hb_of(&k), 10, 100, "hackbench 10");
    assert!(k.ipc.wq_lock_waits > 0, "no walk found its queue's lock held: the run does not exercise the lock");
}

/// `spin_lock_irqsave(&wq_head->lock)` disables preemption as well as interrupts: a pipe
/// writer's `sched_waking` runs at preempt depth 3 (the queue lock, `p->pi_lock`, and
/// `try_to_wake_up()`'s own preemption guard), as the real kernel's trace of the same
/// ping-pong shows (tests/fixtures/real-trace-sample.txt: `ping-4692 [000] d..3.
/// sched_waking`). It was 2 before the queue lock counted.
#[test]
fn a_pipe_wakeup_runs_under_the_queue_locks_preempt_count() {
    let mut s = RunSpec::new("pingpong");
    s.machine = "i7-4c8t".into();
    s.background = Some("none".into());
    s.limit_ns = 20_000_000;
    s.trace = true;
    let r = execute(&s).expect("valid spec");
    // A task's own wakeups (not an interrupt handler's on its CPU).
    let wakings: Vec<_> = r
        .trace
        .iter()
        .filter(|x| {
            matches!(x.event, schedsim::trace::Event::SchedWaking { .. })
                && x.pid != 0
                && x.flags & (schedsim::trace::flags::HARDIRQ | schedsim::trace::flags::SOFTIRQ) == 0
        })
        .collect();
    assert!(!wakings.is_empty(), "no wakeup from a task");
    for w in wakings {
        assert_eq!(w.preempt_count & 0xf, 3, "{w:?}");
        assert!(w.flags & schedsim::trace::flags::IRQS_OFF != 0, "{w:?}");
    }
}

/// The main task forks its children one by one (`kernel_clone()`, `PathCosts::fork` each), so on a
/// 2-CPU guest the CPU the children land on idles between forks, as the real program's does
/// (validate's messaging captures: about one idle entry per fork), where before every child
/// appeared at one instant. A child process's exit charges its measured work. It runs on the
/// hand-made 2-vCPU file: on the calibrated docs/guest-2vcpu.toml the balancer moves the parent
/// between forks, and this test's bookkeeping assumes one parent CPU.
#[test]
fn the_main_task_forks_one_child_at_a_time_and_the_childs_cpu_idles_between_forks() {
    use schedsim::trace::Event;
    let costs = schedsim::linux::cost::PathCosts::default();
    let (fork_ns, faults_ns, teardown_ns) = (costs.fork, costs.fork_child_faults, costs.exit_teardown);
    let mut s = spec("perf", "-g 1 -l 1");
    s.machine = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guest-2vcpu-icx.toml").into();
    s.trace = true;
    s.background = Some("none".into());
    let r = execute(&s).expect("valid spec");
    assert!(r.finished);
    let main_pid = r.workload_pids[0];
    let news: Vec<(u64, u32, u32)> = r
        .trace
        .iter()
        .filter_map(|rec| match rec.event {
            Event::SchedWakeupNew { pid, target_cpu, .. } if pid != main_pid => Some((rec.ts_ns, rec.cpu, target_cpu)),
            _ => None,
        })
        .collect();
    assert_eq!(news.len(), 40);
    // One fork after the other, each at least a copy_process() apart.
    for w in news.windows(2) {
        assert!(w[1].0 - w[0].0 >= fork_ns, "forks {} ns apart", w[1].0 - w[0].0);
    }
    // All from the parent's CPU; the children's CPU enters an idle state between most forks.
    let parent_cpu = news[0].1;
    assert!(news.iter().all(|n| n.1 == parent_cpu));
    let mut idled = 0;
    for w in news.windows(2) {
        let idle_between = r.trace.iter().any(|rec| {
            rec.ts_ns > w[0].0
                && rec.ts_ns < w[1].0
                && rec.cpu != parent_cpu
                && matches!(rec.event, Event::CpuIdle { state, .. } if state != u32::MAX)
        });
        idled += idle_between as u32;
    }
    assert!(idled >= 35, "the children's CPU idled between only {idled} of 39 forks");
    // A forked child's first run (up to its sleep in poll()) lasts at least its copy-on-write
    // start-up.
    let children: Vec<u32> = r.workload_pids.iter().copied().filter(|&p| p != main_pid).collect();
    for &c in &children {
        let first_in =
            r.trace.iter().position(|rec| matches!(rec.event, Event::SchedSwitch { next_pid, .. } if next_pid == c));
        let first_in = first_in.expect("every child ran");
        let out = r.trace[first_in..]
            .iter()
            .find(|rec| matches!(rec.event, Event::SchedSwitch { prev_pid, .. } if prev_pid == c))
            .expect("and switched out");
        assert!(out.ts_ns - r.trace[first_in].ts_ns >= faults_ns, "pid {c}'s first run");
    }
    // A child's exit: from its sched_process_exit record to the end of its run at least the
    // work charged after the record.
    let exits: Vec<(u64, u32)> = r
        .trace
        .iter()
        .filter_map(|rec| match rec.event {
            Event::SchedProcessExit { pid, .. } if pid != main_pid => Some((rec.ts_ns, pid)),
            _ => None,
        })
        .collect();
    assert_eq!(exits.len(), 40);
    for (t, pid) in exits {
        let last = r
            .trace
            .iter()
            .filter(|rec| matches!(rec.event, Event::SchedSwitch { prev_pid, .. } if prev_pid == pid))
            .map(|rec| rec.ts_ns)
            .max()
            .expect("the child switched out");
        assert!(last - t >= teardown_ns, "pid {pid} left {} ns after its exit record", last - t);
    }
}
