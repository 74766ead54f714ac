//! trace.dat output: trace-cmd's file format, version 6 (`man 5 trace-cmd.dat.v6`), which
//! `trace-cmd report` and KernelShark read.
//!
//! The file is what `trace-cmd record` would save on the modelled machine: the ring-buffer page
//! and entry headers and the events' `format` files of the real kernel (Linux 6.18, kept in
//! `event-formats.txt` and `ring-buffer-headers.txt` beside this file, read from tracefs), a
//! kallsyms table for the symbols the records point at, the command lines of the tasks, and
//! per-CPU ring-buffer pages.
//!
//! A record is laid out as the kernel's ring buffer stores it (kernel/trace/ring_buffer.c, read
//! back by libtraceevent's kbuffer): each 4096-byte page starts with a 64-bit timestamp and a
//! 64-bit commit (bytes of data used), then entries, each a 32-bit header `type_len:5 |
//! time_delta:27` (type_len = payload length in 4-byte words, up to 28; 0 = the length follows
//! in the next word; 30 = a time extend carrying the upper bits of a long delta) and the
//! payload: the common fields (`common_type` = the event's ID, flags, preempt count, pid) and
//! the event's fields at the offsets its format file gives (checked against the format text by
//! the tests).
//!
//! Streaming: full pages collect per CPU in runs of [`RUN_PAGES`] and spill to one temporary
//! file; [`TraceSink::finish`] writes the header (which needs all command lines and the per-CPU
//! sizes) and then copies each CPU's runs in order.

use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::sink::{NameTable, Output, Spill};
use super::{ftrace, Event, Record, TaskInfo, TraceSink, Vector};
use crate::hw::cpumask::CpuMask;

/// The real kernel's `events/*/*/format` files (6.18), sections headed `=== system/event`.
pub const EVENT_FORMATS: &str = include_str!("event-formats.txt");
/// `events/header_page` and `events/header_event` of the same kernel.
const RB_HEADERS: &str = include_str!("ring-buffer-headers.txt");

const PAGE_SIZE: usize = 4096;
/// Page header: u64 timestamp, u64 commit.
const PAGE_HEADER: usize = 16;
const PAGE_DATA: usize = PAGE_SIZE - PAGE_HEADER;
/// Full pages kept per CPU before they are spilled together.
const RUN_PAGES: usize = 16;
/// `RB_MAX_SMALL_DATA`: longer payloads carry their length in a separate word.
const MAX_SMALL_DATA: usize = 28 * 4;
const TYPE_TIME_EXTEND: u32 = 30;
/// Where the simulated kernel text starts; symbols are laid out 4 KiB apart from here.
const KERNEL_TEXT: u64 = 0xffff_ffff_8100_0000;

/// The events a record can be, by tracepoint name (indexes [`DatSink::ids`]).
const KINDS: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_wake_idle_without_ipi",
    "ipi_send_cpu",
    "ipi_send_cpumask",
    "csd_queue_cpu",
    "csd_function_entry",
    "csd_function_exit",
    "cpu_idle",
    "local_timer_entry",
    "local_timer_exit",
    "call_function_single_entry",
    "call_function_single_exit",
    "reschedule_entry",
    "reschedule_exit",
    "call_function_entry",
    "call_function_exit",
    "softirq_raise",
    "softirq_entry",
    "softirq_exit",
    "print",
    "workqueue_queue_work",
    "workqueue_execute_start",
    "workqueue_execute_end",
    "timer_expire_entry",
    "timer_expire_exit",
    "sched_process_exit",
];

fn kind(e: &Event) -> usize {
    let vector = |v: Vector, entry: bool| {
        let base = match v {
            Vector::LocalTimer => 12,
            Vector::CallFunctionSingle => 14,
            Vector::Reschedule => 16,
            Vector::CallFunction => 18,
        };
        base + usize::from(!entry)
    };
    match e {
        Event::SchedSwitch { .. } => 0,
        Event::SchedWaking { .. } => 1,
        Event::SchedWakeup { .. } => 2,
        Event::SchedWakeupNew { .. } => 3,
        Event::SchedMigrateTask { .. } => 4,
        Event::SchedWakeIdleWithoutIpi { .. } => 5,
        Event::IpiSendCpu { .. } => 6,
        Event::IpiSendCpumask { .. } => 7,
        Event::CsdQueueCpu { .. } => 8,
        Event::CsdFunctionEntry { .. } => 9,
        Event::CsdFunctionExit { .. } => 10,
        Event::CpuIdle { .. } => 11,
        Event::VectorEntry { vector: v } => vector(*v, true),
        Event::VectorExit { vector: v } => vector(*v, false),
        Event::SoftirqRaise { .. } => 20,
        Event::SoftirqEntry { .. } => 21,
        Event::SoftirqExit { .. } => 22,
        Event::Warning { .. } => 23,
        Event::WorkqueueQueueWork { .. } => 24,
        Event::WorkqueueExecuteStart { .. } => 25,
        Event::WorkqueueExecuteEnd { .. } => 26,
        Event::TimerExpireEntry { .. } => 27,
        Event::TimerExpireExit { .. } => 28,
        Event::SchedProcessExit { .. } => 29,
    }
}

/// One event's format file: its system, name, ID and text.
#[derive(Debug, Clone)]
pub struct Format {
    pub system: &'static str,
    pub name: &'static str,
    pub id: u16,
    pub text: &'static str,
}

/// The sections of [`EVENT_FORMATS`].
pub fn formats() -> Vec<Format> {
    let mut out = Vec::new();
    for sec in EVENT_FORMATS.split("=== ").filter(|s| !s.is_empty()) {
        let (head, text) = sec.split_once('\n').expect("section head");
        let (system, name) = head.split_once('/').expect("system/event");
        let id = text
            .lines()
            .find_map(|l| l.strip_prefix("ID: "))
            .and_then(|v| v.trim().parse().ok())
            .expect("format has an ID");
        out.push(Format { system, name, id, text });
    }
    out
}

fn rb_header(name: &str) -> &'static str {
    let sec = RB_HEADERS.split("=== ").find(|s| s.starts_with(name)).expect("ring-buffer header");
    &sec[name.len() + 1..]
}

/// The symbol table: every [`super::Sym`] and every warning's function, at made-up addresses
/// 4 KiB apart in the order listed (kallsyms lines are sorted by address).
struct Symbols {
    /// Address of each `Sym` by `ftrace::sym_index`, offset included (0 for NULL).
    sym_addr: Vec<u64>,
    kallsyms: String,
    /// (function name, address) for names that only appear as warnings' functions.
    by_name: Vec<(&'static str, u64)>,
    /// Addresses of the run's background functions (by their index in the records), placed
    /// after the fixed symbols.
    func_addr: Vec<u64>,
    next: u64,
}

impl Symbols {
    fn new() -> Symbols {
        let mut kallsyms = String::new();
        let mut by_name: Vec<(&'static str, u64)> = Vec::new();
        let mut sym_addr = Vec::new();
        let mut next = KERNEL_TEXT;
        for (name, offset) in ftrace::sym_table() {
            if name == "0x0" {
                sym_addr.push(0);
                continue;
            }
            kallsyms.push_str(&format!("{next:016x} T {name}\n"));
            by_name.push((name, next));
            sym_addr.push(next + u64::from(offset));
            next += 0x1000;
        }
        for site in super::WarnSite::ALL {
            let (func, _) = ftrace::warning_text(*site);
            if !by_name.iter().any(|(n, _)| *n == func) {
                kallsyms.push_str(&format!("{next:016x} T {func}\n"));
                by_name.push((func, next));
                next += 0x1000;
            }
        }
        Symbols { sym_addr, kallsyms, by_name, func_addr: Vec::new(), next }
    }

    /// Lay out the run's background functions (work functions, timer callbacks) in kallsyms.
    fn add_funcs(&mut self, names: &[String]) {
        for n in names {
            self.kallsyms.push_str(&format!("{:016x} T {n}\n", self.next));
            self.func_addr.push(self.next);
            self.next += 0x1000;
        }
    }

    fn bg_func(&self, id: u32) -> u64 {
        self.func_addr.get(id as usize).copied().unwrap_or(0)
    }

    fn addr(&self, s: super::Sym) -> u64 {
        self.sym_addr[ftrace::sym_index(s)]
    }

    fn func(&self, name: &str) -> u64 {
        self.by_name.iter().find(|(n, _)| *n == name).map_or(0, |(_, a)| *a)
    }
}

/// One CPU's ring buffer: the page being filled and full pages not yet spilled.
#[derive(Default)]
struct CpuPages {
    page: Vec<u8>,
    used: usize,
    last_ts: u64,
    open: bool,
    staged: Vec<u8>,
    /// (offset in the spill file, pages) of this CPU's spilled runs, in order.
    runs: Vec<(u64, u32)>,
    pages: u64,
}

impl CpuPages {
    fn close_page(&mut self) {
        if !self.open {
            return;
        }
        self.page[8..16].copy_from_slice(&(self.used as u64).to_le_bytes());
        self.staged.extend_from_slice(&self.page);
        self.pages += 1;
        self.open = false;
    }

    fn open_page(&mut self, ts: u64) {
        self.page.clear();
        self.page.resize(PAGE_SIZE, 0);
        self.page[0..8].copy_from_slice(&ts.to_le_bytes());
        self.used = 0;
        self.last_ts = ts;
        self.open = true;
    }

    #[inline]
    fn put(&mut self, word: u32) {
        let at = PAGE_HEADER + self.used;
        self.page[at..at + 4].copy_from_slice(&word.to_le_bytes());
        self.used += 4;
    }

    /// Append one entry (payload already padded to 4 bytes) at `ts`.
    fn add(&mut self, ts: u64, payload: &[u8]) {
        debug_assert!(payload.len() % 4 == 0);
        let long = payload.len() > MAX_SMALL_DATA;
        let entry = 4 + payload.len() + if long { 4 } else { 0 };
        let mut delta = if self.open { ts - self.last_ts } else { 0 };
        let extend = if delta >= 1 << 27 { 8 } else { 0 };
        if !self.open || self.used + entry + extend > PAGE_DATA {
            self.close_page();
            self.open_page(ts);
            delta = 0;
        } else if extend != 0 {
            self.put(TYPE_TIME_EXTEND | (((delta & 0x7ff_ffff) as u32) << 5));
            self.put((delta >> 27) as u32);
            delta = 0;
        }
        if long {
            self.put((delta as u32) << 5);
            self.put(payload.len() as u32 + 4);
        } else {
            self.put((payload.len() / 4) as u32 | ((delta as u32) << 5));
        }
        let at = PAGE_HEADER + self.used;
        self.page[at..at + payload.len()].copy_from_slice(payload);
        self.used += payload.len();
        self.last_ts = ts;
    }

    fn spill(&mut self, spill: &mut Spill) -> io::Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        self.runs.push((spill.len, (self.staged.len() / PAGE_SIZE) as u32));
        spill.write(&self.staged)?;
        self.staged.clear();
        Ok(())
    }
}

/// A record's payload under construction.
struct Payload {
    b: [u8; 256],
    len: usize,
}

impl Payload {
    #[inline]
    fn at(&mut self, off: usize, v: &[u8]) {
        self.b[off..off + v.len()].copy_from_slice(v);
    }
    #[inline]
    fn u32(&mut self, off: usize, v: u32) {
        self.at(off, &v.to_le_bytes());
    }
    #[inline]
    fn i32(&mut self, off: usize, v: i32) {
        self.at(off, &v.to_le_bytes());
    }
    #[inline]
    fn u64(&mut self, off: usize, v: u64) {
        self.at(off, &v.to_le_bytes());
    }
    /// `char name[16]`: the comm, truncated to TASK_COMM_LEN - 1 bytes and NUL-padded.
    #[inline]
    fn comm(&mut self, off: usize, s: &str) {
        let b = s.as_bytes();
        let n = b.len().min(15);
        self.b[off..off + 16].fill(0);
        self.b[off..off + n].copy_from_slice(&b[..n]);
    }
    /// A `__data_loc` field at `off` pointing at `data`, appended at the current end.
    fn data_loc(&mut self, off: usize, data: &[u8]) {
        let start = self.len;
        let n = data.len().min(self.b.len() - start - 8);
        self.b[start..start + n].copy_from_slice(&data[..n]);
        self.u32(off, ((n as u32) << 16) | start as u32);
        self.len = start + n;
    }
}

/// The trace.dat writer (a [`TraceSink`]).
pub struct DatSink {
    target: PathBuf,
    nr_cpus: u32,
    names: NameTable,
    /// pid, comm in order of appearance (the saved_cmdlines section).
    cmdlines: Vec<(u32, String)>,
    formats: Vec<Format>,
    /// `common_type` of each of [`KINDS`].
    ids: Vec<u16>,
    syms: Symbols,
    cpus: Vec<CpuPages>,
    spill: Spill,
    n: u64,
}

impl DatSink {
    pub fn create(path: &Path, nr_cpus: u32) -> io::Result<DatSink> {
        drop(Output::create(path)?);
        let formats = formats();
        let ids = KINDS
            .iter()
            .map(|k| formats.iter().find(|f| f.name == *k).map(|f| f.id).expect("a format for every kind"))
            .collect();
        Ok(DatSink {
            target: path.to_path_buf(),
            nr_cpus,
            names: NameTable::new(nr_cpus),
            cmdlines: Vec::new(),
            formats,
            ids,
            syms: Symbols::new(),
            cpus: (0..nr_cpus).map(|_| CpuPages::default()).collect(),
            spill: Spill::create(path, "pages")?,
            n: 0,
        })
    }

    /// The record's payload: common fields, then the event's fields at its format's offsets.
    fn encode_record(&self, r: &Record, masks: &[CpuMask], p: &mut Payload) {
        let k = kind(&r.event);
        p.b[..64].fill(0);
        p.at(0, &self.ids[k].to_le_bytes());
        p.b[2] = r.flags;
        p.b[3] = r.preempt_count;
        p.u32(4, r.pid);
        let cpu = r.cpu;
        let comm = |pid: u32| self.names.get(pid, cpu).unwrap_or("");
        p.len = match r.event {
            Event::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio } => {
                p.comm(8, comm(prev_pid));
                p.u32(24, prev_pid);
                p.i32(28, prev_prio);
                p.u64(32, u64::from(prev_state));
                p.comm(40, comm(next_pid));
                p.u32(56, next_pid);
                p.i32(60, next_prio);
                64
            }
            Event::SchedWaking { pid, prio, target_cpu }
            | Event::SchedWakeup { pid, prio, target_cpu }
            | Event::SchedWakeupNew { pid, prio, target_cpu } => {
                p.comm(8, comm(pid));
                p.u32(24, pid);
                p.i32(28, prio);
                p.u32(32, target_cpu);
                36
            }
            Event::SchedMigrateTask { pid, prio, orig_cpu, dest_cpu } => {
                p.u32(12, pid);
                p.i32(16, prio);
                p.u32(20, orig_cpu);
                p.u32(24, dest_cpu);
                p.len = 28;
                let mut s = comm(pid).as_bytes().to_vec();
                s.push(0);
                p.data_loc(8, &s);
                p.len
            }
            Event::SchedWakeIdleWithoutIpi { cpu } => {
                p.u32(8, cpu);
                12
            }
            Event::IpiSendCpu { cpu, callsite, callback } => {
                p.u32(8, cpu);
                p.u64(16, self.syms.addr(callsite));
                p.u64(24, self.syms.addr(callback));
                32
            }
            Event::IpiSendCpumask { mask, callsite, callback } => {
                p.u64(16, self.syms.addr(callsite));
                p.u64(24, self.syms.addr(callback));
                p.len = 32;
                // A cpumask_t: nr_cpu_ids bits in unsigned longs.
                let mut bits = vec![0u8; self.nr_cpus.div_ceil(64).max(1) as usize * 8];
                if let Some(m) = masks.get(mask as usize) {
                    for c in m.iter() {
                        bits[c as usize / 8] |= 1 << (c % 8);
                    }
                }
                p.data_loc(8, &bits);
                p.len
            }
            Event::CsdQueueCpu { cpu, callsite, func, csd } => {
                p.u32(8, cpu);
                p.u64(16, self.syms.addr(callsite));
                p.u64(24, self.syms.addr(func));
                p.u64(32, csd);
                40
            }
            Event::CsdFunctionEntry { func, csd } | Event::CsdFunctionExit { func, csd } => {
                p.u64(8, self.syms.addr(func));
                p.u64(16, csd);
                24
            }
            Event::WorkqueueQueueWork { work, func, req_cpu, cpu } => {
                p.u64(8, work);
                p.u64(16, self.syms.bg_func(func));
                p.u32(28, req_cpu);
                p.u32(32, cpu);
                p.len = 36;
                let wq: &[u8] =
                    if req_cpu == crate::trace::WORK_CPU_UNBOUND { b"events_unbound\0" } else { b"events\0" };
                p.data_loc(24, wq);
                p.len
            }
            Event::WorkqueueExecuteStart { work, func } | Event::WorkqueueExecuteEnd { work, func } => {
                p.u64(8, work);
                p.u64(16, self.syms.bg_func(func));
                24
            }
            Event::TimerExpireEntry { timer, func, now, baseclk } => {
                p.u64(8, timer);
                p.u64(16, now);
                p.u64(24, self.syms.bg_func(func));
                p.u64(32, baseclk);
                40
            }
            Event::TimerExpireExit { timer } => {
                p.u64(8, timer);
                16
            }
            Event::SchedProcessExit { pid, prio, group_dead } => {
                p.comm(8, comm(pid));
                p.u32(24, pid);
                p.i32(28, prio);
                p.b[32] = group_dead as u8;
                33
            }
            Event::CpuIdle { state, cpu_id } => {
                p.u32(8, state);
                p.u32(12, cpu_id);
                16
            }
            Event::VectorEntry { vector } | Event::VectorExit { vector } => {
                p.u32(8, vector.number());
                12
            }
            Event::SoftirqRaise { vec } | Event::SoftirqEntry { vec } | Event::SoftirqExit { vec } => {
                p.u32(8, vec);
                12
            }
            Event::Warning { site } => {
                // ftrace's `print` entry (what trace_puts() of a literal records as bputs):
                // the caller's address, then the text.
                let (func, text) = ftrace::warning_text(site);
                p.u64(8, self.syms.func(func));
                let t = text.as_bytes();
                let n = t.len().min(p.b.len() - 17);
                p.b[16..16 + n].copy_from_slice(&t[..n]);
                p.b[16 + n] = 0;
                17 + n
            }
        };
        // Entries are 4-byte aligned; the padding is zero.
        let padded = p.len.div_ceil(4) * 4;
        p.b[p.len..padded].fill(0);
        p.len = padded;
    }

    fn header(&self, out: &mut Vec<u8>) {
        let u32le = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
        let u64le = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
        out.extend_from_slice(&[0x17, 0x08, 0x44]);
        out.extend_from_slice(b"tracing6\0");
        out.push(0); // little endian
        out.push(8); // sizeof(long)
        u32le(out, PAGE_SIZE as u32);
        for name in ["header_page", "header_event"] {
            let text = rb_header(name);
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            u64le(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
        // Ftrace's own events: `print` (warnings).
        let ftrace_fmts: Vec<&Format> =
            self.formats.iter().filter(|f| f.system == "ftrace" && f.name == "print").collect();
        u32le(out, ftrace_fmts.len() as u32);
        for f in ftrace_fmts {
            u64le(out, f.text.len() as u64);
            out.extend_from_slice(f.text.as_bytes());
        }
        // Every other system, in the order of the format file.
        let mut systems: Vec<&str> = Vec::new();
        for f in &self.formats {
            if f.system != "ftrace" && !systems.contains(&f.system) {
                systems.push(f.system);
            }
        }
        u32le(out, systems.len() as u32);
        for sys in systems {
            out.extend_from_slice(sys.as_bytes());
            out.push(0);
            let evs: Vec<&Format> = self.formats.iter().filter(|f| f.system == sys).collect();
            u32le(out, evs.len() as u32);
            for f in evs {
                u64le(out, f.text.len() as u64);
                out.extend_from_slice(f.text.as_bytes());
            }
        }
        u32le(out, self.syms.kallsyms.len() as u32);
        out.extend_from_slice(self.syms.kallsyms.as_bytes());
        u32le(out, 0); // printk formats
        let mut cmdlines = String::new();
        for (pid, comm) in &self.cmdlines {
            cmdlines.push_str(&format!("{pid} {comm}\n"));
        }
        u64le(out, cmdlines.len() as u64);
        out.extend_from_slice(cmdlines.as_bytes());
        u32le(out, self.nr_cpus);
        out.extend_from_slice(b"flyrecord\0");
        // Per-CPU (offset, size): the data starts at the next page boundary after this table.
        let table_end = out.len() + 16 * self.cpus.len();
        let mut off = table_end.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        for c in &self.cpus {
            let size = c.pages as usize * PAGE_SIZE;
            u64le(out, off as u64);
            u64le(out, size as u64);
            off += size;
        }
        out.resize(table_end.div_ceil(PAGE_SIZE) * PAGE_SIZE, 0);
    }
}

impl TraceSink for DatSink {
    fn funcs(&mut self, names: &[String]) {
        self.names.funcs = names.to_vec();
        self.syms.add_funcs(names);
    }

    fn tasks(&mut self, new: &[TaskInfo]) {
        for t in new {
            self.names.add(t);
            self.cmdlines.push((t.pid, t.comm.clone()));
        }
    }

    fn write(&mut self, records: &[Record], masks: &[CpuMask]) -> io::Result<()> {
        let mut p = Payload { b: [0; 256], len: 0 };
        for r in records {
            let cpu = r.cpu as usize;
            if cpu >= self.cpus.len() {
                self.cpus.resize_with(cpu + 1, CpuPages::default);
                self.nr_cpus = self.cpus.len() as u32;
            }
            self.encode_record(r, masks, &mut p);
            let c = &mut self.cpus[cpu];
            c.add(r.ts_ns, &p.b[..p.len]);
            if c.staged.len() >= RUN_PAGES * PAGE_SIZE {
                c.spill(&mut self.spill)?;
            }
        }
        self.n += records.len() as u64;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> io::Result<u64> {
        for i in 0..self.cpus.len() {
            self.cpus[i].close_page();
            let c = &mut self.cpus[i];
            c.spill(&mut self.spill)?;
        }
        let mut out = Output::create(&self.target)?;
        let mut head = Vec::new();
        self.header(&mut head);
        out.w().write_all(&head)?;
        let spill = self.spill.reader()?;
        let mut buf = vec![0u8; RUN_PAGES * PAGE_SIZE];
        for c in &self.cpus {
            for &(off, pages) in &c.runs {
                let b = &mut buf[..pages as usize * PAGE_SIZE];
                spill.read_exact_at(b, off)?;
                out.w().write_all(b)?;
            }
        }
        let n = self.n;
        out.commit()?;
        Ok(n)
    }

    fn abort(self: Box<Self>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (offset, size) of `field` in an event's format text.
    fn field(f: &Format, name: &str) -> (usize, usize) {
        for l in f.text.lines() {
            let l = l.trim();
            let Some(decl) = l.strip_prefix("field:") else { continue };
            let decl = decl.split(';').next().unwrap();
            let fname = decl.rsplit(' ').next().unwrap();
            let fname = fname.split('[').next().unwrap();
            if fname == name {
                let num =
                    |key: &str| -> usize { l.split(key).nth(1).unwrap().split(';').next().unwrap().parse().unwrap() };
                return (num("offset:"), num("size:"));
            }
        }
        panic!("{} has no field {name}", f.name);
    }

    /// The offsets the encoder writes are the ones the real kernel's format files give.
    #[test]
    fn encoder_offsets_match_the_kernel_format_files() {
        let fmts = formats();
        let get = |n: &str| fmts.iter().find(|f| f.name == n).unwrap_or_else(|| panic!("no format {n}"));
        for k in KINDS {
            let f = get(k);
            assert_eq!(field(f, "common_type"), (0, 2));
            assert_eq!(field(f, "common_flags"), (2, 1));
            assert_eq!(field(f, "common_preempt_count"), (3, 1));
            assert_eq!(field(f, "common_pid"), (4, 4));
        }
        let sw = get("sched_switch");
        for (n, want) in [
            ("prev_comm", (8, 16)),
            ("prev_pid", (24, 4)),
            ("prev_prio", (28, 4)),
            ("prev_state", (32, 8)),
            ("next_comm", (40, 16)),
            ("next_pid", (56, 4)),
            ("next_prio", (60, 4)),
        ] {
            assert_eq!(field(sw, n), want, "sched_switch.{n}");
        }
        for e in ["sched_waking", "sched_wakeup", "sched_wakeup_new"] {
            let f = get(e);
            assert_eq!(
                [field(f, "comm"), field(f, "pid"), field(f, "prio"), field(f, "target_cpu")],
                [(8, 16), (24, 4), (28, 4), (32, 4)]
            );
        }
        let m = get("sched_migrate_task");
        assert_eq!(
            [field(m, "comm"), field(m, "pid"), field(m, "prio"), field(m, "orig_cpu"), field(m, "dest_cpu")],
            [(8, 4), (12, 4), (16, 4), (20, 4), (24, 4)]
        );
        assert_eq!(field(get("sched_wake_idle_without_ipi"), "cpu"), (8, 4));
        let ipi = get("ipi_send_cpu");
        assert_eq!([field(ipi, "cpu"), field(ipi, "callsite"), field(ipi, "callback")], [(8, 4), (16, 8), (24, 8)]);
        let ipim = get("ipi_send_cpumask");
        assert_eq!(
            [field(ipim, "cpumask"), field(ipim, "callsite"), field(ipim, "callback")],
            [(8, 4), (16, 8), (24, 8)]
        );
        let q = get("csd_queue_cpu");
        assert_eq!(
            [field(q, "cpu"), field(q, "callsite"), field(q, "func"), field(q, "csd")],
            [(8, 4), (16, 8), (24, 8), (32, 8)]
        );
        for e in ["csd_function_entry", "csd_function_exit"] {
            assert_eq!([field(get(e), "func"), field(get(e), "csd")], [(8, 8), (16, 8)]);
        }
        assert_eq!([field(get("cpu_idle"), "state"), field(get("cpu_idle"), "cpu_id")], [(8, 4), (12, 4)]);
        for k in &KINDS[12..20] {
            assert_eq!(field(get(k), "vector"), (8, 4), "{k}");
        }
        for k in ["softirq_raise", "softirq_entry", "softirq_exit"] {
            assert_eq!(field(get(k), "vec"), (8, 4));
        }
        assert_eq!([field(get("print"), "ip"), field(get("print"), "buf")], [(8, 8), (16, 0)]);
    }

    #[test]
    fn long_gaps_get_a_time_extend_and_full_pages_a_new_page() {
        let mut c = CpuPages::default();
        c.add(5, &[1; 12]);
        c.add(5 + (1 << 27) + 3, &[2; 12]);
        // header+12, extend (8), header+12
        assert_eq!(c.used, 16 + 8 + 16);
        let w = |i: usize| u32::from_le_bytes(c.page[PAGE_HEADER + i * 4..PAGE_HEADER + i * 4 + 4].try_into().unwrap());
        assert_eq!(w(0), 3);
        assert_eq!(w(4) & 0x1f, TYPE_TIME_EXTEND);
        assert_eq!(u64::from(w(4) >> 5) | u64::from(w(5)) << 27, (1 << 27) + 3);
        assert_eq!(w(6), 3);
        for i in 0..300 {
            c.add(1 << 28 | i, &[3; 12]);
        }
        // 40 bytes, then 16-byte entries until the next would pass the 4080 data bytes.
        assert_eq!(c.pages, 1);
        let commit = u64::from_le_bytes(c.staged[8..16].try_into().unwrap()) as usize;
        assert_eq!(commit, 40 + (PAGE_DATA - 40) / 16 * 16);
        assert_eq!(u64::from_le_bytes(c.staged[0..8].try_into().unwrap()), 5);
        // The second page starts at the first entry that did not fit, with delta 0.
        assert_eq!(u64::from_le_bytes(c.page[0..8].try_into().unwrap()), 1 << 28 | ((PAGE_DATA - 40) / 16) as u64);
    }
}
