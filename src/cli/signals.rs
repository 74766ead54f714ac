//! SIGINT, SIGTERM and SIGHUP: the run's partial files are removed and tracefs settings a
//! capture changed are put back, then the process dies of the same signal (so its exit status
//! says killed by that signal, as a shell, Slurm or Kubernetes expect).
//!
//! The signals are blocked in every thread (threads inherit the mask; so do child processes,
//! which is why the commands schedsim starts unblock them first, [`unblock_in_child`]) and one
//! thread takes them with `sigwait()`, so the
//! clean-up is ordinary code, not a signal handler: it empties
//! [`crate::trace::sink::partials`], whose lock it keeps until the process is gone, so a sweep's
//! line being appended is finished first and nothing new is written after.

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn set_of(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given; sigaddset takes valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Block the signals and start the thread that takes them. Call first in `main`, before any
/// other thread exists.
pub fn install() {
    let set = set_of(&SIGNALS);
    // SAFETY: changes this thread's mask only; `set` is initialised.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } != 0 {
        return;
    }
    let started = std::thread::Builder::new().name("signals".into()).spawn(move || loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is initialised and `sig` is a valid place for the answer.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 || ignored(sig) {
            continue;
        }
        crate::trace::sink::partials::clean_up_for_signal();
        die_of(sig);
    });
    if started.is_err() {
        // No thread to take them: let the signals act as before.
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}

/// Unblock the signals in a child between fork and exec (a `pre_exec` hook): a child inherits
/// the blocked mask, and a server that cannot be sent SIGTERM outlives the run that started it
/// (host-run's netserver and tbench_srv under validate did, and validate waited for them).
/// Only async-signal-safe calls.
pub fn unblock_in_child() -> std::io::Result<()> {
    let set = set_of(&SIGNALS);
    // SAFETY: changes the calling (child) thread's mask only; `set` is initialised.
    if unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `sig` is ignored now (by `nohup`, or by validate while its child has the terminal):
/// a blocked signal is queued even when ignored, so the thread checks.
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: reads the disposition only (no new action is given).
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// End the process by `sig`'s default action.
fn die_of(sig: libc::c_int) -> ! {
    let one = set_of(&[sig]);
    // SAFETY: plain signal disposition and mask changes, then raise() on this thread, which now
    // has `sig` unblocked with its default action; _exit() if it ever returns.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_started_with_the_hook_has_the_signals_unblocked() {
        use std::os::unix::process::CommandExt;
        let set = set_of(&SIGNALS);
        // Blocked on this thread, as `install()` blocks them in main.
        // SAFETY: this thread's mask only; `set` is initialised.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        let mut c = std::process::Command::new("sh");
        c.args(["-c", "grep SigBlk /proc/self/status"]);
        // SAFETY: the hook is async-signal-safe.
        unsafe { c.pre_exec(unblock_in_child) };
        let out = c.output();
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
        let text = String::from_utf8(out.unwrap().stdout).unwrap();
        let mask = u64::from_str_radix(text.split_whitespace().nth(1).unwrap(), 16).unwrap();
        for s in SIGNALS {
            assert_eq!(mask & (1 << (s - 1)), 0, "signal {s} still blocked in the child: {text}");
        }
    }
}
