//! The rt-app JSON grammar (rt-app's `doc/tutorial.txt`, `src/rt-app_parse_config.c`): a small
//! JSON reader that keeps key order and line numbers and accepts what rt-app's json-c accepts
//! beyond strict JSON (`/* */` and `//` comments, trailing commas), then the rt-app objects
//! (`global`, `tasks`, threads, phases, events) with every key checked. An error names the
//! file, the line and the JSON path (`tasks.thread0.phases.p1.run`) and says what was expected.
//!
//! Semantics taken from rt-app's parser: the events of a phase run in the order their keys
//! appear; an event key may carry any suffix (`run0`, `sleep1`, `timer_a`), recognised by its
//! prefix as rt-app's `obj_is_event()` does (`runtime` before `run`); a thread without a
//! `phases` object is one phase whose `loop` is the thread's `loop` (the thread then runs it
//! once); with `phases`, the thread's `loop` (default -1, forever) repeats all phases, each
//! phase's own `loop` defaulting to 1.

use std::fmt;

/// A JSON value with the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct JVal {
    pub line: u32,
    pub v: J,
}

/// JSON value kinds. Objects keep their keys in file order, each with its line.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<JVal>),
    Obj(Vec<(String, u32, JVal)>),
}

impl J {
    fn kind(&self) -> &'static str {
        match self {
            J::Null => "null",
            J::Bool(_) => "a boolean",
            J::Int(_) => "an integer",
            J::Float(_) => "a number with a fraction",
            J::Str(_) => "a string",
            J::Arr(_) => "an array",
            J::Obj(_) => "an object",
        }
    }
}

/// A parse or grammar error: `file:line: path: message`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonError {
    pub origin: String,
    pub line: u32,
    pub path: String,
    pub msg: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}:{}: {}", self.origin, self.line, self.msg)
        } else {
            write!(f, "{}:{}: {}: {}", self.origin, self.line, self.path, self.msg)
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    line: u32,
}

impl Reader<'_> {
    fn err(&self, msg: String) -> (u32, String) {
        (self.line, msg)
    }

    /// Skip white space and comments.
    fn ws(&mut self) -> Result<(), (u32, String)> {
        loop {
            match self.b.get(self.i) {
                Some(b'\n') => {
                    self.line += 1;
                    self.i += 1;
                }
                Some(b' ' | b'\t' | b'\r') => self.i += 1,
                Some(b'/') if self.b.get(self.i + 1) == Some(&b'*') => {
                    let start = self.line;
                    self.i += 2;
                    loop {
                        match self.b.get(self.i) {
                            None => return Err((start, "unterminated /* comment".into())),
                            Some(b'*') if self.b.get(self.i + 1) == Some(&b'/') => {
                                self.i += 2;
                                break;
                            }
                            Some(b'\n') => {
                                self.line += 1;
                                self.i += 1;
                            }
                            _ => self.i += 1,
                        }
                    }
                }
                Some(b'/') if self.b.get(self.i + 1) == Some(&b'/') => {
                    while self.b.get(self.i).is_some_and(|&c| c != b'\n') {
                        self.i += 1;
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: u32) -> Result<JVal, (u32, String)> {
        if depth > 64 {
            return Err(self.err("nesting deeper than 64 levels".into()));
        }
        self.ws()?;
        let line = self.line;
        let v = match self.b.get(self.i) {
            None => return Err(self.err("unexpected end of file (expected a value)".into())),
            Some(b'{') => {
                self.i += 1;
                let mut items: Vec<(String, u32, JVal)> = Vec::new();
                // The keys seen so far: a duplicate is found in O(log n), so a file of many
                // tasks parses in time linear in its size (not quadratic).
                let mut seen = std::collections::BTreeSet::new();
                loop {
                    self.ws()?;
                    if self.b.get(self.i) == Some(&b'}') {
                        self.i += 1;
                        break;
                    }
                    if self.b.get(self.i) != Some(&b'"') {
                        return Err(self.err(format!("expected a \"key\" or '}}', found {}", self.found())));
                    }
                    let kline = self.line;
                    let key = self.string()?;
                    if !seen.insert(key.clone()) {
                        return Err((
                            kline,
                            format!(
                                "duplicate key \"{key}\" in one object (rt-app's workgen renames repeated events; \
                                 give each its own suffix, e.g. \"{key}0\", \"{key}1\")"
                            ),
                        ));
                    }
                    self.ws()?;
                    if self.b.get(self.i) != Some(&b':') {
                        return Err(self.err(format!("expected ':' after \"{key}\", found {}", self.found())));
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    items.push((key, kline, v));
                    self.ws()?;
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            break;
                        }
                        _ => return Err(self.err(format!("expected ',' or '}}', found {}", self.found()))),
                    }
                }
                J::Obj(items)
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws()?;
                    if self.b.get(self.i) == Some(&b']') {
                        self.i += 1;
                        break;
                    }
                    items.push(self.value(depth + 1)?);
                    self.ws()?;
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            break;
                        }
                        _ => return Err(self.err(format!("expected ',' or ']', found {}", self.found()))),
                    }
                }
                J::Arr(items)
            }
            Some(b'"') => J::Str(self.string()?),
            Some(b't') if self.b[self.i..].starts_with(b"true") => {
                self.i += 4;
                J::Bool(true)
            }
            Some(b'f') if self.b[self.i..].starts_with(b"false") => {
                self.i += 5;
                J::Bool(false)
            }
            Some(b'n') if self.b[self.i..].starts_with(b"null") => {
                self.i += 4;
                J::Null
            }
            Some(c) if *c == b'-' || c.is_ascii_digit() => self.number()?,
            _ => return Err(self.err(format!("expected a value, found {}", self.found()))),
        };
        Ok(JVal { line, v })
    }

    fn found(&self) -> String {
        match self.b.get(self.i) {
            None => "the end of the file".into(),
            Some(&c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(&c) => format!("byte 0x{c:02x}"),
        }
    }

    fn string(&mut self) -> Result<String, (u32, String)> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.b.get(self.i) {
                None | Some(b'\n') => return Err(self.err("unterminated string".into())),
                Some(b'"') => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    let e = self.b.get(self.i + 1).copied();
                    self.i += 2;
                    match e {
                        Some(b'"') => out.push(b'"'),
                        Some(b'\\') => out.push(b'\\'),
                        Some(b'/') => out.push(b'/'),
                        Some(b'n') => out.push(b'\n'),
                        Some(b't') => out.push(b'\t'),
                        Some(b'r') => out.push(b'\r'),
                        Some(b'b') => out.push(8),
                        Some(b'f') => out.push(12),
                        Some(b'u') => {
                            let hex = self.b.get(self.i..self.i + 4).and_then(|h| std::str::from_utf8(h).ok());
                            let c = hex.and_then(|h| u32::from_str_radix(h, 16).ok()).and_then(char::from_u32);
                            let Some(c) = c else {
                                return Err(self.err("bad \\u escape (expected 4 hex digits)".into()));
                            };
                            self.i += 4;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(self.err("bad escape in string".into())),
                    }
                }
                Some(&c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| self.err("string is not valid UTF-8".into()))
    }

    fn number(&mut self) -> Result<J, (u32, String)> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        while self.b.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let mut float = false;
        while self.b.get(self.i).is_some_and(|&c| matches!(c, b'.' | b'e' | b'E' | b'+' | b'-' | b'0'..=b'9')) {
            float = true;
            self.i += 1;
        }
        let t = std::str::from_utf8(&self.b[start..self.i]).expect("ascii");
        if float {
            t.parse::<f64>().map(J::Float).map_err(|_| self.err(format!("bad number '{t}'")))
        } else {
            t.parse::<i64>().map(J::Int).map_err(|_| self.err(format!("bad or too large integer '{t}'")))
        }
    }
}

/// Parse JSON text (with rt-app's comment and trailing-comma leniency).
pub fn parse_json(text: &str, origin: &str) -> Result<JVal, JsonError> {
    let mut r = Reader { b: text.as_bytes(), i: 0, line: 1 };
    let err = |(line, msg): (u32, String)| JsonError { origin: origin.into(), line, path: String::new(), msg };
    let v = r.value(0).map_err(err)?;
    r.ws().map_err(err)?;
    if r.i < r.b.len() {
        return Err(err(r.err(format!("unexpected {} after the top-level value", r.found()))));
    }
    Ok(v)
}

// ------------------------------------------------------------------------------------------
// The rt-app objects
// ------------------------------------------------------------------------------------------

/// A scheduling policy rt-app accepts and the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Other,
    Fifo,
    Rr,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
        }
    }
}

/// `global.calibration`: a CPU to calibrate on, or ns per loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calibration {
    Cpu(u32),
    NsPerLoop(u64),
}

/// The `global` object.
#[derive(Debug, Clone, PartialEq)]
pub struct Global {
    /// Seconds; None: until every thread has finished (-1).
    pub duration_s: Option<u64>,
    pub calibration: Calibration,
    pub default_policy: Policy,
    pub lock_pages: bool,
    pub logdir: String,
    pub log_basename: String,
    /// `log_size: "disable"`: no log files.
    pub log_disabled: bool,
    pub ftrace: bool,
    pub gnuplot: bool,
    pub io_device: String,
    pub mem_buffer_size: u64,
    pub cumulative_slack: bool,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            duration_s: None,
            calibration: Calibration::Cpu(0),
            default_policy: Policy::Other,
            lock_pages: false,
            logdir: "./".into(),
            log_basename: "rt-app".into(),
            log_disabled: false,
            ftrace: false,
            gnuplot: false,
            io_device: "/dev/null".into(),
            mem_buffer_size: 4 * 1024 * 1024,
            cumulative_slack: false,
        }
    }
}

/// One event of a phase.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `run`: calibrated loops worth this many us of CPU.
    Run(u64),
    /// `runtime`: busy loops until this many us of wall time have passed.
    Runtime(u64),
    Sleep(u64),
    /// `timer`: the resource name (`unique*` names are per thread), period us, absolute mode.
    Timer {
        name: String,
        unique: bool,
        period_us: u64,
        absolute: bool,
    },
    Lock(String),
    Unlock(String),
    Wait {
        cond: String,
        mutex: String,
    },
    Signal(String),
    Broad(String),
    Sync {
        cond: String,
        mutex: String,
    },
    Barrier(String),
    /// `suspend`: wait on the thread's own suspend condition (named by the string, or the
    /// thread's name when empty).
    Suspend(String),
    Resume(String),
    Yield,
    /// `mem`: bytes written into the thread's memory buffer.
    Mem(u64),
    /// `iorun`: bytes written to `io_device`.
    Iorun(u64),
    /// `fork`: create a thread of this task.
    Fork(String),
}

/// An event with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct EventAt {
    pub ev: Event,
    pub key: String,
    pub path: String,
    pub line: u32,
}

/// One phase of a thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    /// Iterations; -1 forever.
    pub loop_: i64,
    pub events: Vec<EventAt>,
    pub cpus: Option<Vec<u32>>,
    pub nodes_membind: Option<Vec<u32>>,
    pub util_min: Option<u32>,
    pub util_max: Option<u32>,
}

/// One thread object of `tasks`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskDef {
    pub name: String,
    pub line: u32,
    pub instance: u32,
    /// Thread loop (all phases); -1 forever.
    pub loop_: i64,
    pub policy: Policy,
    /// Nice for SCHED_OTHER, RT priority for FIFO/RR.
    pub priority: i32,
    pub cpus: Option<Vec<u32>>,
    pub nodes_membind: Option<Vec<u32>>,
    pub util_min: Option<u32>,
    pub util_max: Option<u32>,
    pub delay_us: u64,
    pub phases: Vec<Phase>,
}

/// A parsed rt-app file.
#[derive(Debug, Clone, PartialEq)]
pub struct RtAppConfig {
    pub origin: String,
    pub global: Global,
    pub tasks: Vec<TaskDef>,
}

/// The most threads a file may start (instances summed); forks add at most rt-app's
/// `FORKS_LIMIT` per task.
pub const MAX_THREADS: u64 = 65_536;

/// Machine facts the grammar checks against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub nr_cpus: u32,
    pub nr_nodes: u32,
}

struct Ctx<'a> {
    origin: &'a str,
}

impl Ctx<'_> {
    fn err(&self, line: u32, path: &str, msg: impl Into<String>) -> JsonError {
        JsonError { origin: self.origin.into(), line, path: path.into(), msg: msg.into() }
    }

    /// An integer as rt-app reads it (`json_object_get_int()`: 32 bits).
    fn int(&self, v: &JVal, path: &str, what: &str) -> Result<i64, JsonError> {
        match v.v {
            J::Int(i) if i32::try_from(i).is_ok() => Ok(i),
            J::Int(i) => {
                Err(self.err(v.line, path, format!("{i} is out of range ({what}; rt-app reads a 32-bit int)")))
            }
            _ => Err(self.err(v.line, path, format!("expected an integer ({what}), got {}", v.v.kind()))),
        }
    }

    fn uint(&self, v: &JVal, path: &str, what: &str) -> Result<u64, JsonError> {
        let i = self.int(v, path, what)?;
        u64::try_from(i)
            .map_err(|_| self.err(v.line, path, format!("expected a non-negative integer ({what}), got {i}")))
    }

    fn boolean(&self, v: &JVal, path: &str) -> Result<bool, JsonError> {
        match v.v {
            J::Bool(b) => Ok(b),
            _ => Err(self.err(v.line, path, format!("expected true or false, got {}", v.v.kind()))),
        }
    }

    fn string(&self, v: &JVal, path: &str, what: &str) -> Result<String, JsonError> {
        match &v.v {
            J::Str(s) => Ok(s.clone()),
            _ => Err(self.err(v.line, path, format!("expected a string ({what}), got {}", v.v.kind()))),
        }
    }

    fn obj<'v>(&self, v: &'v JVal, path: &str, what: &str) -> Result<&'v [(String, u32, JVal)], JsonError> {
        match &v.v {
            J::Obj(o) => Ok(o),
            _ => Err(self.err(v.line, path, format!("expected an object ({what}), got {}", v.v.kind()))),
        }
    }

    fn policy(&self, v: &JVal, path: &str) -> Result<Policy, JsonError> {
        let s = self.string(v, path, "a scheduling policy")?;
        match s.as_str() {
            "SCHED_OTHER" => Ok(Policy::Other),
            "SCHED_FIFO" => Ok(Policy::Fifo),
            "SCHED_RR" => Ok(Policy::Rr),
            "SCHED_DEADLINE" | "SCHED_BATCH" | "SCHED_IDLE" => Err(self.err(
                v.line,
                path,
                format!("{s} is not modelled (schedsim has the fair, FIFO and RR classes: use SCHED_OTHER, SCHED_FIFO or SCHED_RR)"),
            )),
            _ => Err(self.err(v.line, path, format!("unknown policy \"{s}\" (expected SCHED_OTHER, SCHED_FIFO or SCHED_RR)"))),
        }
    }

    fn id_list(&self, v: &JVal, path: &str, what: &str, limit: u32) -> Result<Vec<u32>, JsonError> {
        let J::Arr(items) = &v.v else {
            return Err(self.err(v.line, path, format!("expected an array of {what} numbers, got {}", v.v.kind())));
        };
        if items.is_empty() {
            return Err(self.err(v.line, path, format!("the {what} list is empty")));
        }
        let mut out = Vec::new();
        for (i, it) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let c = self.uint(it, &p, what)?;
            if c >= limit as u64 {
                return Err(self.err(
                    it.line,
                    &p,
                    format!("{what} {c} does not exist on this machine (it has {what}s 0..{})", limit - 1),
                ));
            }
            if !out.contains(&(c as u32)) {
                out.push(c as u32);
            }
        }
        Ok(out)
    }

    fn util(&self, v: &JVal, path: &str) -> Result<u32, JsonError> {
        let u = self.uint(v, path, "a utilization clamp 0..1024")?;
        if u > 1024 {
            return Err(self.err(v.line, path, format!("utilization clamp {u} is above 1024")));
        }
        Ok(u as u32)
    }
}

/// The event a key names, by rt-app's prefix rule (`None`: not an event key).
fn event_kind(key: &str) -> Option<&'static str> {
    // Order matters: "runtime" before "run", "memrun" before "mem", "sem_post" before "sem".
    const KINDS: &[&str] = &[
        "runtime", "run", "sleep", "timer", "lock", "unlock", "wait", "signal", "broad", "sync", "barrier", "suspend",
        "resume", "yield", "memrun", "mem", "iorun", "fork", "sem_post", "sem_wait",
    ];
    KINDS.iter().copied().find(|k| key.starts_with(k))
}

fn parse_event(c: &Ctx, key: &str, kind: &str, v: &JVal, path: &str) -> Result<Event, JsonError> {
    let us = |what: &str| c.uint(v, path, what);
    let name = |what: &str| -> Result<String, JsonError> {
        let s = c.string(v, path, what)?;
        if s.is_empty() {
            return Err(c.err(v.line, path, format!("the {what} name is empty")));
        }
        Ok(s)
    };
    let ref_mutex = || -> Result<(String, String), JsonError> {
        let o = c.obj(v, path, "{\"ref\": CONDITION, \"mutex\": MUTEX}")?;
        let (mut r, mut m) = (None, None);
        for (k, l, x) in o {
            let p = format!("{path}.{k}");
            match k.as_str() {
                "ref" => r = Some(c.string(x, &p, "a condition name")?),
                "mutex" => m = Some(c.string(x, &p, "a mutex name")?),
                _ => return Err(c.err(*l, &p, format!("unknown key in {kind} (expected \"ref\" and \"mutex\")"))),
            }
        }
        match (r, m) {
            (Some(r), Some(m)) => Ok((r, m)),
            (None, _) => Err(c.err(v.line, path, format!("{kind} needs \"ref\" (the condition)"))),
            (_, None) => Err(c.err(v.line, path, format!("{kind} needs \"mutex\""))),
        }
    };
    Ok(match kind {
        "runtime" => Event::Runtime(us("microseconds of wall time")?),
        "run" => Event::Run(us("microseconds of calibrated work")?),
        "sleep" => Event::Sleep(us("microseconds")?),
        "mem" => Event::Mem(us("bytes")?),
        "iorun" => Event::Iorun(us("bytes")?),
        "lock" => Event::Lock(name("mutex")?),
        "unlock" => Event::Unlock(name("mutex")?),
        "signal" => Event::Signal(name("condition")?),
        "broad" => Event::Broad(name("condition")?),
        "barrier" => Event::Barrier(name("barrier")?),
        "resume" => Event::Resume(name("thread")?),
        "fork" => Event::Fork(name("task")?),
        "suspend" => Event::Suspend(c.string(v, path, "the thread's own name, may be empty")?),
        "yield" => {
            c.string(v, path, "any text, may be empty")?;
            Event::Yield
        }
        "wait" => {
            let (cond, mutex) = ref_mutex()?;
            Event::Wait { cond, mutex }
        }
        "sync" => {
            let (cond, mutex) = ref_mutex()?;
            Event::Sync { cond, mutex }
        }
        "timer" => {
            let o = c.obj(v, path, "{\"ref\": NAME, \"period\": US, \"mode\": \"relative\"|\"absolute\"}")?;
            let (mut name, mut period, mut absolute) = ("unknown".to_string(), 0, false);
            for (k, l, x) in o {
                let p = format!("{path}.{k}");
                match k.as_str() {
                    "ref" => name = c.string(x, &p, "a timer name")?,
                    "period" => period = c.uint(x, &p, "microseconds")?,
                    "mode" => {
                        absolute = match c.string(x, &p, "\"relative\" or \"absolute\"")?.as_str() {
                            "relative" => false,
                            "absolute" => true,
                            m => {
                                return Err(c.err(
                                    x.line,
                                    &p,
                                    format!("unknown timer mode \"{m}\" (expected \"relative\" or \"absolute\")"),
                                ))
                            }
                        }
                    }
                    _ => return Err(c.err(*l, &p, "unknown key in timer (expected \"ref\", \"period\" and \"mode\")")),
                }
            }
            Event::Timer { unique: name.starts_with("unique"), name, period_us: period, absolute }
        }
        "memrun" | "sem_post" | "sem_wait" => {
            return Err(c.err(
                v.line,
                path,
                format!("the {kind} event (newer rt-app) is not supported by schedsim (key \"{key}\")"),
            ))
        }
        _ => unreachable!("event_kind returned {kind}"),
    })
}

/// The caller's handler for its own non-event keys: `(key, line, value, path)`, true if taken.
type OtherKeys<'a> = dyn FnMut(&str, u32, &JVal, &str) -> Result<bool, JsonError> + 'a;

/// Keys shared by threads and phases (besides events).
#[derive(Default)]
struct Common {
    loop_: Option<(i64, u32)>,
    cpus: Option<Vec<u32>>,
    nodes: Option<Vec<u32>>,
    util_min: Option<u32>,
    util_max: Option<u32>,
}

/// Read one thread or phase object: its events in key order, the keys threads and phases
/// share, and the caller's own keys through `other`.
fn parse_body(
    c: &Ctx,
    o: &[(String, u32, JVal)],
    path: &str,
    line: u32,
    lim: Limits,
    other: &mut OtherKeys,
) -> Result<(Common, Vec<EventAt>), JsonError> {
    let mut com = Common::default();
    let mut events = Vec::new();
    for (k, l, v) in o {
        let p = format!("{path}.{k}");
        match k.as_str() {
            "loop" => {
                let n = c.int(v, &p, "iterations, -1 for ever")?;
                if n < -1 || n == 0 {
                    return Err(c.err(v.line, &p, format!("loop must be -1 (for ever) or at least 1, got {n}")));
                }
                com.loop_ = Some((n, v.line));
            }
            "cpus" => com.cpus = Some(c.id_list(v, &p, "CPU", lim.nr_cpus)?),
            "nodes_membind" => com.nodes = Some(c.id_list(v, &p, "NUMA node", lim.nr_nodes)?),
            "util_min" => com.util_min = Some(c.util(v, &p)?),
            "util_max" => com.util_max = Some(c.util(v, &p)?),
            "dl-runtime" | "dl-period" | "dl-deadline" => {
                return Err(c.err(*l, &p, "SCHED_DEADLINE is not modelled (no deadline class in schedsim)"))
            }
            "taskgroup" => return Err(c.err(*l, &p, "task groups (cgroups) are not modelled")),
            _ if other(k, *l, v, &p)? => {}
            _ => match event_kind(k) {
                Some(kind) => {
                    let ev = parse_event(c, k, kind, v, &p)?;
                    events.push(EventAt { ev, key: k.clone(), path: p, line: *l });
                }
                None => return Err(c.err(*l, &p, format!("unknown key \"{k}\""))),
            },
        }
    }
    if let (Some(a), Some(b)) = (com.util_min, com.util_max) {
        if a > b {
            return Err(c.err(line, path, format!("util_min {a} is above util_max {b}")));
        }
    }
    Ok((com, events))
}

/// Parse an rt-app JSON document for a machine with `lim` CPUs and nodes.
pub fn parse_rtapp(text: &str, origin: &str, lim: Limits) -> Result<RtAppConfig, JsonError> {
    let root = parse_json(text, origin)?;
    let c = Ctx { origin };
    let o = c.obj(&root, "", "the top level: {\"global\": ..., \"tasks\": ...}")?;
    let mut global = Global::default();
    let mut tasks_v = None;
    for (k, l, v) in o {
        match k.as_str() {
            "global" => global = parse_global(&c, v)?,
            "tasks" => tasks_v = Some(v),
            "resources" => return Err(c.err(
                *l,
                "resources",
                "the old \"resources\" section is not supported (rt-app creates resources from the events; remove it)",
            )),
            _ => return Err(c.err(*l, k, "unknown top-level key (expected \"global\" and \"tasks\")")),
        }
    }
    let Some(tasks_v) = tasks_v else {
        return Err(c.err(root.line, "", "no \"tasks\" object (rt-app requires one)"));
    };
    let tobj = c.obj(tasks_v, "tasks", "one object per thread")?;
    if tobj.is_empty() {
        return Err(c.err(tasks_v.line, "tasks", "no threads defined"));
    }
    let mut tasks = Vec::new();
    for (name, l, v) in tobj {
        tasks.push(parse_task(&c, name, *l, v, &global, lim)?);
    }
    // Cross references: fork targets exist; barriers are not used with fork (rt-app's rule).
    for t in &tasks {
        for ph in &t.phases {
            for e in &ph.events {
                if let Event::Fork(target) = &e.ev {
                    if !tasks.iter().any(|x| &x.name == target) {
                        return Err(c.err(e.line, &e.path, format!("fork of an unknown task \"{target}\"")));
                    }
                }
            }
        }
    }
    let total: u64 = tasks.iter().map(|t| t.instance as u64).sum();
    if total == 0 {
        return Err(c.err(tasks_v.line, "tasks", "every task has instance 0: nothing would start"));
    }
    if total > MAX_THREADS {
        return Err(c.err(tasks_v.line, "tasks", format!("{total} threads: schedsim runs at most {MAX_THREADS}")));
    }
    Ok(RtAppConfig { origin: origin.into(), global, tasks })
}

fn parse_global(c: &Ctx, v: &JVal) -> Result<Global, JsonError> {
    let mut g = Global::default();
    for (k, l, x) in c.obj(v, "global", "global options")? {
        let p = format!("global.{k}");
        match k.as_str() {
            "duration" => {
                let d = c.int(x, &p, "seconds, -1 until the threads end")?;
                g.duration_s = match d {
                    -1 => None,
                    d if d > 0 && (d as u64) <= crate::limits::MAX_SIM_NS / crate::sim::NSEC_PER_SEC => Some(d as u64),
                    d if d > 0 => {
                        return Err(c.err(
                            x.line,
                            &p,
                            format!(
                                "duration = {d} s is out of range (-1, or 1..={} s: one hour of simulated time)",
                                crate::limits::MAX_SIM_NS / crate::sim::NSEC_PER_SEC
                            ),
                        ))
                    }
                    d => {
                        return Err(c.err(
                            x.line,
                            &p,
                            format!("duration must be -1 or a positive number of seconds, got {d}"),
                        ))
                    }
                };
            }
            "calibration" => {
                g.calibration = match &x.v {
                    J::Int(n) if *n > 0 => Calibration::NsPerLoop(*n as u64),
                    J::Str(s) => match s.strip_prefix("CPU").and_then(|n| n.parse::<u32>().ok()) {
                        Some(n) => Calibration::Cpu(n),
                        None => {
                            return Err(c.err(x.line, &p, format!("expected \"CPUn\" or ns per loop, got \"{s}\"")))
                        }
                    },
                    _ => return Err(c.err(x.line, &p, "expected \"CPUn\" or a positive ns per loop")),
                }
            }
            "default_policy" => g.default_policy = c.policy(x, &p)?,
            "pi_enabled" => {
                if c.boolean(x, &p)? {
                    return Err(c.err(x.line, &p, "priority-inheritance mutexes are not modelled (no PI futexes)"));
                }
            }
            "lock_pages" => g.lock_pages = c.boolean(x, &p)?,
            "logdir" => g.logdir = c.string(x, &p, "a directory")?,
            "log_basename" => {
                g.log_basename = c.string(x, &p, "a file name prefix")?;
                if let Some(why) = not_a_file_name_part(&g.log_basename) {
                    return Err(c.err(
                        x.line,
                        &p,
                        format!(
                            "\"{}\" {why}: schedsim writes rt-app's logs only inside --log-dir (rt-app itself \
                             does not confine them)",
                            g.log_basename
                        ),
                    ));
                }
            }
            "log_size" => match &x.v {
                J::Int(n) if *n >= 0 => {}
                J::Str(s) if ["file", "auto", "Auto", "disable", "Disable"].contains(&s.as_str()) => {
                    g.log_disabled = s.eq_ignore_ascii_case("disable");
                }
                _ => return Err(c.err(x.line, &p, "expected \"file\", \"auto\", \"disable\" or a size in MB")),
            },
            "ftrace" => match &x.v {
                J::Bool(b) => g.ftrace = *b,
                J::Str(s) => g.ftrace = !s.is_empty() && s != "none",
                _ => return Err(c.err(x.line, &p, "expected true/false or a list of trace categories")),
            },
            "gnuplot" => g.gnuplot = c.boolean(x, &p)?,
            "io_device" => g.io_device = c.string(x, &p, "a file")?,
            "mem_buffer_size" => {
                g.mem_buffer_size = c.uint(x, &p, "bytes")?;
                if g.mem_buffer_size == 0 {
                    return Err(c.err(x.line, &p, "mem_buffer_size must be positive"));
                }
            }
            "cumulative_slack" => g.cumulative_slack = c.boolean(x, &p)?,
            _ => return Err(c.err(*l, &p, "unknown global option")),
        }
    }
    Ok(g)
}

/// Why `s` cannot be part of a log file's name (`<log_basename>-<task>-<n>.log` inside
/// `--log-dir`): a `/` would name another directory (rt-app itself writes `../x` outside its
/// `logdir`; schedsim confines its logs), a NUL no file at all.
pub fn not_a_file_name_part(s: &str) -> Option<&'static str> {
    if s.contains('/') {
        Some("contains '/'")
    } else if s.contains('\0') {
        Some("contains a NUL character")
    } else {
        None
    }
}

fn parse_task(c: &Ctx, name: &str, line: u32, v: &JVal, g: &Global, lim: Limits) -> Result<TaskDef, JsonError> {
    let path = format!("tasks.{name}");
    if let Some(why) = not_a_file_name_part(name) {
        return Err(c.err(
            line,
            &path,
            format!("the task name {why}: it is part of the thread's log file name, which stays inside --log-dir"),
        ));
    }
    let o = c.obj(v, &path, "a thread")?;
    let mut instance = 1u32;
    let mut policy = None;
    let mut priority = None;
    let mut delay = 0u64;
    let mut phases_v = None;
    let mut other = |k: &str, _l: u32, x: &JVal, p: &str| -> Result<bool, JsonError> {
        match k {
            "instance" => {
                let n = c.uint(x, p, "number of threads")?;
                instance = u32::try_from(n).map_err(|_| c.err(x.line, p, "too many instances"))?;
            }
            "policy" => policy = Some(c.policy(x, p)?),
            "priority" => priority = Some((c.int(x, p, "nice or RT priority")?, x.line)),
            "delay" => delay = c.uint(x, p, "microseconds")?,
            "phases" => phases_v = Some(x.clone()),
            _ => return Ok(false),
        }
        Ok(true)
    };
    let (com, events) = parse_body(c, o, &path, line, lim, &mut other)?;
    let policy = policy.unwrap_or(g.default_policy);
    let priority = match (policy, priority) {
        (Policy::Other, None) => 0,
        (_, None) => 10,
        (Policy::Other, Some((n, l))) if !(-20..=19).contains(&n) => {
            return Err(c.err(
                l,
                &format!("{path}.priority"),
                format!("SCHED_OTHER priority is a nice value -20..19, got {n}"),
            ))
        }
        (_, Some((n, l))) if policy != Policy::Other && !(1..=99).contains(&n) => {
            return Err(c.err(
                l,
                &format!("{path}.priority"),
                format!("{} priority must be 1..99, got {n}", policy.name()),
            ))
        }
        (_, Some((n, _))) => n as i32,
    };
    let mut phases = Vec::new();
    let loop_ = match phases_v {
        Some(pv) => {
            if !events.is_empty() {
                let e = &events[0];
                return Err(c.err(e.line, &e.path, "events beside \"phases\": put them inside a phase"));
            }
            let po = c.obj(&pv, &format!("{path}.phases"), "one object per phase")?;
            if po.is_empty() {
                return Err(c.err(pv.line, &format!("{path}.phases"), "no phases"));
            }
            for (pname, pl, pval) in po {
                let ppath = format!("{path}.phases.{pname}");
                let pobj = c.obj(pval, &ppath, "a phase")?;
                let mut no_other = |k: &str, l: u32, _x: &JVal, p: &str| -> Result<bool, JsonError> {
                    if k == "policy" || k == "priority" {
                        return Err(c.err(
                            l,
                            p,
                            "a per-phase policy or priority is not supported by schedsim (set it on the task)",
                        ));
                    }
                    Ok(false)
                };
                let (pc, pev) = parse_body(c, pobj, &ppath, *pl, lim, &mut no_other)?;
                if pev.is_empty() {
                    return Err(c.err(*pl, &ppath, "a phase without events (rt-app requires at least one)"));
                }
                phases.push(Phase {
                    name: pname.clone(),
                    loop_: pc.loop_.map_or(1, |l| l.0),
                    events: pev,
                    cpus: pc.cpus,
                    nodes_membind: pc.nodes,
                    util_min: pc.util_min,
                    util_max: pc.util_max,
                });
            }
            com.loop_.map_or(-1, |l| l.0)
        }
        None => {
            if events.is_empty() {
                return Err(c.err(line, &path, "a thread without events or phases (rt-app requires events)"));
            }
            // One phase whose loop is the thread's "loop" (default 1); the thread runs that
            // phase once if "loop" was given, and repeats it for ever otherwise.
            phases.push(Phase {
                name: "phase0".into(),
                loop_: com.loop_.map_or(1, |l| l.0),
                events,
                cpus: None,
                nodes_membind: None,
                util_min: None,
                util_max: None,
            });
            if com.loop_.is_some() {
                1
            } else {
                -1
            }
        }
    };
    Ok(TaskDef {
        name: name.into(),
        line,
        instance,
        loop_,
        policy,
        priority,
        cpus: com.cpus,
        nodes_membind: com.nodes,
        util_min: com.util_min,
        util_max: com.util_max,
        delay_us: delay,
        phases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIM: Limits = Limits { nr_cpus: 4, nr_nodes: 1 };

    fn parse(t: &str) -> Result<RtAppConfig, String> {
        parse_rtapp(t, "t.json", LIM).map_err(|e| e.to_string())
    }

    #[test]
    fn events_keep_key_order_and_suffixes() {
        let c = parse(
            r#"{ /* comment */ "tasks": { "a": { "loop": 3, "sleep1": 5, "run0": 10, "runtime": 7,
                 "timer0": {"ref": "unique", "period": 100, "mode": "absolute"}, }, }, }"#,
        )
        .unwrap();
        let t = &c.tasks[0];
        assert_eq!((t.loop_, t.phases[0].loop_), (1, 3));
        let evs: Vec<&Event> = t.phases[0].events.iter().map(|e| &e.ev).collect();
        assert_eq!(
            evs,
            vec![
                &Event::Sleep(5),
                &Event::Run(10),
                &Event::Runtime(7),
                &Event::Timer { name: "unique".into(), unique: true, period_us: 100, absolute: true }
            ]
        );
        assert_eq!(t.phases[0].events[1].path, "tasks.a.run0");
    }

    #[test]
    fn a_thread_without_loop_runs_for_ever_and_phases_default_to_one_loop() {
        let c =
            parse(r#"{"tasks": {"a": {"run": 1}, "b": {"phases": {"p": {"run": 1}, "q": {"loop": 4, "sleep": 1}}}}}"#)
                .unwrap();
        assert_eq!((c.tasks[0].loop_, c.tasks[0].phases[0].loop_), (-1, 1));
        assert_eq!(c.tasks[1].loop_, -1);
        assert_eq!(c.tasks[1].phases.iter().map(|p| p.loop_).collect::<Vec<_>>(), vec![1, 4]);
    }

    #[test]
    fn errors_name_the_path_and_the_line() {
        let e = parse("{\"tasks\": {\n \"thread0\": {\n  \"phases\": {\n   \"p1\": {\n    \"run\": \"x\"}}}}}")
            .unwrap_err();
        assert_eq!(e, "t.json:5: tasks.thread0.phases.p1.run: expected an integer (microseconds of calibrated work), got a string");
        let e = parse("{\"tasks\": {\"t\": {\n\"run\": 1, \"bogus\": 2}}}").unwrap_err();
        assert_eq!(e, "t.json:2: tasks.t.bogus: unknown key \"bogus\"");
        let e = parse("{\"tasks\": {\"t\": {\"run\": 1, \"cpus\": [0, 9]}}}").unwrap_err();
        assert!(e.contains("tasks.t.cpus[1]: CPU 9 does not exist"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"run\": 1, \"policy\": \"SCHED_DEADLINE\"}}}").unwrap_err();
        assert!(e.contains("tasks.t.policy: SCHED_DEADLINE is not modelled"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"run\": 1, \"run\": 2}}}").unwrap_err();
        assert!(e.contains("duplicate key \"run\""), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"fork\": \"nobody\"}}}").unwrap_err();
        assert!(e.contains("tasks.t.fork: fork of an unknown task \"nobody\""), "{e}");
        let e = parse("{\"global\": {\"duration\": 2, \"colour\": 1}, \"tasks\": {\"t\": {\"run\": 1}}}").unwrap_err();
        assert_eq!(e, "t.json:1: global.colour: unknown global option");
        let e = parse("{\"tasks\": {\"t\": {\"timer\": {\"ref\": \"a\", \"period\": 1, \"mode\": \"late\"}}}}")
            .unwrap_err();
        assert!(e.contains("tasks.t.timer.mode: unknown timer mode \"late\""), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"wait\": {\"ref\": \"c\"}}}}").unwrap_err();
        assert!(e.contains("tasks.t.wait: wait needs \"mutex\""), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"priority\": 50, \"policy\": \"SCHED_FIFO\", \"phases\": {\"p\": {\"priority\": 3, \"run\": 1}}}}}")
            .unwrap_err();
        assert!(e.contains("tasks.t.phases.p.priority: a per-phase policy"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"memrun\": 5}}}").unwrap_err();
        assert!(e.contains("memrun event"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"run\": 1}}").unwrap_err();
        assert!(e.starts_with("t.json:1: expected ',' or '}', found the end of the file"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"loop\": 0, \"run\": 1}}}").unwrap_err();
        assert!(e.contains("tasks.t.loop: loop must be -1"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"run\": 99999999999}}}").unwrap_err();
        assert!(e.contains("tasks.t.run: 99999999999 is out of range"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"instance\": 100000, \"run\": 1}}}").unwrap_err();
        assert!(e.contains("tasks: 100000 threads: schedsim runs at most 65536"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"priority\": 30, \"run\": 1}}}").unwrap_err();
        assert!(e.contains("nice value -20..19, got 30"), "{e}");
    }

    #[test]
    fn priorities_default_as_rt_app_does() {
        let c = parse(
            r#"{"global": {"default_policy": "SCHED_FIFO"}, "tasks": {"f": {"run": 1}, "o": {"policy": "SCHED_OTHER", "priority": -5, "run": 1}}}"#,
        )
        .unwrap();
        assert_eq!((c.tasks[0].policy, c.tasks[0].priority), (Policy::Fifo, 10));
        assert_eq!((c.tasks[1].policy, c.tasks[1].priority), (Policy::Other, -5));
    }

    #[test]
    fn json_reader_handles_escapes_and_numbers() {
        let v = parse_json("[\"a\\\"b\\u0041\", -3, 2.5, true, null]", "x").unwrap();
        let J::Arr(a) = v.v else { panic!() };
        assert_eq!(a[0].v, J::Str("a\"bA".into()));
        assert_eq!(a[1].v, J::Int(-3));
        assert_eq!(a[2].v, J::Float(2.5));
        assert!(parse_json("[1] x", "x").is_err());
        assert!(parse_json("/* open", "x").is_err());
    }
}
