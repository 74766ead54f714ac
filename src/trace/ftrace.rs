//! ftrace text output: renders [`Record`]s exactly as `cat /sys/kernel/tracing/trace` prints them
//! on Linux 6.18 with the default trace options (`irq-info` on, `record-tgid` off,
//! `latency-format` off, `hash-ptr` on).
//!
//! This models the output side of the kernel's tracing code:
//! - `kernel/trace/trace.c` `print_event_info()`/`print_func_help_header_irq()`: the 12-line
//!   header ([`write_header`]);
//! - `kernel/trace/trace_output.c` `trace_print_context()`, `trace_print_lat_fmt()` and
//!   `trace_print_time()`: the `TASK-PID [CPU] flags TIMESTAMP: ` prefix of every line;
//! - the `print fmt` of each event (`/sys/kernel/tracing/events/*/*/format`, kept verbatim in
//!   `shared/data/event-formats.txt`): the rest of the line.
//!
//! Line layout, field by field:
//!
//! ```text
//! "%16s-%-7d "  comm-pid      pid 0 always prints as "<idle>"
//! "[%03d] "     cpu
//! "%c%c%c%c%c"  irqs-off/BH, need-resched, hard/softirq, preempt depth, migrate-disable
//! " %5lu.%06lu" timestamp     ns rounded to the nearest microsecond (ns2usecs() adds 500)
//! ": %s: "      event name
//! ...           the event's print fmt
//! ```
//!
//! Architecture invariant: this module is the only place that turns records into text.
//!
//! Performance: lines are hand-formatted, with no `format!`/`write!`. [`write_record`] looks up
//! the comms first, grows the `Vec<u8>` once by an upper bound of the line, writes into that
//! region through a small cursor (fixed-size copies, a two-digits-at-a-time decimal routine,
//! padding written first and then overwritten) and truncates to the real length. This runs at
//! about 40 ns per line in release builds (`format_speed` test).

use std::io;

use super::{flags, Event, Record, Sym, Vector, WarnSite};

/// Resolves pid -> comm for formatting.
///
/// The TASK column of pid 0 always reads `<idle>` and never asks this trait; the comm used inside
/// an event (e.g. `sched_switch`'s `next_comm`) for pid 0 is the per-CPU idle task's name,
/// `swapper/<cpu>`, which is why the CPU of the record is passed too.
pub trait Names {
    fn comm(&self, pid: u32, cpu: u32) -> &str;
    /// The `%*pb` text of cpumask `id` of the trace (for `ipi_send_cpumask`).
    fn cpumask(&self, _id: u32) -> &str {
        ""
    }
    /// The name of function `id` of the run's background sources (work functions, timer
    /// callbacks), printed by the workqueue and timer events.
    fn func(&self, _id: u32) -> &str {
        ""
    }
}

/// Size at which [`write_trace`] hands its buffer to the writer.
const CHUNK_BYTES: usize = 64 * 1024;

// ------------------------------------------------------------------------------------------------
// Header
// ------------------------------------------------------------------------------------------------

const HEADER_TOP: &[u8] = b"# tracer: nop\n#\n# entries-in-buffer/entries-written: ";

/// The flags legend and column titles printed when `irq-info` is on and `record-tgid` is off.
const HEADER_LEGEND: &[u8] = b"#\n\
#                                _-----=> irqs-off/BH-disabled\n\
#                               / _----=> need-resched\n\
#                              | / _---=> hardirq/softirq\n\
#                              || / _--=> preempt-depth\n\
#                              ||| / _-=> migrate-disable\n\
#                              |||| /     delay\n\
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
#              | |         |   |||||     |         |\n";

/// Write the 12-line header. Nothing is ever dropped from a simulated buffer, so
/// entries-in-buffer and entries-written are both `n_records`; `#P:` is the number of CPUs.
pub fn write_header(out: &mut Vec<u8>, n_records: usize, nr_cpus: u32) {
    out.extend_from_slice(HEADER_TOP);
    push_dec(out, n_records as u64);
    out.push(b'/');
    push_dec(out, n_records as u64);
    out.extend_from_slice(b"   #P:");
    push_dec(out, u64::from(nr_cpus));
    out.push(b'\n');
    out.extend_from_slice(HEADER_LEGEND);
}

// ------------------------------------------------------------------------------------------------
// Lines
// ------------------------------------------------------------------------------------------------

/// An upper bound of the bytes of one line that do not come from [`Names`] (the comms are
/// added on top). The longest lines are `csd_queue_cpu`, `ipi_send_cpu` and `sched_switch`
/// with every number at its maximum: 227 bytes (checked by the
/// `extreme_records_fit_in_the_reserved_room` test). Should the bound ever be too small, the
/// result is a panic on a slice bound, never a wrong line.
const FIXED_MAX: usize = 320;

/// Append one formatted line, including its trailing `'\n'`.
pub fn write_record(out: &mut Vec<u8>, r: &Record, names: &dyn Names) {
    let cpu = r.cpu;
    // trace_find_cmdline() reports pid 0 as "<idle>", whatever the CPU.
    let task: &[u8] = if r.pid == 0 { b"<idle>" } else { names.comm(r.pid, cpu).as_bytes() };
    // The comms printed inside the event, looked up first so that the room is known up front.
    let (comm_a, comm_b): (&[u8], &[u8]) = match r.event {
        Event::SchedSwitch { prev_pid, next_pid, .. } => {
            (names.comm(prev_pid, cpu).as_bytes(), names.comm(next_pid, cpu).as_bytes())
        }
        Event::SchedWaking { pid, .. }
        | Event::SchedWakeup { pid, .. }
        | Event::SchedWakeupNew { pid, .. }
        | Event::SchedMigrateTask { pid, .. }
        | Event::SchedProcessExit { pid, .. } => (names.comm(pid, cpu).as_bytes(), b""),
        Event::WorkqueueQueueWork { func, .. }
        | Event::WorkqueueExecuteStart { func, .. }
        | Event::WorkqueueExecuteEnd { func, .. }
        | Event::TimerExpireEntry { func, .. } => (names.func(func).as_bytes(), b""),
        _ => (b"", b""),
    };

    let start = out.len();
    out.resize(start + FIXED_MAX + task.len() + comm_a.len() + comm_b.len(), 0);
    let mut w = Cursor { buf: &mut out[start..], pos: 0 };
    w.context(r, task);
    match r.event {
        Event::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio } => {
            w.lit(b"sched_switch: prev_comm=");
            w.bytes(comm_a);
            w.lit(b" prev_pid=");
            w.dec(u64::from(prev_pid));
            w.lit(b" prev_prio=");
            w.dec_i(i64::from(prev_prio));
            w.lit(b" prev_state=");
            w.prev_state(prev_state);
            w.lit(b" ==> next_comm=");
            w.bytes(comm_b);
            w.lit(b" next_pid=");
            w.dec(u64::from(next_pid));
            w.lit(b" next_prio=");
            w.dec_i(i64::from(next_prio));
        }
        Event::SchedWaking { pid, prio, target_cpu } => {
            w.lit(b"sched_waking: ");
            w.wakeup(comm_a, pid, prio, target_cpu);
        }
        Event::SchedWakeup { pid, prio, target_cpu } => {
            w.lit(b"sched_wakeup: ");
            w.wakeup(comm_a, pid, prio, target_cpu);
        }
        Event::SchedWakeupNew { pid, prio, target_cpu } => {
            w.lit(b"sched_wakeup_new: ");
            w.wakeup(comm_a, pid, prio, target_cpu);
        }
        Event::SchedMigrateTask { pid, prio, orig_cpu, dest_cpu } => {
            w.lit(b"sched_migrate_task: comm=");
            w.bytes(comm_a);
            w.lit(b" pid=");
            w.dec(u64::from(pid));
            w.lit(b" prio=");
            w.dec_i(i64::from(prio));
            w.lit(b" orig_cpu=");
            w.dec(u64::from(orig_cpu));
            w.lit(b" dest_cpu=");
            w.dec(u64::from(dest_cpu));
        }
        Event::SchedProcessExit { pid, prio, group_dead } => {
            w.lit(b"sched_process_exit: comm=");
            w.bytes(comm_a);
            w.lit(b" pid=");
            w.dec(u64::from(pid));
            w.lit(b" prio=");
            w.dec_i(i64::from(prio));
            if group_dead {
                w.lit(b" group_dead=true");
            } else {
                w.lit(b" group_dead=false");
            }
        }
        Event::SchedWakeIdleWithoutIpi { cpu: target } => {
            w.lit(b"sched_wake_idle_without_ipi: cpu=");
            w.dec(u64::from(target));
        }
        Event::IpiSendCpu { cpu: target, callsite, callback } => {
            w.lit(b"ipi_send_cpu: cpu=");
            w.dec(u64::from(target));
            w.lit(b" callsite=");
            w.bytes(sym_with_offset(callsite).as_bytes());
            w.lit(b" callback=");
            w.bytes(sym_with_offset(callback).as_bytes());
        }
        Event::IpiSendCpumask { mask, callsite, callback } => {
            w.lit(b"ipi_send_cpumask: cpumask=");
            w.bytes(names.cpumask(mask).as_bytes());
            w.lit(b" callsite=");
            w.bytes(sym_with_offset(callsite).as_bytes());
            w.lit(b" callback=");
            w.bytes(sym_with_offset(callback).as_bytes());
        }
        Event::CsdQueueCpu { cpu: target, callsite, func, csd } => {
            w.lit(b"csd_queue_cpu: cpu=");
            w.dec(u64::from(target));
            w.lit(b" callsite=");
            w.bytes(sym_with_offset(callsite).as_bytes());
            w.lit(b" func=");
            w.bytes(sym_name(func).as_bytes());
            w.lit(b" csd=");
            w.hex16(csd);
        }
        Event::CsdFunctionEntry { func, csd } => {
            w.lit(b"csd_function_entry: func=");
            w.csd_function(func, csd);
        }
        Event::CsdFunctionExit { func, csd } => {
            w.lit(b"csd_function_exit: func=");
            w.csd_function(func, csd);
        }
        Event::CpuIdle { state, cpu_id } => {
            w.lit(b"cpu_idle: state=");
            w.dec(u64::from(state));
            w.lit(b" cpu_id=");
            w.dec(u64::from(cpu_id));
        }
        Event::VectorEntry { vector } => {
            w.bytes(vector_event_stem(vector));
            w.lit(b"_entry: vector=");
            w.dec(u64::from(vector.number()));
        }
        Event::VectorExit { vector } => {
            w.bytes(vector_event_stem(vector));
            w.lit(b"_exit: vector=");
            w.dec(u64::from(vector.number()));
        }
        Event::SoftirqRaise { vec } => {
            w.lit(b"softirq_raise: ");
            w.softirq(vec);
        }
        Event::SoftirqEntry { vec } => {
            w.lit(b"softirq_entry: ");
            w.softirq(vec);
        }
        Event::SoftirqExit { vec } => {
            w.lit(b"softirq_exit: ");
            w.softirq(vec);
        }
        Event::Warning { site } => {
            // Laid out like a `bputs` (trace_puts()) entry, whose print fmt is "%ps: %s": the
            // function name takes the place of the event name.
            let (func, text) = warning_text(site);
            w.bytes(func.as_bytes());
            w.lit(b": ");
            w.bytes(text.as_bytes());
        }
        Event::WorkqueueQueueWork { work, req_cpu, cpu: on, .. } => {
            w.lit(b"workqueue_queue_work: work struct=");
            w.hex16(work);
            w.lit(b" function=");
            w.bytes(comm_a);
            if req_cpu == crate::trace::WORK_CPU_UNBOUND {
                w.lit(b" workqueue=events_unbound req_cpu=");
            } else {
                w.lit(b" workqueue=events req_cpu=");
            }
            w.dec(u64::from(req_cpu));
            w.lit(b" cpu=");
            w.dec(u64::from(on));
        }
        Event::WorkqueueExecuteStart { work, .. } => {
            w.lit(b"workqueue_execute_start: work struct ");
            w.hex16(work);
            w.lit(b": function ");
            w.bytes(comm_a);
        }
        Event::WorkqueueExecuteEnd { work, .. } => {
            w.lit(b"workqueue_execute_end: work struct ");
            w.hex16(work);
            w.lit(b": function ");
            w.bytes(comm_a);
        }
        Event::TimerExpireEntry { timer, now, baseclk, .. } => {
            w.lit(b"timer_expire_entry: timer=");
            w.hex16(timer);
            w.lit(b" function=");
            w.bytes(comm_a);
            w.lit(b" now=");
            w.dec(now);
            w.lit(b" baseclk=");
            w.dec(baseclk);
        }
        Event::TimerExpireExit { timer } => {
            w.lit(b"timer_expire_exit: timer=");
            w.hex16(timer);
        }
    }
    w.byte(b'\n');
    let end = start + w.pos;
    out.truncate(end);
}

/// Header plus all records, written to `w` in chunks of about 64 KiB, then flushed.
pub fn write_trace<W: io::Write>(w: &mut W, records: &[Record], names: &dyn Names, nr_cpus: u32) -> io::Result<()> {
    let mut buf = Vec::with_capacity(CHUNK_BYTES + 4 * FIXED_MAX);
    write_header(&mut buf, records.len(), nr_cpus);
    for r in records {
        write_record(&mut buf, r, names);
        if buf.len() >= CHUNK_BYTES {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    w.write_all(&buf)?;
    w.flush()
}

/// `softirq_to_name[]`, indexed by softirq number.
const SOFTIRQ_NAMES: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

/// Event names of the x86 `irq_vectors` events without their `_entry`/`_exit` suffix.
#[inline]
fn vector_event_stem(v: Vector) -> &'static [u8] {
    match v {
        Vector::LocalTimer => b"local_timer",
        Vector::CallFunctionSingle => b"call_function_single",
        Vector::Reschedule => b"reschedule",
        Vector::CallFunction => b"call_function",
    }
}

/// The tracepoint name of a vector's `_entry` or `_exit` event.
pub fn vector_event_name(v: Vector, entry: bool) -> &'static str {
    match (v, entry) {
        (Vector::LocalTimer, true) => "local_timer_entry",
        (Vector::LocalTimer, false) => "local_timer_exit",
        (Vector::CallFunctionSingle, true) => "call_function_single_entry",
        (Vector::CallFunctionSingle, false) => "call_function_single_exit",
        (Vector::Reschedule, true) => "reschedule_entry",
        (Vector::Reschedule, false) => "reschedule_exit",
        (Vector::CallFunction, true) => "call_function_entry",
        (Vector::CallFunction, false) => "call_function_exit",
    }
}

/// A write position in a zero-filled region that was sized for the whole line up front, so
/// that every write is a short copy into a slice: no capacity checks, and fixed-size copies
/// where possible (padding is written first and then overwritten).
struct Cursor<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// `trace_print_context()`: `"%16s-%-7d [%03d] FFFFF %5lu.%06lu: "`.
    #[inline]
    fn context(&mut self, r: &Record, task: &[u8]) {
        self.rjust::<16>(task);
        self.byte(b'-');
        self.dec_ljust::<7>(u64::from(r.pid));
        self.lit(b" [");
        self.dec_zpad::<3>(u64::from(r.cpu));
        let f = FLAG_CHARS[usize::from(r.flags)];
        let pc = usize::from(r.preempt_count);
        self.lit(&[b']', b' ', f[0], f[1], f[2], HEX_OR_DOT[pc & 0xf], HEX_OR_DOT[pc >> 4], b' ']);
        // ns2usecs(): round to the nearest microsecond; written so that it cannot overflow.
        let us = r.ts_ns / 1000 + u64::from(r.ts_ns % 1000 >= 500);
        self.dec_rjust::<5>(us / 1_000_000);
        self.byte(b'.');
        self.dec6(us % 1_000_000);
        self.lit(b": ");
    }

    /// `comm=%s pid=%d prio=%d target_cpu=%03d` (sched_waking, sched_wakeup, sched_wakeup_new).
    #[inline]
    fn wakeup(&mut self, comm: &[u8], pid: u32, prio: i32, target_cpu: u32) {
        self.lit(b"comm=");
        self.bytes(comm);
        self.lit(b" pid=");
        self.dec(u64::from(pid));
        self.lit(b" prio=");
        self.dec_i(i64::from(prio));
        self.lit(b" target_cpu=");
        self.dec_zpad::<3>(u64::from(target_cpu));
    }

    /// The rest of `func=%ps, csd=%p` after `func=`.
    #[inline]
    fn csd_function(&mut self, func: Sym, csd: u64) {
        self.bytes(sym_name(func).as_bytes());
        self.lit(b", csd=");
        self.hex16(csd);
    }

    /// `vec=%u [action=%s]` with `__print_symbolic()`, which prints an unknown value as `0x%lx`.
    #[inline]
    fn softirq(&mut self, vec: u32) {
        self.lit(b"vec=");
        self.dec(u64::from(vec));
        self.lit(b" [action=");
        match SOFTIRQ_NAMES.get(vec as usize) {
            Some(name) => self.bytes(name.as_bytes()),
            None => self.hex(u64::from(vec)),
        }
        self.byte(b']');
    }

    /// `sched_switch`'s `prev_state=%s%s`: `__print_flags(state & 0xff, "|", S D T t X Z P I)`,
    /// or `R` when none of those bits is set, then `+` when bit 0x100 (TASK_REPORT_MAX, i.e.
    /// preempted) is set.
    #[inline]
    fn prev_state(&mut self, state: u32) {
        const LETTERS: &[u8; 8] = b"SDTtXZPI";
        let bits = state & 0xff;
        match bits {
            0 => self.byte(b'R'),
            0x01 => self.byte(b'S'),
            0x02 => self.byte(b'D'),
            0x80 => self.byte(b'I'),
            _ => {
                let mut first = true;
                for (i, &letter) in LETTERS.iter().enumerate() {
                    if bits & (1 << i) != 0 {
                        if !first {
                            self.byte(b'|');
                        }
                        self.byte(letter);
                        first = false;
                    }
                }
            }
        }
        if state & 0x100 != 0 {
            self.byte(b'+');
        }
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    /// A fixed-size copy.
    #[inline(always)]
    fn lit<const N: usize>(&mut self, s: &[u8; N]) {
        self.buf[self.pos..self.pos + N].copy_from_slice(s);
        self.pos += N;
    }

    /// A variable-length copy; strings of up to 16 bytes avoid a `memcpy` call.
    #[inline(always)]
    fn bytes(&mut self, s: &[u8]) {
        let end = self.pos + s.len();
        copy_short(&mut self.buf[self.pos..end], s);
        self.pos = end;
    }

    /// `%<W>s`: right-aligned, never truncated.
    #[inline(always)]
    fn rjust<const W: usize>(&mut self, s: &[u8]) {
        if s.len() >= W {
            self.bytes(s);
        } else {
            self.lit(&[b' '; W]);
            copy_short(&mut self.buf[self.pos - s.len()..self.pos], s);
        }
    }

    /// `%u`/`%lu`.
    #[inline(always)]
    fn dec(&mut self, n: u64) {
        let end = self.pos + dec_len(n);
        dec_into(&mut self.buf[self.pos..end], n);
        self.pos = end;
    }

    /// `%d`.
    #[inline]
    fn dec_i(&mut self, n: i64) {
        if n < 0 {
            self.byte(b'-');
        }
        self.dec(n.unsigned_abs());
    }

    /// `%0<W>u`.
    #[inline(always)]
    fn dec_zpad<const W: usize>(&mut self, n: u64) {
        self.buf[self.pos..self.pos + W].copy_from_slice(&[b'0'; W]);
        let end = self.pos + dec_len(n).max(W);
        dec_into(&mut self.buf[self.pos..end], n);
        self.pos = end;
    }

    /// `%<W>u`.
    #[inline(always)]
    fn dec_rjust<const W: usize>(&mut self, n: u64) {
        let len = dec_len(n);
        self.buf[self.pos..self.pos + W].copy_from_slice(&[b' '; W]);
        let end = self.pos + len.max(W);
        dec_into(&mut self.buf[end - len..end], n);
        self.pos = end;
    }

    /// `%-<W>u`.
    #[inline(always)]
    fn dec_ljust<const W: usize>(&mut self, n: u64) {
        let len = dec_len(n);
        self.buf[self.pos..self.pos + W].copy_from_slice(&[b' '; W]);
        dec_into(&mut self.buf[self.pos..self.pos + len], n);
        self.pos += len.max(W);
    }

    /// `%06lu` of a value below 1_000_000.
    #[inline(always)]
    fn dec6(&mut self, n: u64) {
        debug_assert!(n < 1_000_000);
        let (hi, lo) = ((n / 10_000) as usize * 2, (n / 100 % 100) as usize * 2);
        let last = (n % 100) as usize * 2;
        self.lit(&[
            DEC_PAIRS[hi],
            DEC_PAIRS[hi + 1],
            DEC_PAIRS[lo],
            DEC_PAIRS[lo + 1],
            DEC_PAIRS[last],
            DEC_PAIRS[last + 1],
        ]);
    }

    /// `%016lx`: what `%p` prints for a hashed pointer on 64-bit.
    #[inline]
    fn hex16(&mut self, n: u64) {
        let mut d = [0u8; 16];
        for (i, b) in d.iter_mut().enumerate() {
            *b = HEX_DIGITS[((n >> (60 - 4 * i)) & 0xf) as usize];
        }
        self.lit(&d);
    }

    /// `0x%lx`.
    fn hex(&mut self, n: u64) {
        self.lit(b"0x");
        let len = (64 - n.leading_zeros() as usize).div_ceil(4).max(1);
        for i in 0..len {
            self.byte(HEX_DIGITS[((n >> (4 * (len - 1 - i))) & 0xf) as usize]);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Flags column (trace_print_lat_fmt)
// ------------------------------------------------------------------------------------------------

/// The first three flag characters for every `common_flags` byte.
static FLAG_CHARS: [[u8; 3]; 256] = build_flag_chars();

/// Preempt depth and migrate-disable columns: a hex digit, or `.` for 0.
const HEX_OR_DOT: &[u8; 16] = b".123456789abcdef";

const fn flag_chars(f: u8) -> [u8; 3] {
    let irqs_off = f & flags::IRQS_OFF != 0;
    let bh_off = f & flags::BH_OFF != 0;
    let c1 = if irqs_off && bh_off {
        b'D'
    } else if irqs_off {
        b'd'
    } else if bh_off {
        b'b'
    } else {
        b'.'
    };

    const NR: u8 = flags::NEED_RESCHED;
    const LAZY: u8 = flags::NEED_RESCHED_LAZY;
    const PR: u8 = flags::PREEMPT_RESCHED;
    let c2 = match f & (NR | LAZY | PR) {
        x if x == NR | LAZY | PR => b'B',
        x if x == NR | PR => b'N',
        x if x == LAZY | PR => b'L',
        x if x == NR | LAZY => b'b',
        NR => b'n',
        PR => b'p',
        LAZY => b'l',
        _ => b'.',
    };

    let nmi = f & flags::NMI != 0;
    let hardirq = f & flags::HARDIRQ != 0;
    let softirq = f & flags::SOFTIRQ != 0;
    let c3 = if nmi && hardirq {
        b'Z'
    } else if nmi {
        b'z'
    } else if hardirq && softirq {
        b'H'
    } else if hardirq {
        b'h'
    } else if softirq {
        b's'
    } else {
        b'.'
    };
    [c1, c2, c3]
}

const fn build_flag_chars() -> [[u8; 3]; 256] {
    let mut t = [[0u8; 3]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = flag_chars(i as u8);
        i += 1;
    }
    t
}

// ------------------------------------------------------------------------------------------------
// Symbols (%pS / %ps)
// ------------------------------------------------------------------------------------------------

/// `%ps`: the bare symbol name; a NULL pointer prints as `0x0`.
pub fn sym_name(s: Sym) -> &'static str {
    SYMS[sym_index(s)].name
}

/// `%pS`: `sym+0xOFF/0xSIZE` (the form tracefs prints); a NULL pointer prints as `0x0`.
pub fn sym_with_offset(s: Sym) -> &'static str {
    SYMS[sym_index(s)].with_offset
}

#[cfg_attr(not(test), allow(dead_code))] // offset/size/sym: checked by tests
struct SymInfo {
    sym: Sym,
    name: &'static str,
    offset: u32,
    size: u32,
    /// `name+0x{offset:x}/0x{size:x}`, spelled out so formatting is a copy (a test checks it).
    with_offset: &'static str,
}

/// One row per [`Sym`], in declaration order.
///
/// Offsets and sizes taken from the real 6.18.44 capture (`shared/data/real-trace-*.txt`):
/// `ttwu_queue_wakelist+0x11d/0x150`, `wakeup_preempt+0x92/0xa0`,
/// `generic_smp_call_function_single_interrupt+0x0/0x10`, `sched_ttwu_pending` (`%ps`, so its
/// size is not in the data).
///
/// All other offsets and sizes (and the size of `sched_ttwu_pending`) are NOT taken from a real
/// vmlinux: they are plausible stand-ins. Symbols that appear as function pointers (callbacks,
/// csd funcs) have offset 0; symbols that appear as call sites have a return-address offset
/// inside the function.
const SYMS: [SymInfo; 15] = [
    SymInfo { sym: Sym::Null, name: "0x0", offset: 0, size: 0, with_offset: "0x0" },
    SymInfo {
        sym: Sym::GenericSmpCallFunctionSingleInterrupt,
        name: "generic_smp_call_function_single_interrupt",
        offset: 0x0,
        size: 0x10,
        with_offset: "generic_smp_call_function_single_interrupt+0x0/0x10",
    },
    SymInfo {
        sym: Sym::TtwuQueueWakelist,
        name: "ttwu_queue_wakelist",
        offset: 0x11d,
        size: 0x150,
        with_offset: "ttwu_queue_wakelist+0x11d/0x150",
    },
    SymInfo {
        sym: Sym::WakeupPreempt,
        name: "wakeup_preempt",
        offset: 0x92,
        size: 0xa0,
        with_offset: "wakeup_preempt+0x92/0xa0",
    },
    SymInfo {
        sym: Sym::ReschedCurr,
        name: "resched_curr",
        offset: 0x5f,
        size: 0xd0,
        with_offset: "resched_curr+0x5f/0xd0",
    },
    SymInfo {
        sym: Sym::SmpCallFunctionSingle,
        name: "smp_call_function_single",
        offset: 0xf1,
        size: 0x190,
        with_offset: "smp_call_function_single+0xf1/0x190",
    },
    SymInfo {
        sym: Sym::SmpCallFunctionSingleAsync,
        name: "smp_call_function_single_async",
        offset: 0x1f,
        size: 0x40,
        with_offset: "smp_call_function_single_async+0x1f/0x40",
    },
    SymInfo {
        sym: Sym::GenericExecSingle,
        name: "generic_exec_single",
        offset: 0x3a,
        size: 0x110,
        with_offset: "generic_exec_single+0x3a/0x110",
    },
    SymInfo { sym: Sym::KickIlb, name: "kick_ilb", offset: 0x6e, size: 0xa0, with_offset: "kick_ilb+0x6e/0xa0" },
    SymInfo {
        sym: Sym::DoNothingIpi,
        name: "do_nothing_ipi",
        offset: 0x0,
        size: 0x10,
        with_offset: "do_nothing_ipi+0x0/0x10",
    },
    SymInfo {
        sym: Sym::SchedTtwuPending,
        name: "sched_ttwu_pending",
        offset: 0x0,
        size: 0x1a0,
        with_offset: "sched_ttwu_pending+0x0/0x1a0",
    },
    SymInfo {
        sym: Sym::NohzCsdFunc,
        name: "nohz_csd_func",
        offset: 0x0,
        size: 0x90,
        with_offset: "nohz_csd_func+0x0/0x90",
    },
    SymInfo {
        sym: Sym::SmpCallFunctionManyCond,
        name: "smp_call_function_many_cond",
        offset: 0x1f5,
        size: 0x4c0,
        with_offset: "smp_call_function_many_cond+0x1f5/0x4c0",
    },
    SymInfo {
        sym: Sym::IrqWorkQueueOn,
        name: "irq_work_queue_on",
        offset: 0x6b,
        size: 0xf0,
        with_offset: "irq_work_queue_on+0x6b/0xf0",
    },
    SymInfo {
        sym: Sym::RtoPushIrqWorkFunc,
        name: "rto_push_irq_work_func",
        offset: 0x0,
        size: 0x120,
        with_offset: "rto_push_irq_work_func+0x0/0x120",
    },
];

/// Every symbol's `%ps` name and the offset its `%pS` form prints, in [`sym_index`] order
/// (for writers that store addresses and ship their own symbol table).
pub fn sym_table() -> impl Iterator<Item = (&'static str, u32)> {
    SYMS.iter().map(|i| (i.name, i.offset))
}

/// The position of `s` in [`sym_table`].
#[inline]
pub const fn sym_index(s: Sym) -> usize {
    match s {
        Sym::Null => 0,
        Sym::GenericSmpCallFunctionSingleInterrupt => 1,
        Sym::TtwuQueueWakelist => 2,
        Sym::WakeupPreempt => 3,
        Sym::ReschedCurr => 4,
        Sym::SmpCallFunctionSingle => 5,
        Sym::SmpCallFunctionSingleAsync => 6,
        Sym::GenericExecSingle => 7,
        Sym::KickIlb => 8,
        Sym::DoNothingIpi => 9,
        Sym::SchedTtwuPending => 10,
        Sym::NohzCsdFunc => 11,
        Sym::SmpCallFunctionManyCond => 12,
        Sym::IrqWorkQueueOn => 13,
        Sym::RtoPushIrqWorkFunc => 14,
    }
}

// ------------------------------------------------------------------------------------------------
// Warnings
// ------------------------------------------------------------------------------------------------

/// The function and text of a modelled warning, rendered as `<function>: <text>`.
///
/// The kernel prints a WARN to the console, not into the trace buffer; the simulator puts it in
/// the trace (as if by `trace_puts()`) so that it stands out at the right place. The text is the
/// warning's condition as written in the source:
/// - `do_softirq_post_smp_call_flush` (kernel/softirq.c, PREEMPT_RT): the v6.10 condition. After
///   6675ce20046d (v6.13) the kernel checks `was_pending != (is_pending & ~SCHED_SOFTIRQ_MASK)`
///   instead; the model emits this warning for the check it evaluates, and the text names the
///   original form.
/// - `nohz_csd_func` (kernel/sched/core.c): a kick without any `NOHZ_KICK_MASK` bit. The kernel
///   uses a plain `WARN_ON()` there.
pub fn warning_text(site: WarnSite) -> (&'static str, &'static str) {
    match site {
        WarnSite::DoSoftirqPostSmpCallFlush => {
            ("do_softirq_post_smp_call_flush", "WARN_ON_ONCE(was_pending != local_softirq_pending())")
        }
        WarnSite::NohzCsdFuncNoKick => ("nohz_csd_func", "WARN_ON(!(flags & NOHZ_KICK_MASK))"),
    }
}

// ------------------------------------------------------------------------------------------------
// Integer and string helpers
// ------------------------------------------------------------------------------------------------

/// "00" "01" ... "99".
const DEC_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Number of decimal digits of `n`.
#[inline(always)]
fn dec_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Write `n` in decimal, right-aligned in `dst` (whose length is at least `dec_len(n)`).
#[inline(always)]
fn dec_into(dst: &mut [u8], mut n: u64) {
    let mut i = dst.len();
    while n >= 100 {
        let d = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        dst[i] = DEC_PAIRS[d];
        dst[i + 1] = DEC_PAIRS[d + 1];
    }
    if n >= 10 {
        let d = n as usize * 2;
        dst[i - 2] = DEC_PAIRS[d];
        dst[i - 1] = DEC_PAIRS[d + 1];
    } else {
        dst[i - 1] = b'0' + n as u8;
    }
}

/// `dst.copy_from_slice(src)` without a `memcpy` call for up to 16 bytes: two overlapping
/// fixed-size copies cover any length between the size and twice the size.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n > 16 {
        dst.copy_from_slice(src);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..n].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..n].copy_from_slice(&src[n - 4..]);
    } else if n > 0 {
        // 1 to 3 bytes: first, middle and last (overlapping).
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
    }
}

/// Append `n` in decimal to `out` (for the header, which is not performance critical).
fn push_dec(out: &mut Vec<u8>, n: u64) {
    let start = out.len();
    let len = dec_len(n);
    out.resize(start + len, 0);
    dec_into(&mut out[start..], n);
}

// ------------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;

    /// `cat /sys/kernel/tracing/trace` on 6.18.44: header plus 324 contiguous lines.
    const REAL_SAMPLE: &str = include_str!("../../tests/fixtures/real-trace-sample.txt");
    /// Rarer lines from the same capture (not contiguous), after a `#` comment line.
    const REAL_EXTRAS: &str = include_str!("../../tests/fixtures/real-trace-extras.txt");

    // --------------------------------------------------------------------------------------------
    // A test-only parser: one ftrace line back into a Record.
    // --------------------------------------------------------------------------------------------

    /// Names as seen in one real line: the TASK column (comm at print time) plus the comms
    /// recorded inside the event.
    #[derive(Debug, Default)]
    struct LineNames {
        map: BTreeMap<u32, String>,
    }

    impl LineNames {
        /// Returns false if the pid is already known under a different comm.
        fn add(&mut self, pid: u32, comm: &str) -> bool {
            match self.map.get(&pid) {
                Some(c) => c == comm,
                None => {
                    self.map.insert(pid, comm.to_string());
                    true
                }
            }
        }
    }

    impl Names for LineNames {
        fn comm(&self, pid: u32, _cpu: u32) -> &str {
            self.map.get(&pid).map_or("<...>", String::as_str)
        }
    }

    /// Why a real line was not turned into a Record.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Skip {
        /// An event the model does not emit (tracing_mark_write, irq_handler_*).
        Unsupported,
        /// A `%pS` whose offset differs from the one fixed per [`Sym`]
        /// (e.g. `wakeup_preempt+0x55/0xa0`, the other resched_curr inlining site).
        SymOffset,
        /// The same pid with two comms in one line: the task exec'ed between the event and the
        /// `cat` (e.g. `taskset-4695 ... prev_comm=capture.sh prev_pid=4695`). A `Names` keyed
        /// by pid cannot express that.
        CommChanged,
    }

    fn parse_flags(f: &[u8]) -> (u8, u8) {
        assert_eq!(f.len(), 5, "flags {f:?}");
        use flags::*;
        let mut fl = match f[0] {
            b'D' => IRQS_OFF | BH_OFF,
            b'd' => IRQS_OFF,
            b'b' => BH_OFF,
            b'.' => 0,
            c => panic!("col1 {}", c as char),
        };
        fl |= match f[1] {
            b'B' => NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED,
            b'N' => NEED_RESCHED | PREEMPT_RESCHED,
            b'L' => NEED_RESCHED_LAZY | PREEMPT_RESCHED,
            b'b' => NEED_RESCHED | NEED_RESCHED_LAZY,
            b'n' => NEED_RESCHED,
            b'p' => PREEMPT_RESCHED,
            b'l' => NEED_RESCHED_LAZY,
            b'.' => 0,
            c => panic!("col2 {}", c as char),
        };
        fl |= match f[2] {
            b'Z' => NMI | HARDIRQ,
            b'z' => NMI,
            b'H' => HARDIRQ | SOFTIRQ,
            b'h' => HARDIRQ,
            b's' => SOFTIRQ,
            b'.' => 0,
            c => panic!("col3 {}", c as char),
        };
        let nib = |c: u8| -> u8 {
            if c == b'.' {
                0
            } else {
                u8::from_str_radix(std::str::from_utf8(&[c]).unwrap(), 16).unwrap()
            }
        };
        (fl, nib(f[3]) | (nib(f[4]) << 4))
    }

    fn parse_sym_with_offset(s: &str) -> Result<Sym, Skip> {
        if let Some(info) = SYMS.iter().find(|i| i.with_offset == s) {
            return Ok(info.sym);
        }
        let name = s.split('+').next().unwrap();
        assert!(SYMS.iter().any(|i| i.name == name), "unknown symbol {s}");
        Err(Skip::SymOffset)
    }

    fn parse_sym_name(s: &str) -> Sym {
        SYMS.iter().find(|i| i.name == s).unwrap_or_else(|| panic!("unknown symbol {s}")).sym
    }

    fn parse_state(s: &str) -> u32 {
        let (letters, plus) = match s.strip_suffix('+') {
            Some(l) => (l, 0x100),
            None => (s, 0),
        };
        if letters == "R" {
            return plus;
        }
        letters.split('|').map(|l| 1u32 << b"SDTtXZPI".iter().position(|&c| [c] == l.as_bytes()).unwrap()).sum::<u32>()
            | plus
    }

    /// Parse one line of `trace` output. Panics on anything malformed, so that a format the
    /// parser does not understand cannot silently pass.
    fn parse_line(line: &str) -> Result<(Record, LineNames), Skip> {
        let bracket = line.find(" [").expect("no cpu column");
        let (task, pid) = line[..bracket].trim().rsplit_once('-').expect("no TASK-PID");
        let pid: u32 = pid.parse().unwrap();
        let rest = &line[bracket + 2..];
        let cpu: u32 = rest[..3].parse().unwrap();
        assert_eq!(&rest[3..5], "] ");
        let (flags, preempt_count) = parse_flags(&rest.as_bytes()[5..10]);
        let rest = &rest[10..];
        let (ts, rest) = rest.split_once(": ").unwrap();
        let (secs, usecs) = ts.trim_start().split_once('.').unwrap();
        assert_eq!(usecs.len(), 6);
        let us = secs.parse::<u64>().unwrap() * 1_000_000 + usecs.parse::<u64>().unwrap();
        let (name, body) = rest.split_once(": ").unwrap();

        let mut names = LineNames::default();
        if pid == 0 {
            assert_eq!(task, "<idle>");
        } else {
            names.add(pid, task);
        }

        // key=value pairs; "==>" and the "[action=..]" decoration are re-derived by the
        // formatter and checked by the byte comparison.
        let kv: BTreeMap<&str, &str> =
            body.split(' ').filter_map(|t| t.split_once('=')).map(|(k, v)| (k, v.trim_end_matches(','))).collect();
        let num = |k: &str| -> u64 { kv[k].parse().unwrap_or_else(|_| panic!("{k} in {line}")) };
        let int = |k: &str| -> i32 { kv[k].parse().unwrap_or_else(|_| panic!("{k} in {line}")) };
        let hex = |k: &str| -> u64 { u64::from_str_radix(kv[k], 16).unwrap() };
        let mut comm_ok = true;
        let mut add = |pid_key: &str, comm_key: &str| {
            comm_ok &= names.add(kv[pid_key].parse().unwrap(), kv[comm_key]);
        };

        let event = match name {
            "sched_switch" => {
                add("prev_pid", "prev_comm");
                add("next_pid", "next_comm");
                Event::SchedSwitch {
                    prev_pid: num("prev_pid") as u32,
                    prev_prio: int("prev_prio"),
                    prev_state: parse_state(kv["prev_state"]),
                    next_pid: num("next_pid") as u32,
                    next_prio: int("next_prio"),
                }
            }
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
                add("pid", "comm");
                let (pid, prio, target_cpu) = (num("pid") as u32, int("prio"), num("target_cpu") as u32);
                match name {
                    "sched_waking" => Event::SchedWaking { pid, prio, target_cpu },
                    "sched_wakeup" => Event::SchedWakeup { pid, prio, target_cpu },
                    _ => Event::SchedWakeupNew { pid, prio, target_cpu },
                }
            }
            "sched_migrate_task" => {
                add("pid", "comm");
                Event::SchedMigrateTask {
                    pid: num("pid") as u32,
                    prio: int("prio"),
                    orig_cpu: num("orig_cpu") as u32,
                    dest_cpu: num("dest_cpu") as u32,
                }
            }
            "sched_wake_idle_without_ipi" => Event::SchedWakeIdleWithoutIpi { cpu: num("cpu") as u32 },
            "ipi_send_cpu" => Event::IpiSendCpu {
                cpu: num("cpu") as u32,
                callsite: parse_sym_with_offset(kv["callsite"])?,
                callback: parse_sym_with_offset(kv["callback"])?,
            },
            "csd_queue_cpu" => Event::CsdQueueCpu {
                cpu: num("cpu") as u32,
                callsite: parse_sym_with_offset(kv["callsite"])?,
                func: parse_sym_name(kv["func"]),
                csd: hex("csd"),
            },
            "csd_function_entry" => Event::CsdFunctionEntry { func: parse_sym_name(kv["func"]), csd: hex("csd") },
            "csd_function_exit" => Event::CsdFunctionExit { func: parse_sym_name(kv["func"]), csd: hex("csd") },
            "cpu_idle" => Event::CpuIdle { state: num("state") as u32, cpu_id: num("cpu_id") as u32 },
            "softirq_raise" => Event::SoftirqRaise { vec: num("vec") as u32 },
            "softirq_entry" => Event::SoftirqEntry { vec: num("vec") as u32 },
            "softirq_exit" => Event::SoftirqExit { vec: num("vec") as u32 },
            _ => {
                let vector = |stem: &str| -> Option<Vector> {
                    Some(match stem {
                        "local_timer" => Vector::LocalTimer,
                        "call_function_single" => Vector::CallFunctionSingle,
                        "reschedule" => Vector::Reschedule,
                        _ => return None,
                    })
                };
                let ev = if let Some(v) = name.strip_suffix("_entry").and_then(vector) {
                    Event::VectorEntry { vector: v }
                } else if let Some(v) = name.strip_suffix("_exit").and_then(vector) {
                    Event::VectorExit { vector: v }
                } else {
                    assert!(
                        matches!(name, "tracing_mark_write" | "irq_handler_entry" | "irq_handler_exit"),
                        "unexpected event {name}"
                    );
                    return Err(Skip::Unsupported);
                };
                if let Event::VectorEntry { vector: v } | Event::VectorExit { vector: v } = ev {
                    assert_eq!(num("vector"), u64::from(v.number()));
                }
                ev
            }
        };
        if !comm_ok {
            return Err(Skip::CommChanged);
        }
        let r = Record { ts_ns: us * 1000, cpu, pid, flags, preempt_count, event };
        Ok((r, names))
    }

    fn data_lines(text: &str) -> impl Iterator<Item = &str> {
        text.lines().filter(|l| !l.starts_with('#') && !l.is_empty())
    }

    fn kind(e: &Event) -> &'static str {
        match e {
            Event::SchedSwitch { .. } => "sched_switch",
            Event::SchedWaking { .. } => "sched_waking",
            Event::SchedWakeup { .. } => "sched_wakeup",
            Event::SchedWakeupNew { .. } => "sched_wakeup_new",
            Event::SchedMigrateTask { .. } => "sched_migrate_task",
            Event::SchedWakeIdleWithoutIpi { .. } => "sched_wake_idle_without_ipi",
            Event::IpiSendCpu { .. } => "ipi_send_cpu",
            Event::CsdQueueCpu { .. } => "csd_queue_cpu",
            Event::CsdFunctionEntry { .. } => "csd_function_entry",
            Event::CsdFunctionExit { .. } => "csd_function_exit",
            Event::CpuIdle { .. } => "cpu_idle",
            Event::VectorEntry { vector: Vector::LocalTimer } => "local_timer_entry",
            Event::VectorExit { vector: Vector::LocalTimer } => "local_timer_exit",
            Event::VectorEntry { vector: Vector::Reschedule } => "reschedule_entry",
            Event::VectorExit { vector: Vector::Reschedule } => "reschedule_exit",
            Event::VectorEntry { vector: Vector::CallFunctionSingle } => "call_function_single_entry",
            Event::VectorExit { vector: Vector::CallFunctionSingle } => "call_function_single_exit",
            Event::VectorEntry { vector: Vector::CallFunction } => "call_function_entry",
            Event::VectorExit { vector: Vector::CallFunction } => "call_function_exit",
            Event::IpiSendCpumask { .. } => "ipi_send_cpumask",
            Event::SoftirqRaise { .. } => "softirq_raise",
            Event::SoftirqEntry { .. } => "softirq_entry",
            Event::SoftirqExit { .. } => "softirq_exit",
            Event::Warning { .. } => "warning",
            Event::SchedProcessExit { .. } => "sched_process_exit",
            Event::WorkqueueQueueWork { .. } => "workqueue_queue_work",
            Event::WorkqueueExecuteStart { .. } => "workqueue_execute_start",
            Event::WorkqueueExecuteEnd { .. } => "workqueue_execute_end",
            Event::TimerExpireEntry { .. } => "timer_expire_entry",
            Event::TimerExpireExit { .. } => "timer_expire_exit",
        }
    }

    fn render(r: &Record, names: &dyn Names) -> String {
        let mut out = Vec::new();
        write_record(&mut out, r, names);
        String::from_utf8(out).unwrap()
    }

    // --------------------------------------------------------------------------------------------
    // Real-data round trips
    // --------------------------------------------------------------------------------------------

    /// Every real line of a supported event, parsed into a Record and formatted again, must be
    /// byte-identical to the original. Also checks that the data covers what it should.
    #[test]
    fn real_lines_round_trip_byte_identical() {
        let mut checked = 0;
        let mut skips: BTreeMap<Skip, usize> = BTreeMap::new();
        let mut kinds = BTreeSet::new();
        let mut flag_strs = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for line in data_lines(REAL_SAMPLE).chain(data_lines(REAL_EXTRAS)) {
            let (r, names) = match parse_line(line) {
                Ok(x) => x,
                Err(s) => {
                    *skips.entry(s).or_default() += 1;
                    continue;
                }
            };
            let got = render(&r, &names);
            assert_eq!(got, format!("{line}\n"), "record {r:?}");
            checked += 1;
            kinds.insert(kind(&r.event));
            let fl = &line[line.find(" [").unwrap() + 7..][..5];
            flag_strs.insert(fl.to_string());
            match r.event {
                Event::SchedSwitch { prev_state, .. } => {
                    seen.insert(format!("prev_state={prev_state:#x}"));
                }
                Event::IpiSendCpu { callback, .. } => {
                    seen.insert(format!("callback={}", sym_name(callback)));
                }
                Event::CpuIdle { state, .. } => {
                    seen.insert(format!("idle={state}"));
                }
                _ => {}
            }
        }

        // 324 sample lines + 26 extras.
        assert_eq!(checked + skips.values().sum::<usize>(), 324 + 26);
        // tracing_mark_write (1) and irq_handler_entry/exit (7).
        assert_eq!(skips.get(&Skip::Unsupported), Some(&8));
        // The two `wakeup_preempt+0x55/0xa0` IPIs of the extras.
        assert_eq!(skips.get(&Skip::SymOffset), Some(&2));
        // taskset-4695 prev_comm=capture.sh and pong-4696 prev_comm=pingpong.
        assert_eq!(skips.get(&Skip::CommChanged), Some(&2));
        assert_eq!(checked, 338);

        for k in [
            "sched_switch",
            "sched_waking",
            "sched_wakeup",
            "sched_wakeup_new",
            "sched_migrate_task",
            "sched_wake_idle_without_ipi",
            "ipi_send_cpu",
            "csd_queue_cpu",
            "csd_function_entry",
            "csd_function_exit",
            "cpu_idle",
            "local_timer_entry",
            "local_timer_exit",
            "reschedule_entry",
            "reschedule_exit",
            "call_function_single_entry",
            "call_function_single_exit",
            "softirq_raise",
            "softirq_entry",
            "softirq_exit",
        ] {
            assert!(kinds.contains(k), "no {k} line was checked");
        }
        for f in ["dNh..", "dnh..", ".Ns1.", "d.h1.", "dNs4.", "dnH1.", "dNH1.", "d.h21", "..s.."] {
            assert!(flag_strs.contains(f), "no {f} line was checked");
        }
        for s in [
            "prev_state=0x0",   // R
            "prev_state=0x100", // R+
            "prev_state=0x1",   // S
            "prev_state=0x2",   // D
            "prev_state=0x20",  // Z
            "prev_state=0x80",  // I
            "callback=0x0",
            "callback=generic_smp_call_function_single_interrupt",
            "idle=1",
            "idle=4294967295",
        ] {
            assert!(seen.contains(s), "no {s} line was checked");
        }
    }

    /// The header must match the first 12 lines of the real capture.
    #[test]
    fn header_matches_real_capture() {
        let want: String = REAL_SAMPLE.lines().take(12).map(|l| format!("{l}\n")).collect();
        let mut out = Vec::new();
        write_header(&mut out, 56009, 2);
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    /// `write_trace` = header + every line, across several chunk boundaries.
    #[test]
    fn write_trace_equals_header_plus_lines() {
        let parsed: Vec<_> = data_lines(REAL_SAMPLE).filter_map(|l| parse_line(l).ok().map(|(r, _)| r)).collect();
        let records: Vec<Record> = parsed.iter().cycle().take(5000).copied().collect();
        let names = TestNames::new(4);
        let mut got = Vec::new();
        write_trace(&mut got, &records, &names, 4).unwrap();
        assert!(got.len() > 3 * CHUNK_BYTES);
        let mut want = Vec::new();
        write_header(&mut want, 5000, 4);
        for r in &records {
            write_record(&mut want, r, &names);
        }
        assert_eq!(got, want);
        assert!(got.starts_with(b"# tracer: nop\n#\n# entries-in-buffer/entries-written: 5000/5000   #P:4\n"));
        assert_eq!(got.iter().filter(|&&b| b == b'\n').count(), 12 + 5000);
    }

    // --------------------------------------------------------------------------------------------
    // Synthetic cases the real data does not cover
    // --------------------------------------------------------------------------------------------

    /// A fixed pid -> comm table with per-CPU `swapper/N`.
    struct TestNames {
        swappers: Vec<String>,
        comms: BTreeMap<u32, String>,
    }

    impl TestNames {
        fn new(nr_cpus: u32) -> Self {
            let comms = [
                (15, "rcu_preempt"),
                (41, "kworker/1:1"),
                (70, "tokio-rt-worker"),
                (2223, "memfd:sealed-91"),
                (4476, "pip"),
                (4692, "ping"),
                (4693, "capture.sh"),
                (4696, "pong"),
                (4697, "python3"),
                (4698, "sleep"),
                (4699, "taskset"),
            ];
            TestNames {
                swappers: (0..nr_cpus).map(|c| format!("swapper/{c}")).collect(),
                comms: comms.iter().map(|&(p, c)| (p, c.to_string())).collect(),
            }
        }
    }

    impl Names for TestNames {
        fn comm(&self, pid: u32, cpu: u32) -> &str {
            if pid == 0 {
                return &self.swappers[cpu as usize];
            }
            self.comms.get(&pid).map_or("<...>", String::as_str)
        }
    }

    fn rec(ts_ns: u64, cpu: u32, pid: u32, flags: u8, pc: u8, event: Event) -> Record {
        Record { ts_ns, cpu, pid, flags, preempt_count: pc, event }
    }

    #[test]
    fn flag_column_all_combinations() {
        use flags::*;
        let col = |f: u8, pc: u8| -> String {
            let r = rec(0, 0, 0, f, pc, Event::CpuIdle { state: 1, cpu_id: 0 });
            let s = render(&r, &TestNames::new(1));
            s[s.find(" [").unwrap() + 7..][..5].to_string()
        };
        assert_eq!(col(0, 0), ".....");
        assert_eq!(col(IRQS_OFF | BH_OFF, 0), "D....");
        assert_eq!(col(BH_OFF, 0), "b....");
        assert_eq!(col(IRQS_OFF, 0), "d....");
        assert_eq!(col(NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED, 0), ".B...");
        assert_eq!(col(NEED_RESCHED | PREEMPT_RESCHED, 0), ".N...");
        assert_eq!(col(NEED_RESCHED_LAZY | PREEMPT_RESCHED, 0), ".L...");
        assert_eq!(col(NEED_RESCHED | NEED_RESCHED_LAZY, 0), ".b...");
        assert_eq!(col(NEED_RESCHED, 0), ".n...");
        assert_eq!(col(PREEMPT_RESCHED, 0), ".p...");
        assert_eq!(col(NEED_RESCHED_LAZY, 0), ".l...");
        assert_eq!(col(NMI | HARDIRQ | SOFTIRQ, 0), "..Z..");
        assert_eq!(col(NMI, 0), "..z..");
        assert_eq!(col(HARDIRQ | SOFTIRQ, 0), "..H..");
        assert_eq!(col(HARDIRQ, 0), "..h..");
        assert_eq!(col(SOFTIRQ, 0), "..s..");
        assert_eq!(col(0, 0x0f), "...f.");
        assert_eq!(col(0, 0xa0), "....a");
        assert_eq!(col(0, 0x21), "...12");
        assert_eq!(col(0xff, 0xff), "DBZff");
    }

    #[test]
    fn timestamp_rounds_to_nearest_microsecond_like_ns2usecs() {
        let ts = |ns: u64| -> String {
            let r = rec(ns, 0, 0, 0, 0, Event::CpuIdle { state: 1, cpu_id: 0 });
            let s = render(&r, &TestNames::new(1));
            s[s.find(" [").unwrap() + 13..s.find(": ").unwrap()].to_string()
        };
        // The field is " %5lu.%06lu"; the slice starts after the separating space.
        assert_eq!(ts(0), "    0.000000");
        assert_eq!(ts(499), "    0.000000");
        assert_eq!(ts(500), "    0.000001");
        assert_eq!(ts(1_499), "    0.000001");
        assert_eq!(ts(1_500), "    0.000002");
        assert_eq!(ts(999_999_500), "    1.000000");
        assert_eq!(ts(339_241_647_000), "  339.241647");
        assert_eq!(ts(339_241_647_499), "  339.241647");
        assert_eq!(ts(123_456_789_012_345), "123456.789012");
        assert_eq!(ts(u64::MAX), "18446744073.709552");
    }

    #[test]
    fn context_columns_pad_and_overflow_like_printf() {
        let names = TestNames::new(200);
        let ev = Event::SchedWakeIdleWithoutIpi { cpu: 3 };
        assert_eq!(
            render(&rec(1_000, 0, 0, 0, 0, ev), &names),
            "          <idle>-0       [000] .....     0.000001: sched_wake_idle_without_ipi: cpu=3\n"
        );
        assert_eq!(
            render(&rec(1_000, 129, 12345678, 0, 0, ev), &names),
            "           <...>-12345678 [129] .....     0.000001: sched_wake_idle_without_ipi: cpu=3\n"
        );
        struct Long;
        impl Names for Long {
            fn comm(&self, _pid: u32, _cpu: u32) -> &str {
                "a-comm-longer-than-16"
            }
        }
        assert_eq!(
            render(&rec(1_000, 1, 7, 0, 0, ev), &Long),
            "a-comm-longer-than-16-7       [001] .....     0.000001: sched_wake_idle_without_ipi: cpu=3\n"
        );
    }

    #[test]
    fn sched_switch_prev_state_and_swapper_names() {
        let names = TestNames::new(20);
        let sw = |prev_state: u32| -> String {
            let e = Event::SchedSwitch { prev_pid: 0, prev_prio: 120, prev_state, next_pid: 4692, next_prio: -1 };
            render(&rec(5_000_000_000, 16, 0, flags::IRQS_OFF, 2, e), &names)
        };
        assert_eq!(
            sw(0),
            "          <idle>-0       [016] d..2.     5.000000: sched_switch: prev_comm=swapper/16 \
             prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ping next_pid=4692 next_prio=-1\n"
        );
        let state = |s: u32| -> String {
            let l = sw(s);
            l[l.find("prev_state=").unwrap() + 11..l.find(" ==>").unwrap()].to_string()
        };
        assert_eq!(state(0x100), "R+");
        assert_eq!(state(0x101), "S+");
        assert_eq!(state(0x03), "S|D");
        assert_eq!(state(0x82), "D|I");
        assert_eq!(state(0xff), "S|D|T|t|X|Z|P|I");
        assert_eq!(state(0x1ff), "S|D|T|t|X|Z|P|I+");
        // Bits above TASK_REPORT_MAX are masked off by the print fmt.
        assert_eq!(state(0x200), "R");
    }

    #[test]
    fn every_event_kind_renders_exactly() {
        let names = TestNames::new(2);
        let p = |e: Event| -> String {
            let s = render(&rec(339_244_472_000, 1, 4696, flags::IRQS_OFF, 3, e), &names);
            s["            pong-4696    [001] d..3.   339.244472: ".len()..].to_string()
        };
        let csd = 0xc90c_44b9;
        let cases: Vec<(Event, &str)> = vec![
            (
                Event::SchedWaking { pid: 4692, prio: 120, target_cpu: 0 },
                "sched_waking: comm=ping pid=4692 prio=120 target_cpu=000",
            ),
            (
                Event::SchedWakeup { pid: 15, prio: 98, target_cpu: 1000 },
                "sched_wakeup: comm=rcu_preempt pid=15 prio=98 target_cpu=1000",
            ),
            (
                Event::SchedWakeupNew { pid: 4699, prio: 120, target_cpu: 12 },
                "sched_wakeup_new: comm=taskset pid=4699 prio=120 target_cpu=012",
            ),
            (
                Event::SchedMigrateTask { pid: 4476, prio: 120, orig_cpu: 1, dest_cpu: 0 },
                "sched_migrate_task: comm=pip pid=4476 prio=120 orig_cpu=1 dest_cpu=0",
            ),
            (Event::SchedWakeIdleWithoutIpi { cpu: 0 }, "sched_wake_idle_without_ipi: cpu=0"),
            (
                Event::IpiSendCpu { cpu: 0, callsite: Sym::WakeupPreempt, callback: Sym::Null },
                "ipi_send_cpu: cpu=0 callsite=wakeup_preempt+0x92/0xa0 callback=0x0",
            ),
            (
                Event::IpiSendCpu {
                    cpu: 0,
                    callsite: Sym::GenericExecSingle,
                    callback: Sym::GenericSmpCallFunctionSingleInterrupt,
                },
                "ipi_send_cpu: cpu=0 callsite=generic_exec_single+0x3a/0x110 \
                 callback=generic_smp_call_function_single_interrupt+0x0/0x10",
            ),
            (
                Event::IpiSendCpu { cpu: 0, callsite: Sym::KickIlb, callback: Sym::DoNothingIpi },
                "ipi_send_cpu: cpu=0 callsite=kick_ilb+0x6e/0xa0 callback=do_nothing_ipi+0x0/0x10",
            ),
            (
                Event::CsdQueueCpu { cpu: 0, callsite: Sym::TtwuQueueWakelist, func: Sym::SchedTtwuPending, csd },
                "csd_queue_cpu: cpu=0 callsite=ttwu_queue_wakelist+0x11d/0x150 \
                 func=sched_ttwu_pending csd=00000000c90c44b9",
            ),
            (
                Event::CsdQueueCpu {
                    cpu: 1,
                    callsite: Sym::SmpCallFunctionSingleAsync,
                    func: Sym::NohzCsdFunc,
                    csd: 0xffff_8880_1234_5678,
                },
                "csd_queue_cpu: cpu=1 callsite=smp_call_function_single_async+0x1f/0x40 \
                 func=nohz_csd_func csd=ffff888012345678",
            ),
            (
                Event::CsdFunctionEntry { func: Sym::DoNothingIpi, csd: 0 },
                "csd_function_entry: func=do_nothing_ipi, csd=0000000000000000",
            ),
            (
                Event::CsdFunctionExit { func: Sym::SchedTtwuPending, csd },
                "csd_function_exit: func=sched_ttwu_pending, csd=00000000c90c44b9",
            ),
            (Event::CpuIdle { state: u32::MAX, cpu_id: 1 }, "cpu_idle: state=4294967295 cpu_id=1"),
            (Event::CpuIdle { state: 0, cpu_id: 1 }, "cpu_idle: state=0 cpu_id=1"),
            (Event::VectorEntry { vector: Vector::LocalTimer }, "local_timer_entry: vector=236"),
            (Event::VectorExit { vector: Vector::LocalTimer }, "local_timer_exit: vector=236"),
            (Event::VectorEntry { vector: Vector::CallFunctionSingle }, "call_function_single_entry: vector=251"),
            (Event::VectorExit { vector: Vector::CallFunctionSingle }, "call_function_single_exit: vector=251"),
            (Event::VectorEntry { vector: Vector::Reschedule }, "reschedule_entry: vector=253"),
            (Event::VectorExit { vector: Vector::Reschedule }, "reschedule_exit: vector=253"),
            (Event::SoftirqRaise { vec: 0 }, "softirq_raise: vec=0 [action=HI]"),
            (Event::SoftirqEntry { vec: 3 }, "softirq_entry: vec=3 [action=NET_RX]"),
            (Event::SoftirqExit { vec: 8 }, "softirq_exit: vec=8 [action=HRTIMER]"),
            (Event::SoftirqRaise { vec: 12 }, "softirq_raise: vec=12 [action=0xc]"),
            (
                Event::Warning { site: WarnSite::DoSoftirqPostSmpCallFlush },
                "do_softirq_post_smp_call_flush: \
                 WARN_ON_ONCE(was_pending != local_softirq_pending())",
            ),
            (Event::Warning { site: WarnSite::NohzCsdFuncNoKick }, "nohz_csd_func: WARN_ON(!(flags & NOHZ_KICK_MASK))"),
        ];
        for (e, want) in cases {
            assert_eq!(p(e), format!("{want}\n"));
        }
        // All softirq names, in order.
        let names: Vec<String> = (0..10)
            .map(|v| {
                let s = p(Event::SoftirqRaise { vec: v });
                s[s.find("action=").unwrap() + 7..s.len() - 2].to_string()
            })
            .collect();
        assert_eq!(
            names,
            ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"]
        );
    }

    #[test]
    fn symbol_table_is_consistent() {
        let all = [
            Sym::Null,
            Sym::GenericSmpCallFunctionSingleInterrupt,
            Sym::TtwuQueueWakelist,
            Sym::WakeupPreempt,
            Sym::ReschedCurr,
            Sym::SmpCallFunctionSingle,
            Sym::SmpCallFunctionSingleAsync,
            Sym::GenericExecSingle,
            Sym::KickIlb,
            Sym::DoNothingIpi,
            Sym::SchedTtwuPending,
            Sym::NohzCsdFunc,
            Sym::SmpCallFunctionManyCond,
            Sym::IrqWorkQueueOn,
            Sym::RtoPushIrqWorkFunc,
        ];
        assert_eq!(all.len(), SYMS.len());
        for s in all {
            let info = &SYMS[sym_index(s)];
            assert_eq!(info.sym, s);
            if s == Sym::Null {
                assert_eq!((sym_name(s), sym_with_offset(s)), ("0x0", "0x0"));
                continue;
            }
            assert!(info.offset < info.size, "{}", info.name);
            assert_eq!(info.with_offset, format!("{}+{:#x}/{:#x}", info.name, info.offset, info.size));
        }
        assert_eq!(sym_name(Sym::ReschedCurr), "resched_curr");
        assert_eq!(sym_name(Sym::SmpCallFunctionSingle), "smp_call_function_single");
    }

    /// Run `f` on a cursor over a generously sized buffer and return what it wrote.
    fn with_cursor(f: impl FnOnce(&mut Cursor)) -> String {
        let mut buf = vec![0u8; 128];
        let mut w = Cursor { buf: &mut buf, pos: 0 };
        f(&mut w);
        let n = w.pos;
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    /// Integer and string helpers against `format!`.
    #[test]
    fn cursor_helpers_match_printf() {
        let mut vals = vec![u64::MAX, 1 << 32, u64::from(u32::MAX)];
        let mut p = 1u64;
        for _ in 0..19 {
            vals.extend([p - 1, p, p + 1, 5 * p]);
            p *= 10;
        }
        for v in vals {
            assert_eq!(with_cursor(|w| w.dec(v)), format!("{v}"));
            assert_eq!(with_cursor(|w| w.dec_zpad::<3>(v)), format!("{v:03}"));
            assert_eq!(with_cursor(|w| w.dec_rjust::<5>(v)), format!("{v:5}"));
            assert_eq!(with_cursor(|w| w.dec_ljust::<7>(v)), format!("{v:<7}"));
            assert_eq!(with_cursor(|w| w.hex16(v)), format!("{v:016x}"));
            assert_eq!(with_cursor(|w| w.hex(v)), format!("{v:#x}"));
            if v < 1_000_000 {
                assert_eq!(with_cursor(|w| w.dec6(v)), format!("{v:06}"));
            }
            let mut h = Vec::new();
            push_dec(&mut h, v);
            assert_eq!(String::from_utf8(h).unwrap(), format!("{v}"));
        }
        for v in [0i64, -1, -120, 120, i64::from(i32::MIN), i64::MIN] {
            assert_eq!(with_cursor(|w| w.dec_i(v)), format!("{v}"));
        }
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        for n in 0..=text.len() {
            let s = &text[..n];
            assert_eq!(with_cursor(|w| w.bytes(s.as_bytes())), s);
            assert_eq!(with_cursor(|w| w.rjust::<16>(s.as_bytes())), format!("{s:>16}"));
        }
    }

    /// Records with every field at its maximum fit in the room reserved per line.
    #[test]
    fn extreme_records_fit_in_the_reserved_room() {
        struct Empty;
        impl Names for Empty {
            fn comm(&self, _pid: u32, _cpu: u32) -> &str {
                ""
            }
        }
        let long_syms = [Sym::GenericSmpCallFunctionSingleInterrupt, Sym::SmpCallFunctionSingleAsync];
        let m = u32::MAX;
        let mut events = vec![
            Event::SchedSwitch { prev_pid: m, prev_prio: i32::MIN, prev_state: m, next_pid: m, next_prio: i32::MIN },
            Event::SchedWakeupNew { pid: m, prio: i32::MIN, target_cpu: m },
            Event::SchedMigrateTask { pid: m, prio: i32::MIN, orig_cpu: m, dest_cpu: m },
            Event::SoftirqRaise { vec: m },
            Event::Warning { site: WarnSite::DoSoftirqPostSmpCallFlush },
        ];
        for a in long_syms {
            for b in long_syms {
                events.push(Event::IpiSendCpu { cpu: m, callsite: a, callback: b });
                events.push(Event::CsdQueueCpu { cpu: m, callsite: a, func: b, csd: u64::MAX });
            }
        }
        for e in events {
            let r = rec(u64::MAX, m, m, 0xff, 0xff, e);
            let mut out = Vec::new();
            write_record(&mut out, &r, &Empty);
            // 16 for the TASK column is part of FIXED_MAX; leave a margin for future fields.
            assert!(out.len() + 32 <= FIXED_MAX, "{} bytes: {}", out.len(), String::from_utf8_lossy(&out));
        }
    }
}
