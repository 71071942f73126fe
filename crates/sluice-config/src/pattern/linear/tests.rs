use super::Linear;

#[test]
fn nginx_s_usual_patterns_read_straight_through() {
    for (text, ignore_case) in [
        (r"^/api/(.*)$", false),
        (r"^/re/(\w+)/(.*)$", false),
        (r"^/(?P<user>[^/]+)/profile$", false),
        (r"^/static/", false),
        (r"^/USERS/(\d+)", true),
        (r"^/(\d{4})/(\d{2})/([a-z-]+)\.html$", false),
    ] {
        assert!(Linear::new(text, ignore_case).is_some(), "{text}");
    }
}

#[test]
fn patterns_that_may_backtrack_or_branch_go_to_the_regex_crate() {
    for text in [
        r"\.php$",        // not anchored: tried at every position
        r"^/(.*)\.png$",  // `.*` can hold the `.` that follows it
        r"^/(ab|cd)/",    // a choice
        r"^/(\w+)(\d+)$", // a run after a run
        r"^/(\w+?)/",     // lazy
        r"^/(ab)+$",      // a group repeated
        r"(?m)^/a$",      // line anchors
        r"^/a\b",         // a word boundary
    ] {
        assert!(Linear::new(text, false).is_none(), "{text}");
    }
}

#[test]
fn groups_are_where_the_regex_crate_puts_them() {
    let linear = Linear::new(r"^/re/(\w+)/(.*)$", false).unwrap();
    let spans = linear.spans("/re/posts/a/b").unwrap();
    assert_eq!(spans.len(), 3);
    assert_eq!(spans.get(0), Some((0, 13)));
    assert_eq!(spans.get(1), Some((4, 9)));
    assert_eq!(spans.get(2), Some((10, 13)));
    assert_eq!(spans.get(3), None);
    assert!(linear.spans("/re/pösts/a").is_some(), "\\w is Unicode's");
    assert!(linear.spans("/re/a/b\nc").is_none(), ". is not a newline");
    assert!(linear.spans("/re//b").is_none(), "\\w+ needs one");
}

/// A small, seeded generator: the comparison is the same on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

const ATOMS: &[&str] = &[
    "a", "b", "/", r"\.", "é", "-", "_", r"\w", r"\d", "[a-z]", ".", "[^/]", r"\s", "[é-ë]",
    "[A-Z]", r"\W", "[0-9a-f]",
];
const QUANTIFIERS: &[&str] = &["", "", "", "*", "+", "?", "{2}", "{1,3}", "{2,}", "*?"];
const SUBJECT_CHARS: &[&str] = &[
    "a", "b", "A", "B", "/", ".", "1", "9", "é", "É", "\n", "_", "-", " ", "z", "f",
];

/// A pattern of up to five pieces, most anchored, some groups named, some ending in `$`.
fn pattern(rng: &mut Rng) -> String {
    let mut text = String::from(if rng.below(10) == 0 { "" } else { "^" });
    for _ in 0..rng.below(6) {
        let piece = format!("{}{}", rng.pick(ATOMS), rng.pick(QUANTIFIERS));
        let wrapped = match rng.below(4) {
            0 => format!("({piece})"),
            1 => format!("(?P<g{}>{piece})", text.len()),
            _ => piece,
        };
        text.push_str(&wrapped);
    }
    if rng.below(2) == 0 {
        text.push('$');
    }
    text
}

/// A subject; half start with the pattern's letters and slashes, so that many match.
fn subject(rng: &mut Rng, like: &str) -> String {
    let mut s: String = match rng.below(2) {
        0 => like
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '/')
            .collect(),
        _ => String::new(),
    };
    for _ in 0..rng.below(10) {
        s.push_str(rng.pick(SUBJECT_CHARS));
    }
    s
}

type Groups = Option<Vec<Option<(usize, usize)>>>;

#[test]
fn matches_and_groups_equal_the_regex_crate_s() {
    let mut rng = Rng(0x5eed_cafe_f00d);
    let (mut linear_patterns, mut matched, mut differences) = (0, 0, Vec::new());
    for _ in 0..4000 {
        let text = pattern(&mut rng);
        let ignore_case = rng.below(4) == 0;
        let built = regex::RegexBuilder::new(&text)
            .case_insensitive(ignore_case)
            .build();
        let (Ok(re), Some(linear)) = (built, Linear::new(&text, ignore_case)) else {
            continue;
        };
        linear_patterns += 1;
        for _ in 0..30 {
            let s = subject(&mut rng, &text);
            let want: Groups = re.captures(&s).map(|c| {
                let span = |i| c.get(i).map(|m| (m.start(), m.end()));
                (0..c.len()).map(span).collect()
            });
            let got: Groups = linear
                .spans(&s)
                .map(|sp| (0..re.captures_len()).map(|i| sp.get(i)).collect());
            matched += usize::from(want.is_some());
            if want != got || linear.is_match(&s) != want.is_some() {
                differences.push(format!(
                    "{text:?} (ignore case {ignore_case}) on {s:?}: regex {want:?}, linear {got:?}"
                ));
            }
        }
    }
    let shown = &differences[..differences.len().min(5)];
    assert!(
        differences.is_empty(),
        "{} differences: {shown:#?}",
        differences.len()
    );
    assert!(linear_patterns > 1000, "{linear_patterns} linear patterns");
    assert!(matched > 5000, "{matched} subjects matched");
}
