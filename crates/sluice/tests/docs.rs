//! The manual cannot drift from the code: its generated references are what the code
//! makes now.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
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

#[test]
fn cli_reference_is_current() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["man", "--markdown"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    for sub in ["serve", "bench", "lab", "import", "check"] {
        assert!(text.contains(&format!("`sluice {sub}`")), "{sub} missing");
    }
    ensure_current("docs/reference/cli.md", &text, "sluice man --markdown");
}
