//! The manual cannot drift from the code: its generated references are what the code
//! makes now.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Compares `file` (relative to the repository) with `fresh`; when they differ, writes
/// `fresh` there and fails, so that a change to the code shows up as a change to the
/// docs in the same commit (rust-analyzer's generated docs work this way).
fn ensure_current(file: &str, fresh: &str, how: &str) {
    let path = repo().join(file);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        std::fs::write(&path, fresh).unwrap();
        panic!("{file} was not what `{how}` makes now; it is regenerated: review and commit it");
    }
}

/// What `sluice man FLAG` prints.
fn man(flag: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["man", flag])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn cli_reference_is_current() {
    let text = man("--markdown");
    for sub in ["serve", "bench", "lab", "import", "check"] {
        assert!(text.contains(&format!("`sluice {sub}`")), "{sub} missing");
    }
    ensure_current("docs/reference/cli.md", &text, "sluice man --markdown");
}

#[test]
fn config_reference_is_current() {
    let text = man("--config");
    for key in [
        "`upstream.NAME.max_conns`",
        "`listener.bind`",
        "`keepalive_timeout`",
    ] {
        assert!(text.contains(key), "{key} missing");
    }
    ensure_current(
        "docs/reference/configuration.md",
        &text,
        "sluice man --config",
    );
}

/// The Markdown files of the manual: README.md and everything under docs/.
fn manual() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut dirs = vec![repo().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of `text`'s fenced code blocks whose info string is one of `kinds`, with
/// their 1-based line numbers, one block at a time.
fn blocks(text: &str, kinds: &[&str]) -> Vec<(String, Vec<(usize, String)>)> {
    let mut found = Vec::new();
    let mut open: Option<(String, Vec<(usize, String)>)> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (fence, open.take()) {
            (Some(_), Some(block)) => found.push(block),
            (Some(info), None) => {
                let kind = info.split_whitespace().next().unwrap_or("");
                if kinds.contains(&kind) {
                    open = Some((info.trim().to_string(), Vec::new()));
                } else {
                    // A block of another kind: skip to its end.
                    open = Some(("-".into(), Vec::new()));
                }
            }
            (None, Some(mut block)) => {
                block.1.push((n + 1, line.to_string()));
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    found.retain(|(info, _)| info != "-");
    found
}

/// The `sluice` command lines of a shell line: prompts, comments, environment
/// assignments, redirections and pipes taken away; `cargo run ... -- ARGS` as `ARGS`.
/// Lines with a command substitution are left out (their words are not known here).
fn sluice_commands(line: &str) -> Vec<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    let line = match line.find(" #") {
        Some(i) => &line[..i],
        None => line,
    };
    if line.starts_with('#') || line.contains("$(") || line.contains('`') {
        return Vec::new();
    }
    // `a; b` with no space before the `;`: a separator all the same.
    let line = line.replace(';', " ; ");
    let Some(words) = shlex::split(&line) else {
        return Vec::new();
    };
    let mut commands = Vec::new();
    for segment in words.split(|w| ["|", "||", "&&", ";", "&"].contains(&w.as_str())) {
        let mut words = segment.iter().skip_while(|w| {
            w.contains('=') && !w.starts_with('-') || ["sudo", "time", "exec"].contains(&w.as_str())
        });
        let Some(program) = words.next() else {
            continue;
        };
        let mut args: Vec<String> = words.cloned().collect();
        if program == "cargo" && args.first().is_some_and(|a| a == "run") {
            let Some(dash) = args.iter().position(|a| a == "--") else {
                continue;
            };
            args.drain(..=dash);
        } else if program != "sluice" && !program.ends_with("/sluice") {
            continue;
        }
        // Redirections: `> FILE`, `2>&1`, `< FILE`.
        let mut kept = Vec::new();
        let mut skip = false;
        for a in args {
            if skip {
                skip = false;
            } else if [">", ">>", "<", "2>"].contains(&a.as_str()) {
                skip = true;
            } else if !(a.starts_with('>') || a.starts_with("2>") || a.starts_with('<')) {
                kept.push(a);
            }
        }
        commands.push(kept);
    }
    commands
}

#[test]
fn every_sluice_command_in_the_manual_parses() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in manual() {
        let text = std::fs::read_to_string(&file).unwrap();
        // Blocks with no language hold output and diagrams, not commands.
        for (_, lines) in blocks(&text, &["sh", "bash", "shell", "console"]) {
            for (n, line) in lines {
                for args in sluice_commands(&line) {
                    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
                        .args(&args)
                        .env("SLUICE_PARSE_ONLY", "1")
                        .output()
                        .unwrap();
                    checked += 1;
                    if !out.status.success() {
                        let why = String::from_utf8_lossy(&out.stderr);
                        let why = why.lines().next().unwrap_or("").to_string();
                        wrong.push(format!(
                            "{}:{n}: sluice {}: {why}",
                            file.display(),
                            args.join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} commands found");
    assert!(
        wrong.is_empty(),
        "{} of {checked} do not parse:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// What a TOML block of the manual is: a whole config (`toml`, checked), or marked as a
/// part of one (`toml fragment`), a scenario file or an experiment file.
const TOML_KINDS: [&str; 4] = ["toml", "toml fragment", "toml scenario", "toml experiment"];

#[test]
fn every_whole_config_in_the_manual_is_valid() {
    let dir = std::env::temp_dir().join(format!("sluice-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut checked, mut wrong) = (0, Vec::new());
    for file in manual() {
        let name = file.strip_prefix(repo()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for (info, lines) in blocks(&text, &["toml"]) {
            let first = lines.first().map_or(0, |(n, _)| *n);
            if !TOML_KINDS.contains(&info.as_str()) {
                wrong.push(format!(
                    "{name}:{first}: ```{info}: mark it one of {TOML_KINDS:?}"
                ));
                continue;
            }
            if info != "toml" {
                continue;
            }
            let body: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
            let path = dir.join(format!("block-{checked}.toml"));
            std::fs::write(&path, body.join("\n")).unwrap();
            checked += 1;
            // As written: the files, names and certificates it points to are the
            // reader's own.
            if let Err(errors) = sluice_config::load_as_written(&path) {
                for e in errors.0 {
                    let line = first + e.line - 1;
                    wrong.push(format!("{name}:{line}: {}", e.message));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked > 0, "no whole config in the manual");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
