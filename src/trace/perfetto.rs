//! Perfetto output: the trace protobuf (`perfetto.protos.Trace`, a stream of `TracePacket`s)
//! with the records as the kernel's own ftrace event messages in one `FtraceEventBundle` per
//! CPU and chunk, the tasks as a `ProcessTree`, and a `ClockSnapshot` saying the timestamps are
//! the boot clock (what traced_probes records by default).
//!
//! The message structs are the subset of Perfetto's `protos/perfetto/trace/` we write, declared
//! here with `prost` derives (field numbers and types as in `perfetto_trace.proto`; the
//! `perfetto_trace_test` test decodes our files with Perfetto's own Python classes). Events that
//! Perfetto has no typed message for (the x86 IPI vector events, `ipi_send_cpu(mask)`, the csd
//! events, `sched_wake_idle_without_ipi`) go out as `GenericFtraceEvent`s carrying the
//! event's name and its fields by name, as traced_probes writes events it has no proto for.
//!
//! Each packet is encoded with prost and appended as field 1 of `Trace`, so the file grows
//! packet by packet and nothing is held beyond one chunk.

use std::io::{self, Write};
use std::path::Path;

use prost::Message;

use super::sink::{NameTable, Output};
use super::{ftrace, Event, Record, TaskInfo, TraceSink};
use crate::hw::cpumask::CpuMask;

/// `perfetto.protos.TracePacket` (the fields we write).
#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "1")]
    pub ftrace_events: Option<FtraceEventBundle>,
    #[prost(message, optional, tag = "2")]
    pub process_tree: Option<ProcessTree>,
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
}

/// `perfetto.protos.ClockSnapshot`.
#[derive(Clone, PartialEq, Message)]
pub struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// A `BuiltinClock`.
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `perfetto.protos.ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, Message)]
pub struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
}

/// `BuiltinClock` values.
pub const CLOCK_REALTIME: u32 = 1;
pub const CLOCK_MONOTONIC: u32 = 3;
pub const CLOCK_BOOTTIME: u32 = 6;

/// `perfetto.protos.ProcessTree`.
#[derive(Clone, PartialEq, Message)]
pub struct ProcessTree {
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<Process>,
    #[prost(message, repeated, tag = "2")]
    pub threads: Vec<Thread>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Process {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub ppid: Option<i32>,
    #[prost(string, repeated, tag = "3")]
    pub cmdline: Vec<String>,
    #[prost(bool, optional, tag = "8")]
    pub is_kthread: Option<bool>,
    #[prost(bool, optional, tag = "9")]
    pub cmdline_is_comm: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Thread {
    #[prost(int32, optional, tag = "1")]
    pub tid: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
}

/// `perfetto.protos.FtraceEventBundle`.
#[derive(Clone, PartialEq, Message)]
pub struct FtraceEventBundle {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
}

/// `perfetto.protos.FtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct FtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(uint32, optional, tag = "5")]
    pub common_flags: Option<u32>,
    #[prost(oneof = "Ev", tags = "3, 4, 13, 17, 20, 24, 25, 26, 114, 327, 491, 559, 560")]
    pub event: Option<Ev>,
}

/// The `event` oneof of `FtraceEvent` (the members we write).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Ev {
    #[prost(message, tag = "3")]
    Print(PrintEv),
    #[prost(message, tag = "4")]
    SchedSwitch(SchedSwitchEv),
    #[prost(message, tag = "13")]
    CpuIdle(CpuIdleEv),
    #[prost(message, tag = "17")]
    SchedWakeup(WakeupEv),
    #[prost(message, tag = "20")]
    SchedWaking(WakeupEv),
    #[prost(message, tag = "24")]
    SoftirqEntry(SoftirqEv),
    #[prost(message, tag = "25")]
    SoftirqExit(SoftirqEv),
    #[prost(message, tag = "26")]
    SoftirqRaise(SoftirqEv),
    #[prost(message, tag = "114")]
    SchedWakeupNew(WakeupEv),
    #[prost(message, tag = "327")]
    Generic(GenericEv),
    #[prost(message, tag = "491")]
    SchedMigrateTask(MigrateTaskEv),
    #[prost(message, tag = "559")]
    LocalTimerEntry(VectorEv),
    #[prost(message, tag = "560")]
    LocalTimerExit(VectorEv),
}

/// `SchedSwitchFtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct SchedSwitchEv {
    #[prost(string, optional, tag = "1")]
    pub prev_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub next_comm: Option<String>,
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

/// `SchedWakingFtraceEvent`, `SchedWakeupFtraceEvent`, `SchedWakeupNewFtraceEvent` (same fields).
#[derive(Clone, PartialEq, Message)]
pub struct WakeupEv {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

/// `SchedMigrateTaskFtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct MigrateTaskEv {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub orig_cpu: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub dest_cpu: Option<i32>,
}

/// `CpuIdleFtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct CpuIdleEv {
    #[prost(uint32, optional, tag = "1")]
    pub state: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub cpu_id: Option<u32>,
}

/// `SoftirqRaiseFtraceEvent`, `SoftirqEntryFtraceEvent`, `SoftirqExitFtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct SoftirqEv {
    #[prost(uint32, optional, tag = "1")]
    pub vec: Option<u32>,
}

/// `LocalTimerEntryFtraceEvent`, `LocalTimerExitFtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct VectorEv {
    #[prost(int32, optional, tag = "1")]
    pub vector: Option<i32>,
}

/// `PrintFtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct PrintEv {
    #[prost(uint64, optional, tag = "1")]
    pub ip: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub buf: Option<String>,
}

/// `GenericFtraceEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct GenericEv {
    #[prost(string, optional, tag = "1")]
    pub event_name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub field: Vec<GenericField>,
}

/// `GenericFtraceEvent.Field`.
#[derive(Clone, PartialEq, Message)]
pub struct GenericField {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub str_value: Option<String>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(uint64, optional, tag = "5")]
    pub uint_value: Option<u64>,
}

fn uint(name: &str, v: u64) -> GenericField {
    GenericField { name: Some(name.into()), uint_value: Some(v), ..Default::default() }
}

fn string(name: &str, v: &str) -> GenericField {
    GenericField { name: Some(name.into()), str_value: Some(v.into()), ..Default::default() }
}

fn generic(name: &str, field: Vec<GenericField>) -> Ev {
    Ev::Generic(GenericEv { event_name: Some(name.into()), field })
}

/// The sequence id of every packet we write (one writer, one sequence).
const SEQUENCE_ID: u32 = 1;

/// The Perfetto message for one record's event. Callsites and callbacks (`%pS`) and csd
/// functions (`%ps`) go out as the symbol text the ftrace writer prints; csd addresses as
/// numbers.
pub fn encode_event(e: &Event, cpu: u32, names: &NameTable) -> Ev {
    let comm = |pid: u32| Some(names.get(pid, cpu).unwrap_or("<...>").to_string());
    let wakeup = |pid: u32, prio: i32, target_cpu: u32| WakeupEv {
        comm: comm(pid),
        pid: Some(pid as i32),
        prio: Some(prio),
        target_cpu: Some(target_cpu as i32),
    };
    match *e {
        Event::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio } => Ev::SchedSwitch(SchedSwitchEv {
            prev_comm: comm(prev_pid),
            prev_pid: Some(prev_pid as i32),
            prev_prio: Some(prev_prio),
            prev_state: Some(i64::from(prev_state)),
            next_comm: comm(next_pid),
            next_pid: Some(next_pid as i32),
            next_prio: Some(next_prio),
        }),
        Event::SchedWaking { pid, prio, target_cpu } => Ev::SchedWaking(wakeup(pid, prio, target_cpu)),
        Event::SchedWakeup { pid, prio, target_cpu } => Ev::SchedWakeup(wakeup(pid, prio, target_cpu)),
        Event::SchedWakeupNew { pid, prio, target_cpu } => Ev::SchedWakeupNew(wakeup(pid, prio, target_cpu)),
        Event::SchedMigrateTask { pid, prio, orig_cpu, dest_cpu } => Ev::SchedMigrateTask(MigrateTaskEv {
            comm: comm(pid),
            pid: Some(pid as i32),
            prio: Some(prio),
            orig_cpu: Some(orig_cpu as i32),
            dest_cpu: Some(dest_cpu as i32),
        }),
        Event::SchedWakeIdleWithoutIpi { cpu } => generic("sched_wake_idle_without_ipi", vec![uint("cpu", cpu.into())]),
        Event::IpiSendCpu { cpu, callsite, callback } => generic(
            "ipi_send_cpu",
            vec![
                uint("cpu", cpu.into()),
                string("callsite", ftrace::sym_with_offset(callsite)),
                string("callback", ftrace::sym_with_offset(callback)),
            ],
        ),
        Event::IpiSendCpumask { mask, callsite, callback } => generic(
            "ipi_send_cpumask",
            vec![
                string("cpumask", ftrace::Names::cpumask(names, mask)),
                string("callsite", ftrace::sym_with_offset(callsite)),
                string("callback", ftrace::sym_with_offset(callback)),
            ],
        ),
        Event::CsdQueueCpu { cpu, callsite, func, csd } => generic(
            "csd_queue_cpu",
            vec![
                uint("cpu", cpu.into()),
                string("callsite", ftrace::sym_with_offset(callsite)),
                string("func", ftrace::sym_name(func)),
                uint("csd", csd),
            ],
        ),
        Event::CsdFunctionEntry { func, csd } => {
            generic("csd_function_entry", vec![string("func", ftrace::sym_name(func)), uint("csd", csd)])
        }
        Event::CsdFunctionExit { func, csd } => {
            generic("csd_function_exit", vec![string("func", ftrace::sym_name(func)), uint("csd", csd)])
        }
        Event::CpuIdle { state, cpu_id } => Ev::CpuIdle(CpuIdleEv { state: Some(state), cpu_id: Some(cpu_id) }),
        Event::VectorEntry { vector } => match vector {
            super::Vector::LocalTimer => Ev::LocalTimerEntry(VectorEv { vector: Some(vector.number() as i32) }),
            _ => generic(ftrace::vector_event_name(vector, true), vec![uint("vector", vector.number().into())]),
        },
        Event::VectorExit { vector } => match vector {
            super::Vector::LocalTimer => Ev::LocalTimerExit(VectorEv { vector: Some(vector.number() as i32) }),
            _ => generic(ftrace::vector_event_name(vector, false), vec![uint("vector", vector.number().into())]),
        },
        Event::SoftirqRaise { vec } => Ev::SoftirqRaise(SoftirqEv { vec: Some(vec) }),
        Event::SoftirqEntry { vec } => Ev::SoftirqEntry(SoftirqEv { vec: Some(vec) }),
        Event::SoftirqExit { vec } => Ev::SoftirqExit(SoftirqEv { vec: Some(vec) }),
        Event::Warning { site } => {
            let (func, text) = ftrace::warning_text(site);
            Ev::Print(PrintEv { ip: Some(0), buf: Some(format!("{func}: {text}\n")) })
        }
    }
}

/// The Perfetto writer (a [`TraceSink`]).
pub struct PerfettoSink {
    out: Output,
    names: NameTable,
    new_tasks: Vec<TaskInfo>,
    per_cpu: Vec<Vec<FtraceEvent>>,
    buf: Vec<u8>,
    n: u64,
}

impl PerfettoSink {
    pub fn create(path: &Path, nr_cpus: u32) -> io::Result<PerfettoSink> {
        let mut s = PerfettoSink {
            out: Output::create(path)?,
            names: NameTable::new(nr_cpus),
            new_tasks: Vec::new(),
            per_cpu: (0..nr_cpus).map(|_| Vec::new()).collect(),
            buf: Vec::with_capacity(1 << 20),
            n: 0,
        };
        // The simulated clocks all start at 0 together; ftrace timestamps are boot time.
        let clock = |id| Clock { clock_id: Some(id), timestamp: Some(0) };
        s.packet(TracePacket {
            timestamp: Some(0),
            timestamp_clock_id: Some(CLOCK_BOOTTIME),
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            clock_snapshot: Some(ClockSnapshot {
                clocks: vec![clock(CLOCK_BOOTTIME), clock(CLOCK_MONOTONIC), clock(CLOCK_REALTIME)],
                primary_trace_clock: Some(CLOCK_BOOTTIME as i32),
            }),
            ..Default::default()
        })?;
        Ok(s)
    }

    /// Append one packet as field 1 of `Trace`.
    fn packet(&mut self, p: TracePacket) -> io::Result<()> {
        prost::encoding::message::encode(1, &p, &mut self.buf);
        if self.buf.len() >= 1 << 20 {
            self.out.w().write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn process_tree(&mut self, ts: u64) -> io::Result<()> {
        if self.new_tasks.is_empty() {
            return Ok(());
        }
        let tasks = std::mem::take(&mut self.new_tasks);
        let tree = ProcessTree {
            processes: tasks
                .iter()
                .filter(|t| t.tgid == t.pid)
                .map(|t| Process {
                    pid: Some(t.pid as i32),
                    // kthreadd (2) parents kernel threads; the workload's creator is not modelled.
                    ppid: Some(if t.kthread { 2 } else { 1 }),
                    cmdline: vec![t.comm.clone()],
                    is_kthread: Some(t.kthread),
                    cmdline_is_comm: Some(true),
                })
                .collect(),
            threads: tasks
                .iter()
                .map(|t| Thread { tid: Some(t.pid as i32), name: Some(t.comm.clone()), tgid: Some(t.tgid as i32) })
                .collect(),
        };
        self.packet(TracePacket {
            timestamp: Some(ts),
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            process_tree: Some(tree),
            ..Default::default()
        })
    }
}

impl TraceSink for PerfettoSink {
    fn tasks(&mut self, new: &[TaskInfo]) {
        for t in new {
            self.names.add(t);
        }
        self.new_tasks.extend_from_slice(new);
    }

    fn write(&mut self, records: &[Record], masks: &[CpuMask]) -> io::Result<()> {
        self.names.set_masks(masks);
        self.process_tree(records.first().map_or(0, |r| r.ts_ns))?;
        for r in records {
            let cpu = r.cpu as usize;
            if cpu >= self.per_cpu.len() {
                self.per_cpu.resize_with(cpu + 1, Vec::new);
            }
            let ev = FtraceEvent {
                timestamp: Some(r.ts_ns),
                pid: Some(r.pid),
                common_flags: Some(u32::from(r.flags)),
                event: Some(encode_event(&r.event, r.cpu, &self.names)),
            };
            self.per_cpu[cpu].push(ev);
        }
        for cpu in 0..self.per_cpu.len() {
            if self.per_cpu[cpu].is_empty() {
                continue;
            }
            let event = std::mem::take(&mut self.per_cpu[cpu]);
            let mut p = TracePacket {
                trusted_packet_sequence_id: Some(SEQUENCE_ID),
                ftrace_events: Some(FtraceEventBundle { cpu: Some(cpu as u32), event }),
                ..Default::default()
            };
            self.packet(std::mem::take(&mut p))?;
            // Keep the allocation for the next chunk.
            if let Some(mut b) = p.ftrace_events.take() {
                b.event.clear();
                self.per_cpu[cpu] = b.event;
            }
        }
        self.n += records.len() as u64;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> io::Result<u64> {
        self.process_tree(0)?;
        let buf = std::mem::take(&mut self.buf);
        self.out.w().write_all(&buf)?;
        let n = self.n;
        self.out.commit()?;
        Ok(n)
    }

    fn abort(self: Box<Self>) {}
}
