//! The docs are self-contained (issue 15 item 7): every `NAME.md` a source file, test,
//! scenario, machine preset or doc of the repository cites exists in the repository (at the
//! path given, at the top level, or in docs/), and every numbered section cited as
//! `docs/NAME.md §N.M` or `... section N` is a heading of that file.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| ["rs", "toml", "md", "json", "sh"].iter().any(|e| x == *e)) {
            out.push(p);
        }
    }
}

/// The `*.md` names cited in `text`, each with the text that follows it.
fn citations(text: &str) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find(".md") {
        let end = from + i + 3;
        let after_ok = b.get(end).is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'));
        let mut start = from + i;
        while start > 0 && (b[start - 1].is_ascii_alphanumeric() || b"_./-".contains(&b[start - 1])) {
            start -= 1;
        }
        let name = text[start..end].trim_start_matches("./").to_string();
        if after_ok && start < from + i && !name.starts_with('.') {
            out.push((name, &text[end..]));
        }
        from = end;
    }
    out
}

/// Section numbers cited right after a doc name: `§9.2`, `§5.1, §5.4`, `section 9`, `sections 0 and 7`.
fn sections(after: &str) -> Vec<String> {
    let head: String = after.chars().take(48).collect();
    let head = head.split([')', ':', ';', '\n']).next().unwrap_or("");
    // Up to the next document named.
    let head = head.split(".md").next().unwrap_or("");
    let mut out = Vec::new();
    let words: Vec<&str> = head.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    // A bare number right after the name is a section too (`docs/workloads.md 9.3`).
    let mut numbered = words.first().is_some_and(|w| w.contains('.') && w.starts_with(|c: char| c.is_ascii_digit()));
    for w in words {
        let w2 = w.trim_start_matches('§');
        if w.starts_with('§') || numbered {
            let n: String = w2.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            let n = n.trim_end_matches('.').to_string();
            if !n.is_empty() && n.chars().next().unwrap().is_ascii_digit() {
                out.push(n);
                continue;
            }
            if w != "and" {
                numbered = false;
            }
        }
        if w == "section" || w == "sections" {
            numbered = true;
        }
    }
    out
}

fn headings(doc: &str) -> Vec<String> {
    doc.lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| l.trim_start_matches('#').split_whitespace().next())
        .map(|n| n.trim_end_matches('.').to_string())
        .collect()
}

#[test]
fn every_cited_document_is_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for d in ["src", "tests", "examples", "scenarios", "docs", "deploy", "tools"] {
        files(&root.join(d), &mut all);
    }
    all.push(root.join("README.md"));
    all.push(root.join("ARCHITECTURE.md"));
    assert!(all.len() > 100, "found the sources");
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in &all {
        if f.ends_with("tests/docs_cited.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (name, after) in citations(&text) {
            // A path built from the crate root (`concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")`).
            let name = name.trim_start_matches('/');
            let found = [root.join(name), root.join("docs").join(name)].into_iter().find(|p| p.is_file());
            let rel = f.strip_prefix(root).unwrap_or(f).display().to_string();
            let Some(doc) = found else {
                bad.push(format!("{rel}: cites {name}, which is not in the repository"));
                continue;
            };
            checked += 1;
            let heads = headings(&std::fs::read_to_string(&doc).unwrap_or_default());
            for s in sections(after) {
                if !heads.contains(&s) {
                    bad.push(format!("{rel}: cites {name} section {s}, which has no such heading"));
                }
            }
        }
    }
    assert!(checked > 50, "found the citations ({checked})");
    assert!(bad.is_empty(), "citations of documents outside the repository:\n{}", bad.join("\n"));
}

#[test]
fn the_citation_scanner_reads_the_forms_in_use() {
    let c = citations("see docs/workloads.md §9.2, row x; kernel.md and a.mdx");
    assert_eq!(c.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["docs/workloads.md", "kernel.md"]);
    assert_eq!(sections(" §9.2, row"), ["9.2"]);
    assert_eq!(sections(" §5.1, §5.4)"), ["5.1", "5.4"]);
    assert_eq!(sections(" sections 0 and 7, x"), ["0", "7"]);
    assert_eq!(sections(" section 9 table rows"), ["9"]);
    assert_eq!(sections(" 9.3, row x"), ["9.3"]);
    assert!(sections(" for every cost").is_empty());
    assert!(sections(" (the 2013 thread)").is_empty());
}
