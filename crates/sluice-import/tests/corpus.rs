//! Every config of the nginx corpus (the seeds' and real-world ones from public
//! projects, read in place from `../shared/nginx-corpus`) imports without a crash, with
//! what it could not translate listed, into a config `sluice check` accepts.
//!
//! The corpus stays outside the repository (its configs carry their own licences), so
//! these tests are `#[ignore]`d: plain `cargo test` lists them as ignored, and
//! `scripts/test.sh` runs them (`--include-ignored`) when it finds the corpus, or says
//! loudly that it skipped them. Run here without it, they fail, naming where they looked.
//! Their names all begin with `nginx_corpus::` (what `scripts/test.sh` skips).

use sluice_import::{Imported, NoteKind};
use std::path::{Path, PathBuf};

/// Why these tests are ignored by plain `cargo test`.
const NEEDS: &str = "needs the nginx corpus: ../shared/nginx-corpus or SLUICE_NGINX_CORPUS";

/// The corpus: `$SLUICE_NGINX_CORPUS`, or `shared/nginx-corpus` beside the checkout (in
/// the directory that holds it). Read in place, never copied in. Fails the test, saying
/// where it looked, when it is in neither.
fn corpus() -> PathBuf {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/nginx-corpus");
    let dir = match std::env::var_os("SLUICE_NGINX_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => beside,
    };
    assert!(
        dir.is_dir(),
        "this test {NEEDS} (no directory {})",
        dir.display()
    );
    dir
}

/// One config of the corpus, imported.
fn corpus_import(name: &str) -> Imported {
    let path = corpus().join(name);
    assert!(
        path.is_file(),
        "no {name} in the corpus ({})",
        path.display()
    );
    sluice_import::import(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The kind and text of the note on `directive` (the first, if several).
fn note<'i>(imported: &'i Imported, directive: &str) -> (NoteKind, &'i str) {
    let found = imported.notes.iter().find(|n| n.directive == directive);
    let Some(n) = found else {
        panic!("no note on {directive}: {:#?}", imported.notes);
    };
    (n.kind(), n.text.as_str())
}

mod nginx_corpus {
    use super::*;

    #[test]
    #[ignore = "needs the nginx corpus: ../shared/nginx-corpus or SLUICE_NGINX_CORPUS"]
    fn every_corpus_config_imports_into_a_valid_sluice_config() {
        let dir = corpus();
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
                .any(|n| n.text.contains("serves nothing"));
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

    /// Seed 000's config, moved as the field notes moved it: what changes silently is said
    /// (carried over differently), what sluice does itself is not counted as lost, and the
    /// result has an admin listener for `sluice status` and `sluice reload`.
    #[test]
    #[ignore = "needs the nginx corpus: ../shared/nginx-corpus or SLUICE_NGINX_CORPUS"]
    fn seed_000_says_what_changes_and_what_sluice_does_itself() {
        let imported = corpus_import("seed-000-1.conf");
        let (kind, text) = note(&imported, "worker_processes");
        assert_eq!(kind, NoteKind::Changed, "{text}");
        assert!(text.contains("workers = 1"), "{text}");
        for changed in ["worker_connections", "access_log", "index"] {
            let (kind, text) = note(&imported, changed);
            assert_eq!(kind, NoteKind::Changed, "{changed}: {text}");
        }
        assert!(note(&imported, "index").1.contains("index.html"));
        for done in ["server_tokens", "charset"] {
            let (kind, text) = note(&imported, done);
            assert_eq!(kind, NoteKind::Done, "{done}: {text}");
        }
        let toml = &imported.toml;
        assert!(toml.contains("workers = 1\n"), "{toml}");
        assert!(
            toml.contains("[admin]\nbind = \"127.0.0.1:9901\"\n"),
            "{toml}"
        );
        assert!(
            toml.contains("`sluice status`"),
            "the advice says why:\n{toml}"
        );
    }

    /// Seed 002's second file has an `events` block only: the note says the result serves
    /// nothing, about the block the file has (not a `server` it does not have).
    #[test]
    #[ignore = "needs the nginx corpus: ../shared/nginx-corpus or SLUICE_NGINX_CORPUS"]
    fn an_events_only_file_says_the_result_serves_nothing() {
        let imported = corpus_import("seed-002-2.conf");
        let said: Vec<_> = imported
            .notes
            .iter()
            .filter(|n| n.text.contains("serves nothing"))
            .collect();
        assert_eq!(said.len(), 1, "{:#?}", imported.notes);
        let n = said[0];
        assert_eq!((n.directive.as_str(), n.line), ("events", 1), "{n}");
        assert!(n.text.contains("no http block"), "{n}");
        assert_eq!(n.kind(), NoteKind::Lost);
    }

    /// Discourse's sample: its `root $public` and `alias $public/` leave no variable in the
    /// result, its `internal` locations answer 404 as nginx answered clients (left out,
    /// `/backups/` would fall to a shorter prefix), and the notes on `internal` and
    /// `log_not_found` say what sluice does.
    #[test]
    #[ignore = "needs the nginx corpus: ../shared/nginx-corpus or SLUICE_NGINX_CORPUS"]
    fn discourse_imports_with_no_variable_and_its_internal_locations_answer_404() {
        let imported = corpus_import("discourse-nginx-sample.conf");
        let toml = &imported.toml;
        assert!(!toml.contains('$'), "{toml}");
        for internal in ["/backups/", "/downloads/"] {
            let path = format!("path = \"{internal}\"\n");
            let route = toml.split("\n\n").find(|block| block.contains(&path));
            let answers = route.is_some_and(|r| r.contains("return = { status = 404 }"));
            assert!(answers, "{internal}:\n{toml}");
        }
        sluice_config::parse("imported.toml", toml).unwrap_or_else(|e| panic!("{e}"));
        // sluice's root answers no differently for either: it never did what they ask.
        for n in imported
            .notes
            .iter()
            .filter(|n| n.directive == "internal" || n.directive == "log_not_found")
        {
            assert!(
                !n.text.contains("serves the file at the request's path"),
                "{n}"
            );
        }
        let (kind, text) = note(&imported, "log_not_found");
        assert_eq!(kind, NoteKind::Done, "{text}");
        assert!(text.contains("no error for a file not found"), "{text}");
        assert_eq!(note(&imported, "internal").0, NoteKind::Changed);
    }

    /// The corpus configs that compress and proxy (peertube's and discourse's routes
    /// proxy to nothing sluice can reach): their gzip settings on every proxied route,
    /// what sluice does itself noted, and the result valid.
    #[test]
    #[ignore = "needs the nginx corpus: ../shared/nginx-corpus or SLUICE_NGINX_CORPUS"]
    fn gzip_carries_over_from_mastodon_and_mattermost() {
        for (name, level, min) in [
            ("mastodon-dist-nginx.conf", 6, 20),
            ("mattermost-docker-nginx-default.conf", 6, 20),
        ] {
            let imported = corpus_import(name);
            let toml = &imported.toml;
            let proxied = toml.matches("\nupstream = ").count();
            let compressed = format!("compress = {{ gzip = {level}, types = [\"text/html\"");
            assert!(proxied > 0, "{name}: no proxied route\n{toml}");
            assert_eq!(
                toml.matches(&compressed).count(),
                proxied,
                "{name}:\n{toml}"
            );
            assert!(
                toml.contains(&format!("min_length = {min} }}")),
                "{name}:\n{toml}"
            );
            assert_eq!(note(&imported, "gzip_vary").0, NoteKind::Done, "{name}");
            // Only nginx's directories, missing on this machine, may be wrong.
            if let Err(errors) = sluice_config::parse("imported.toml", toml) {
                let real = errors.0.iter().map(|e| e.to_string());
                let real: Vec<String> =
                    real.filter(|e| !e.contains("is not a directory")).collect();
                assert!(real.is_empty(), "{name}: {real:?}");
            }
        }
        let mastodon = corpus_import("mastodon-dist-nginx.conf");
        assert_eq!(note(&mastodon, "gzip_disable").0, NoteKind::Lost);
        assert_eq!(note(&mastodon, "gzip_proxied").0, NoteKind::Done);
        assert!(mastodon.toml.contains("\"application/xml+rss\""));
        let nextcloud = corpus_import("nextcloud-docker-fpm-web-nginx.conf");
        assert_eq!(note(&nextcloud, "gzip_proxied").0, NoteKind::Changed);
    }

    /// Seed 003's config, as the corpus keeps it: its third-party `consistent_hash` module
    /// becomes sluice's hash (translate.rs has the same on a config of its own).
    #[test]
    #[ignore = "needs the nginx corpus: ../shared/nginx-corpus or SLUICE_NGINX_CORPUS"]
    fn seed_003s_consistent_hash_module_becomes_sluices_hash() {
        let imported = corpus_import("seed-003-2.conf");
        assert!(
            imported.toml.contains("balance = \"hash\""),
            "{}",
            imported.toml
        );
    }
}
