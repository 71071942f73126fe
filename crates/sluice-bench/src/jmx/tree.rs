//! The .jmx file read as JMeter's test elements. JMeter saves its tree as
//! `<jmeterTestPlan><hashTree><TestPlan/><hashTree>...</hashTree></hashTree>`: each
//! element is followed by the `<hashTree>` of its children, and its settings are
//! properties (`stringProp`, `boolProp`, `intProp`, `longProp`, `elementProp`,
//! `collectionProp`, and `FloatProperty`-style ones with `<name>` and `<value>`).

use super::ImportError;
use roxmltree::{Document, Node};

/// One test element: a sampler, a controller, a config element, a timer, ...
#[derive(Debug, Clone)]
pub struct Element {
    /// Its class as saved (the tag): `HTTPSamplerProxy`, `IfController`, ...
    pub class: String,
    /// Its GUI class: tells an HTTP Request Defaults from another `ConfigTestElement`.
    pub gui: String,
    /// Its name in the tree (`testname`).
    pub name: String,
    /// False when disabled in the plan (`enabled="false"`).
    pub enabled: bool,
    pub line: usize,
    pub props: Props,
    pub children: Vec<Element>,
}

/// An element's properties, by name, in the order saved.
#[derive(Debug, Clone, Default)]
pub struct Props(pub Vec<(String, Prop)>);

#[derive(Debug, Clone)]
pub enum Prop {
    Text(String),
    /// An `elementProp`: a nested element's properties (a header, an argument, ...).
    Element(Props),
    /// A `collectionProp`: its items in order.
    List(Vec<Prop>),
}

impl Props {
    pub fn get(&self, name: &str) -> Option<&Prop> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }

    /// A property's text; "" when it is absent (JMeter's empty default).
    pub fn text(&self, name: &str) -> &str {
        match self.get(name) {
            Some(Prop::Text(t)) => t,
            _ => "",
        }
    }

    /// A boolean property; `None` when absent or empty.
    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.text(name).trim() {
            "" => None,
            t => Some(t.eq_ignore_ascii_case("true")),
        }
    }

    pub fn element(&self, name: &str) -> Option<&Props> {
        match self.get(name) {
            Some(Prop::Element(p)) => Some(p),
            _ => None,
        }
    }

    /// The nested elements of a collection (headers, arguments, ...).
    pub fn items(&self, name: &str) -> Vec<&Props> {
        match self.get(name) {
            Some(Prop::List(items)) => items
                .iter()
                .filter_map(|p| match p {
                    Prop::Element(e) => Some(e),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The texts of a collection (a Response Assertion's test strings).
    pub fn texts(&self, name: &str) -> Vec<&str> {
        match self.get(name) {
            Some(Prop::List(items)) => items
                .iter()
                .filter_map(|p| match p {
                    Prop::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// An element's kind in JMeter's words (its menu's), for places and notes.
pub fn friendly(el: &Element) -> String {
    let known = [
        ("HTTPSamplerProxy", "HTTP Request"),
        ("ThreadGroup", "Thread Group"),
        ("SetupThreadGroup", "setUp Thread Group"),
        ("PostThreadGroup", "tearDown Thread Group"),
        ("IfController", "If Controller"),
        ("WhileController", "While Controller"),
        ("LoopController", "Loop Controller"),
        ("OnceOnlyController", "Once Only Controller"),
        ("TransactionController", "Transaction Controller"),
        ("ThroughputController", "Throughput Controller"),
        ("GenericController", "Simple Controller"),
        ("TestAction", "Flow Control Action"),
        ("CSVDataSet", "CSV Data Set Config"),
        ("HeaderManager", "HTTP Header Manager"),
        ("CookieManager", "HTTP Cookie Manager"),
        ("CacheManager", "HTTP Cache Manager"),
        ("ResponseAssertion", "Response Assertion"),
        ("DurationAssertion", "Duration Assertion"),
        ("RegexExtractor", "Regular Expression Extractor"),
        ("JSONPostProcessor", "JSON Extractor"),
        ("BoundaryExtractor", "Boundary Extractor"),
        ("JSR223PostProcessor", "JSR223 PostProcessor"),
        ("JSR223PreProcessor", "JSR223 PreProcessor"),
        ("ViewResultsFullVisualizer", "View Results Tree"),
        ("SummaryReport", "Summary Report"),
        ("StatVisualizer", "Aggregate Report"),
        ("TableVisualizer", "View Results in Table"),
        ("SimpleDataWriter", "Simple Data Writer"),
        ("HttpDefaultsGui", "HTTP Request Defaults"),
    ];
    // A listener's or a config element's GUI says what it is; the class does not.
    let by_gui = matches!(el.class.as_str(), "ResultCollector" | "ConfigTestElement");
    let key = if by_gui {
        el.gui.as_str()
    } else {
        el.class.as_str()
    };
    known
        .iter()
        .find(|(k, _)| *k == key)
        .map_or_else(|| el.class.clone(), |(_, f)| f.to_string())
}

/// `el` by its name (its kind when it has none): a step of a place.
pub fn plain(el: &Element) -> String {
    match el.name.trim() {
        "" => friendly(el),
        n => n.to_string(),
    }
}

/// Where the children of `el` are: its parent's place, then its name.
pub fn child_place(parent: &str, el: &Element) -> String {
    format!("{parent} > {}", plain(el))
}

/// Where `el` is, for a message: its parent's place, then its kind and name (its name
/// alone when that says its kind).
pub fn label(parent: &str, el: &Element) -> String {
    let kind = friendly(el);
    match el.name.trim() {
        "" => format!("{parent} > {kind}"),
        n if n == kind => format!("{parent} > {n}"),
        n => format!("{parent} > {kind} '{n}'"),
    }
}

/// The plan's `TestPlan` element, its children the plan's tree.
pub fn parse(file: &str, text: &str) -> Result<Element, ImportError> {
    // A byte order mark, as some editors write: not XML's to read.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc = Document::parse(text).map_err(|e| xml_error(file, text, &e))?;
    let root = doc.root_element();
    let not_jmeter = |node: Node, what: String| {
        let pos = doc.text_pos_at(node.range().start);
        ImportError::NotJmeter {
            file: file.to_string(),
            line: pos.row as usize,
            col: pos.col as usize,
            what,
        }
    };
    if root.tag_name().name() != "jmeterTestPlan" {
        let what = format!("its root element is <{}>", root.tag_name().name());
        return Err(not_jmeter(root, what));
    }
    let top = root.children().find(|n| n.has_tag_name("hashTree"));
    let elements = top.map(|t| elements(&doc, t)).unwrap_or_default();
    match elements.into_iter().next() {
        Some(plan) if plan.class == "TestPlan" => Ok(plan),
        Some(other) => Err(not_jmeter(
            root,
            format!("its first element is <{}>, not <TestPlan>", other.class),
        )),
        None => Err(not_jmeter(root, "it holds no <TestPlan>".into())),
    }
}

/// The elements of a `<hashTree>`, each with the children of the `<hashTree>` after it.
fn elements(doc: &Document, tree: Node) -> Vec<Element> {
    let mut out: Vec<Element> = Vec::new();
    for node in tree.children().filter(Node::is_element) {
        if node.has_tag_name("hashTree") {
            if let Some(last) = out.last_mut() {
                last.children = elements(doc, node);
            }
            continue;
        }
        let attr = |name: &str| node.attribute(name).unwrap_or("").to_string();
        out.push(Element {
            class: node.tag_name().name().to_string(),
            gui: attr("guiclass"),
            name: attr("testname"),
            enabled: node.attribute("enabled") != Some("false"),
            line: doc.text_pos_at(node.range().start).row as usize,
            props: props(node),
            children: Vec::new(),
        });
    }
    out
}

fn props(node: Node) -> Props {
    Props(node.children().filter_map(prop).collect())
}

/// One property, by its name; `None` for what is no property (`objProp`, text).
fn prop(node: Node) -> Option<(String, Prop)> {
    let name = node.attribute("name").unwrap_or("").to_string();
    let text = |n: Node| n.text().unwrap_or("").to_string();
    let tag = node.tag_name().name();
    let prop = match tag {
        "stringProp" | "boolProp" | "intProp" | "longProp" | "doubleProp" | "floatProp" => {
            Prop::Text(text(node))
        }
        "elementProp" => {
            // Its `name` names what it holds in a collection (a user-defined cookie's
            // name): kept as the pseudo-property `@name`.
            let mut nested = props(node);
            nested.0.push(("@name".into(), Prop::Text(name.clone())));
            Prop::Element(nested)
        }
        "collectionProp" => Prop::List(node.children().filter_map(prop).map(|(_, p)| p).collect()),
        // JMeter's older form, still written for a Throughput Controller's percentage.
        _ if tag.ends_with("Property") => {
            let child = |c: &str| node.children().find(|n| n.has_tag_name(c));
            let name = child("name").map(text)?;
            return Some((
                name,
                Prop::Text(child("value").map(text).unwrap_or_default()),
            ));
        }
        _ => return None,
    };
    Some((name, prop))
}

fn xml_error(file: &str, text: &str, e: &roxmltree::Error) -> ImportError {
    use roxmltree::Error as E;
    let at_end = matches!(e, E::UnclosedRootNode | E::UnexpectedEndOfStream);
    let (line, col) = if at_end {
        let line = text.lines().count().max(1);
        (line, text.lines().last().map_or(0, str::len) + 1)
    } else {
        (e.pos().row as usize, e.pos().col as usize)
    };
    let message = e.to_string().replace(&format!(" at {}", e.pos()), "");
    let hint = match e {
        E::MalformedEntityReference(_) | E::UnknownEntityReference(..) => {
            "in a value, write & as &amp; and < as &lt;, as JMeter saves them"
        }
        E::InvalidAttributeValue(_) => "in an attribute, write < as &lt;",
        _ if at_end => "the file ends before its elements close: a copy cut short?",
        E::UnexpectedCloseTag(..) => "an element closed out of order: was the file edited by hand?",
        _ => "a .jmx file is the XML JMeter saves: open it in JMeter and save it again",
    };
    ImportError::Xml {
        file: file.to_string(),
        line,
        col,
        message,
        hint: hint.to_string(),
    }
}
