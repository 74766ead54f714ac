//! Streaming trace files: the output-file discipline shared by every format, the name table the
//! writers keep, and the ftrace text writer as a [`TraceSink`].
//!
//! Every writer takes records in chunks while the run goes on ([`TraceBuf::flush`]
//! (super::TraceBuf::flush)), so memory stays bounded however long the trace. Output is written
//! to `FILE.partial` and renamed to `FILE` when complete; a failed or abandoned run removes the
//! partial file (also on drop). A target that is not a regular file (`/dev/stdout`, `/dev/full`,
//! a FIFO) is written in place, never renamed over.
//!
//! Formats whose header needs numbers known only at the end (the text header's record count,
//! trace.dat's command lines and per-CPU offsets) stream their body into a spill file next to
//! the target and assemble the final file from it in [`TraceSink::finish`] (a kernel-side copy).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{ftrace, Record, TaskInfo, TraceSink};
use crate::hw::cpumask::CpuMask;

/// The trace file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// `cat /sys/kernel/tracing/trace`.
    Text,
    /// Perfetto's protobuf trace (`perfetto.protos.Trace`), ftrace bundles per CPU.
    Perfetto,
    /// trace-cmd's `trace.dat` (file format version 6), for `trace-cmd report` and KernelShark.
    Dat,
}

impl TraceFormat {
    pub const NAMES: &'static [&'static str] = &["text", "perfetto", "dat"];

    /// The format a file name implies: `.perfetto-trace`, `.pftrace` or `.pb` is Perfetto,
    /// `.dat` is trace.dat, anything else is text.
    pub fn from_path(p: &Path) -> TraceFormat {
        let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        if name.ends_with(".perfetto-trace") || name.ends_with(".pftrace") || name.ends_with(".pb") {
            TraceFormat::Perfetto
        } else if name.ends_with(".dat") {
            TraceFormat::Dat
        } else {
            TraceFormat::Text
        }
    }

    pub fn parse(s: &str) -> Result<TraceFormat, String> {
        match s {
            "text" | "ftrace" => Ok(TraceFormat::Text),
            "perfetto" | "proto" => Ok(TraceFormat::Perfetto),
            "dat" | "trace.dat" | "trace-cmd" => Ok(TraceFormat::Dat),
            _ => Err(format!("--trace-format '{s}': expected one of: {}", TraceFormat::NAMES.join(", "))),
        }
    }
}

/// Open a streaming writer of `format` for `path`.
pub fn open(path: &Path, format: TraceFormat, nr_cpus: u32) -> io::Result<Box<dyn TraceSink>> {
    Ok(match format {
        TraceFormat::Text => Box::new(TextSink::create(path, nr_cpus)?),
        TraceFormat::Perfetto => Box::new(super::perfetto::PerfettoSink::create(path, nr_cpus)?),
        TraceFormat::Dat => Box::new(super::tracedat::DatSink::create(path, nr_cpus)?),
    })
}

/// The files and settings a run must put right when a signal ends it: the partial files that
/// exist now, and undo actions (tracefs settings a capture changed). The command line's signal
/// thread (`cli::signals`) calls [`partials::clean_up_for_signal`], which removes and undoes
/// them all and then keeps the registry locked until the process dies, so that nothing
/// registered or written under [`partials::whole`] starts after it.
pub mod partials {
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, MutexGuard};

    type Undo = Box<dyn FnMut() + Send>;

    #[derive(Default)]
    struct Registry {
        files: Vec<PathBuf>,
        undo: Vec<(u64, Undo)>,
        next: u64,
    }

    static REGISTRY: Mutex<Registry> = Mutex::new(Registry { files: Vec::new(), undo: Vec::new(), next: 0 });

    fn lock() -> MutexGuard<'static, Registry> {
        REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Note `path` as a partial file, before it is created.
    pub fn register(path: &Path) {
        lock().files.push(path.to_path_buf());
    }

    /// Forget `path` (renamed into place or removed).
    pub fn unregister(path: &Path) {
        let mut r = lock();
        if let Some(i) = r.files.iter().rposition(|p| p == path) {
            r.files.swap_remove(i);
        }
    }

    /// Remove `path` and forget it, in one step a signal cannot split.
    pub fn remove(path: &Path) {
        let mut r = lock();
        let _ = std::fs::remove_file(path);
        if let Some(i) = r.files.iter().rposition(|p| p == path) {
            r.files.swap_remove(i);
        }
    }

    /// Run `undo` if a signal ends the process before [`forget_undo`] is called with the id
    /// returned. `undo` runs with the registry locked: it must not call this module.
    pub fn on_signal(undo: impl FnMut() + Send + 'static) -> u64 {
        let mut r = lock();
        r.next += 1;
        let id = r.next;
        r.undo.push((id, Box::new(undo)));
        id
    }

    /// Drop the undo action `id` (the owner has undone it itself).
    pub fn forget_undo(id: u64) {
        lock().undo.retain(|(i, _)| *i != id);
    }

    /// Run `f` so that a signal's clean-up happens wholly before or wholly after it: a line
    /// appended, a tracefs setting written, an undo done by its owner. `f` must not call this
    /// module.
    pub fn whole<T>(f: impl FnOnce() -> T) -> T {
        let _r = lock();
        f()
    }

    /// Remove every partial file and run every undo action, newest first; the registry stays
    /// locked for the rest of the process's life (the caller then dies of the signal).
    pub fn clean_up_for_signal() {
        let mut r = lock();
        for p in r.files.drain(..) {
            let _ = std::fs::remove_file(p);
        }
        while let Some((_, mut undo)) = r.undo.pop() {
            undo();
        }
        std::mem::forget(r);
    }

    /// The partial files registered now (tests).
    pub fn registered() -> Vec<PathBuf> {
        lock().files.clone()
    }
}

fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| !m.is_file()).unwrap_or(false)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// An output file written completely or not at all.
pub struct Output {
    path: PathBuf,
    /// The temporary file, renamed to `path` on commit; `None` when writing in place.
    tmp: Option<PathBuf>,
    w: Option<BufWriter<File>>,
}

impl Output {
    pub fn create(path: &Path) -> io::Result<Output> {
        let (tmp, f) = if is_special(path) {
            (None, std::fs::OpenOptions::new().write(true).open(path)?)
        } else {
            let tmp = with_suffix(path, ".partial");
            partials::register(&tmp);
            match File::create(&tmp) {
                Ok(f) => (Some(tmp), f),
                Err(e) => {
                    partials::unregister(&tmp);
                    return Err(e);
                }
            }
        };
        Ok(Output { path: path.to_path_buf(), tmp, w: Some(BufWriter::with_capacity(256 * 1024, f)) })
    }

    pub fn w(&mut self) -> &mut BufWriter<File> {
        self.w.as_mut().expect("output open")
    }

    /// Flush, sync and rename into place.
    pub fn commit(mut self) -> io::Result<()> {
        let w = self.w.take().expect("output open");
        let f = w.into_inner().map_err(|e| e.into_error())?;
        if let Some(tmp) = self.tmp.take() {
            f.sync_all()?;
            drop(f);
            if let Err(e) = std::fs::rename(&tmp, &self.path) {
                partials::remove(&tmp);
                return Err(e);
            }
            partials::unregister(&tmp);
        }
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            self.w = None;
            partials::remove(&tmp);
        }
    }
}

/// A spill file next to the target (or in the temporary directory when the target is not a
/// regular file), removed on drop.
pub struct Spill {
    pub path: PathBuf,
    pub w: BufWriter<File>,
    pub len: u64,
}

impl Spill {
    pub fn create(target: &Path, tag: &str) -> io::Result<Spill> {
        let path = if is_special(target) {
            std::env::temp_dir().join(format!("schedsim-{}-{tag}.partial", std::process::id()))
        } else {
            with_suffix(target, &format!(".{tag}.partial"))
        };
        partials::register(&path);
        let f = match std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path) {
            Ok(f) => f,
            Err(e) => {
                partials::unregister(&path);
                return Err(e);
            }
        };
        Ok(Spill { path, w: BufWriter::with_capacity(256 * 1024, f), len: 0 })
    }

    pub fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.len += b.len() as u64;
        self.w.write_all(b)
    }

    /// Flush and return the file for reading from the start.
    pub fn reader(&mut self) -> io::Result<&File> {
        use std::io::Seek;
        self.w.flush()?;
        self.w.get_mut().seek(io::SeekFrom::Start(0))?;
        Ok(self.w.get_ref())
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        partials::remove(&self.path);
    }
}

/// pid -> comm, as the writers learn tasks; pid 0 is the per-CPU `swapper/N`.
#[derive(Default)]
pub struct NameTable {
    /// Indexed by pid for small pids (the model's pids are dense and small).
    dense: Vec<Option<String>>,
    sparse: std::collections::BTreeMap<u32, String>,
    swapper: Vec<String>,
    /// `%*pb` texts of the current chunk's masks.
    pub masks: Vec<String>,
    /// The run's background function names (indexed by the records' `func`).
    pub funcs: Vec<String>,
}

const DENSE_PIDS: u32 = 1 << 20;

impl NameTable {
    pub fn new(nr_cpus: u32) -> NameTable {
        NameTable { swapper: (0..nr_cpus).map(|c| format!("swapper/{c}")).collect(), ..Default::default() }
    }

    pub fn add(&mut self, t: &TaskInfo) {
        if t.pid < DENSE_PIDS {
            let i = t.pid as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense[i] = Some(t.comm.clone());
        } else {
            self.sparse.insert(t.pid, t.comm.clone());
        }
    }

    pub fn set_masks(&mut self, masks: &[CpuMask]) {
        self.masks.clear();
        self.masks.extend(masks.iter().map(|m| super::cpumask_pb(m, m.nr_cpus())));
    }

    /// The comm of `pid`, if known (pid 0 is `swapper/<cpu>`).
    #[inline]
    pub fn get(&self, pid: u32, cpu: u32) -> Option<&str> {
        if pid == 0 {
            return Some(self.swapper.get(cpu as usize).map_or("swapper", |s| s.as_str()));
        }
        if pid < DENSE_PIDS {
            self.dense.get(pid as usize).and_then(|c| c.as_deref())
        } else {
            self.sparse.get(&pid).map(|s| s.as_str())
        }
    }
}

impl ftrace::Names for NameTable {
    #[inline]
    fn comm(&self, pid: u32, cpu: u32) -> &str {
        self.get(pid, cpu).unwrap_or("<...>")
    }
    fn cpumask(&self, id: u32) -> &str {
        self.masks.get(id as usize).map_or("", |s| s.as_str())
    }
    fn func(&self, id: u32) -> &str {
        self.funcs.get(id as usize).map_or("", |s| s.as_str())
    }
}

/// The ftrace text writer: lines stream into a spill file; [`TraceSink::finish`] writes the
/// header (which names the record count) and copies the lines after it.
pub struct TextSink {
    target: PathBuf,
    nr_cpus: u32,
    names: NameTable,
    body: Spill,
    buf: Vec<u8>,
    n: u64,
}

impl TextSink {
    pub fn create(path: &Path, nr_cpus: u32) -> io::Result<TextSink> {
        // Fail early, before the run, if the target cannot be created.
        drop(Output::create(path)?);
        Ok(TextSink {
            target: path.to_path_buf(),
            nr_cpus,
            names: NameTable::new(nr_cpus),
            body: Spill::create(path, "body")?,
            buf: Vec::with_capacity(1 << 20),
            n: 0,
        })
    }
}

impl TraceSink for TextSink {
    fn funcs(&mut self, names: &[String]) {
        self.names.funcs = names.to_vec();
    }

    fn tasks(&mut self, new: &[TaskInfo]) {
        for t in new {
            self.names.add(t);
        }
    }

    fn write(&mut self, records: &[Record], masks: &[CpuMask]) -> io::Result<()> {
        self.names.set_masks(masks);
        for r in records {
            ftrace::write_record(&mut self.buf, r, &self.names);
            if self.buf.len() >= 1 << 20 {
                self.body.write(&self.buf)?;
                self.buf.clear();
            }
        }
        self.n += records.len() as u64;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> io::Result<u64> {
        let buf = std::mem::take(&mut self.buf);
        self.body.write(&buf)?;
        let mut out = Output::create(&self.target)?;
        let mut head = Vec::new();
        ftrace::write_header(&mut head, self.n as usize, self.nr_cpus);
        out.w().write_all(&head)?;
        out.w().flush()?;
        let mut body = self.body.reader()?;
        io::copy(&mut body, out.w().get_mut())?;
        out.commit()?;
        Ok(self.n)
    }

    fn abort(self: Box<Self>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_file_name() {
        assert_eq!(TraceFormat::from_path(Path::new("/tmp/t.perfetto-trace")), TraceFormat::Perfetto);
        assert_eq!(TraceFormat::from_path(Path::new("t.pftrace")), TraceFormat::Perfetto);
        assert_eq!(TraceFormat::from_path(Path::new("trace.dat")), TraceFormat::Dat);
        assert_eq!(TraceFormat::from_path(Path::new("t.txt")), TraceFormat::Text);
        assert_eq!(TraceFormat::from_path(Path::new("t")), TraceFormat::Text);
        assert!(TraceFormat::parse("json").unwrap_err().contains("text, perfetto, dat"));
    }

    #[test]
    fn an_abandoned_output_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("schedsim-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.txt");
        {
            let mut o = Output::create(&p).unwrap();
            o.w().write_all(b"half").unwrap();
            let _s = Spill::create(&p, "body").unwrap();
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert!(!partials::registered().iter().any(|r| r.starts_with(&dir)));
        let mut o = Output::create(&p).unwrap();
        o.w().write_all(b"whole").unwrap();
        assert!(partials::registered().contains(&dir.join("t.txt.partial")));
        o.commit().unwrap();
        assert!(!partials::registered().iter().any(|r| r.starts_with(&dir)));
        assert_eq!(std::fs::read(&p).unwrap(), b"whole");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
