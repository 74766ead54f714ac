//! The determinism contract, enforced on the source: the kernel model (`src/linux`), the engine
//! (`src/sim`), the hardware model (`src/hw`) and the explorer (`src/explore`) never read the
//! wall clock or the environment, never iterate hash maps, never create their own random
//! generators, never use floating point, and never do I/O or print (ARCHITECTURE.md,
//! "Architecture invariants").

use std::path::{Path, PathBuf};

const BANNED: &[&str] = &[
    "HashMap",
    "HashSet",
    "Instant::now",
    "SystemTime",
    "thread_rng",
    "std::env",
    "f64",
    "f32",
    // No I/O and no clock of the host (ARCHITECTURE.md: the CLI is the only module doing I/O).
    "std::fs",
    "std::io",
    "std::net",
    "std::process",
    "std::thread",
    "std::time",
    "File",
    "println!",
    "eprintln!",
    "print!",
    "eprint!",
    "dbg!",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("source dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `file:line: text` of every line of `files` whose code (the part before `//`) `hit` flags.
fn scan(files: &[PathBuf], mut hit: impl FnMut(&Path, &str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (i, line) in text.lines().enumerate() {
            if hit(f, line.split("//").next().unwrap_or("")) {
                out.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files_under(dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in dirs {
        rust_files(&src().join(d), &mut out);
    }
    out
}

#[test]
fn model_and_engine_keep_the_determinism_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for d in ["linux", "sim", "hw", "explore"] {
        rust_files(&root.join(d), &mut files);
    }
    assert!(files.len() > 20, "found the sources");
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for b in BANNED {
                let hit = code.match_indices(b).any(|(at, _)| {
                    // Whole identifiers only (f64 but not "buf64").
                    let before = code[..at].chars().last();
                    let after = code[at + b.len()..].chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                // The explorer's in-memory trace sink implements `TraceSink`, whose methods return
                // `std::io::Result`: a type in a signature, not I/O.
                let sink_signature = *b == "std::io"
                    && f.components().any(|c| c.as_os_str() == "explore")
                    && code.contains("std::io::Result");
                if hit && !sink_signature {
                    bad.push(format!("{}:{}: {b}: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "banned in the model/engine:\n{}", bad.join("\n"));
}

/// Programs reach the kernel through its entry points (ARCHITECTURE.md): a workload or daemon
/// never sets a task's scheduler fields itself. Greps the assignments the kernel model owns. (The task
/// state, `TASK_DEAD`, and `pinned` move behind `do_exit()` and `sched_setaffinity()` with issue
/// 15 item 6; until then they are not in this list.)
#[test]
fn workloads_do_not_assign_scheduler_fields() {
    let owned = [".on_rq =", ".on_cpu =", ".nr_running =", ".ttwu_pending =", ".need_resched =", ".cpus_mask ="];
    let bad = scan(&files_under(&["workload", "background"]), |_, code| owned.iter().any(|o| code.contains(o)));
    assert!(bad.is_empty(), "workloads writing kernel scheduler state:\n{}", bad.join("\n"));
}

/// The engine and the hardware model know nothing of the kernel model (`hw/` holds facts, never
/// kernel policy), and no code outside `linux/cost.rs` changes a path cost after boot (a patch
/// changes which path runs, never what it costs): ARCHITECTURE.md, "Rules".
#[test]
fn hardware_and_engine_do_not_reach_into_the_kernel_and_costs_are_not_rewritten() {
    let mut bad = scan(&files_under(&["hw", "sim"]), |_, code| code.contains("crate::linux"));
    bad.extend(scan(&files_under(&["."]), |f, code| {
        let Some(at) = code.find(".costs.") else { return false };
        let rest = code[at + 7..].trim_start_matches(|c: char| c.is_alphanumeric() || c == '_').trim_start();
        !f.ends_with("linux/cost.rs") && ["= ", "+=", "-=", "*=", "/="].iter().any(|op| rest.starts_with(op))
    }));
    assert!(bad.is_empty(), "layering or cost invariant broken:\n{}", bad.join("\n"));
}

/// Only the command line reads the wall clock, and only it, `input.rs` (input files),
/// `trace/sink.rs` (trace files) and `sweep/mod.rs` (grid and result files) touch files
/// (ARCHITECTURE.md, codemap of `src/cli/`).
#[test]
fn clock_and_files_stay_in_their_modules() {
    let root = src();
    let bad = scan(&files_under(&["."]), |f, code| {
        let r = f
            .strip_prefix(root.join("."))
            .or_else(|_| f.strip_prefix(&root))
            .unwrap_or(f)
            .to_string_lossy()
            .to_string();
        let cli = r.starts_with("cli/") || r == "main.rs";
        let files_ok = cli || ["input.rs", "trace/sink.rs", "sweep/mod.rs"].contains(&r.as_str());
        let clock = ["Instant", "SystemTime", "std::time"].iter().any(|w| code.contains(w));
        let file = ["std::fs", "File::", "OpenOptions"].iter().any(|w| code.contains(w));
        (clock && !cli) || (file && !files_ok)
    });
    assert!(bad.is_empty(), "wall clock or file access outside its modules:\n{}", bad.join("\n"));
}

/// The program boundary (ARCHITECTURE.md, "Rules"): programs (workloads, the background's
/// daemons) never assign a field of a kernel task or CPU; they call the kernel's entry points
/// (`copy_process()`, `sched_setaffinity()`, `do_exit_unwaited()`, syscalls, ...). (The kernel
/// names no program at all: `the_kernel_model_imports_no_program_or_run_module`.)
#[test]
fn programs_meet_the_kernel_only_at_its_entry_points() {
    let bad = scan(&files_under(&["workload", "background"]), |_, code| {
        ["k.tasks[", "k.cpus["].iter().any(|obj| {
            let Some(at) = code.find(obj) else { return false };
            // Skip the index, then the field path: an assignment follows it directly.
            let rest = &code[at + obj.len()..];
            let Some(close) = rest.find(']') else { return false };
            let tail = rest[close + 1..].trim_start_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '.');
            let tail = tail.trim_start();
            ["=", "+=", "-=", "|=", "&="].iter().any(|op| tail.starts_with(op)) && !tail.starts_with("==")
        })
    });
    assert!(bad.is_empty(), "a program writing kernel state:\n{}", bad.join("\n"));
}

/// The layers of the crate, bottom first (ARCHITECTURE.md, "Layers"): a module may name only
/// modules of lower layers (`crate::X` anywhere in its code, comments aside). A new top-level
/// module must be given a layer here.
const LAYERS: &[&[&str]] = &[
    &["sim", "report"],
    &["limits"],
    &["input", "hw"],
    &["trace"],
    &["linux"],
    &["world", "workload", "background"],
    &["unknowns"],
    &["spec", "crash"],
    &["run"],
    &["output", "explore", "focus", "validate"],
    &["calibrate", "import"],
    &["html"],
    &["experiments"],
    &["sweep"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

#[test]
fn no_import_points_up_the_layers() {
    let root = src();
    let mut bad = Vec::new();
    let mut modules = Vec::new();
    for e in std::fs::read_dir(&root).expect("src") {
        let p = e.expect("entry").path();
        let name = p.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
        if name == "lib" || name == "main" {
            continue;
        }
        let Some(layer) = layer_of(&name) else {
            bad.push(format!("src/{name}: a top-level module without a layer in tests/tidy.rs LAYERS"));
            continue;
        };
        modules.push(name.clone());
        let mut files = Vec::new();
        if p.is_dir() {
            rust_files(&p, &mut files);
        } else {
            files.push(p.clone());
        }
        bad.extend(scan(&files, |_, code| {
            code.match_indices("crate::").any(|(at, _)| {
                let rest = &code[at + "crate::".len()..];
                let target: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                target != name && layer_of(&target).is_some_and(|l| l >= layer)
            })
        }));
    }
    assert!(modules.len() >= 15, "found the modules: {modules:?}");
    assert!(bad.is_empty(), "imports pointing up or sideways in the layers:\n{}", bad.join("\n"));
}

/// The kernel model names no program and no layer above it: what issue 33 asked, stated
/// directly (the layer test above implies it).
#[test]
fn the_kernel_model_imports_no_program_or_run_module() {
    let bad = scan(&files_under(&["linux"]), |_, code| {
        ["crate::workload", "crate::background", "crate::run", "crate::cli", "crate::explore", "crate::sweep"]
            .iter()
            .any(|m| code.contains(m))
    });
    assert!(bad.is_empty(), "linux/ imports a program or run module:\n{}", bad.join("\n"));
}
