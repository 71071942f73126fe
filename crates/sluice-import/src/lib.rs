//! `sluice import`: an nginx.conf in, a sluice config out, with every directive it could
//! not translate listed as `file:line: directive: what sluice does instead`.
//!
//! This crate owns the mapping from nginx's directives to sluice's keys. It reads files
//! (the config and what it includes) and nothing else: it never resolves names, opens
//! sockets or checks certificates (`sluice check` does that to the output). A directive
//! is either translated, known to need nothing in sluice (said in a note), or listed as
//! not translated: never dropped silently.

mod compress;
mod emit;
mod guard;
mod known;
mod location;
mod plan;
mod scope;
mod sticky;
mod translate;
mod tree;
mod upstream;

use std::fmt;
use std::path::{Path, PathBuf};

/// The translation: the sluice config, and the notes about what did not carry over.
#[derive(Debug)]
pub struct Imported {
    pub toml: String,
    pub notes: Vec<Note>,
}

/// What a note says of its directive: the import's summary counts each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// sluice does it itself: nothing to write (`server_tokens`, `X-Forwarded-For`).
    Done,
    /// Carried over, differently: worth a read (`worker_processes 1`, `keepalive 32`).
    Changed,
    /// Not carried over (`rewrite`, a regex location).
    Lost,
    /// A check of who may come in that sluice cannot make (`auth_request`, an `if` that
    /// answers 403): the routes under it are written closed, answering 403. Or paths
    /// nginx guarded that sluice's routes leave open (a guarded regex location that is
    /// no prefix, or whose prefix takes fewer paths than nginx gave it): to close by
    /// hand. Either way the import is not the nginx config's equal (it exits 2).
    Closed,
}

/// One directive that sluice does differently, or not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub file: String,
    pub line: usize,
    pub directive: String,
    pub text: String,
    /// Its kind when set by whoever wrote it, rather than read from its words.
    kind: Option<NoteKind>,
}

impl Note {
    /// A note about the directive at `from` (`file:line`).
    pub(crate) fn at(from: &str, directive: &str, text: impl Into<String>) -> Note {
        let (file, line) = from.rsplit_once(':').unwrap_or((from, "0"));
        Note {
            file: file.to_string(),
            line: line.parse().unwrap_or(0),
            directive: directive.to_string(),
            text: text.into(),
            kind: None,
        }
    }

    /// The note about a check that closed routes.
    pub(crate) fn closed(self) -> Note {
        self.of_kind(NoteKind::Closed)
    }

    /// The note, of `kind` whatever its words.
    pub(crate) fn of_kind(self, kind: NoteKind) -> Note {
        Note {
            kind: Some(kind),
            ..self
        }
    }
}

impl Note {
    /// Which kind of note this is: as set, or from the words every other note of this
    /// crate ends with.
    pub fn kind(&self) -> NoteKind {
        if let Some(kind) = self.kind {
            return kind;
        }
        let t = &self.text;
        let done = [
            "nothing to write",
            "nothing more to write",
            "nothing to set",
            "nothing to choose",
            "not needed",
        ];
        let lost = ["not translated", "left out", "serves nothing"];
        if done.iter().any(|w| t.contains(w)) {
            NoteKind::Done
        } else if lost.iter().any(|w| t.contains(w)) {
            NoteKind::Lost
        } else {
            NoteKind::Changed
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file, self.line, self.directive, self.text
        )
    }
}

pub(crate) type Notes = Vec<Note>;

/// A file that cannot be read or is not nginx's syntax.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: cannot read it: {cause}")]
    Read { file: String, cause: String },
    #[error("{file}: not nginx's syntax: {cause}")]
    Syntax { file: String, cause: String },
}

/// Translates the nginx config at `path` (and the files it includes).
pub fn import(path: &Path) -> Result<Imported, ImportError> {
    let mut notes = Vec::new();
    let nodes = tree::load(path, &mut notes)?;
    let plan = translate::translate(&nodes, &conf_prefix(path), &mut notes);
    if plan.routes.is_empty() {
        notes.push(serves_nothing(&nodes, path));
    }
    let toml = emit::toml(&plan, &path.display().to_string());
    Ok(Imported { toml, notes })
}

/// nginx's conf prefix when started with `-c path`: the directory of the main file,
/// from which it takes relative paths (an `auth_basic_user_file`), made absolute.
fn conf_prefix(path: &Path) -> PathBuf {
    let main = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    main.parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

/// The note for a file that makes no route, about what it has instead: its `http` block
/// (with no server in it that sluice could translate), or, with none, its first
/// directive (an `events`-only file).
fn serves_nothing(nodes: &[tree::Node], path: &Path) -> Note {
    let result = "the result serves nothing (no listener, no route), and sluice check will say so until a server is added";
    if let Some(http) = nodes.iter().find(|n| n.name == "http") {
        return http.note(format!(
            "no server block in it that sluice could translate: {result}"
        ));
    }
    let Some(first) = nodes.first() else {
        return Note::at(
            &format!("{}:1", path.display()),
            "(empty file)",
            format!("no directives: {result}"),
        );
    };
    let mut blocks: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    blocks.dedup();
    first.note(format!(
        "no http block in this file (only {}): {result}",
        blocks.join(", ")
    ))
}
