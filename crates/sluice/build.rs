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

/// Reruns this script when HEAD moves: HEAD itself, the branch file it names, and
/// packed-refs (where git may keep that branch).
fn watch_head(git: &Path) {
    let head = git.join("HEAD");
    let Ok(text) = std::fs::read_to_string(&head) else {
        return;
    };
    println!("cargo:rerun-if-changed={}", head.display());
    if let Some(branch) = text.trim().strip_prefix("ref: ") {
        for file in [git.join(branch), git.join("packed-refs")] {
            if file.exists() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
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
