//! SIGINT, SIGTERM and SIGHUP: the run's partial files are removed and tracefs settings a
//! capture changed are put back, then the process dies of the same signal (so its exit status
//! says killed by that signal, as a shell, Slurm or Kubernetes expect).
//!
//! The signals are blocked in every thread (threads inherit the mask; child processes get an
//! empty one from `std::process::Command`) and one thread takes them with `sigwait()`, so the
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
