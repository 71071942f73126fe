//! Patterns that read straight through, matched in one pass without a regex engine.
//!
//! Such a pattern is anchored at the start (`^`) and is a sequence of literals, single
//! characters of a class, and greedy runs of one class (`\w+`, `.*`, `[^/]{2,8}`), with
//! groups around any of these and `$` last. A run must be followed by the end, by
//! nothing, or by a literal or class none of whose first characters it can hold: then
//! the longest run is the only one that can lead to a match, and reading it costs a
//! look at each character. Most of nginx's locations and rewrites are such
//! (`^/api/(.*)$`, `^/(\w+)/(\d+)\.html$`), and for them the `regex` crate's search
//! with groups costs three to four times the instructions (~1,050 against ~290 for
//! `^/re/(\w+)/(.*)$` on a short path: bench/runs/2026-11-30-instructions-routing-2).
//!
//! The classes are the regex crate's own (its parser's, regex-syntax), so what matches
//! and what each group holds are the regex crate's; a property test compares the two.

use regex_syntax::hir::{Class, ClassUnicode, Hir, HirKind, Look};

/// At most this many groups, the whole match included (nginx has `$1`..`$9`); a pattern
/// with more goes to the regex crate.
const MAX_GROUPS: usize = 10;

/// A pattern that reads straight through.
#[derive(Clone, Debug)]
pub struct Linear {
    items: Box<[Item]>,
    groups: usize,
}

#[derive(Clone, Debug)]
enum Item {
    Literal(Box<[u8]>),
    One(Set),
    Run {
        set: Set,
        min: u32,
        max: Option<u32>,
    },
    Open(usize),
    Close(usize),
    End,
}

/// Where each group of a match is, by number (0: the whole match).
#[derive(Clone, Copy, Debug)]
pub struct Spans {
    at: [(u32, u32); MAX_GROUPS],
    len: u8,
}

impl Spans {
    pub fn get(&self, i: usize) -> Option<(usize, usize)> {
        let (a, b) = *self.at[..usize::from(self.len)].get(i)?;
        Some((a as usize, b as usize))
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
}

/// A class of characters: ASCII by a table, the rest by ranges.
#[derive(Clone, Debug)]
struct Set {
    ascii: Box<[bool; 128]>,
    ranges: Box<[(char, char)]>,
}

impl Set {
    fn new(class: &ClassUnicode) -> Set {
        let mut ascii = Box::new([false; 128]);
        for r in class.ranges() {
            for c in r.start()..=r.end().min('\x7f') {
                ascii[c as usize] = true;
            }
        }
        let ranges = class
            .ranges()
            .iter()
            .filter(|r| r.end() > '\x7f')
            .map(|r| (r.start(), r.end()))
            .collect();
        Set { ascii, ranges }
    }

    fn contains(&self, c: char) -> bool {
        if c.is_ascii() {
            return self.ascii[c as usize & 0x7f];
        }
        self.ranges
            .binary_search_by(|&(lo, hi)| {
                if hi < c {
                    std::cmp::Ordering::Less
                } else if lo > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    /// The length of the longest run of its characters at the start of `s`, `max` at
    /// most: (characters, bytes).
    #[inline]
    fn run(&self, s: &str, max: u32) -> (u32, usize) {
        let bytes = s.as_bytes();
        let max = max as usize;
        let (mut n, mut at) = (0, 0);
        loop {
            // ASCII a byte a character, in one sweep: most paths are ASCII throughout.
            let end = bytes.len().min(at + (max - n));
            let ascii = bytes[at..end]
                .iter()
                .position(|&b| b >= 0x80 || !self.ascii[usize::from(b)])
                .unwrap_or(end - at);
            n += ascii;
            at += ascii;
            if n == max || bytes.get(at).is_none_or(|&b| b < 0x80) {
                break;
            }
            match s[at..].chars().next() {
                Some(c) if self.contains(c) => {
                    at += c.len_utf8();
                    n += 1;
                }
                _ => break,
            }
        }
        (n as u32, at)
    }
}

/// A class or literal item as it is read, before its class becomes a `Set`.
enum Read {
    Literal(Box<[u8]>),
    One(ClassUnicode),
    Run(ClassUnicode, u32, Option<u32>),
    Open(usize),
    Close(usize),
    End,
}

impl Linear {
    /// `text` as a linear pattern, if it is one (`None`: the regex crate matches it).
    pub fn new(text: &str, ignore_case: bool) -> Option<Linear> {
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(ignore_case)
            .build()
            .parse(text)
            .ok()?;
        let parts = match hir.kind() {
            HirKind::Concat(parts) => parts.as_slice(),
            _ => std::slice::from_ref(&hir),
        };
        let (first, rest) = parts.split_first()?;
        if *first.kind() != HirKind::Look(Look::Start) {
            return None;
        }
        let mut read = Vec::new();
        let mut groups = 1;
        for part in rest {
            flatten(part, &mut read, &mut groups)?;
        }
        if !runs_end_where_they_must(&read) {
            return None;
        }
        let items = read.into_iter().map(Item::from).collect();
        Some(Linear { items, groups })
    }

    /// The groups of its match in `subject`, if it matches.
    pub fn spans(&self, subject: &str) -> Option<Spans> {
        let mut spans = Spans {
            at: [(0, 0); MAX_GROUPS],
            len: self.groups as u8,
        };
        self.walk(subject, &mut spans).then_some(spans)
    }

    /// Whether it matches `subject` (the groups' places, written to a local and never
    /// read, are left out where `walk` is inlined).
    pub fn is_match(&self, subject: &str) -> bool {
        let mut spans = Spans {
            at: [(0, 0); MAX_GROUPS],
            len: 0,
        };
        self.walk(subject, &mut spans)
    }

    /// Reads `subject` through, noting where each group starts and ends.
    #[inline(always)]
    fn walk(&self, subject: &str, spans: &mut Spans) -> bool {
        let bytes = subject.as_bytes();
        let mut at = 0;
        for item in self.items.iter() {
            match item {
                Item::Literal(lit) => {
                    let end = at + lit.len();
                    // A byte loop: a literal is a few bytes, shorter than memcmp's set-up.
                    let Some(here) = bytes.get(at..end) else {
                        return false;
                    };
                    if here.iter().zip(lit.iter()).any(|(a, b)| a != b) {
                        return false;
                    }
                    at = end;
                }
                Item::One(set) => {
                    let (n, len) = set.run(&subject[at..], 1);
                    if n == 0 {
                        return false;
                    }
                    at += len;
                }
                Item::Run { set, min, max } => {
                    let (n, len) = set.run(&subject[at..], max.unwrap_or(u32::MAX));
                    if n < *min {
                        return false;
                    }
                    at += len;
                }
                Item::Open(i) => spans.at[*i].0 = at as u32,
                Item::Close(i) => spans.at[*i].1 = at as u32,
                Item::End if at != bytes.len() => return false,
                Item::End => {}
            }
        }
        spans.at[0] = (0, at as u32);
        true
    }
}

/// Appends `hir`'s items to `read`; `None` when it is not linear. `groups`: how many
/// groups so far (the whole match counts one).
fn flatten(hir: &Hir, read: &mut Vec<Read>, groups: &mut usize) -> Option<()> {
    match hir.kind() {
        HirKind::Empty => {}
        HirKind::Literal(lit) => read.push(Read::Literal(lit.0.clone())),
        HirKind::Class(Class::Unicode(class)) => read.push(Read::One(class.clone())),
        HirKind::Look(Look::End) => read.push(Read::End),
        HirKind::Repetition(rep) if rep.greedy => {
            let class = one_character(&rep.sub)?;
            read.push(Read::Run(class, rep.min, rep.max));
        }
        HirKind::Capture(capture) => {
            let i = capture.index as usize;
            if i >= MAX_GROUPS {
                return None;
            }
            *groups = (*groups).max(i + 1);
            read.push(Read::Open(i));
            flatten(&capture.sub, read, groups)?;
            read.push(Read::Close(i));
        }
        HirKind::Concat(parts) => {
            for part in parts {
                flatten(part, read, groups)?;
            }
        }
        _ => return None,
    }
    Some(())
}

/// The class of a repetition's one character (`\w`, `[^/]`, `.`, a literal `a`).
fn one_character(hir: &Hir) -> Option<ClassUnicode> {
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => Some(class.clone()),
        HirKind::Literal(lit) => {
            let text = std::str::from_utf8(&lit.0).ok()?;
            let mut chars = text.chars();
            let c = chars.next()?;
            let single = chars.next().is_none();
            single.then(|| ClassUnicode::new([regex_syntax::hir::ClassUnicodeRange::new(c, c)]))
        }
        _ => None,
    }
}

/// Whether every run is followed (past group marks) by nothing, the end, or a literal
/// or class it shares no first character with: then its longest length is the only one
/// that can match.
fn runs_end_where_they_must(read: &[Read]) -> bool {
    read.iter().enumerate().all(|(i, item)| {
        let Read::Run(class, ..) = item else {
            return true;
        };
        let next = read[i + 1..]
            .iter()
            .find(|r| !matches!(r, Read::Open(_) | Read::Close(_)));
        match next {
            None | Some(Read::End) => true,
            Some(Read::Literal(lit)) => {
                match std::str::from_utf8(lit).ok().and_then(|t| t.chars().next()) {
                    Some(c) => !class
                        .ranges()
                        .iter()
                        .any(|r| (r.start()..=r.end()).contains(&c)),
                    None => false,
                }
            }
            Some(Read::One(other)) => {
                let mut both = class.clone();
                both.intersect(other);
                both.ranges().is_empty()
            }
            Some(Read::Run(..) | Read::Open(_) | Read::Close(_)) => false,
        }
    })
}

impl From<Read> for Item {
    fn from(read: Read) -> Item {
        match read {
            Read::Literal(lit) => Item::Literal(lit),
            Read::One(class) => Item::One(Set::new(&class)),
            Read::Run(class, min, max) => Item::Run {
                set: Set::new(&class),
                min,
                max,
            },
            Read::Open(i) => Item::Open(i),
            Read::Close(i) => Item::Close(i),
            Read::End => Item::End,
        }
    }
}

#[cfg(test)]
mod tests;
