//! Puts the commit sluice is built from into `sluice --version`: `$SLUICE_COMMIT` if set
//! (a build without the repository, such as a container's), else git's HEAD; nothing
//! when neither is known.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SLUICE_COMMIT");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    watch_head(&root.join(".git"));
    let commit = std::env::var("SLUICE_COMMIT")
        .ok()
        .or_else(|| git_head(&root));
    let version = match commit {
        Some(c) => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
        None => env!("CARGO_PKG_VERSION").to_string(),
    };
    println!("cargo:rustc-env=SLUICE_VERSION={version}");
}

/// Reruns this script when HEAD moves: HEAD itself, the branches' directory (a commit
/// rewrites its branch's file there, or creates it when the branch was only packed),
/// and packed-refs.
fn watch_head(git: &Path) {
    let head = git.join("HEAD");
    if !head.exists() {
        return;
    }
    for path in [head, git.join("refs/heads"), git.join("packed-refs")] {
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

fn git_head(root: &Path) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
