//! Config errors that say where and what to do.

use std::fmt;
use std::ops::Range;

/// One problem in a config file, at a position, with a hint for fixing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    /// 1-based line and column (in characters) of the offending text.
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub hint: String,
}

impl ConfigError {
    /// An error located at byte `span` of `text`.
    pub fn at(
        file: &str,
        text: &str,
        span: Option<Range<usize>>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        let (line, col) = line_col(text, span.map_or(0, |s| s.start));
        ConfigError {
            file: file.to_string(),
            line,
            col,
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// An error found later about what the config names at `place` (a file it points to).
    pub fn at_place(
        place: &crate::model::Place,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: place.file.clone(),
            line: place.line,
            col: place.col,
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// An error about the file as a whole (it cannot be read at all).
    pub fn whole_file(file: &str, message: impl Into<String>, hint: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_string(),
            line: 1,
            col: 1,
            message: message.into(),
            hint: hint.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )?;
        if !self.hint.is_empty() {
            write!(f, " ({})", self.hint)?;
        }
        Ok(())
    }
}

/// Every problem found in one config, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Errors(pub Vec<ConfigError>);

impl fmt::Display for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Errors {}

/// 1-based line and character column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let text = "a = 1\nbé = x\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, text.find('x').unwrap()), (2, 6));
    }
}
