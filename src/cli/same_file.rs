//! No output over an input or over another output of the same command: every file a command
//! writes is compared with every file it reads and every other file it writes, by identity
//! (device and inode when it exists, through links and relative paths; else its canonical parent
//! directory and name), before anything is written.

use std::path::{Path, PathBuf};

/// What identifies a file: its inode, or, for a file not yet there, where it would be.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

/// `p`'s identity; `None` for what is not a regular file (a device such as `/dev/null`, a FIFO,
/// a directory: writing there destroys nothing) or a path whose directory does not exist.
fn identity(p: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => Some(Identity::Inode(m.dev(), m.ino())),
        Ok(_) => None,
        Err(_) => {
            let name = p.file_name()?;
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            Some(Identity::Path(std::fs::canonicalize(dir).ok()?.join(name)))
        }
    }
}

/// An error when an output (named by its flag in `outputs`) is the same file as an input or as
/// another output.
pub fn check(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<(), String> {
    let ins: Vec<_> = inputs.iter().map(|(w, p)| (w, p, identity(p))).collect();
    let mut seen: Vec<(&str, &Path, Identity)> = Vec::new();
    for (what, p) in outputs {
        let Some(id) = identity(p) else { continue };
        for (iw, ip, iid) in &ins {
            if iid.as_ref() == Some(&id) {
                return Err(format!(
                    "{what} {} is the same file as the {iw} {}: schedsim never writes over its inputs",
                    p.display(),
                    ip.display()
                ));
            }
        }
        for (ow, op, oid) in &seen {
            if *oid == id {
                return Err(format!(
                    "{ow} {} and {what} {} are the same file: each output needs its own file",
                    op.display(),
                    p.display()
                ));
            }
        }
        seen.push((what, p, id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_relative_paths_are_the_same_file() {
        let d = std::env::temp_dir().join(format!("schedsim-same-file-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let f = d.join("in.toml");
        std::fs::write(&f, "x").unwrap();
        let link = d.join("link.toml");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = check(&[("scenario file", &f)], &[("--trace", &link)]).unwrap_err();
        assert!(e.contains("same file as the scenario file"), "{e}");
        let dotted = d.join("sub/../in.toml");
        assert!(check(&[("machine file", &f)], &[("--html", &dotted)]).is_err());
        // Two outputs not yet there, named differently.
        let (a, b) = (d.join("new.html"), d.join("sub/../new.html"));
        let e = check(&[], &[("--trace", &a), ("--html", &b)]).unwrap_err();
        assert!(e.contains("are the same file"), "{e}");
        assert!(check(&[("scenario file", &f)], &[("--trace", &d.join("t.txt")), ("--html", &a)]).is_ok());
        // Devices may be named twice.
        assert!(check(&[], &[("--trace", Path::new("/dev/null")), ("--html", Path::new("/dev/null"))]).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
