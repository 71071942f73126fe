//! A CSV Data Set Config as the scenario's `data`: its file, the names of its columns
//! (`variableNames`, or the file's header row, read here so that `${username}` is
//! known to be a column), its delimiter, and whether it recycles. When a user takes a
//! new row (`per`) is decided once the steps are laid out (see [`per`]).

use super::tree::Element;
use super::vars::scenario_name;
use super::Cx;
use std::path::Path;

#[derive(Debug, Clone)]
pub struct DataSpec {
    /// The file as the plan names it (its variables resolved).
    pub file: String,
    pub place: String,
    pub line: usize,
    /// Its columns' names in the scenario; `None` when they are not known (the header
    /// row could not be read): then any variable nothing else defines is taken for one.
    pub names: Option<Vec<String>>,
    /// The names are written as `columns = [...]`: the file has no header row.
    pub columns: bool,
    pub delimiter: char,
    pub recycle: bool,
    /// Each user keeps one row (`per = "user"`), rather than a new one each iteration.
    pub per_user: bool,
    /// JMeter's sharing mode, for the note on `per`.
    pub share: String,
}

/// Takes the CSV Data Set `el` as the scenario's data, or lists it as dropped.
pub fn csv(cx: &mut Cx, el: &Element, place: &str) {
    if cx.data.is_some() {
        let why = "a scenario has one data file: the first CSV Data Set is the one imported";
        return cx.drop(el, place, why);
    }
    match spec(cx, el, place) {
        Ok(spec) => cx.data = Some(spec),
        Err(why) => cx.drop(el, place, why),
    }
}

fn spec(cx: &mut Cx, el: &Element, place: &str) -> Result<DataSpec, String> {
    let p = &el.props;
    let file = cx.fixed(p.text("filename"))?;
    if file.trim().is_empty() {
        return Err("it names no file".into());
    }
    let delimiter = match p.text("delimiter") {
        "" => ',',
        "\\t" => '\t',
        d if d.chars().count() == 1 => d.chars().next().expect("one"),
        d => {
            return Err(format!(
                "its delimiter {d:?} is several characters: sluice's is one"
            ))
        }
    };
    let given: Vec<String> = p
        .text("variableNames")
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    let header = read_header(&cx.file, &file, delimiter);
    let label = format!("CSV Data Set '{}'", el.name);
    let (names, columns) = names(
        cx,
        &label,
        given,
        p.flag("ignoreFirstLine") == Some(true),
        header,
    );
    let names = names.map(|n| own_names(&n, columns)).transpose()?;
    let recycle = p.flag("recycle") != Some(false);
    file_notes(cx, &label, p, recycle);
    Ok(DataSpec {
        file,
        place: super::tree::label(place, el),
        line: el.line,
        names,
        columns,
        delimiter,
        recycle,
        per_user: false,
        share: p.text("shareMode").to_string(),
    })
}

/// What the data file does otherwise in sluice: its end, its encoding.
fn file_notes(cx: &mut Cx, label: &str, p: &super::tree::Props, recycle: bool) {
    if !recycle && p.flag("stopThread") != Some(true) {
        cx.note(format!("{label}: recycle = false: at the end of its rows a user ends (JMeter went on with <EOF> for values)"));
    }
    let encoding = p.text("fileEncoding").trim().to_ascii_uppercase();
    if !matches!(encoding.as_str(), "" | "UTF-8" | "UTF8") {
        cx.note(format!(
            "{label}: its file is read as UTF-8, not {encoding}"
        ));
    }
}

/// The columns' JMeter names, and whether they go in `columns = [...]` (no header row).
fn names(
    cx: &mut Cx,
    label: &str,
    given: Vec<String>,
    skip_first: bool,
    header: Result<Vec<String>, String>,
) -> (Option<Vec<String>>, bool) {
    match (given.is_empty(), skip_first, header) {
        (true, _, Ok(header)) => (Some(header), false),
        (true, _, Err(why)) => {
            cx.note(format!("{label}: its header row could not be read ({why}): the variables nothing else defines are taken for its columns"));
            (None, false)
        }
        (false, false, _) => (Some(given), true),
        (false, true, header) => {
            if header.as_ref().ok() != Some(&given) {
                let seen = header.map_or_else(
                    |e| format!("could not be read: {e}"),
                    |h| format!("is {}", h.join(",")),
                );
                cx.note(format!("{label}: sluice names the columns by the file's header row, which JMeter skipped (ignoreFirstLine): it must be {} (it {seen})", given.join(",")));
            }
            (Some(given), false)
        }
    }
}

/// The columns' names in the scenario; a name a header row gives must be usable as is.
fn own_names(names: &[String], columns: bool) -> Result<Vec<String>, String> {
    names
        .iter()
        .map(|n| match scenario_name(n) {
            Some(own) if columns || own == *n => Ok(own),
            _ => Err(format!("its column {n:?} cannot name a scenario variable (letters, digits and _; not user, room, uuid or now_ms)")),
        })
        .collect()
}

/// The header row of the CSV file `file` (relative to the plan `plan`'s directory, as
/// JMeter takes it).
fn read_header(plan: &str, file: &str, delimiter: char) -> Result<Vec<String>, String> {
    let path = Path::new(plan).parent().unwrap_or(Path::new("")).join(file);
    let mut csv = csv::ReaderBuilder::new()
        .delimiter(u8::try_from(delimiter).map_err(|_| "a delimiter beyond ASCII")?)
        .trim(csv::Trim::All)
        .from_path(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let header = csv.headers().map_err(|e| e.to_string())?;
    Ok(header.iter().map(str::to_string).collect())
}

/// Decides when a user takes a new row. JMeter's CSV Data Set hands each thread the
/// next row each time round the thread group's loop; when the loop runs once
/// (`reads_once`) that is one row per user. When the rows log users in once (its
/// columns used in `[[setup]]`), a new row each iteration is never what was meant (the
/// user stays logged in as the first): one row per user, noted.
pub fn per(cx: &mut Cx, data: &mut DataSpec, reads_once: bool, in_setup: bool, in_loop: bool) {
    let label = format!("{} ({})", data.place, data.file);
    data.per_user = reads_once || in_setup;
    if !reads_once && in_setup {
        let also = if in_loop {
            " and its loop uses them"
        } else {
            ""
        };
        cx.note(format!("{label}: per = \"user\", each user keeping its row: its columns log the user in once ([[setup]]){also}, where JMeter would hand each thread the next row every iteration"));
    } else if !data.per_user && data.share == "shareMode.thread" {
        cx.note(format!("{label}: JMeter's \"current thread\" sharing (each thread reads the file from its start) is written as per = \"iteration\", all users sharing one cursor"));
    }
}
