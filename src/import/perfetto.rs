//! A Perfetto protobuf trace with ftrace sched events, in the expanded and the `compact_sched`
//! encodings, read into the same record stream as the text layouts ([`super::Rec`]).
//!
//! The messages and field numbers read (google/perfetto, protos/perfetto/trace/):
//!
//! - `trace.proto`: `Trace` = `repeated TracePacket packet = 1`; the file is that message, so a
//!   sequence of (tag, length, packet) records read one packet at a time.
//! - `trace_packet.proto`: `TracePacket` fields `ftrace_events` 1, `process_tree` 2,
//!   `trusted_packet_sequence_id` 10, `interned_data` 12, `sequence_flags` 13 (bit 0:
//!   `SEQ_INCREMENTAL_STATE_CLEARED`), `ftrace_stats` 34, `incremental_state_cleared` 41,
//!   `previous_packet_dropped` 42, `first_packet_on_sequence` 87; `compressed_packets` 50 is
//!   refused with the way to decompress it.
//! - `ftrace/ftrace_event_bundle.proto`: `FtraceEventBundle` fields `cpu` 1, `event` 2,
//!   `lost_events` 3, `compact_sched` 4. `CompactSched` is a structure of arrays, one entry per
//!   event in each column (packed or not): `switch_timestamp` 1, `switch_prev_state` 2,
//!   `switch_next_pid` 3, `switch_next_prio` 4, `intern_table` 5 (the bundle's strings),
//!   `switch_next_comm_index` 6, `waking_timestamp` 7, `waking_pid` 8, `waking_target_cpu` 9,
//!   `waking_prio` 10, `waking_comm_index` 11, `waking_common_flags` 12. Each timestamp column
//!   is delta-encoded: the first absolute, each next relative to the one before. A compact
//!   switch has no prev fields and a compact waking no current pid: both are the task the CPU's
//!   previous switch (or an expanded event's `pid`) made current.
//! - `ftrace/ftrace_event.proto`: `FtraceEvent` fields `timestamp` 1, `pid` 2 (the current
//!   task), `common_flags` 5, and the events read: `sched_switch` 4, `sched_wakeup` 17,
//!   `sched_waking` 20, `softirq_entry` 24, `softirq_exit` 25, `irq_handler_entry` 36,
//!   `irq_handler_exit` 37, `sched_wakeup_new` 114, `task_rename` 236, `sched_process_exit` 238,
//!   `sched_process_fork` 239, `sched_process_free` 240, `sched_migrate_task` 491,
//!   `hrtimer_expire_entry` 553, `hrtimer_expire_exit` 554, `timer_expire_entry` 557,
//!   `timer_expire_exit` 558; others are counted as `other`.
//! - `ftrace/sched.proto`: `SchedSwitchFtraceEvent` (`prev_comm` 1, `prev_pid` 2, `prev_prio`
//!   3, `prev_state` 4, `next_comm` 5, `next_pid` 6, `next_prio` 7); `SchedWaking`/`Wakeup`/
//!   `WakeupNewFtraceEvent` (`comm` 1, `pid` 2, `prio` 3); `SchedProcessForkFtraceEvent`
//!   (`child_comm` 3, `child_pid` 4); `SchedProcessExitFtraceEvent` (`pid` 2);
//!   `SchedMigrateTaskFtraceEvent` (`pid` 2, `dest_cpu` 5); `ftrace/task.proto`:
//!   `TaskRenameFtraceEvent` (`pid` 1, `newcomm` 3); `ftrace/timer.proto`:
//!   `HrtimerExpireEntryFtraceEvent` (`function` 3).
//! - `ps/process_tree.proto`: `ProcessTree` (`processes` 1: `Process.pid` 1, `cmdline` 3;
//!   `threads` 2: `Thread.tid` 1, `name` 2): the tasks' names, as trace-cmd's saved command lines.
//! - `interned_data/interned_data.proto`: `kernel_symbols` 26 (`InternedString` `iid` 1, `str`
//!   2): with `symbolize_ksyms`, `hrtimer_expire_entry`'s `function` is such an iid, valid on its
//!   packet sequence until the sequence clears its incremental state. Without symbols the
//!   function is a bare address and no timer is known to be `hrtimer_wakeup`.
//! - `ftrace/ftrace_stats.proto`: `FtraceStats` (`phase` 1: 1 start, 2 end; `cpu_stats` 2:
//!   `FtraceCpuStats.cpu` 1, `overrun` 3).
//!
//! Lost data: a bundle's `lost_events`, or a packet of a sequence already seen that says
//! `previous_packet_dropped`, is a lost-events marker on that CPU (the import ends there, as
//! for the other readers); an overrun that grows between the start and end `ftrace_stats` with
//! no such marker is one at the trace's end (the workload is kept, the report says so).
//!
//! Memory: two passes over the file read at offsets, one packet at a time (the command line
//! gunzips a `.gz` to an unlinked temporary file). The first pass keeps an index of the
//! bundles, 32 bytes per bundle, per CPU, plus the tasks' names and the interned
//! `hrtimer_wakeup` ids; the second merges the CPUs by time holding one decoded bundle per CPU
//! (Perfetto writes a CPU's bundles in order, the CPUs' interleaved in chunks).

use super::build::Builder;
use super::tracedat::ReadAt;
use super::{Backing, Ctx, ImportError, Kind, PrevState, Rec, UNKNOWN_PID};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// The largest packet read (traced_probes writes bundles of a few pages).
pub const MAX_PACKET: u64 = 64 << 20;

/// Whether `head` (a file's first bytes) is a Perfetto trace: a `TracePacket` tag (field 1,
/// length-delimited: 0x0a) and, within the first bytes, a byte no trace text has.
pub fn is_perfetto(head: &[u8]) -> bool {
    head.first() == Some(&0x0a)
        && head
            .iter()
            .take(256)
            .any(|&b| !(b.is_ascii_graphic() || b == b' ' || b == b'\n' || b == b'\r' || b == b'\t'))
}

/// `common_flags` bits (include/linux/trace_events.h: TRACE_FLAG_HARDIRQ, _SOFTIRQ, _NMI).
const FLAG_HARDIRQ: u64 = 0x08;
const FLAG_SOFTIRQ: u64 = 0x10;
const FLAG_NMI: u64 = 0x40;

struct Src {
    f: Backing,
    len: u64,
    origin: String,
}

impl Src {
    fn err(&self, at: u64, packet: Option<u64>, msg: impl Into<String>) -> ImportError {
        let msg = msg.into();
        let msg = match packet {
            Some(p) => format!("byte {at} (packet {p}): {msg}"),
            None => format!("byte {at}: {msg}"),
        };
        ImportError { origin: self.origin.clone(), line: 0, msg }
    }

    fn read(&self, at: u64, n: u64, packet: Option<u64>, what: &str) -> Result<Vec<u8>, ImportError> {
        if n > MAX_PACKET {
            return Err(self.err(
                at,
                packet,
                format!("{what} of {n} bytes is larger than the {MAX_PACKET}-byte limit"),
            ));
        }
        if at.checked_add(n).is_none_or(|e| e > self.len) {
            return Err(self.err(
                at,
                packet,
                format!("truncated file: {what} needs {n} bytes here, the file ends at byte {}", self.len),
            ));
        }
        self.f.read(at, n).map_err(|e| self.err(at, packet, format!("cannot read {what}: {e}")))
    }
}

/// A field's value by wire type.
#[derive(Clone, Copy)]
enum Val<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8], u64),
    Fixed32(u32),
}

/// Protobuf fields of a message held in memory, `base` its offset in the file.
struct Pb<'a> {
    b: &'a [u8],
    pos: usize,
    base: u64,
}

/// An error inside a message: the byte offset and what was wrong.
type PbErr = (u64, String);

fn varint(b: &[u8], pos: &mut usize, base: u64) -> Result<u64, PbErr> {
    let start = *pos;
    let mut v = 0u64;
    for i in 0..10 {
        let Some(&x) = b.get(*pos) else {
            return Err((base + start as u64, "a varint runs past the end of its message".into()));
        };
        *pos += 1;
        if i == 9 && x > 1 {
            return Err((base + start as u64, "a varint longer than 64 bits".into()));
        }
        v |= u64::from(x & 0x7f) << (7 * i);
        if x & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err((base + start as u64, "a varint longer than 10 bytes".into()))
}

impl<'a> Pb<'a> {
    fn new(b: &'a [u8], base: u64) -> Pb<'a> {
        Pb { b, pos: 0, base }
    }

    fn next(&mut self) -> Result<Option<(u32, Val<'a>, u64)>, PbErr> {
        if self.pos >= self.b.len() {
            return Ok(None);
        }
        let at = self.base + self.pos as u64;
        let tag = varint(self.b, &mut self.pos, self.base)?;
        let field = (tag >> 3) as u32;
        if field == 0 || tag >> 3 > u64::from(u32::MAX >> 3) {
            return Err((at, format!("field number {} (expected 1 to 2^29-1)", tag >> 3)));
        }
        let left = self.b.len() - self.pos;
        let v = match tag & 7 {
            0 => Val::Varint(varint(self.b, &mut self.pos, self.base)?),
            1 | 5 => {
                let n = if tag & 7 == 1 { 8 } else { 4 };
                if left < n {
                    return Err((
                        at,
                        format!("field {field}: a fixed{} value runs past the end of its message", n * 8),
                    ));
                }
                let mut x = [0u8; 8];
                x[..n].copy_from_slice(&self.b[self.pos..self.pos + n]);
                self.pos += n;
                let v = u64::from_le_bytes(x);
                if n == 8 {
                    Val::Fixed64(v)
                } else {
                    Val::Fixed32(v as u32)
                }
            }
            2 => {
                let n = varint(self.b, &mut self.pos, self.base)?;
                let left = (self.b.len() - self.pos) as u64;
                if n > left {
                    return Err((
                        at,
                        format!("field {field}: a length of {n} bytes runs past its message ({left} left)"),
                    ));
                }
                let s = &self.b[self.pos..self.pos + n as usize];
                let off = self.base + self.pos as u64;
                self.pos += n as usize;
                Val::Bytes(s, off)
            }
            w => return Err((at, format!("field {field}: wire type {w} (groups are not used by Perfetto)"))),
        };
        Ok(Some((field, v, at)))
    }
}

fn want_int(v: Val, field: &str, at: u64) -> Result<u64, PbErr> {
    match v {
        Val::Varint(x) | Val::Fixed64(x) => Ok(x),
        Val::Fixed32(x) => Ok(u64::from(x)),
        Val::Bytes(..) => Err((at, format!("{field}: a length-delimited value where an integer was expected"))),
    }
}

fn want_bytes<'a>(v: Val<'a>, field: &str, at: u64) -> Result<(&'a [u8], u64), PbErr> {
    match v {
        Val::Bytes(b, off) => Ok((b, off)),
        _ => Err((at, format!("{field}: an integer where a length-delimited message or string was expected"))),
    }
}

fn want_str<'a>(v: Val<'a>, field: &str, at: u64) -> Result<&'a str, PbErr> {
    let (b, off) = want_bytes(v, field, at)?;
    std::str::from_utf8(b).map_err(|_| (off, format!("{field}: not UTF-8 text")))
}

/// A repeated integer field, packed (one length-delimited run) or not (one value per tag).
fn push_ints(out: &mut Vec<u64>, v: Val, field: &str, at: u64) -> Result<(), PbErr> {
    match v {
        Val::Bytes(b, off) => {
            let mut pos = 0;
            while pos < b.len() {
                out.push(varint(b, &mut pos, off).map_err(|(a, m)| (a, format!("{field}: {m}")))?);
            }
            Ok(())
        }
        v => {
            out.push(want_int(v, field, at)?);
            Ok(())
        }
    }
}

/// A bundle found by the first pass.
#[derive(Debug, Clone, Copy)]
struct BundleRef {
    /// The packet's offset and length in the file, and its index.
    off: u64,
    len: u32,
    packet: u32,
    /// Its packet sequence and incremental-state generation (which interned symbols hold).
    seq: u32,
    generation: u32,
    /// The sequence dropped packets just before this one.
    dropped_before: bool,
}

/// What the first pass learns.
#[derive(Default)]
struct Index {
    cpus: BTreeMap<u32, Vec<BundleRef>>,
    names: BTreeMap<u32, String>,
    /// (sequence, generation, iid) of the interned `hrtimer_wakeup` symbol.
    hrtimer_wakeup: BTreeSet<(u32, u32, u64)>,
    symbols: bool,
    overrun_start: BTreeMap<u32, u64>,
    overrun_end: BTreeMap<u32, u64>,
}

/// The comm of a `ProcessTree.Process`'s cmdline: its program's base name, cut as the kernel's
/// 16-byte comm is.
fn cmdline_comm(c: &str) -> String {
    let base = c.rsplit('/').next().unwrap_or(c);
    base.chars().take(15).collect()
}

fn index(src: &Src) -> Result<Index, ImportError> {
    let mut ix = Index::default();
    // Per sequence: its generation and whether a drop awaits its next bundle.
    let mut seqs: BTreeMap<u32, (u32, bool)> = BTreeMap::new();
    let mut at = 0u64;
    let mut packet = 0u64;
    while at < src.len {
        let (off, len) = packet_at(src, at, packet)?;
        let body = src.read(off, len, Some(packet), "the packet")?;
        let e = |(a, m): PbErr| src.err(a, Some(packet), m);
        let mut pb = Pb::new(&body, off);
        let (mut seq, mut cleared, mut dropped, mut first) = (0u32, false, false, false);
        let mut bundle_cpu: Option<u32> = None;
        let mut symbols: Vec<(u64, bool)> = Vec::new();
        while let Some((f, v, fat)) = pb.next().map_err(e)? {
            match f {
                1 => {
                    let (b, boff) = want_bytes(v, "ftrace_events", fat).map_err(e)?;
                    let mut cpu = 0u64;
                    let mut bp = Pb::new(b, boff);
                    while let Some((bf, bv, bat)) = bp.next().map_err(e)? {
                        if bf == 1 {
                            cpu = want_int(bv, "FtraceEventBundle.cpu", bat).map_err(e)?;
                        }
                    }
                    if cpu >= u64::from(crate::limits::MAX_CPUS) {
                        return Err(src.err(
                            boff,
                            Some(packet),
                            format!("CPU {cpu} is beyond the {} CPUs schedsim models", crate::limits::MAX_CPUS),
                        ));
                    }
                    bundle_cpu = Some(cpu as u32);
                }
                2 => {
                    let (b, boff) = want_bytes(v, "process_tree", fat).map_err(e)?;
                    process_tree(b, boff, &mut ix.names).map_err(e)?;
                }
                10 => seq = want_int(v, "trusted_packet_sequence_id", fat).map_err(e)? as u32,
                12 => {
                    let (b, boff) = want_bytes(v, "interned_data", fat).map_err(e)?;
                    let mut ip = Pb::new(b, boff);
                    while let Some((inf, iv, iat)) = ip.next().map_err(e)? {
                        if inf == 26 {
                            let (sb, soff) = want_bytes(iv, "kernel_symbols", iat).map_err(e)?;
                            let (mut iid, mut wakeup) = (0u64, false);
                            let mut sp = Pb::new(sb, soff);
                            while let Some((sf, sv, sat)) = sp.next().map_err(e)? {
                                match sf {
                                    1 => iid = want_int(sv, "InternedString.iid", sat).map_err(e)?,
                                    2 => {
                                        wakeup =
                                            want_bytes(sv, "InternedString.str", sat).map_err(e)?.0 == b"hrtimer_wakeup"
                                    }
                                    _ => {}
                                }
                            }
                            symbols.push((iid, wakeup));
                        }
                    }
                }
                13 => cleared |= want_int(v, "sequence_flags", fat).map_err(e)? & 1 != 0,
                34 => {
                    let (b, boff) = want_bytes(v, "ftrace_stats", fat).map_err(e)?;
                    ftrace_stats(b, boff, &mut ix).map_err(e)?;
                }
                41 => cleared |= want_int(v, "incremental_state_cleared", fat).map_err(e)? != 0,
                42 => dropped = want_int(v, "previous_packet_dropped", fat).map_err(e)? != 0,
                87 => first = want_int(v, "first_packet_on_sequence", fat).map_err(e)? != 0,
                50 => {
                    return Err(src.err(
                        fat,
                        Some(packet),
                        "compressed packets (the trace config's `compression_type`) are not read: \
                         `traceconv decompress_packets IN OUT` writes the trace uncompressed",
                    ))
                }
                _ => {}
            }
        }
        // The first packet of a sequence says `previous_packet_dropped` (nothing before it is
        // known); a later one means the trace buffer lost packets of this sequence.
        let known = seqs.contains_key(&seq);
        let st = seqs.entry(seq).or_insert((0, false));
        if cleared && known {
            st.0 += 1;
        }
        if dropped && known && !first {
            // Lost packets: the interned data before are no longer valid on this sequence.
            st.1 = true;
            st.0 += 1;
        }
        if !symbols.is_empty() {
            ix.symbols = true;
        }
        for (iid, wakeup) in symbols {
            if wakeup {
                ix.hrtimer_wakeup.insert((seq, st.0, iid));
            }
        }
        if let Some(cpu) = bundle_cpu {
            ix.cpus.entry(cpu).or_default().push(BundleRef {
                off,
                len: len as u32,
                packet: packet.min(u64::from(u32::MAX)) as u32,
                seq,
                generation: st.0,
                dropped_before: std::mem::take(&mut st.1),
            });
        }
        at = off + len;
        packet += 1;
    }
    if packet == 0 {
        return Err(src.err(0, None, "empty file (expected a Perfetto trace)"));
    }
    Ok(ix)
}

/// The packet starting at `at`: its body's offset and length.
fn packet_at(src: &Src, at: u64, packet: u64) -> Result<(u64, u64), ImportError> {
    let head = src.read(at, 20.min(src.len - at), Some(packet), "a packet's tag")?;
    let mut pos = 0;
    let e = |(a, m): PbErr| src.err(a, Some(packet), m);
    let tag = varint(&head, &mut pos, at).map_err(|(a, m)| {
        e((a, if m.contains("past the end") { "truncated file: a packet's tag runs past the end".into() } else { m }))
    })?;
    if tag != 0x0a {
        return Err(src.err(
            at,
            Some(packet),
            format!(
                "expected a TracePacket (field 1 of Trace, length-delimited: tag 0x0a), found field {} wire type {}",
                tag >> 3,
                tag & 7
            ),
        ));
    }
    let len = varint(&head, &mut pos, at).map_err(|(a, m)| {
        e((
            a,
            if m.contains("past the end") { "truncated file: a packet's length runs past the end".into() } else { m },
        ))
    })?;
    let off = at + pos as u64;
    if len > src.len - off {
        return Err(src.err(
            at,
            Some(packet),
            format!("truncated file: a packet of {len} bytes runs past the end (byte {})", src.len),
        ));
    }
    Ok((off, len))
}

fn process_tree(b: &[u8], base: u64, names: &mut BTreeMap<u32, String>) -> Result<(), PbErr> {
    let mut p = Pb::new(b, base);
    while let Some((f, v, at)) = p.next()? {
        let (sb, soff) = match f {
            1 | 2 => want_bytes(v, "ProcessTree entry", at)?,
            _ => continue,
        };
        let (mut id, mut name) = (None, None);
        let mut sp = Pb::new(sb, soff);
        while let Some((sf, sv, sat)) = sp.next()? {
            match (f, sf) {
                (_, 1) => id = Some(want_int(sv, "ProcessTree pid/tid", sat)? as u32),
                (2, 2) => name = Some(want_str(sv, "Thread.name", sat)?.to_string()),
                (1, 3) if name.is_none() => name = Some(cmdline_comm(want_str(sv, "Process.cmdline", sat)?)),
                _ => {}
            }
        }
        if let (Some(id), Some(name)) = (id, name) {
            // A thread's own name wins over its process's command line.
            if f == 2 || !names.contains_key(&id) {
                names.insert(id, name);
            }
        }
    }
    Ok(())
}

fn ftrace_stats(b: &[u8], base: u64, ix: &mut Index) -> Result<(), PbErr> {
    let mut p = Pb::new(b, base);
    let mut phase = 0;
    let mut cpus = Vec::new();
    while let Some((f, v, at)) = p.next()? {
        match f {
            1 => phase = want_int(v, "FtraceStats.phase", at)?,
            2 => {
                let (sb, soff) = want_bytes(v, "FtraceStats.cpu_stats", at)?;
                let (mut cpu, mut overrun) = (0u64, 0u64);
                let mut sp = Pb::new(sb, soff);
                while let Some((sf, sv, sat)) = sp.next()? {
                    match sf {
                        1 => cpu = want_int(sv, "FtraceCpuStats.cpu", sat)?,
                        3 => overrun = want_int(sv, "FtraceCpuStats.overrun", sat)?,
                        _ => {}
                    }
                }
                cpus.push((cpu.min(u64::from(u32::MAX)) as u32, overrun));
            }
            _ => {}
        }
    }
    let m = match phase {
        1 => &mut ix.overrun_start,
        2 => &mut ix.overrun_end,
        _ => return Ok(()),
    };
    m.extend(cpus);
    Ok(())
}

/// What a decoded event says (comms as indexes into the CPU stream's strings).
#[derive(Debug, Clone, Copy)]
enum EvKind {
    Switch {
        prev_pid: u32,
        prev_prio: u32,
        prev_state: u64,
        next_pid: u32,
        next_prio: u32,
        next_comm: u32,
    },
    /// A compact switch: its prev is the CPU's current task.
    CSwitch {
        prev_state: u64,
        next_pid: u32,
        next_prio: u32,
        next_comm: u32,
    },
    Waking {
        pid: u32,
        prio: u32,
        comm: u32,
        wakeup: bool,
    },
    WakeupNew {
        pid: u32,
        prio: u32,
        comm: u32,
    },
    Fork {
        child_pid: u32,
        child_comm: u32,
    },
    Exit {
        pid: u32,
    },
    Migrate {
        pid: u32,
        dest_cpu: u32,
    },
    Rename {
        pid: u32,
        comm: u32,
    },
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
    TimerEntry {
        wakeup: bool,
        name: &'static str,
    },
    TimerExit(&'static str),
    Other(&'static str),
    Lost,
}

#[derive(Debug, Clone, Copy)]
struct Ev {
    ts: u64,
    /// The current task (None in compact events: the CPU's tracked current task).
    pid: Option<u32>,
    flags: Option<u64>,
    kind: EvKind,
    /// Where it is in the file (errors).
    at: u64,
}

/// One CPU's bundles, read one at a time.
struct CpuStream {
    cpu: u32,
    refs: Vec<BundleRef>,
    next: usize,
    evs: Vec<Ev>,
    pos: usize,
    strs: Vec<String>,
    /// The packet of the bundle held (errors).
    packet: u64,
    cur_pid: u32,
    cur_prio: Option<u32>,
    last_ts: u64,
}

impl CpuStream {
    /// CPU `cpu`'s stream over its bundles `refs`, before the first is loaded.
    fn new(cpu: u32, refs: Vec<BundleRef>) -> CpuStream {
        CpuStream {
            cpu,
            refs,
            next: 0,
            evs: Vec::new(),
            pos: 0,
            strs: Vec::new(),
            packet: 0,
            cur_pid: UNKNOWN_PID,
            cur_prio: None,
            last_ts: 0,
        }
    }

    /// Load bundles until one has events; false at the end.
    fn load(&mut self, src: &Src, ix: &Index) -> Result<bool, ImportError> {
        while self.next < self.refs.len() {
            let r = self.refs[self.next];
            self.next += 1;
            self.evs.clear();
            self.strs.clear();
            self.pos = 0;
            self.packet = u64::from(r.packet);
            let body = src.read(r.off, u64::from(r.len), Some(self.packet), "the packet")?;
            decode_packet(src, ix, &r, &body, &mut self.evs, &mut self.strs)?;
            if let Some(first) = self.evs.first() {
                if first.ts < self.last_ts {
                    return Err(src.err(
                        first.at,
                        Some(self.packet),
                        format!(
                            "CPU {}: timestamp {} ns is {} ns before the CPU's previous event (out of order: \
                             expected a CPU's bundles in time order)",
                            self.cpu,
                            first.ts,
                            self.last_ts - first.ts
                        ),
                    ));
                }
            }
            if !self.evs.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn decode_packet(
    src: &Src,
    ix: &Index,
    r: &BundleRef,
    body: &[u8],
    evs: &mut Vec<Ev>,
    strs: &mut Vec<String>,
) -> Result<(), ImportError> {
    let packet = Some(u64::from(r.packet));
    let e = |(a, m): PbErr| src.err(a, packet, m);
    let mut pb = Pb::new(body, r.off);
    let mut lost = r.dropped_before;
    let mut lost_at = r.off;
    while let Some((f, v, fat)) = pb.next().map_err(e)? {
        if f != 1 {
            continue;
        }
        let (b, boff) = want_bytes(v, "ftrace_events", fat).map_err(e)?;
        let mut bp = Pb::new(b, boff);
        while let Some((bf, bv, bat)) = bp.next().map_err(e)? {
            match bf {
                2 => {
                    let (eb, eoff) = want_bytes(bv, "FtraceEvent", bat).map_err(e)?;
                    let ev = decode_event(ix, r, eb, eoff, strs).map_err(e)?;
                    if let Some(prev) = evs.last() {
                        if ev.ts < prev.ts {
                            return Err(src.err(
                                eoff,
                                packet,
                                format!(
                                    "timestamp {} ns is {} ns before the bundle's previous event (out of order)",
                                    ev.ts,
                                    prev.ts - ev.ts
                                ),
                            ));
                        }
                    }
                    evs.push(ev);
                }
                3 => {
                    let flag = want_int(bv, "lost_events", bat).map_err(e)?;
                    if flag != 0 {
                        lost = true;
                        lost_at = bat;
                    }
                }
                4 => {
                    let (cb, coff) = want_bytes(bv, "compact_sched", bat).map_err(e)?;
                    compact(cb, coff, evs, strs).map_err(e)?;
                }
                _ => {}
            }
        }
    }
    // The three sorted runs (expanded, compact switches, compact wakings) as one; ties keep
    // that order.
    evs.sort_by_key(|x| x.ts);
    if lost {
        let ts = evs.first().map_or(0, |x| x.ts);
        evs.insert(0, Ev { ts, pid: None, flags: None, kind: EvKind::Lost, at: lost_at });
    }
    Ok(())
}

fn intern(strs: &mut Vec<String>, s: &str) -> u32 {
    strs.push(s.to_string());
    (strs.len() - 1) as u32
}

fn to_u32(v: u64) -> u32 {
    // int32 fields come as 64-bit varints when negative: keep the low 32 bits.
    v as u32
}

fn decode_event(ix: &Index, r: &BundleRef, b: &[u8], base: u64, strs: &mut Vec<String>) -> Result<Ev, PbErr> {
    let mut p = Pb::new(b, base);
    let (mut ts, mut pid, mut flags) = (None, None, None);
    let mut kind = EvKind::Other("other");
    while let Some((f, v, at)) = p.next()? {
        match f {
            1 => ts = Some(want_int(v, "FtraceEvent.timestamp", at)?),
            2 => pid = Some(to_u32(want_int(v, "FtraceEvent.pid", at)?)),
            5 => flags = Some(want_int(v, "FtraceEvent.common_flags", at)?),
            _ => {
                if let Val::Bytes(sb, soff) = v {
                    kind = event_body(ix, r, f, sb, soff, strs)?;
                }
            }
        }
    }
    let ts = ts.ok_or((base, "an FtraceEvent without a timestamp (field 1)".to_string()))?;
    if pid.is_none() {
        return Err((base, "an FtraceEvent without a pid (field 2)".into()));
    }
    Ok(Ev { ts, pid, flags, kind, at: base })
}

/// The fields (number → integer or string) of one event's message.
fn event_body(
    ix: &Index,
    r: &BundleRef,
    field: u32,
    b: &[u8],
    base: u64,
    strs: &mut Vec<String>,
) -> Result<EvKind, PbErr> {
    let name = match field {
        4 => "sched_switch",
        17 => "sched_wakeup",
        20 => "sched_waking",
        24 => "softirq_entry",
        25 => "softirq_exit",
        36 => "irq_handler_entry",
        37 => "irq_handler_exit",
        114 => "sched_wakeup_new",
        236 => "task_rename",
        238 => "sched_process_exit",
        239 => "sched_process_fork",
        240 => "sched_process_free",
        491 => "sched_migrate_task",
        553 => "hrtimer_expire_entry",
        554 => "hrtimer_expire_exit",
        557 => "timer_expire_entry",
        558 => "timer_expire_exit",
        _ => return Ok(EvKind::Other("other")),
    };
    let mut ints: [Option<u64>; 8] = [None; 8];
    let mut texts: [Option<&str>; 8] = [None; 8];
    let mut p = Pb::new(b, base);
    while let Some((f, v, at)) = p.next()? {
        if f >= 8 {
            continue;
        }
        // The string fields of the events read (sched.proto, task.proto, irq.proto).
        let text = match field {
            4 => f == 1 || f == 5,
            239 => f == 1 || f == 3,
            236 => f == 2 || f == 3,
            36 => f == 2,
            17 | 20 | 114 | 238 | 240 | 491 => f == 1,
            _ => false,
        };
        if text {
            texts[f as usize] = Some(want_str(v, &format!("{name} field {f}"), at)?);
        } else {
            ints[f as usize] = Some(want_int(v, &format!("{name} field {f}"), at)?);
        }
    }
    let int = |f: usize, what: &str| -> Result<u32, PbErr> {
        ints[f].map(to_u32).ok_or_else(|| (base, format!("{name}: no `{what}` (field {f}, an integer)")))
    };
    let mut text = |f: usize, what: &str| -> Result<u32, PbErr> {
        let s = texts[f].ok_or_else(|| (base, format!("{name}: no `{what}` (field {f}, a string)")))?;
        Ok(intern(strs, s))
    };
    Ok(match field {
        4 => EvKind::Switch {
            prev_pid: int(2, "prev_pid")?,
            prev_prio: int(3, "prev_prio")?,
            prev_state: ints[4].ok_or_else(|| (base, format!("{name}: no `prev_state` (field 4, an integer)")))?,
            next_pid: int(6, "next_pid")?,
            next_prio: int(7, "next_prio")?,
            next_comm: text(5, "next_comm")?,
        },
        17 | 20 => {
            EvKind::Waking { pid: int(2, "pid")?, prio: int(3, "prio")?, comm: text(1, "comm")?, wakeup: field == 17 }
        }
        114 => EvKind::WakeupNew { pid: int(2, "pid")?, prio: int(3, "prio")?, comm: text(1, "comm")? },
        239 => EvKind::Fork { child_pid: int(4, "child_pid")?, child_comm: text(3, "child_comm")? },
        238 => EvKind::Exit { pid: int(2, "pid")? },
        491 => EvKind::Migrate { pid: int(2, "pid")?, dest_cpu: int(5, "dest_cpu")? },
        236 => EvKind::Rename { pid: int(1, "pid")?, comm: text(3, "newcomm")? },
        24 => EvKind::SoftirqEntry,
        25 => EvKind::SoftirqExit,
        36 => EvKind::IrqEntry,
        37 => EvKind::IrqExit,
        553 => {
            let f = ints[3].unwrap_or(0);
            EvKind::TimerEntry { wakeup: ix.symbols && ix.hrtimer_wakeup.contains(&(r.seq, r.generation, f)), name }
        }
        557 => EvKind::TimerEntry { wakeup: false, name },
        554 | 558 => EvKind::TimerExit(name),
        _ => EvKind::Other(name),
    })
}

/// `CompactSched`'s columns into events (row `i` of each column is event `i`).
#[allow(clippy::needless_range_loop)]
fn compact(b: &[u8], base: u64, evs: &mut Vec<Ev>, strs: &mut Vec<String>) -> Result<(), PbErr> {
    let mut col: [Vec<u64>; 13] = Default::default();
    let mut table: Vec<&str> = Vec::new();
    let names = [
        "",
        "switch_timestamp",
        "switch_prev_state",
        "switch_next_pid",
        "switch_next_prio",
        "intern_table",
        "switch_next_comm_index",
        "waking_timestamp",
        "waking_pid",
        "waking_target_cpu",
        "waking_prio",
        "waking_comm_index",
        "waking_common_flags",
    ];
    let mut p = Pb::new(b, base);
    while let Some((f, v, at)) = p.next()? {
        match f {
            5 => table.push(want_str(v, "compact_sched.intern_table", at)?),
            1..=12 => push_ints(&mut col[f as usize], v, names[f as usize], at)?,
            _ => {}
        }
    }
    let same = |a: &[usize]| -> Result<(), PbErr> {
        let n = col[a[0]].len();
        for &c in &a[1..] {
            if col[c].len() != n {
                return Err((
                    base,
                    format!(
                        "compact_sched: column {} has {} entries, {} has {} (expected one per event in each)",
                        names[c],
                        col[c].len(),
                        names[a[0]],
                        n
                    ),
                ));
            }
        }
        Ok(())
    };
    same(&[1, 2, 3, 4, 6])?;
    same(&[7, 8, 9, 10, 11])?;
    let flags = !col[12].is_empty();
    if flags {
        same(&[7, 12])?;
    }
    let first = strs.len() as u32;
    for s in &table {
        strs.push(s.to_string());
    }
    let idx = |i: u64, what: &str| -> Result<u32, PbErr> {
        if i >= table.len() as u64 {
            return Err((
                base,
                format!("compact_sched: {what} {i} is beyond the intern table's {} strings", table.len()),
            ));
        }
        Ok(first + i as u32)
    };
    let mut ts = 0u64;
    for i in 0..col[1].len() {
        ts = ts.checked_add(col[1][i]).ok_or((base, "compact_sched: a switch timestamp overflows".to_string()))?;
        evs.push(Ev {
            ts,
            pid: None,
            flags: None,
            kind: EvKind::CSwitch {
                prev_state: col[2][i],
                next_pid: to_u32(col[3][i]),
                next_prio: to_u32(col[4][i]),
                next_comm: idx(col[6][i], "switch_next_comm_index")?,
            },
            at: base,
        });
    }
    let mut ts = 0u64;
    for i in 0..col[7].len() {
        ts = ts.checked_add(col[7][i]).ok_or((base, "compact_sched: a waking timestamp overflows".to_string()))?;
        evs.push(Ev {
            ts,
            pid: None,
            flags: flags.then(|| col[12][i]),
            kind: EvKind::Waking {
                pid: to_u32(col[8][i]),
                prio: to_u32(col[10][i]),
                comm: idx(col[11][i], "waking_comm_index")?,
                wakeup: false,
            },
            at: base,
        });
    }
    Ok(())
}

/// Read a whole Perfetto trace of `len` bytes into `builder`, the CPUs merged by time.
pub fn read_perfetto(file: Box<dyn ReadAt>, len: u64, origin: &str, builder: &mut Builder) -> Result<(), ImportError> {
    read_src(&Src { f: Backing::File(file), len, origin: origin.into() }, builder)
}

/// [`read_perfetto`] of a file's bytes held in memory (`origin` names it in errors).
pub fn read_perfetto_bytes(bytes: Vec<u8>, origin: &str, builder: &mut Builder) -> Result<(), ImportError> {
    let len = bytes.len() as u64;
    read_src(&Src { f: Backing::Mem(bytes), len, origin: origin.into() }, builder)
}

fn read_src(src: &Src, builder: &mut Builder) -> Result<(), ImportError> {
    let ix = index(src)?;
    let mut names = ix.names.clone();
    let mut streams: Vec<CpuStream> = Vec::new();
    for (&cpu, refs) in &ix.cpus {
        let mut s = CpuStream::new(cpu, refs.clone());
        if s.load(src, &ix)? {
            streams.push(s);
        }
    }
    let mut heap: BinaryHeap<Reverse<(u64, u32, usize)>> = BinaryHeap::new();
    for (i, s) in streams.iter().enumerate() {
        heap.push(Reverse((s.evs[0].ts, s.cpu, i)));
    }
    let mut n = 0u64;
    let mut last = 0u64;
    while let Some(Reverse((_, _, i))) = heap.pop() {
        n += 1;
        let s = &mut streams[i];
        let ev = s.evs[s.pos];
        s.last_ts = ev.ts;
        last = last.max(ev.ts);
        emit(s, &ev, &mut names, builder, n);
        s.pos += 1;
        if s.pos < s.evs.len() || s.load(src, &ix)? {
            heap.push(Reverse((s.evs[s.pos].ts, s.cpu, i)));
        }
    }
    if n == 0 {
        return Err(src.err(0, None, "no ftrace events in the trace (expected ftrace_events bundles)"));
    }
    // Overruns the start and end statistics show, with no bundle saying where: lost somewhere.
    for (&cpu, &end) in &ix.overrun_end {
        let start = ix.overrun_start.get(&cpu).copied().unwrap_or(0);
        if end > start {
            n += 1;
            let rec = Rec {
                ts_ns: last,
                cpu,
                pid: 0,
                comm: "",
                ctx: None,
                event: "lost",
                kind: Kind::Lost { count: end - start },
            };
            builder.push(&rec, n);
        }
    }
    Ok(())
}

fn prev_state(st: u64) -> PrevState {
    // The kernel's TASK_REPORT bits (include/trace/events/sched.h): 0 or only the preempted
    // bit above them is runnable.
    match st & 0xff {
        0 => PrevState::Runnable,
        s if s & 1 != 0 => PrevState::Sleep,
        s if s & 2 != 0 => PrevState::Disk,
        _ => PrevState::Other,
    }
}

/// One event into a record for the builder.
fn emit(s: &mut CpuStream, ev: &Ev, names: &mut BTreeMap<u32, String>, builder: &mut Builder, n: u64) {
    if let Some(p) = ev.pid {
        if p != s.cur_pid {
            s.cur_pid = p;
            s.cur_prio = None;
        }
    }
    let pid = s.cur_pid;
    let strs = &s.strs;
    let st = |i: u32| strs.get(i as usize).map_or("", String::as_str);
    let mut learn: [Option<(u32, u32)>; 2] = [None, None];
    let mut next_cur = None;
    let (event, kind) = match ev.kind {
        EvKind::Switch { prev_pid, prev_prio, prev_state: ps, next_pid, next_prio, next_comm } => {
            learn[0] = Some((next_pid, next_comm));
            next_cur = Some((next_pid, next_prio));
            (
                "sched_switch",
                Kind::Switch {
                    prev_pid,
                    prev_prio,
                    prev_state: prev_state(ps),
                    next_pid,
                    next_prio,
                    next_comm: st(next_comm),
                },
            )
        }
        EvKind::CSwitch { prev_state: ps, next_pid, next_prio, next_comm } => {
            learn[0] = Some((next_pid, next_comm));
            next_cur = Some((next_pid, next_prio));
            (
                "sched_switch",
                Kind::Switch {
                    prev_pid: pid,
                    prev_prio: s.cur_prio.unwrap_or(120),
                    prev_state: prev_state(ps),
                    next_pid,
                    next_prio,
                    next_comm: st(next_comm),
                },
            )
        }
        EvKind::Waking { pid, prio, comm, wakeup } => {
            learn[0] = Some((pid, comm));
            if wakeup {
                ("sched_wakeup", Kind::Wakeup { pid, prio, comm: st(comm) })
            } else {
                ("sched_waking", Kind::Waking { pid, prio, comm: st(comm) })
            }
        }
        EvKind::WakeupNew { pid, prio, comm } => {
            learn[0] = Some((pid, comm));
            ("sched_wakeup_new", Kind::WakeupNew { pid, prio })
        }
        EvKind::Fork { child_pid, child_comm } => {
            learn[0] = Some((child_pid, child_comm));
            ("sched_process_fork", Kind::Fork { child_pid, child_comm: st(child_comm) })
        }
        EvKind::Exit { pid } => ("sched_process_exit", Kind::Exit { pid }),
        EvKind::Migrate { pid, dest_cpu } => ("sched_migrate_task", Kind::Migrate { pid, dest_cpu }),
        EvKind::Rename { pid, comm } => {
            learn[1] = Some((pid, comm));
            ("task_rename", Kind::Other)
        }
        EvKind::IrqEntry => ("irq_handler_entry", Kind::IrqEntry),
        EvKind::IrqExit => ("irq_handler_exit", Kind::IrqExit),
        EvKind::SoftirqEntry => ("softirq_entry", Kind::SoftirqEntry),
        EvKind::SoftirqExit => ("softirq_exit", Kind::SoftirqExit),
        EvKind::TimerEntry { wakeup, name } => (name, Kind::TimerEntry { wakeup }),
        EvKind::TimerExit(name) => (name, Kind::TimerExit),
        EvKind::Other(name) => (name, Kind::Other),
        // A lost marker: the count is not in the trace (0: unknown).
        EvKind::Lost => ("lost", Kind::Lost { count: 0 }),
    };
    let cur = match pid {
        0 => "<idle>",
        UNKNOWN_PID => "<...>",
        p => names.get(&p).map_or("<...>", String::as_str),
    };
    let ctx = match (ev.kind, ev.flags) {
        (EvKind::Switch { .. } | EvKind::CSwitch { .. }, _) => Some(Ctx::Task),
        (_, Some(f)) if f & (FLAG_HARDIRQ | FLAG_NMI) != 0 => Some(Ctx::Irq),
        (_, Some(f)) if f & FLAG_SOFTIRQ != 0 => Some(Ctx::Softirq),
        (_, Some(_)) => Some(Ctx::Task),
        (_, None) => None,
    };
    let rec = Rec { ts_ns: ev.ts, cpu: s.cpu, pid, comm: cur, ctx, event, kind };
    builder.push(&rec, n);
    // Names: the process tree's, else the first an event gave; a rename replaces it.
    if let Some((p, c)) = learn[0] {
        if p != 0 && !st(c).is_empty() && !names.contains_key(&p) {
            names.insert(p, st(c).to_string());
        }
    }
    if let Some((p, c)) = learn[1] {
        if p != 0 && !st(c).is_empty() {
            names.insert(p, st(c).to_string());
        }
    }
    if let Some((p, prio)) = next_cur {
        s.cur_pid = p;
        s.cur_prio = Some(prio);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::build::Options;

    fn v(field: u32, x: u64) -> Vec<u8> {
        let mut o = Vec::new();
        for mut n in [u64::from(field) << 3, x] {
            while n > 0x7f {
                o.push(0x80 | (n & 0x7f) as u8);
                n >>= 7;
            }
            o.push(n as u8);
        }
        o
    }

    fn m(field: u32, body: &[u8]) -> Vec<u8> {
        let mut o = v(field, body.len() as u64);
        o[0] |= 2;
        o.extend_from_slice(body);
        o
    }

    #[test]
    fn varints_decode_to_64_bits_and_no_further() {
        let mut pos = 0;
        assert_eq!(varint(&[0xac, 0x02], &mut pos, 0), Ok(300));
        assert_eq!(pos, 2);
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint(&max, &mut 0, 0), Ok(u64::MAX));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(varint(&over, &mut 0, 7).unwrap_err().1.contains("longer than 64 bits"));
        assert_eq!(varint(&[0x80, 0x80], &mut 0, 9).unwrap_err().0, 9);
    }

    #[test]
    fn perfetto_is_told_from_text_and_trace_dat() {
        assert!(is_perfetto(&[0x0a, 0x05, 0x08, 0x01, 0x10, 0x02, 0x00]));
        assert!(!is_perfetto(b"\n# tracer: nop\n"));
        assert!(!is_perfetto(b"cpus=2\n"));
        assert!(!is_perfetto(super::super::tracedat::MAGIC));
    }

    /// An hrtimer callback is `hrtimer_wakeup` by its interned symbol on the packet's sequence,
    /// and an iid means another symbol once the sequence cleared its incremental state.
    #[test]
    fn interned_hrtimer_wakeup_follows_the_sequence_generation() {
        let sym = |iid: u64, s: &[u8]| {
            let mut k = v(1, iid);
            k.extend(m(2, s));
            m(12, &m(26, &k))
        };
        let timer = |ts: u64, f: u64| {
            let mut e = v(1, ts);
            e.extend(v(2, 5));
            e.extend(m(553, &v(3, f)));
            let mut b = v(1, 0);
            b.extend(m(2, &e));
            m(1, &b)
        };
        let mut t = Vec::new();
        for (cleared, symbol, ts) in [(true, &b"hrtimer_wakeup"[..], 10u64), (true, &b"tick_nohz_handler"[..], 20)] {
            let mut p = v(10, 3);
            if cleared {
                p.extend(v(13, 1));
            }
            p.extend(sym(1, symbol));
            p.extend(timer(ts, 1));
            t.extend(m(1, &p));
        }
        let src = Src { f: Backing::Mem(t.clone()), len: t.len() as u64, origin: "t".into() };
        let ix = index(&src).unwrap();
        assert_eq!(ix.hrtimer_wakeup.iter().copied().collect::<Vec<_>>(), vec![(3, 0, 1)]);
        let refs = &ix.cpus[&0];
        assert_eq!((refs[0].generation, refs[1].generation), (0, 1));
        let mut kinds = Vec::new();
        for r in refs {
            let (mut evs, mut strs) = (Vec::new(), Vec::new());
            let body = src.read(r.off, u64::from(r.len), None, "p").unwrap();
            decode_packet(&src, &ix, r, &body, &mut evs, &mut strs).unwrap();
            kinds.push(matches!(evs[0].kind, EvKind::TimerEntry { wakeup: true, .. }));
        }
        assert_eq!(kinds, [true, false]);
        let mut b = Builder::new(Options { all_tasks: true, ..Options::default() });
        read_perfetto_bytes(t, "t", &mut b).unwrap();
        assert_eq!(b.seen.events.get("hrtimer_expire_entry"), Some(&2));
    }

    /// A compact switch's prev is the task the CPU's previous switch made current, with its prio.
    #[test]
    fn compact_switches_take_prev_from_the_previous_switch() {
        assert_eq!(std::mem::size_of::<BundleRef>(), 32, "the index holds 32 bytes a bundle");
        let mut cs = m(1, &[100, 50]);
        cs.extend(m(2, &[1, 0]));
        cs.extend(m(3, &[8, 9]));
        cs.extend(m(4, &[100, 120]));
        cs.extend(m(5, b"a"));
        cs.extend(m(5, b"b"));
        cs.extend(m(6, &[0, 1]));
        let mut b = v(1, 2);
        b.extend(m(4, &cs));
        let t = m(1, &m(1, &b));
        let src = Src { f: Backing::Mem(t.clone()), len: t.len() as u64, origin: "t".into() };
        let ix = index(&src).unwrap();
        let mut s = CpuStream::new(2, ix.cpus[&2].clone());
        assert!(s.load(&src, &ix).unwrap());
        assert_eq!(s.evs.iter().map(|e| e.ts).collect::<Vec<_>>(), [100, 150]);
        let mut names = BTreeMap::new();
        let mut bl = Builder::new(Options { all_tasks: true, ..Options::default() });
        for i in 0..2 {
            let ev = s.evs[i];
            emit(&mut s, &ev, &mut names, &mut bl, i as u64 + 1);
        }
        assert_eq!((s.cur_pid, s.cur_prio), (9, Some(120)));
        // The second switch's prev was 8 (prio 100, named `a` by the first): 8 is a task.
        assert_eq!(names.get(&8).map(String::as_str), Some("a"));
        bl.finish();
        assert!(
            bl.tasks.iter().any(|t| t.pid == 8 && t.prio == 100),
            "{:?}",
            bl.tasks.iter().map(|t| t.pid).collect::<Vec<_>>()
        );
    }
}
