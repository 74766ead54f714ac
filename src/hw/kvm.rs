//! A KVM guest's idle wake mode (an unknown of issue 31, docs/unknowns.md): how an idle vCPU
//! waits and what waking it costs. Hardware-side facts of the host, seen by the guest kernel
//! the model runs:
//!
//! - **HLT exits.** The guest's idle routine executes HLT, which exits to the host; KVM's
//!   `kvm_vcpu_halt()` (virt/kvm/kvm_main.c @ v6.10) first *polls* for a wake event for up to
//!   the vCPU's `halt_poll_ns`, then blocks the vCPU thread. An interrupt that arrives while
//!   the host still polls costs a VM entry with the interrupt injected; one that arrives later
//!   costs a host wakeup of the blocked vCPU thread as well. So the wake latency depends on
//!   how long the vCPU has been halted ([`HostHaltPoll`], applied by the executor when an
//!   interrupt reaches a halted CPU).
//! - **Guest halt-polling.** The guest's cpuidle-haltpoll driver and governor poll in the guest
//!   (the POLL state, TIF_POLLING_NRFLAG set) before halting (modelled by the haltpoll governor,
//!   `crate::linux::drivers::cpuidle::governors::haltpoll`). Loading the driver turns host
//!   polling off: `arch_haltpoll_enable()` (arch/x86/kernel/kvm.c @ v6.10) writes 0 to
//!   MSR_KVM_POLL_CONTROL, and `kvm_arch_no_poll()` then skips the host's poll.
//! - **MWAIT exposed.** With MWAIT (and HLT) exits disabled for the guest, its idle state is an
//!   MWAIT on its own flag word: a polling state, woken by a remote write without an interrupt
//!   or a VM exit.
//!
//! [`GuestIdle`] picks one mode for a machine ([`Machine::set_guest_idle`]).

use super::{Governor, HaltpollParams, IdleKind, IdleStateDesc, LatencyNs, Machine};
use crate::sim::Time;

/// KVM's host halt-polling (`kvm_vcpu_halt()`), with the module parameters of virt/kvm/kvm_main.c
/// (`halt_poll_ns` is per-arch: `KVM_HALT_POLL_NS_DEFAULT`, 200000 on x86) and what a wake
/// costs while the host polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostHaltPoll {
    /// The most a vCPU's poll window may grow to (`halt_poll_ns`), ns; 0: never poll.
    pub halt_poll_ns: u32,
    /// `halt_poll_ns_grow`: the window is multiplied by this after a short halt (0: no growth).
    pub halt_poll_ns_grow: u32,
    /// `halt_poll_ns_grow_start`: the first non-zero window, and the floor below which a shrunk
    /// window drops to 0.
    pub halt_poll_ns_grow_start: u32,
    /// `halt_poll_ns_shrink`: the window is divided by this after a long halt (0: reset).
    pub halt_poll_ns_shrink: u32,
    /// The wake of a vCPU the host is still polling: a VM entry that injects the interrupt.
    pub polled_wake: LatencyNs,
}

impl HostHaltPoll {
    /// The kernel's defaults on x86 (virt/kvm/kvm_main.c, arch/x86/include/asm/kvm_host.h @
    /// v6.10), with a polled wake of 0.1-0.5 us (docs/unknowns.md: a VM entry with event
    /// injection [infer], the same figure the icx-vm-32 preset's comment gives).
    pub const X86_DEFAULT: HostHaltPoll = HostHaltPoll {
        halt_poll_ns: 200_000,
        halt_poll_ns_grow: 2,
        halt_poll_ns_grow_start: 10_000,
        halt_poll_ns_shrink: 2,
        polled_wake: LatencyNs { lo_ns: 100, hi_ns: 500 },
    };
}

/// The host's per-vCPU halt-polling state (`vcpu->halt_poll_ns`), starting at 0 as
/// `kvm_vcpu_init()` leaves it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VcpuHaltPoll {
    pub halt_poll_ns: u32,
}

impl VcpuHaltPoll {
    /// A halt that began `halted_ns` ago ends with an interrupt now: whether the host was still
    /// polling (the first part of `kvm_vcpu_halt()`: the window is capped at `halt_poll_ns`
    /// on entry, and the poll loop sees the event if it came within the window).
    pub fn polled(&self, p: &HostHaltPoll, halted_ns: Time) -> bool {
        let window = self.halt_poll_ns.min(p.halt_poll_ns);
        window > 0 && halted_ns <= u64::from(window)
    }

    /// The end of `kvm_vcpu_halt()`: adjust the window by the halt's whole length `halt_ns`
    /// (polling included), as the kernel does for a valid wakeup: unchanged if the window
    /// covered it, shrunk after a halt longer than `halt_poll_ns`, grown after a shorter one.
    pub fn kvm_vcpu_halt_end(&mut self, p: &HostHaltPoll, halt_ns: Time) {
        let max = p.halt_poll_ns;
        // kvm_vcpu_halt() caps the window at the current maximum on entry.
        self.halt_poll_ns = self.halt_poll_ns.min(max);
        if max == 0 {
            self.halt_poll_ns = 0;
        } else if halt_ns <= u64::from(self.halt_poll_ns) {
        } else if self.halt_poll_ns != 0 && halt_ns > u64::from(max) {
            self.shrink_halt_poll_ns(p);
        } else if self.halt_poll_ns < max && halt_ns < u64::from(max) {
            self.grow_halt_poll_ns(p);
        }
    }

    /// `grow_halt_poll_ns()`: multiply, at least `grow_start` (in the kernel's `unsigned int`).
    fn grow_halt_poll_ns(&mut self, p: &HostHaltPoll) {
        if p.halt_poll_ns_grow == 0 {
            return;
        }
        let val = self.halt_poll_ns.wrapping_mul(p.halt_poll_ns_grow);
        self.halt_poll_ns = val.max(p.halt_poll_ns_grow_start);
    }

    /// `shrink_halt_poll_ns()`: divide (or reset), and drop to 0 below `grow_start`.
    fn shrink_halt_poll_ns(&mut self, p: &HostHaltPoll) {
        let val = self.halt_poll_ns.checked_div(p.halt_poll_ns_shrink).unwrap_or(0);
        self.halt_poll_ns = if val < p.halt_poll_ns_grow_start { 0 } else { val };
    }
}

/// How an idle vCPU of a KVM guest waits and wakes. `wake` is what waking the vCPU costs on
/// top of the interrupt's delivery when nothing polls: for HLT, the host's wakeup of the
/// blocked vCPU thread plus the VM entry; for MWAIT, the physical CPU's MWAIT exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestIdle {
    /// Plain HLT exits: neither the guest nor the host polls; every wake pays `wake`.
    Hlt { wake: LatencyNs },
    /// The guest's cpuidle-haltpoll polls (POLL state) up to its adaptive window, then halts;
    /// the host does not poll (MSR_KVM_POLL_CONTROL = 0).
    GuestHaltPoll { params: HaltpollParams, wake: LatencyNs },
    /// The guest halts at once (no guest polling); the host polls per `kvm_vcpu_halt()`:
    /// a wake within the vCPU's window costs `params.polled_wake`, a later one `wake`.
    HostHaltPoll { params: HostHaltPoll, wake: LatencyNs },
    /// MWAIT exposed: the guest idles in an MWAIT state on its flag word (polling), entered
    /// by the menu governor after POLL, woken in `wake` (no VM exit).
    Mwait { wake: LatencyNs },
}

impl GuestIdle {
    pub const NAMES: &'static [&'static str] = &["hlt", "guest-haltpoll", "host-haltpoll", "mwait"];

    pub fn name(&self) -> &'static str {
        match self {
            GuestIdle::Hlt { .. } => "hlt",
            GuestIdle::GuestHaltPoll { .. } => "guest-haltpoll",
            GuestIdle::HostHaltPoll { .. } => "host-haltpoll",
            GuestIdle::Mwait { .. } => "mwait",
        }
    }
}

impl Machine {
    /// Put this guest in an idle wake mode. The machine must be a KVM guest as the presets
    /// describe one: idle states POLL plus one HLT state (e.g. icx-vm-32's "haltpoll"). The
    /// HLT state's wake becomes `wake`; the governor and host polling follow the mode.
    pub fn set_guest_idle(&mut self, mode: GuestIdle) -> Result<(), String> {
        let hlt = match self.idle_states.as_slice() {
            [poll, hlt] if poll.kind == IdleKind::Poll && hlt.kind == IdleKind::Hlt => hlt.clone(),
            _ => {
                return Err(format!(
                    "machine {}: a guest idle mode needs a KVM guest's idle states (POLL and one hlt state)",
                    self.name
                ))
            }
        };
        let never_poll = HaltpollParams { guest_halt_poll_ns: 0, ..HaltpollParams::default() };
        let state = |wake| IdleStateDesc { wake, ..hlt.clone() };
        match mode {
            GuestIdle::Hlt { wake } => {
                self.governor = Governor::Haltpoll;
                self.haltpoll = never_poll;
                self.host_halt_poll = None;
                self.idle_states[1] = state(wake);
            }
            GuestIdle::GuestHaltPoll { params, wake } => {
                self.governor = Governor::Haltpoll;
                self.haltpoll = params;
                self.host_halt_poll = None;
                self.idle_states[1] = state(wake);
            }
            GuestIdle::HostHaltPoll { params, wake } => {
                self.governor = Governor::Haltpoll;
                self.haltpoll = never_poll;
                self.host_halt_poll = Some(params);
                self.idle_states[1] = state(wake);
            }
            GuestIdle::Mwait { wake } => {
                self.governor = Governor::Menu;
                self.host_halt_poll = None;
                // The C1 an MWAIT-capable guest's idle driver offers (intel_idle's C1 on Ice
                // Lake-SP and Sapphire Rapids: exit latency 1 us, target residency 1 us).
                self.idle_states[1] = IdleStateDesc {
                    name: "C1".into(),
                    desc: "MWAIT 0x00".into(),
                    kind: IdleKind::Mwait,
                    exit_latency_ns: 1_000,
                    target_residency_ns: 1_000,
                    wake,
                    timer_wake: None,
                    halt_extra: None,
                    halt_refill: None,
                    disabled: hlt.disabled,
                };
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_grows_on_short_halts_and_shrinks_on_long_ones_as_kvm_vcpu_halt() {
        let p = HostHaltPoll::X86_DEFAULT;
        let mut v = VcpuHaltPoll::default();
        assert!(!v.polled(&p, 1_000), "a fresh vCPU does not poll");
        v.kvm_vcpu_halt_end(&p, 5_000);
        assert_eq!(v.halt_poll_ns, 10_000, "a short halt grows the window to grow_start");
        assert!(v.polled(&p, 9_000) && !v.polled(&p, 11_000));
        v.kvm_vcpu_halt_end(&p, 9_000);
        assert_eq!(v.halt_poll_ns, 10_000, "a halt the window covered leaves it alone");
        v.kvm_vcpu_halt_end(&p, 50_000);
        assert_eq!(v.halt_poll_ns, 20_000, "longer than the window, shorter than the max: grow");
        for _ in 0..3 {
            v.kvm_vcpu_halt_end(&p, 150_000);
        }
        assert_eq!(v.halt_poll_ns, 160_000, "40, 80, 160 us; the third halt was covered");
        v.kvm_vcpu_halt_end(&p, 180_000);
        assert_eq!(v.halt_poll_ns, 320_000, "grown past the max (the cap applies at the next halt)");
        assert!(v.polled(&p, 200_000) && !v.polled(&p, 200_001), "polling is capped at halt_poll_ns");
        v.kvm_vcpu_halt_end(&p, 5_000_000);
        assert_eq!(v.halt_poll_ns, 100_000, "a halt longer than the max: capped, then halved");
        v.kvm_vcpu_halt_end(&p, 5_000_000);
        v.kvm_vcpu_halt_end(&p, 5_000_000);
        v.kvm_vcpu_halt_end(&p, 5_000_000);
        assert_eq!(v.halt_poll_ns, 12_500);
        v.kvm_vcpu_halt_end(&p, 5_000_000);
        assert_eq!(v.halt_poll_ns, 0, "below grow_start: off");
        let off = HostHaltPoll { halt_poll_ns: 0, ..p };
        let mut v = VcpuHaltPoll { halt_poll_ns: 40_000 };
        v.kvm_vcpu_halt_end(&off, 1_000);
        assert_eq!(v.halt_poll_ns, 0, "halt_poll_ns = 0 turns polling off");
    }

    #[test]
    fn set_guest_idle_changes_only_the_guests_idle_path() {
        let m = super::super::preset("icx-vm-32").unwrap();
        let wake = LatencyNs::new(12_000, 15_000);
        let mut h = m.clone();
        h.set_guest_idle(GuestIdle::HostHaltPoll { params: HostHaltPoll::X86_DEFAULT, wake }).unwrap();
        assert_eq!(h.host_halt_poll, Some(HostHaltPoll::X86_DEFAULT));
        assert_eq!((h.haltpoll.guest_halt_poll_ns, h.idle_states[1].wake), (0, wake));
        assert_eq!((h.idle_states[1].kind, &h.idle_states[1].name), (IdleKind::Hlt, &m.idle_states[1].name));
        let mut g = m.clone();
        g.set_guest_idle(GuestIdle::GuestHaltPoll { params: HaltpollParams::default(), wake }).unwrap();
        assert_eq!((g.governor, g.host_halt_poll), (Governor::Haltpoll, None));
        let mut w = m.clone();
        w.set_guest_idle(GuestIdle::Mwait { wake: LatencyNs::new(100, 300) }).unwrap();
        assert!(w.idle_states[1].kind.is_polling() && w.governor == Governor::Menu);
        assert_eq!((w.topo.nr_cpus, &w.costs), (m.topo.nr_cpus, &m.costs));
        let mut bare = super::super::preset("epyc-7763-2s").unwrap();
        assert!(bare.set_guest_idle(GuestIdle::Hlt { wake }).unwrap_err().contains("KVM guest"));
    }
}
