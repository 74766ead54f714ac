//! The determinism contract, enforced on the source: the kernel model (`src/linux`), the engine
//! (`src/sim`) and the hardware model (`src/hw`) never read the wall clock or the environment,
//! never iterate hash maps, never create their own random generators, and never use floating
//! point (ARCHITECTURE.md, "Architecture invariants").

use std::path::Path;

const BANNED: &[&str] = &["HashMap", "HashSet", "Instant::now", "SystemTime", "thread_rng", "std::env", "f64", "f32"];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("source dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn model_and_engine_keep_the_determinism_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for d in ["linux", "sim", "hw"] {
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
                if hit {
                    bad.push(format!("{}:{}: {b}: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "banned in the model/engine:\n{}", bad.join("\n"));
}

/// The workload boundary (ARCHITECTURE.md, "Architecture invariants"): the kernel model names
/// workload code only through `workload::registry`, and workloads never assign a field of a
/// kernel task or CPU (they call the kernel's entry points: `copy_process()`,
/// `sched_setaffinity()`, `do_exit_unwaited()`, ...).
#[test]
fn kernel_and_workloads_meet_only_at_the_registry_and_entry_points() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    let mut files = Vec::new();
    rust_files(&root.join("linux"), &mut files);
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("workload::") && !code.contains("workload::registry::") {
                bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    let mut files = Vec::new();
    rust_files(&root.join("workload"), &mut files);
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for obj in ["k.tasks[", "k.cpus["] {
                let Some(at) = code.find(obj) else { continue };
                // Skip the index, then the field path: an assignment follows it directly.
                let rest = &code[at + obj.len()..];
                let Some(close) = rest.find(']') else { continue };
                let tail = rest[close + 1..].trim_start_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '.');
                let tail = tail.trim_start();
                let assigns =
                    ["=", "+=", "-=", "|=", "&="].iter().any(|op| tail.starts_with(op)) && !tail.starts_with("==");
                if assigns {
                    bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "crossing the workload boundary:\n{}", bad.join("\n"));
}
