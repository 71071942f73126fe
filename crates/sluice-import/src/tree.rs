//! An nginx config as a tree of directives, `include`s expanded, each directive knowing
//! the file and line it came from (for the notes).

use crate::{ImportError, Note, Notes};
use nginx_lint_parser::ast::{ArgumentValue, ConfigItem, Directive};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Includes nested deeper than this are a loop.
const MAX_DEPTH: usize = 16;

/// One directive: `name args...;` or `name args... { children }`.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    /// Arguments as written, quotes removed, variables with their `$`.
    pub args: Vec<String>,
    pub children: Option<Vec<Node>>,
    pub file: Arc<str>,
    pub line: usize,
}

impl Node {
    pub fn arg(&self, i: usize) -> Option<&str> {
        self.args.get(i).map(String::as_str)
    }

    /// Its block's directives (none for a simple directive).
    pub fn block(&self) -> &[Node] {
        self.children.as_deref().unwrap_or(&[])
    }

    /// A note about this directive.
    pub fn note(&self, text: impl Into<String>) -> Note {
        Note {
            file: self.file.to_string(),
            line: self.line,
            directive: self.name.clone(),
            text: text.into(),
            ..Note::at("", "", "")
        }
    }
}

/// Reads `path` and every file it includes. Relative includes are taken from the main
/// file's directory, as nginx takes them from its configuration prefix.
pub fn load(path: &Path, notes: &mut Notes) -> Result<Vec<Node>, ImportError> {
    let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let loader = Loader { base };
    loader.file(path, 0, notes)
}

struct Loader {
    base: PathBuf,
}

impl Loader {
    fn file(&self, path: &Path, depth: usize, notes: &mut Notes) -> Result<Vec<Node>, ImportError> {
        let name: Arc<str> = path.display().to_string().into();
        let text = std::fs::read_to_string(path).map_err(|e| ImportError::Read {
            file: name.to_string(),
            cause: e.to_string(),
        })?;
        let parsed = nginx_lint_parser::parse_string(&text).map_err(|e| ImportError::Syntax {
            file: name.to_string(),
            cause: e.to_string(),
        })?;
        Ok(self.items(&parsed.items, &name, depth, notes))
    }

    fn items(
        &self,
        items: &[ConfigItem],
        file: &Arc<str>,
        depth: usize,
        notes: &mut Notes,
    ) -> Vec<Node> {
        let mut out = Vec::new();
        for item in items {
            let ConfigItem::Directive(d) = item else {
                continue;
            };
            let node = self.node(d, file, depth, notes);
            if node.name == "include" && node.children.is_none() {
                out.extend(self.include(&node, depth, notes));
            } else {
                out.push(node);
            }
        }
        out
    }

    fn node(&self, d: &Directive, file: &Arc<str>, depth: usize, notes: &mut Notes) -> Node {
        // The parser splits `https://$host$request_uri` into three tokens: arguments
        // that touch (no space between) are one, as nginx reads them.
        let mut args: Vec<String> = Vec::new();
        let mut end = None;
        for a in &d.args {
            let text = match &a.value {
                ArgumentValue::QuotedString(s) | ArgumentValue::SingleQuotedString(s) => s.clone(),
                _ => a.raw.clone(),
            };
            match args.last_mut() {
                Some(last) if end == Some(a.span.start.offset) => last.push_str(&text),
                _ => args.push(text),
            }
            end = Some(a.span.end.offset);
        }
        let children = d.block.as_ref().map(|b| {
            if b.is_raw() {
                Vec::new() // a Lua or similar body: not nginx directives
            } else {
                self.items(&b.items, file, depth, notes)
            }
        });
        Node {
            name: d.name.clone(),
            args,
            children,
            file: file.clone(),
            line: d.span.start.line,
        }
    }

    /// The directives of the files `include` names (a `*` in the file name matches).
    fn include(&self, node: &Node, depth: usize, notes: &mut Notes) -> Vec<Node> {
        let Some(pattern) = node.arg(0) else {
            return Vec::new();
        };
        if depth >= MAX_DEPTH {
            notes.push(node.note(format!(
                "{pattern}: includes nested {MAX_DEPTH} deep (a loop?); not read"
            )));
            return Vec::new();
        }
        let files = self.matching(pattern);
        if files.is_empty() {
            notes.push(node.note(format!(
                "{pattern}: no such file here; its directives are not translated (run the import where nginx's files are)"
            )));
        }
        let mut out = Vec::new();
        for f in files {
            match self.file(&f, depth + 1, notes) {
                Ok(nodes) => out.extend(nodes),
                Err(e) => notes.push(node.note(format!("{e}; not translated"))),
            }
        }
        out
    }

    /// The files `pattern` names, sorted (nginx reads a glob's files in order).
    fn matching(&self, pattern: &str) -> Vec<PathBuf> {
        let path = self.base.join(pattern);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.contains('*') {
            return if path.is_file() {
                vec![path]
            } else {
                Vec::new()
            };
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| glob(name, n))
            })
            .collect();
        found.sort();
        found
    }
}

/// Whether `name` matches `pattern`, whose `*`s match any run of characters.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn a_star_matches_any_run() {
        assert!(glob("*.conf", "default.conf"));
        assert!(glob("site-*.conf", "site-a.conf"));
        assert!(!glob("*.conf", "default.conf.bak"));
        assert!(glob("a*b*c", "aXbYc"));
        assert!(!glob("a*b*c", "acb"));
    }
}
