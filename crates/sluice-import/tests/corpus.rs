//! Every config of the nginx corpus (the seeds' and real-world ones from public
//! projects, read in place from `../shared/nginx-corpus`) imports without a crash, with
//! what it could not translate listed, into a config `sluice check` accepts.

use std::path::{Path, PathBuf};

/// The corpus: `$SLUICE_NGINX_CORPUS`, or `shared/nginx-corpus` beside the project.
fn corpus() -> Option<PathBuf> {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/nginx-corpus");
    std::env::var_os("SLUICE_NGINX_CORPUS")
        .map(PathBuf::from)
        .or(Some(beside))
        .filter(|p| p.is_dir())
}

#[test]
fn every_corpus_config_imports_into_a_valid_sluice_config() {
    let Some(dir) = corpus() else {
        eprintln!(
            "no nginx corpus beside the project (set SLUICE_NGINX_CORPUS): nothing to import"
        );
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 25,
        "{} configs in {}",
        files.len(),
        dir.display()
    );
    let mut failures = Vec::new();
    for file in &files {
        let imported =
            sluice_import::import(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for note in &imported.notes {
            assert!(note.line > 0 && !note.text.is_empty(), "{note}");
        }
        let nothing = imported
            .notes
            .iter()
            .any(|n| n.text.starts_with("no server block"));
        if let Err(errors) = sluice_config::parse("imported.toml", &imported.toml) {
            // What only this machine lacks (nginx's directories) is not the translation's
            // fault; a file with no server block cannot make a config that serves.
            let real: Vec<String> = errors
                .0
                .iter()
                .map(|e| e.to_string())
                .filter(|e| !e.contains("is not a directory"))
                .filter(|e| !(nothing && (e.contains("no listener") || e.contains("no route"))))
                .collect();
            if !real.is_empty() {
                failures.push(format!(
                    "{}:\n{}\n{}",
                    file.display(),
                    imported.toml,
                    real.join("\n")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
