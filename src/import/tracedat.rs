//! trace-cmd's binary `trace.dat`, versions 6 and 7 (`man 5 trace-cmd.dat.v6`, `.v7`), read into
//! the same record stream as the text layouts ([`super::Rec`]).
//!
//! - Version 6: the header (`header_page`/`header_event` formats, ftrace and event formats,
//!   kallsyms, printk formats, saved command lines), the CPU count, options, and `flyrecord`'s
//!   per-CPU (offset, size) table of ring-buffer pages.
//! - Version 7: the same contents in sections found through option sections (a chain linked by
//!   the `DONE` option); each section may be compressed (a 4-byte compressed and a 4-byte
//!   uncompressed size, then the data), and so may the per-CPU data of the `BUFFER` option (a
//!   4-byte chunk count, then chunks of the same layout). Compression: `zlib` (flate2) and `zstd`
//!   (ruzstd, a pure-Rust decoder).
//!
//! The events are decoded with the file's own format sections (each event's ID and its fields'
//! offsets and sizes), so a file from another kernel version reads alike. Ring-buffer pages are
//! read as the kernel lays them out (kernel/trace/ring_buffer.c; libtraceevent's kbuffer reads
//! them back): a page header of a 64-bit timestamp and a `long` commit whose high bits flag
//! missed events (bit 31; bit 30: their count is stored after the data), then events of a 32-bit
//! header `type_len:5 | time_delta:27` (type_len 1-28: 4-byte words of payload; 0: the length is
//! in the next word; 29: padding; 30: a time extend; 31: an absolute timestamp). A page that
//! says events were missed ends the import there, as the text reader's lost-events marker does.
//!
//! Memory: one page (uncompressed) or one chunk (compressed, a few pages) per CPU (the command
//! line gunzips a `.gz` to an unlinked temporary file, read at offsets like any other); the streams
//! are merged by time with a heap. The header sections are read whole (capped at
//! [`MAX_SECTION`]); only the event formats, the command lines and the kallsyms addresses of
//! `hrtimer_wakeup` are kept.

use super::build::Builder;
use super::{Backing, Ctx, ImportError, Kind, PrevState, Rec};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::Read;

/// The first bytes of every trace.dat.
pub const MAGIC: &[u8] = &[0x17, 0x08, 0x44, b't', b'r', b'a', b'c', b'i', b'n', b'g'];

/// The largest header section, ring-buffer page or compressed chunk read (kallsyms of a large
/// kernel is ~10 MB).
pub const MAX_SECTION: u64 = 256 << 20;

/// Whether `head` (a file's first bytes) is a trace.dat.
pub fn is_tracedat(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// `hrtimer_expire_entry`'s `function`, `sched_switch`'s states: see [`decode`].
const TASK_REPORT_BITS: u64 = 0xff;
/// `common_flags` bits (include/linux/trace_events.h: TRACE_FLAG_HARDIRQ, _SOFTIRQ, _NMI).
const FLAG_HARDIRQ: u64 = 0x08;
const FLAG_SOFTIRQ: u64 = 0x10;
const FLAG_NMI: u64 = 0x40;
/// Page commit flags (kernel/trace/ring_buffer.c: RB_MISSED_EVENTS, RB_MISSED_STORED).
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;

/// Reads at byte offsets of the trace (the command line opens the file: no file access here).
pub trait ReadAt {
    fn read_exact_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<()>;
}

/// The trace, read at offsets.
struct Src {
    f: Backing,
    len: u64,
    origin: String,
    big_endian: bool,
}

impl Src {
    fn err(&self, at: u64, msg: impl Into<String>) -> ImportError {
        ImportError { origin: self.origin.clone(), line: 0, msg: format!("byte {at}: {}", msg.into()) }
    }

    fn read(&self, at: u64, n: u64, what: &str) -> Result<Vec<u8>, ImportError> {
        if n > MAX_SECTION {
            return Err(self.err(at, format!("{what} of {n} bytes is larger than the {MAX_SECTION}-byte limit")));
        }
        if at.checked_add(n).is_none_or(|e| e > self.len) {
            return Err(self
                .err(at, format!("truncated file: {what} needs {n} bytes here, the file ends at byte {}", self.len)));
        }
        self.f.read(at, n).map_err(|e| self.err(at, format!("cannot read {what}: {e}")))
    }
}

/// A cursor over bytes held in memory (a section), `base` being their offset in the file.
struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
    base: u64,
    src: &'a Src,
}

impl<'a> Rd<'a> {
    fn at(&self) -> u64 {
        self.base + self.pos as u64
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ImportError> {
        if self.b.len() - self.pos < n {
            return Err(self.src.err(
                self.at(),
                format!("truncated: {what} needs {n} bytes, {} are left in this part", self.b.len() - self.pos),
            ));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn uint(&mut self, n: usize, what: &str) -> Result<u64, ImportError> {
        let big = self.src.big_endian;
        Ok(uint(self.take(n, what)?, big))
    }
    fn cstr(&mut self, what: &str) -> Result<&'a str, ImportError> {
        let rest = &self.b[self.pos..];
        let n = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| self.src.err(self.at(), format!("truncated: {what} has no terminating NUL")))?;
        let s = std::str::from_utf8(&rest[..n])
            .map_err(|_| self.src.err(self.at(), format!("{what} is not UTF-8 text")))?;
        self.pos += n + 1;
        Ok(s)
    }
    /// A size-prefixed blob (`size_bytes` wide).
    fn blob(&mut self, size_bytes: usize, what: &str) -> Result<&'a [u8], ImportError> {
        let at = self.at();
        let n = self.uint(size_bytes, what)?;
        if n > (self.b.len() - self.pos) as u64 {
            return Err(self.src.err(
                at,
                format!("truncated: {what} says {n} bytes, {} are left in this part", self.b.len() - self.pos),
            ));
        }
        self.take(n as usize, what)
    }
}

fn uint(b: &[u8], big: bool) -> u64 {
    let mut v = 0u64;
    if big {
        for &x in b {
            v = v << 8 | u64::from(x);
        }
    } else {
        for &x in b.iter().rev() {
            v = v << 8 | u64::from(x);
        }
    }
    v
}

/// A field's place in an event's payload.
#[derive(Debug, Clone, Copy, Default)]
struct F {
    off: u16,
    size: u16,
    /// A dynamic array: `__data_loc` (the 32-bit field holds the data's offset in the payload
    /// and, above bit 16, its length) or `__rel_loc` (the offset counts from the field's end).
    loc: Loc,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
enum Loc {
    #[default]
    Fixed,
    Data,
    Rel,
}

/// How to decode one event ID.
#[derive(Debug, Clone)]
enum Dec {
    Switch {
        prev_comm: F,
        prev_pid: F,
        prev_prio: F,
        prev_state: F,
        next_comm: F,
        next_pid: F,
        next_prio: F,
    },
    Waking {
        comm: F,
        pid: F,
        prio: F,
        wakeup: bool,
    },
    WakeupNew {
        comm: F,
        pid: F,
        prio: F,
    },
    Fork {
        child_comm: F,
        child_pid: F,
    },
    Exit {
        pid: F,
    },
    Migrate {
        pid: F,
        dest_cpu: F,
    },
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
    HrtimerEntry {
        function: F,
    },
    TimerEntry,
    TimerExit,
    SetScheduler {
        pid: F,
        policy: F,
    },
    SetAffinity {
        pid: F,
    },
    Other,
    /// A known event whose format lacks a field the import needs: an error when it occurs.
    Bad(String),
}

struct Format {
    name: String,
    dec: Dec,
}

/// One event `format` text: its name, ID and fields (name, offset, size).
/// An event format: name, ID and fields.
type Parsed = (String, u16, Vec<(String, F)>);

fn parse_format(text: &str) -> Option<Parsed> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if let Some(n) = l.strip_prefix("name:") {
            name = Some(n.trim().to_string());
        } else if let Some(n) = l.strip_prefix("ID:") {
            id = n.trim().parse::<u16>().ok();
        } else if let Some(decl) = l.strip_prefix("field:") {
            let mut parts = decl.split(';');
            let d = parts.next()?.trim();
            let fname = d.rsplit(' ').next()?.split('[').next()?.to_string();
            let num = |key: &str| -> Option<u16> { l.split(key).nth(1)?.split(';').next()?.trim().parse().ok() };
            let loc = if d.starts_with("__data_loc ") {
                Loc::Data
            } else if d.starts_with("__rel_loc ") {
                Loc::Rel
            } else {
                Loc::Fixed
            };
            fields.push((fname, F { off: num("offset:")?, size: num("size:")?, loc }));
        }
    }
    Some((name?, id?, fields))
}

fn decoder(name: &str, fields: &[(String, F)]) -> Dec {
    let get = |n: &str| -> Result<F, String> {
        fields.iter().find(|(f, _)| f == n).map(|&(_, f)| f).ok_or_else(|| {
            format!("the format of {name} has no `{n}` field (expected the kernel's sched/irq/timer formats)")
        })
    };
    let r = (|| -> Result<Dec, String> {
        Ok(match name {
            "sched_switch" => Dec::Switch {
                prev_comm: get("prev_comm")?,
                prev_pid: get("prev_pid")?,
                prev_prio: get("prev_prio")?,
                prev_state: get("prev_state")?,
                next_comm: get("next_comm")?,
                next_pid: get("next_pid")?,
                next_prio: get("next_prio")?,
            },
            "sched_waking" | "sched_wakeup" => {
                Dec::Waking { comm: get("comm")?, pid: get("pid")?, prio: get("prio")?, wakeup: name == "sched_wakeup" }
            }
            "sched_wakeup_new" => Dec::WakeupNew { comm: get("comm")?, pid: get("pid")?, prio: get("prio")? },
            "sched_process_fork" => Dec::Fork { child_comm: get("child_comm")?, child_pid: get("child_pid")? },
            "sched_process_exit" => Dec::Exit { pid: get("pid")? },
            "sched_migrate_task" => Dec::Migrate { pid: get("pid")?, dest_cpu: get("dest_cpu")? },
            "irq_handler_entry" => Dec::IrqEntry,
            "irq_handler_exit" => Dec::IrqExit,
            "softirq_entry" => Dec::SoftirqEntry,
            "softirq_exit" => Dec::SoftirqExit,
            "hrtimer_expire_entry" => Dec::HrtimerEntry { function: get("function")? },
            "timer_expire_entry" => Dec::TimerEntry,
            "hrtimer_expire_exit" | "timer_expire_exit" => Dec::TimerExit,
            "sys_enter_sched_setscheduler" => Dec::SetScheduler { pid: get("pid")?, policy: get("policy")? },
            "sys_enter_sched_setaffinity" => Dec::SetAffinity { pid: get("pid")? },
            _ => Dec::Other,
        })
    })();
    r.unwrap_or_else(Dec::Bad)
}

/// What the header gave: formats by ID, command lines, `hrtimer_wakeup`'s addresses, the
/// ring-buffer page layout and where each CPU's data is.
struct Header {
    formats: BTreeMap<u16, Format>,
    comms: BTreeMap<u32, [u8; 16]>,
    hrtimer_wakeup: Vec<u64>,
    page_size: u64,
    long_size: usize,
    /// (offset of the data in a page, commit field's offset and size).
    data_off: u64,
    commit: F,
    cpus: Vec<CpuData>,
    /// The compression of the CPU data and of flagged sections (v7), if any.
    compression: Option<Compression>,
    version: u32,
}

#[derive(Debug, Clone, Copy)]
struct CpuData {
    cpu: u32,
    off: u64,
    size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Compression {
    Zlib,
    Zstd,
}

fn decompress(src: &Src, c: Option<Compression>, at: u64, data: &[u8], usize_: u64) -> Result<Vec<u8>, ImportError> {
    if usize_ > MAX_SECTION {
        return Err(src.err(at, format!("a compressed block of {usize_} bytes is larger than the limit")));
    }
    let mut out = Vec::with_capacity(usize_ as usize);
    let r = match c {
        Some(Compression::Zlib) => flate2::read::ZlibDecoder::new(data).take(usize_).read_to_end(&mut out),
        Some(Compression::Zstd) => match ruzstd::decoding::StreamingDecoder::new(data) {
            Ok(d) => d.take(usize_).read_to_end(&mut out),
            Err(e) => return Err(src.err(at, format!("bad zstd block: {e}"))),
        },
        None => return Err(src.err(at, "a compressed block in a file that names no compression")),
    };
    r.map_err(|e| src.err(at, format!("cannot decompress a block: {e}")))?;
    if out.len() as u64 != usize_ {
        return Err(src.err(at, format!("a compressed block gave {} bytes, its header says {usize_}", out.len())));
    }
    Ok(out)
}

/// The v7 section at `off`: its ID and its data (decompressed).
fn section(src: &Src, c: Option<Compression>, off: u64) -> Result<(u16, Vec<u8>), ImportError> {
    let h = src.read(off, 16, "a section header")?;
    let big = src.big_endian;
    let id = uint(&h[0..2], big) as u16;
    let flags = uint(&h[2..4], big);
    let size = uint(&h[8..16], big);
    let body = src.read(off + 16, size, "a section")?;
    if flags & 1 == 0 {
        return Ok((id, body));
    }
    if body.len() < 8 {
        return Err(src.err(off + 16, "truncated: a compressed section shorter than its 8-byte header"));
    }
    let cs = uint(&body[0..4], big) as usize;
    let us = uint(&body[4..8], big);
    if cs > body.len() - 8 {
        return Err(src.err(off + 16, format!("a compressed section says {cs} bytes, it has {}", body.len() - 8)));
    }
    Ok((id, decompress(src, c, off + 24, &body[8..8 + cs], us)?))
}

// trace-cmd's option IDs (lib/trace-cmd/include/trace-cmd.h, enum tracecmd_option_id).
const OPT_DONE: u16 = 0;
const OPT_BUFFER: u16 = 3;
const OPT_HEADER_INFO: u16 = 16;
const OPT_FTRACE_EVENTS: u16 = 17;
const OPT_EVENT_FORMATS: u16 = 18;
const OPT_KALLSYMS: u16 = 19;
const OPT_CMDLINES: u16 = 21;

impl Header {
    fn new(version: u32, long_size: usize, page_size: u64) -> Header {
        Header {
            formats: BTreeMap::new(),
            comms: BTreeMap::new(),
            hrtimer_wakeup: Vec::new(),
            page_size,
            long_size,
            data_off: 16,
            commit: F { off: 8, size: long_size as u16, loc: Loc::Fixed },
            cpus: Vec::new(),
            compression: None,
            version,
        }
    }

    /// `header_page` and `header_event` (the page layout: the commit field and the data).
    fn header_info(&mut self, r: &mut Rd) -> Result<(), ImportError> {
        for name in ["header_page", "header_event"] {
            let at = r.at();
            let got = r.cstr("a header name")?;
            if got != name {
                return Err(r.src.err(at, format!("expected `{name}`, found `{got}`")));
            }
            let text = r.blob(8, name)?;
            if name == "header_page" {
                let text = String::from_utf8_lossy(text);
                let (_, _, fields) = parse_format(&format!("name: page\nID: 0\n{text}"))
                    .ok_or_else(|| r.src.err(at, "header_page is not a format text"))?;
                for (n, f) in fields {
                    match n.as_str() {
                        "commit" => self.commit = f,
                        "data" => self.data_off = u64::from(f.off),
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    fn add_format(&mut self, r: &Rd, at: u64, text: &[u8]) -> Result<(), ImportError> {
        let text = String::from_utf8_lossy(text);
        let (name, id, fields) =
            parse_format(&text).ok_or_else(|| r.src.err(at, "an event format without `name:`, `ID:` or fields"))?;
        let dec = decoder(&name, &fields);
        self.formats.insert(id, Format { name, dec });
        Ok(())
    }

    /// A count (`count_what`), then that many length-prefixed format texts (`what`).
    fn counted_formats(&mut self, r: &mut Rd, count_what: &str, what: &str) -> Result<(), ImportError> {
        let n = r.uint(4, count_what)?;
        for _ in 0..n {
            let at = r.at();
            let t = r.blob(8, what)?;
            self.add_format(r, at, t)?;
        }
        Ok(())
    }

    fn ftrace_formats(&mut self, r: &mut Rd) -> Result<(), ImportError> {
        self.counted_formats(r, "the count of ftrace formats", "an ftrace format")
    }

    fn event_formats(&mut self, r: &mut Rd) -> Result<(), ImportError> {
        let systems = r.uint(4, "the count of event systems")?;
        for _ in 0..systems {
            r.cstr("a system name")?;
            self.counted_formats(r, "the count of a system's formats", "an event format")?;
        }
        Ok(())
    }

    fn kallsyms(&mut self, text: &[u8]) {
        for l in text.split(|&c| c == b'\n') {
            let mut it = l.split(|&c| c == b' ').filter(|s| !s.is_empty());
            let (Some(addr), Some(_), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            if name == b"hrtimer_wakeup" {
                if let Some(a) = std::str::from_utf8(addr).ok().and_then(|a| u64::from_str_radix(a, 16).ok()) {
                    self.hrtimer_wakeup.push(a);
                }
            }
        }
    }

    fn cmdlines(&mut self, text: &[u8]) {
        for l in text.split(|&c| c == b'\n') {
            let Some(sp) = l.iter().position(|&c| c == b' ') else { continue };
            let Some(pid) = std::str::from_utf8(&l[..sp]).ok().and_then(|p| p.parse::<u32>().ok()) else { continue };
            self.comms.insert(pid, comm16(&l[sp + 1..]));
        }
    }
}

fn comm16(b: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    let n = b.iter().position(|&x| x == 0).unwrap_or(b.len()).min(16);
    c[..n].copy_from_slice(&b[..n]);
    c
}

fn comm_str(c: &[u8]) -> &str {
    let n = c.iter().position(|&x| x == 0).unwrap_or(c.len());
    std::str::from_utf8(&c[..n]).unwrap_or("?")
}

/// The file's header up to the CPU data.
fn read_header(src: &mut Src) -> Result<Header, ImportError> {
    let head = src.read(0, 64.min(src.len), "the file header")?;
    if !is_tracedat(&head) {
        return Err(src.err(0, "not a trace.dat (expected the magic 17 08 44 `tracing`)"));
    }
    let vend = head[10..]
        .iter()
        .position(|&c| c == 0)
        .map(|n| 10 + n)
        .ok_or_else(|| src.err(10, "truncated: the version string has no terminating NUL"))?;
    let vs = std::str::from_utf8(&head[10..vend]).unwrap_or("?");
    let version: u32 = vs.parse().map_err(|_| src.err(10, format!("version `{vs}` is not a number")))?;
    if version != 6 && version != 7 {
        return Err(src.err(
            10,
            format!(
                "trace.dat version {version}: versions 6 and 7 are read (convert with `trace-cmd convert \
                 --file-version 7` or read `trace-cmd report` output)"
            ),
        ));
    }
    let p = vend + 1;
    if head.len() < p + 6 {
        return Err(src.err(p as u64, "truncated: the file ends inside its header"));
    }
    src.big_endian = head[p] != 0;
    let long_size = head[p + 1] as usize;
    if long_size != 4 && long_size != 8 {
        return Err(src.err(p as u64 + 1, format!("long size {long_size} (expected 4 or 8)")));
    }
    let page_size = uint(&head[p + 2..p + 6], src.big_endian);
    if !(64..=(1 << 20)).contains(&page_size) {
        return Err(src.err(p as u64 + 2, format!("page size {page_size} (expected 64 bytes to 1 MiB)")));
    }
    let mut h = Header::new(version, long_size, page_size);
    let after = (p + 6) as u64;
    if version == 6 {
        read_v6(src, &mut h, after)?;
    } else {
        read_v7(src, &mut h, after)?;
    }
    Ok(h)
}

/// A reader over the file from `at` to its end, one part at a time (v6's header is a sequence
/// of size-prefixed parts).
fn part(src: &Src, at: u64, prefix: usize, what: &str) -> Result<(Vec<u8>, u64), ImportError> {
    let n = uint(&src.read(at, prefix as u64, what)?, src.big_endian);
    let b = src.read(at + prefix as u64, n, what)?;
    Ok((b, at + prefix as u64 + n))
}

fn read_v6(src: &Src, h: &mut Header, mut at: u64) -> Result<(), ImportError> {
    // header_page, header_event: NAME\0, u64 size, text.
    let mut info = Vec::new();
    for name in ["header_page", "header_event"] {
        let nb = src.read(at, name.len() as u64 + 1, name)?;
        info.extend_from_slice(&nb);
        let (b, next) = part(src, at + nb.len() as u64, 8, name)?;
        info.extend_from_slice(&uint_bytes(b.len() as u64, 8, src.big_endian));
        info.extend_from_slice(&b);
        at = next;
    }
    let base = at - info.len() as u64;
    h.header_info(&mut Rd { b: &info, pos: 0, base, src })?;
    // ftrace formats: u32 count, each u64 size + text.
    let start = at;
    let n = uint(&src.read(at, 4, "the count of ftrace formats")?, src.big_endian);
    at += 4;
    for _ in 0..n {
        at = part(src, at, 8, "an ftrace format")?.1;
    }
    let b = src.read(start, at - start, "the ftrace formats")?;
    h.ftrace_formats(&mut Rd { b: &b, pos: 0, base: start, src })?;
    // event formats: u32 systems, each NAME\0, u32 count, each u64 size + text.
    let start = at;
    let systems = uint(&src.read(at, 4, "the count of event systems")?, src.big_endian);
    at += 4;
    for _ in 0..systems {
        let mut name_len = 0u64;
        loop {
            let c = src.read(at + name_len, 1, "a system name")?;
            name_len += 1;
            if c[0] == 0 {
                break;
            }
            if name_len > 256 {
                return Err(src.err(at, "a system name longer than 256 bytes"));
            }
        }
        at += name_len;
        let n = uint(&src.read(at, 4, "the count of a system's formats")?, src.big_endian);
        at += 4;
        for _ in 0..n {
            at = part(src, at, 8, "an event format")?.1;
        }
    }
    let b = src.read(start, at - start, "the event formats")?;
    h.event_formats(&mut Rd { b: &b, pos: 0, base: start, src })?;
    let (k, next) = part(src, at, 4, "kallsyms")?;
    h.kallsyms(&k);
    at = next;
    at = part(src, at, 4, "the printk formats")?.1;
    let (c, next) = part(src, at, 8, "the saved command lines")?;
    h.cmdlines(&c);
    at = next;
    let nr_cpus = uint(&src.read(at, 4, "the CPU count")?, src.big_endian);
    at += 4;
    if nr_cpus > u64::from(crate::limits::MAX_CPUS) {
        return Err(src.err(at - 4, format!("{nr_cpus} CPUs: beyond the {} schedsim models", crate::limits::MAX_CPUS)));
    }
    loop {
        let tag = src.read(at, 10, "a data section tag")?;
        at += 10;
        match &tag[..] {
            b"options  \0" => loop {
                let id = uint(&src.read(at, 2, "an option ID")?, src.big_endian) as u16;
                at += 2;
                if id == OPT_DONE {
                    break;
                }
                at = part(src, at, 4, "an option")?.1;
            },
            b"latency  \0" => {
                return Err(src.err(at - 10, "a latency-tracer file (text, no ring-buffer data): not a sched trace"))
            }
            b"flyrecord\0" => {
                for cpu in 0..nr_cpus as u32 {
                    let b = src.read(at, 16, "the per-CPU data table")?;
                    let (off, size) = (uint(&b[0..8], src.big_endian), uint(&b[8..16], src.big_endian));
                    h.cpus.push(CpuData { cpu, off, size });
                    at += 16;
                }
                return Ok(());
            }
            t => {
                return Err(src.err(
                    at - 10,
                    format!("expected `options`, `latency` or `flyrecord`, found {:?}", String::from_utf8_lossy(t)),
                ))
            }
        }
    }
}

fn uint_bytes(v: u64, n: usize, big: bool) -> Vec<u8> {
    let le = v.to_le_bytes();
    let mut b = le[..n].to_vec();
    if big {
        b.reverse();
    }
    b
}

fn read_v7(src: &Src, h: &mut Header, at: u64) -> Result<(), ImportError> {
    // Compression name and version, then the offset of the first option section.
    let b = src.read(at, 128.min(src.len.saturating_sub(at)), "the compression names")?;
    let mut r = Rd { b: &b, pos: 0, base: at, src };
    let comp = r.cstr("the compression name")?.to_string();
    r.cstr("the compression version")?;
    let mut opt_off = r.uint(8, "the offset of the options")?;
    h.compression = match comp.as_str() {
        "none" | "" => None,
        "zlib" => Some(Compression::Zlib),
        "zstd" => Some(Compression::Zstd),
        other => {
            return Err(src.err(
                at,
                format!(
                    "compression `{other}` is not read (zlib and zstd are): convert with `trace-cmd convert \
                     --compression none` or read `trace-cmd report` output"
                ),
            ))
        }
    };
    let mut seen = Vec::new();
    let mut buffer = None;
    while opt_off != 0 {
        if seen.contains(&opt_off) || seen.len() > 1000 {
            return Err(src.err(opt_off, "the option sections loop"));
        }
        seen.push(opt_off);
        let (id, data) = section(src, h.compression, opt_off)?;
        if id != OPT_DONE {
            return Err(src.err(opt_off, format!("expected an option section (ID 0), found section ID {id}")));
        }
        let mut r = Rd { b: &data, pos: 0, base: opt_off + 16, src };
        opt_off = 0;
        while r.pos < r.b.len() {
            let oid = r.uint(2, "an option ID")? as u16;
            let at = r.at();
            let body = r.blob(4, "an option")?;
            let off = || uint(&body[..body.len().min(8)], src.big_endian);
            match oid {
                OPT_DONE => {
                    opt_off = off();
                    break;
                }
                OPT_HEADER_INFO | OPT_FTRACE_EVENTS | OPT_EVENT_FORMATS | OPT_KALLSYMS | OPT_CMDLINES => {
                    if body.len() < 8 {
                        return Err(
                            src.err(at, format!("option {oid} has {} bytes, expected an 8-byte offset", body.len()))
                        );
                    }
                    let soff = off();
                    let (sid, sdata) = section(src, h.compression, soff)?;
                    if sid != oid {
                        return Err(src.err(soff, format!("option {oid} points at section ID {sid}")));
                    }
                    let mut sr = Rd { b: &sdata, pos: 0, base: soff + 16, src };
                    match oid {
                        OPT_HEADER_INFO => h.header_info(&mut sr)?,
                        OPT_FTRACE_EVENTS => h.ftrace_formats(&mut sr)?,
                        OPT_EVENT_FORMATS => h.event_formats(&mut sr)?,
                        OPT_KALLSYMS => h.kallsyms(sr.blob(4, "kallsyms")?),
                        _ => h.cmdlines(sr.blob(8, "the saved command lines")?),
                    }
                }
                // The top buffer (name ""); instances are left out.
                OPT_BUFFER if buffer.is_none() => {
                    let mut br = Rd { b: body, pos: 0, base: at + 4, src };
                    br.uint(8, "the buffer's offset")?;
                    let name = br.cstr("the buffer's name")?;
                    if !name.is_empty() {
                        continue;
                    }
                    br.cstr("the buffer's clock")?;
                    let ps = br.uint(4, "the buffer's page size")?;
                    if ps != h.page_size {
                        return Err(
                            src.err(at, format!("the buffer's page size {ps} is not the file's {}", h.page_size))
                        );
                    }
                    let n = br.uint(4, "the buffer's CPU count")?;
                    if n > u64::from(crate::limits::MAX_CPUS) {
                        return Err(
                            src.err(at, format!("{n} CPUs: beyond the {} schedsim models", crate::limits::MAX_CPUS))
                        );
                    }
                    let mut cpus = Vec::new();
                    for _ in 0..n {
                        let cpu = br.uint(4, "a CPU number")? as u32;
                        let off = br.uint(8, "a CPU's data offset")?;
                        let size = br.uint(8, "a CPU's data size")?;
                        cpus.push(CpuData { cpu, off, size });
                    }
                    buffer = Some(cpus);
                }
                _ => {}
            }
        }
    }
    if h.formats.is_empty() {
        return Err(src.err(0, "no event formats section (expected a trace-cmd v7 file with its header sections)"));
    }
    h.cpus = buffer.ok_or_else(|| src.err(0, "no BUFFER option: the file has no ring-buffer data"))?;
    Ok(())
}

/// One CPU's ring-buffer data, read a page (or a compressed chunk) at a time.
struct CpuStream {
    cpu: u32,
    /// The next page (uncompressed) or chunk (compressed) in the file, and the data's end.
    next_off: u64,
    end: u64,
    chunks_left: u64,
    compressed: bool,
    /// The page or chunk in memory and the byte offset of its start (in the file, or the
    /// chunk's when compressed: messages then name the chunk and the offset in its data).
    buf: Vec<u8>,
    buf_at: u64,
    /// The current page's start in `buf`, the read position and the end of its data.
    page: usize,
    pos: usize,
    commit_end: usize,
    ts: u64,
    started: bool,
    /// The item ready to merge.
    ready: Option<Item>,
}

#[derive(Debug, Clone, Copy)]
enum Item {
    /// An event: its timestamp and payload range in `buf`.
    Ev { ts: u64, start: usize, len: usize },
    /// The page says the ring buffer lost events before it (count, if stored).
    Lost { ts: u64, count: u64 },
}

impl Item {
    fn ts(&self) -> u64 {
        match *self {
            Item::Ev { ts, .. } | Item::Lost { ts, .. } => ts,
        }
    }
}

impl CpuStream {
    fn where_(&self, in_buf: usize) -> String {
        if self.compressed {
            format!("CPU {}: offset {in_buf} in the compressed chunk at byte {}", self.cpu, self.buf_at)
        } else {
            format!("byte {}: CPU {}", self.buf_at + in_buf as u64, self.cpu)
        }
    }

    fn err(&self, src: &Src, in_buf: usize, msg: impl Into<String>) -> ImportError {
        ImportError { origin: src.origin.clone(), line: 0, msg: format!("{}: {}", self.where_(in_buf), msg.into()) }
    }

    /// Load the next page; false at the end of this CPU's data.
    fn next_page(&mut self, src: &Src, h: &Header) -> Result<bool, ImportError> {
        let ps = h.page_size as usize;
        if self.started {
            self.page += ps;
        }
        if !self.started || self.page + ps > self.buf.len() {
            // Read the next page or chunk.
            if self.compressed {
                if self.chunks_left == 0 {
                    return Ok(false);
                }
                self.chunks_left -= 1;
                let hb = src.read(self.next_off, 8, "a compressed chunk header")?;
                let cs = uint(&hb[0..4], src.big_endian);
                let us = uint(&hb[4..8], src.big_endian);
                if self.next_off + 8 + cs > self.end {
                    return Err(src.err(
                        self.next_off,
                        format!("CPU {}: a chunk of {cs} bytes runs past the CPU's data", self.cpu),
                    ));
                }
                let data = src.read(self.next_off + 8, cs, "a compressed chunk")?;
                self.buf = decompress(src, h.compression, self.next_off + 8, &data, us)?;
                self.buf_at = self.next_off;
                self.next_off += 8 + cs;
            } else {
                if self.next_off >= self.end {
                    return Ok(false);
                }
                let n = (self.end - self.next_off).min(h.page_size);
                self.buf = src.read(self.next_off, n, "a ring-buffer page")?;
                self.buf_at = self.next_off;
                self.next_off += n;
            }
            self.page = 0;
            self.started = true;
            if self.buf.is_empty() {
                return self.next_page(src, h);
            }
        }
        self.started = true;
        let page = &self.buf[self.page..(self.page + ps).min(self.buf.len())];
        let d = h.data_off as usize;
        let c = h.commit;
        if page.len() < d || (c.off as usize + c.size as usize) > d {
            return Err(self.err(src, self.page, format!("a page of {} bytes, shorter than its header", page.len())));
        }
        let big = src.big_endian;
        self.ts = uint(&page[0..8], big);
        let commit_word = uint(&page[c.off as usize..c.off as usize + c.size as usize], big);
        let commit = (commit_word & COMMIT_MASK) as usize;
        if d + commit > page.len() {
            return Err(self.err(
                src,
                self.page + c.off as usize,
                format!("the page's commit of {commit} bytes runs past its end ({} data bytes)", page.len() - d),
            ));
        }
        self.pos = self.page + d;
        self.commit_end = self.page + d + commit;
        if commit_word & MISSED_EVENTS != 0 {
            let count = if commit_word & MISSED_STORED != 0 && d + commit + h.long_size <= page.len() {
                uint(&page[d + commit..d + commit + h.long_size], big)
            } else {
                0
            };
            self.ready = Some(Item::Lost { ts: self.ts, count });
        }
        Ok(true)
    }

    /// Decode up to the next event (or lost marker) into `ready`; None at the end.
    fn advance(&mut self, src: &Src, h: &Header) -> Result<(), ImportError> {
        self.ready = None;
        loop {
            if self.pos + 4 > self.commit_end {
                if !self.next_page(src, h)? {
                    return Ok(());
                }
                if self.ready.is_some() {
                    return Ok(());
                }
                continue;
            }
            let at = self.pos;
            let w = uint(&self.buf[at..at + 4], src.big_endian) as u32;
            let type_len = w & 0x1f;
            let delta = u64::from(w >> 5);
            let word = |s: &Self, i: usize| -> Result<u64, ImportError> {
                if i + 4 > s.commit_end {
                    return Err(s.err(src, i, "an event runs past the page's commit"));
                }
                Ok(uint(&s.buf[i..i + 4], src.big_endian))
            };
            match type_len {
                29 => {
                    // Padding: the rest of the page when time_delta is 0, else a discarded
                    // event whose length is in the next word.
                    if delta == 0 {
                        self.pos = self.commit_end;
                    } else {
                        let len = word(self, at + 4)? as usize;
                        self.pos = at + 4 + len.max(4);
                    }
                }
                30 => {
                    self.ts = self.ts.wrapping_add(word(self, at + 4)? << 27 | delta);
                    self.pos = at + 8;
                }
                31 => {
                    // An absolute timestamp (59 bits; the top bits are kept from before).
                    let abs = word(self, at + 4)? << 27 | delta;
                    self.ts = (self.ts & !((1u64 << 59) - 1)) | abs;
                    self.pos = at + 8;
                }
                0 => {
                    let len = word(self, at + 4)?.saturating_sub(4) as usize;
                    let start = at + 8;
                    if start + len > self.commit_end {
                        return Err(self.err(src, at, format!("an event of {len} bytes runs past the page's commit")));
                    }
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = start + len.div_ceil(4) * 4;
                    self.ready = Some(Item::Ev { ts: self.ts, start, len });
                    return Ok(());
                }
                n => {
                    let len = n as usize * 4;
                    let start = at + 4;
                    if start + len > self.commit_end {
                        return Err(self.err(src, at, format!("an event of {len} bytes runs past the page's commit")));
                    }
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = start + len;
                    self.ready = Some(Item::Ev { ts: self.ts, start, len });
                    return Ok(());
                }
            }
        }
    }
}

/// Read a whole trace.dat of `len` bytes into `builder`, the CPUs' streams merged by time.
pub fn read_tracedat(file: Box<dyn ReadAt>, len: u64, origin: &str, builder: &mut Builder) -> Result<(), ImportError> {
    read_src(&mut Src { f: Backing::File(file), len, origin: origin.into(), big_endian: false }, builder)
}

/// [`read_tracedat`] of a file's bytes held in memory (`origin` names it in errors).
pub fn read_tracedat_bytes(bytes: Vec<u8>, origin: &str, builder: &mut Builder) -> Result<(), ImportError> {
    let len = bytes.len() as u64;
    read_src(&mut Src { f: Backing::Mem(bytes), len, origin: origin.into(), big_endian: false }, builder)
}

fn read_src(src: &mut Src, builder: &mut Builder) -> Result<(), ImportError> {
    let h = read_header(src)?;
    let mut comms = h.comms.clone();
    let mut streams = Vec::new();
    for c in &h.cpus {
        if c.off.checked_add(c.size).is_none_or(|e| e > src.len) {
            return Err(src.err(
                c.off,
                format!("truncated file: CPU {}'s {} bytes of data run past the end (byte {})", c.cpu, c.size, src.len),
            ));
        }
        if c.cpu >= crate::limits::MAX_CPUS {
            return Err(
                src.err(c.off, format!("CPU {} is beyond the {} CPUs schedsim models", c.cpu, crate::limits::MAX_CPUS))
            );
        }
        if c.size == 0 {
            continue;
        }
        let compressed = h.compression.is_some() && h.version >= 7;
        let (next_off, chunks_left) = if compressed {
            (c.off + 4, uint(&src.read(c.off, 4, "the chunk count")?, src.big_endian))
        } else {
            (c.off, 0)
        };
        let mut s = CpuStream {
            cpu: c.cpu,
            next_off,
            // trace-cmd's size of compressed data leaves out the 4-byte chunk count.
            end: c.off + c.size + if compressed { 4 } else { 0 },
            chunks_left,
            compressed,
            buf: Vec::new(),
            buf_at: c.off,
            page: 0,
            pos: 0,
            commit_end: 0,
            ts: 0,
            started: false,
            ready: None,
        };
        s.advance(src, &h)?;
        streams.push(s);
    }
    let mut heap: BinaryHeap<Reverse<(u64, u32, usize)>> = BinaryHeap::new();
    for (i, s) in streams.iter().enumerate() {
        if let Some(it) = s.ready {
            heap.push(Reverse((it.ts(), s.cpu, i)));
        }
    }
    let mut last_ts = vec![0u64; streams.len()];
    let mut n = 0u64;
    while let Some(Reverse((ts, _, i))) = heap.pop() {
        let s = &streams[i];
        if ts < last_ts[i] {
            let at = match s.ready {
                Some(Item::Ev { start, .. }) => start,
                _ => s.page,
            };
            return Err(s.err(
                src,
                at,
                format!("timestamp {ts} ns is {} ns before the CPU's previous event", last_ts[i] - ts),
            ));
        }
        last_ts[i] = ts;
        n += 1;
        match s.ready {
            Some(Item::Lost { count, .. }) => {
                let rec = Rec {
                    ts_ns: ts,
                    cpu: s.cpu,
                    pid: 0,
                    comm: "",
                    ctx: None,
                    event: "lost",
                    kind: Kind::Lost { count },
                };
                builder.push(&rec, n);
            }
            Some(Item::Ev { start, len, .. }) => {
                let p = &s.buf[start..start + len];
                emit(src, &h, s, start, p, ts, &mut comms, builder, n)?;
            }
            None => {}
        }
        let s = &mut streams[i];
        s.advance(src, &h)?;
        if let Some(it) = s.ready {
            heap.push(Reverse((it.ts(), s.cpu, i)));
        }
    }
    if n == 0 {
        return Err(src.err(0, "no events in the file's ring-buffer data"));
    }
    Ok(())
}

/// Decode one event's payload into a record for the builder.
#[allow(clippy::too_many_arguments)]
fn emit(
    src: &Src,
    h: &Header,
    s: &CpuStream,
    start: usize,
    p: &[u8],
    ts: u64,
    comms: &mut BTreeMap<u32, [u8; 16]>,
    builder: &mut Builder,
    n: u64,
) -> Result<(), ImportError> {
    let big = src.big_endian;
    if p.len() < 8 {
        return Err(s.err(src, start, format!("an event of {} bytes, shorter than the common fields", p.len())));
    }
    let id = uint(&p[0..2], big) as u16;
    let flags = u64::from(p[2]);
    let pid = uint(&p[4..8], big) as u32;
    let fmt = h.formats.get(&id).ok_or_else(|| {
        s.err(
            src,
            start,
            format!("event ID {id} has no format in the file (expected the formats of every recorded event)"),
        )
    })?;
    let field = |f: F| -> Result<u64, ImportError> {
        let (o, z) = (f.off as usize, f.size as usize);
        if o + z > p.len() || z > 8 {
            return Err(s.err(
                src,
                start,
                format!("{}: a field at offset {o} of {z} bytes does not fit the event's {} bytes", fmt.name, p.len()),
            ));
        }
        Ok(uint(&p[o..o + z], big))
    };
    let bytes = |f: F| -> Result<&[u8], ImportError> {
        let (mut o, mut z) = (f.off as usize, f.size as usize);
        if f.loc != Loc::Fixed {
            let v = p.get(o..o + 4).map(|b| uint(b, big) as usize).unwrap_or(usize::MAX);
            let base = if f.loc == Loc::Rel { o + 4 } else { 0 };
            (o, z) = ((v & 0xffff) + base, v >> 16);
        }
        p.get(o..o.saturating_add(z)).ok_or_else(|| {
            s.err(
                src,
                start,
                format!("{}: a field at offset {o} of {z} bytes does not fit the event's {} bytes", fmt.name, p.len()),
            )
        })
    };
    let mut learn: Option<(u32, [u8; 16])> = None;
    let mut learn2: Option<(u32, [u8; 16])> = None;
    let mut wake_comm = [0u8; 16];
    let kind = match &fmt.dec {
        Dec::Switch { prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio } => {
            let st = field(*prev_state)? & TASK_REPORT_BITS;
            let prev_state = match st {
                0 => PrevState::Runnable,
                _ if st & 1 != 0 => PrevState::Sleep,
                _ if st & 2 != 0 => PrevState::Disk,
                _ => PrevState::Other,
            };
            let pp = field(*prev_pid)? as u32;
            let np = field(*next_pid)? as u32;
            learn = Some((pp, comm16(bytes(*prev_comm)?)));
            let nc = comm16(bytes(*next_comm)?);
            learn2 = Some((np, nc));
            wake_comm = nc;
            Kind::Switch {
                prev_pid: pp,
                prev_prio: field(*prev_prio)? as u32,
                prev_state,
                next_pid: np,
                next_prio: field(*next_prio)? as u32,
                next_comm: "",
            }
        }
        Dec::Waking { comm, pid, prio, wakeup } => {
            let wp = field(*pid)? as u32;
            wake_comm = comm16(bytes(*comm)?);
            learn = Some((wp, wake_comm));
            let prio = field(*prio)? as u32;
            if *wakeup {
                Kind::Wakeup { pid: wp, prio, comm: "" }
            } else {
                Kind::Waking { pid: wp, prio, comm: "" }
            }
        }
        Dec::WakeupNew { comm, pid, prio } => {
            let wp = field(*pid)? as u32;
            learn = Some((wp, comm16(bytes(*comm)?)));
            Kind::WakeupNew { pid: wp, prio: field(*prio)? as u32 }
        }
        Dec::Fork { child_comm, child_pid } => {
            let cp = field(*child_pid)? as u32;
            wake_comm = comm16(bytes(*child_comm)?);
            learn = Some((cp, wake_comm));
            Kind::Fork { child_pid: cp, child_comm: "" }
        }
        Dec::Exit { pid } => Kind::Exit { pid: field(*pid)? as u32 },
        Dec::Migrate { pid, dest_cpu } => {
            Kind::Migrate { pid: field(*pid)? as u32, dest_cpu: field(*dest_cpu)? as u32 }
        }
        Dec::IrqEntry => Kind::IrqEntry,
        Dec::IrqExit => Kind::IrqExit,
        Dec::SoftirqEntry => Kind::SoftirqEntry,
        Dec::SoftirqExit => Kind::SoftirqExit,
        Dec::HrtimerEntry { function } => {
            let f = field(*function)?;
            Kind::TimerEntry { wakeup: h.hrtimer_wakeup.contains(&f) }
        }
        Dec::TimerEntry => Kind::TimerEntry { wakeup: false },
        Dec::TimerExit => Kind::TimerExit,
        Dec::SetScheduler { pid, policy } => {
            Kind::SetScheduler { pid: field(*pid)? as u32, policy: field(*policy)? as u32 }
        }
        Dec::SetAffinity { pid } => Kind::SetAffinity { pid: field(*pid)? as u32 },
        Dec::Other => Kind::Other,
        Dec::Bad(m) => return Err(s.err(src, start, m.clone())),
    };
    // The current task's name: the saved command lines (as `trace-cmd report` prints it), else
    // the first comm field of a sched event that named the pid.
    let cur = comms.get(&pid).copied().unwrap_or([0; 16]);
    let cur_str = match pid {
        0 => "<idle>",
        _ if cur[0] == 0 => "<...>",
        _ => comm_str(&cur),
    };
    let wc = comm_str(&wake_comm);
    let kind = match kind {
        Kind::Switch { prev_pid, prev_prio, prev_state, next_pid, next_prio, .. } => {
            Kind::Switch { prev_pid, prev_prio, prev_state, next_pid, next_prio, next_comm: wc }
        }
        Kind::Waking { pid, prio, .. } => Kind::Waking { pid, prio, comm: wc },
        Kind::Wakeup { pid, prio, .. } => Kind::Wakeup { pid, prio, comm: wc },
        Kind::Fork { child_pid, .. } => Kind::Fork { child_pid, child_comm: wc },
        k => k,
    };
    let ctx = Some(if flags & (FLAG_HARDIRQ | FLAG_NMI) != 0 {
        Ctx::Irq
    } else if flags & FLAG_SOFTIRQ != 0 {
        Ctx::Softirq
    } else {
        Ctx::Task
    });
    let rec = Rec { ts_ns: ts, cpu: s.cpu, pid, comm: cur_str, ctx, event: &fmt.name, kind };
    builder.push(&rec, n);
    for (p, c) in [learn, learn2].into_iter().flatten() {
        if p != 0 && c[0] != 0 {
            comms.entry(p).or_insert(c);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_with_their_offsets() {
        let t = "name: sched_waking\nID: 323\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                 \tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
                 \tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\nprint fmt: \"comm=%s\"\n";
        let (name, id, fields) = parse_format(t).unwrap();
        assert_eq!((name.as_str(), id, fields.len()), ("sched_waking", 323, 4));
        assert_eq!((fields[1].0.as_str(), fields[1].1.off, fields[1].1.size), ("comm", 8, 16));
        assert!(matches!(decoder(&name, &fields), Dec::Waking { pid: F { off: 24, size: 4, .. }, .. }));
        // A known event without a needed field: an error when it occurs, naming the field.
        match decoder("sched_switch", &fields) {
            Dec::Bad(m) => assert!(m.contains("prev_comm"), "{m}"),
            d => panic!("{d:?}"),
        }
    }

    /// A hand-made page: a small event, a time extend, a long event (length word), an absolute
    /// timestamp, a padding to the end; then a page that says events were lost.
    #[test]
    fn ring_buffer_pages_decode_extends_long_events_absolute_stamps_and_lost_flags() {
        let mut page = vec![0u8; 4096];
        let mut data: Vec<u32> = Vec::new();
        data.push(3 | 5 << 5); // 12 bytes, delta 5
        data.extend([7, 8, 9]);
        data.push(30 | 3 << 5); // time extend: + (1 << 27) + 3
        data.push(1);
        data.push(7 << 5); // type_len 0, delta 7: the length (payload + 4) follows
        data.push(24 + 4);
        data.extend([1; 6]);
        data.push(31 | 11 << 5); // absolute: 2 << 27 | 11
        data.push(2);
        data.push(1 | 1 << 5); // 4 bytes, delta 1
        data.push(42);
        data.push(29); // padding, delta 0: the rest of the page
        let commit = data.len() * 4 + 12;
        page[0..8].copy_from_slice(&1000u64.to_le_bytes());
        page[8..16].copy_from_slice(&(commit as u64).to_le_bytes());
        for (i, w) in data.iter().enumerate() {
            page[16 + i * 4..20 + i * 4].copy_from_slice(&w.to_le_bytes());
        }
        let mut lost = vec![0u8; 4096];
        lost[0..8].copy_from_slice(&5_000_000_000u64.to_le_bytes());
        lost[8..16].copy_from_slice(&(MISSED_EVENTS | MISSED_STORED).to_le_bytes());
        lost[16..24].copy_from_slice(&77u64.to_le_bytes());
        let mut bytes = page;
        bytes.extend(lost);
        let len = bytes.len() as u64;
        let src = Src { f: Backing::Mem(bytes), len, origin: "mem".into(), big_endian: false };
        let h = Header::new(6, 8, 4096);
        let mut s = CpuStream {
            cpu: 0,
            next_off: 0,
            end: len,
            chunks_left: 0,
            compressed: false,
            buf: Vec::new(),
            buf_at: 0,
            page: 0,
            pos: 0,
            commit_end: 0,
            ts: 0,
            started: false,
            ready: None,
        };
        let mut got = Vec::new();
        loop {
            s.advance(&src, &h).unwrap();
            match s.ready {
                Some(Item::Ev { ts, start, len }) => got.push((ts, start, len, 0)),
                Some(Item::Lost { ts, count }) => got.push((ts, 0, 0, count)),
                None => break,
            }
        }
        let t1 = 1005 + (1 << 27) + 3 + 7;
        assert_eq!(
            got,
            [(1005, 20, 12, 0), (t1, 48, 24, 0), ((2 << 27 | 11) + 1, 84, 4, 0), (5_000_000_000, 0, 0, 77)]
        );
        // A commit longer than the page: an error naming the byte.
        let mut bad = vec![0u8; 4096];
        bad[8..16].copy_from_slice(&5000u64.to_le_bytes());
        let src = Src { f: Backing::Mem(bad), len: 4096, origin: "mem".into(), big_endian: false };
        s = CpuStream {
            next_off: 0,
            end: 4096,
            started: false,
            buf: Vec::new(),
            ready: None,
            commit_end: 0,
            pos: 0,
            ..s
        };
        let e = s.advance(&src, &h).unwrap_err().to_string();
        assert_eq!(e, "mem: byte 8: CPU 0: the page's commit of 5000 bytes runs past its end (4080 data bytes)");
    }

    #[test]
    fn integers_follow_the_file_endianness() {
        assert_eq!(uint(&[1, 2], false), 0x0201);
        assert_eq!(uint(&[1, 2], true), 0x0102);
        assert_eq!(uint_bytes(0x0102, 2, true), vec![1, 2]);
    }
}
