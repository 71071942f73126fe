//! A scenario's data file: rows of values (accounts, search terms) given out to its
//! users, as JMeter's CSV Data Set Config gives them:
//!
//! ```toml
//! data = "accounts.csv"            # a header row names the columns: {username}
//! data = { file = "accounts.csv", order = "random", recycle = false, per = "iteration" }
//! ```
//!
//! `per = "user"` (the default) gives each user one row for its whole life (one account
//! each: user N gets row N in `sequential` order); `per = "iteration"` a new row each time
//! round its loop, from a cursor all users share (JMeter's default, "all threads").
//! `order = "random"` draws rows at random (with `recycle = false`: each row once, in a
//! shuffled order). At the end of the rows they start again, unless `recycle = false`:
//! then a user that needs a row ends there (JMeter's "stop thread on EOF").
//! `columns = [...]` names the columns of a file without a header row; `delimiter`
//! changes the comma.

use super::template::{is_name, Variables, BUILT_IN};
use sluice_config::toml_edit::{Item, TableLike, Value};
use sluice_config::Reader;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// When a user takes a new row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    User,
    Iteration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Sequential,
    Random,
}

#[derive(Debug, Clone)]
pub struct Data {
    /// The file as the scenario names it.
    pub file: String,
    pub columns: Vec<String>,
    /// Each column's slot among the scenario's variables.
    pub slots: Vec<usize>,
    pub rows: Vec<Vec<String>>,
    pub order: Order,
    pub recycle: bool,
    pub per: Per,
    /// `random` without recycling: the rows' shuffled order, each given once.
    shuffled: Vec<usize>,
    /// The next row of `per = "iteration"`, shared by every user of a run.
    cursor: Arc<AtomicUsize>,
}

impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.file,
            &self.columns,
            &self.rows,
            self.order,
            self.recycle,
            self.per,
        ) == (
            &other.file,
            &other.columns,
            &other.rows,
            other.order,
            other.recycle,
            other.per,
        )
    }
}

impl Data {
    /// The row for user `user`'s life (`per = "user"`), or its next iteration's; none
    /// when the rows ran out and are not recycled.
    pub fn row(&self, user: usize) -> Option<&[String]> {
        let n = self.rows.len();
        let draw = match self.per {
            Per::User => user,
            Per::Iteration => self.cursor.fetch_add(1, Ordering::Relaxed),
        };
        let index = match (self.order, self.recycle) {
            (Order::Random, true) => fastrand::usize(..n),
            (Order::Random, false) => *self.shuffled.get(draw)?,
            (Order::Sequential, true) => draw % n,
            (Order::Sequential, false) => (draw < n).then_some(draw)?,
        };
        Some(&self.rows[index])
    }
}

const KEYS: &[&str] = &["file", "order", "recycle", "per", "columns", "delimiter"];

/// The scenario's `data`, its columns declared in `vars`; `file` is the scenario's own
/// path (a data file's is relative to it).
pub(super) fn data(
    r: &mut Reader,
    root: &dyn TableLike,
    file: &str,
    vars: &mut Variables,
) -> Option<Data> {
    let item = root.get("data")?;
    let span = item.span();
    let (name, spec) = file_and_options(r, item)?;
    let options = Options::read(r, spec);
    let path = Path::new(file)
        .parent()
        .unwrap_or(Path::new(""))
        .join(&name);
    let (columns, rows) = read_rows(&path, &options)
        .map_err(|why| {
            r.error(
                span.clone(),
                format!("`data` {name}: {why}"),
                "a CSV file with a header row naming its columns, e.g. username,password",
            );
        })
        .ok()?;
    let slots = declare(r, &columns, span, vars)?;
    let mut shuffled: Vec<usize> = (0..rows.len()).collect();
    fastrand::shuffle(&mut shuffled);
    Some(Data {
        file: name,
        columns,
        slots,
        rows,
        order: options.order,
        recycle: options.recycle,
        per: options.per,
        shuffled,
        cursor: Arc::default(),
    })
}

/// `data = "FILE"` or `data = { file = "FILE", ... }`: the file, and the table of
/// options if there is one.
fn file_and_options<'t>(
    r: &mut Reader,
    item: &'t Item,
) -> Option<(String, Option<&'t dyn TableLike>)> {
    if let Some(Value::String(s)) = item.as_value() {
        return Some((s.value().clone(), None));
    }
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            "`data` is a CSV file",
            "e.g. data = \"accounts.csv\"",
        );
        return None;
    };
    r.only_keys(t, KEYS, "`data`");
    let Some((name, _)) = r.string(t, "file") else {
        let hint = "e.g. data = { file = \"accounts.csv\" }";
        r.error(item.span(), "`data` needs its `file`", hint);
        return None;
    };
    Some((name, Some(t)))
}

/// How rows are given out, as the scenario says.
struct Options {
    order: Order,
    recycle: bool,
    per: Per,
    columns: Option<Vec<String>>,
    delimiter: u8,
}

impl Options {
    fn read(r: &mut Reader, spec: Option<&dyn TableLike>) -> Options {
        let mut o = Options {
            order: Order::Sequential,
            recycle: true,
            per: Per::User,
            columns: None,
            delimiter: b',',
        };
        let Some(t) = spec else { return o };
        if let Some((order, span)) = r.string(t, "order") {
            match order.as_str() {
                "sequential" => o.order = Order::Sequential,
                "random" => o.order = Order::Random,
                _ => r.error(
                    span,
                    format!("`order` = {order:?} is not an order"),
                    "sequential or random",
                ),
            }
        }
        if let Some((per, span)) = r.string(t, "per") {
            match per.as_str() {
                "user" => o.per = Per::User,
                "iteration" => o.per = Per::Iteration,
                _ => r.error(span, format!("`per` = {per:?} is neither user nor iteration"), "per = \"user\" (a row for each user's life) or \"iteration\" (a new row each loop)"),
            }
        }
        o.recycle = r.boolean(t, "recycle").unwrap_or(true);
        if let Some((d, span)) = r.string(t, "delimiter") {
            match d.as_bytes() {
                [b] => o.delimiter = *b,
                _ => r.error(
                    span,
                    "`delimiter` is one character",
                    "e.g. delimiter = \";\"",
                ),
            }
        }
        if let Some(item) = t.get("columns") {
            let names: Option<Vec<String>> = item.as_array().map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            });
            match names {
                Some(n) if !n.is_empty() => o.columns = Some(n),
                _ => r.error(
                    item.span(),
                    "`columns` names the file's columns",
                    "e.g. columns = [\"username\", \"password\"]",
                ),
            }
        }
        o
    }
}

/// The file's columns and rows; `Err` says what is wrong with it, by line.
fn read_rows(path: &Path, o: &Options) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(o.columns.is_none())
        .delimiter(o.delimiter)
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| describe(&e))?;
    let columns = match &o.columns {
        Some(c) => c.clone(),
        None => csv
            .headers()
            .map_err(|e| describe(&e))?
            .iter()
            .map(str::to_string)
            .collect(),
    };
    let mut rows = Vec::new();
    for record in csv.records() {
        let record = record.map_err(|e| describe(&e))?;
        if record.len() != columns.len() {
            let line = record.position().map_or(0, |p| p.line());
            return Err(format!(
                "line {line} has {} fields where there are {} columns",
                record.len(),
                columns.len()
            ));
        }
        rows.push(record.iter().map(str::to_string).collect());
    }
    if rows.is_empty() {
        return Err("no rows".into());
    }
    Ok((columns, rows))
}

fn describe(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Io(io) => io.to_string(),
        csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => format!(
            "line {} has {len} fields where there are {expected_len} columns",
            pos.as_ref().map_or(0, |p| p.line())
        ),
        _ => e.to_string(),
    }
}

/// Declares each column a variable; none when a column's name cannot be one.
fn declare(
    r: &mut Reader,
    columns: &[String],
    span: Option<Range<usize>>,
    vars: &mut Variables,
) -> Option<Vec<usize>> {
    let bad: Vec<&String> = columns
        .iter()
        .filter(|c| !is_name(c) || BUILT_IN.contains(&c.as_str()))
        .collect();
    if !bad.is_empty() {
        let names: Vec<String> = bad.iter().map(|c| format!("{c:?}")).collect();
        r.error(
            span,
            format!("`data`: column {} cannot name a variable", names.join(", ")),
            "name columns with letters, digits and _ (not user, room, uuid, now_ms), or give columns = [...]",
        );
        return None;
    }
    Some(columns.iter().map(|c| vars.declare(c)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(order: Order, recycle: bool, per: Per, rows: usize) -> Data {
        Data {
            file: "a.csv".into(),
            columns: vec!["n".into()],
            slots: vec![0],
            rows: (0..rows).map(|i| vec![i.to_string()]).collect(),
            order,
            recycle,
            per,
            shuffled: {
                let mut s: Vec<usize> = (0..rows).collect();
                fastrand::shuffle(&mut s);
                s
            },
            cursor: Arc::default(),
        }
    }

    fn value(d: &Data, user: usize) -> Option<usize> {
        d.row(user).map(|r| r[0].parse().unwrap())
    }

    #[test]
    fn rows_go_to_users_in_order_at_random_or_each_once_and_end_or_recycle() {
        let per_user = data(Order::Sequential, true, Per::User, 3);
        let got: Vec<_> = (0..5).map(|u| value(&per_user, u)).collect();
        assert_eq!(got, [Some(0), Some(1), Some(2), Some(0), Some(1)]);
        let once = data(Order::Sequential, false, Per::User, 3);
        assert_eq!((value(&once, 2), value(&once, 3)), (Some(2), None));
        let shared = data(Order::Sequential, true, Per::Iteration, 2);
        let got: Vec<_> = (0..4).map(|_| value(&shared, 9)).collect();
        assert_eq!(got, [Some(0), Some(1), Some(0), Some(1)]);
        let each_once = data(Order::Random, false, Per::Iteration, 50);
        let mut seen: Vec<usize> = (0..50).filter_map(|_| value(&each_once, 0)).collect();
        assert_eq!(value(&each_once, 0), None);
        assert_ne!(seen, (0..50).collect::<Vec<_>>(), "shuffled");
        seen.sort_unstable();
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
        let random = data(Order::Random, true, Per::Iteration, 4);
        assert!((0..100).all(|_| value(&random, 0).is_some_and(|v| v < 4)));
    }
}
