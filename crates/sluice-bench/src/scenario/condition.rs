//! A step's `if`: the step runs only when one of the user's variables says so, as
//! JMeter's If Controller runs its children (on the simple conditions plans use:
//! whether an extraction found a value, whether it is some text):
//!
//! ```toml
//! if = "{token}"                 # the variable has a value, not empty
//! if = "{role} == admin"         # it is this text
//! if = "{csrf} != NOT_FOUND"     # it is not (an extraction's default, say)
//! ```
//!
//! A variable with no value yet counts as empty text.

use super::template::Variables;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// The variable's slot, and its name (for messages).
    pub slot: usize,
    pub name: String,
    pub test: Test,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Test {
    /// Has a value, not empty.
    Set,
    Equals(String),
    Differs(String),
}

impl Condition {
    /// Reads `text`; `Err` says what is wrong with it.
    pub fn parse(text: &str, vars: &Variables) -> Result<Condition, String> {
        let text = text.trim();
        let shape = || {
            format!(
                "`if` = {text:?} is not \"{{name}}\", \"{{name}} == text\" or \"{{name}} != text\""
            )
        };
        let inner = text.strip_prefix('{').ok_or_else(shape)?;
        let (name, rest) = inner.split_once('}').ok_or_else(shape)?;
        let slot = vars
            .slot(name)
            .ok_or_else(|| format!("`if`: `{{{name}}}` is no variable of this scenario"))?;
        let rest = rest.trim();
        let test = if rest.is_empty() {
            Test::Set
        } else if let Some(value) = rest.strip_prefix("==") {
            Test::Equals(unquoted(value))
        } else if let Some(value) = rest.strip_prefix("!=") {
            Test::Differs(unquoted(value))
        } else {
            return Err(shape());
        };
        Ok(Condition {
            slot,
            name: name.to_string(),
            test,
        })
    }

    /// Whether it holds for a user whose variables are `values`.
    pub fn holds(&self, values: &[Option<String>]) -> bool {
        let value = values
            .get(self.slot)
            .and_then(Option::as_deref)
            .unwrap_or("");
        match &self.test {
            Test::Set => !value.is_empty(),
            Test::Equals(text) => value == text,
            Test::Differs(text) => value != text,
        }
    }
}

/// `value` trimmed, and without the quotes around it if it has them.
fn unquoted(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_read_and_hold_as_written_an_unset_variable_being_empty() {
        let mut vars = Variables::default();
        vars.declare("token");
        vars.declare("role");
        let values = [Some("abc".to_string()), None];
        let holds = |text: &str| Condition::parse(text, &vars).unwrap().holds(&values);
        assert!(holds("{token}"));
        assert!(!holds("{role}"));
        assert!(holds("{token} == abc") && holds("{token} == \"abc\""));
        assert!(holds("{role} != admin") && !holds("{role} == 'admin'"));
        assert!(holds("{role} == ''"));
        for (bad, why) in [
            ("token", "is not \"{name}\""),
            ("{token} > 3", "is not \"{name}\""),
            ("{nope}", "`{nope}` is no variable"),
        ] {
            let err = Condition::parse(bad, &vars).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
