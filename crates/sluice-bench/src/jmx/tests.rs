//! Plans in JMeter 5.6's save format, imported, and the scenarios read back by
//! [`Scenario::parse`] as `sluice bench --scenario` reads them.

use super::*;
use crate::scenario::{Action, Context, Per, Scenario, ScenarioStep, Source, Think};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The fixtures the CLI's tests use too: the Spring login plan and its accounts.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sluice/tests/data/jmeter")
}

/// A directory of its own for a test, with an accounts file in it.
fn workdir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-jmx-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows: String = (0..3).map(|i| format!("user{i},pw{i}\n")).collect();
    std::fs::write(
        dir.join("accounts.csv"),
        format!("username,password\n{rows}"),
    )
    .unwrap();
    dir
}

/// Imports `jmx` as `dir/plan.jmx` and reads the scenario back as `dir/plan.toml`.
fn import_and_read(dir: &Path, jmx: &str) -> (Imported, Scenario) {
    let out = import(dir.join("plan.jmx").to_str().unwrap(), jmx)
        .unwrap_or_else(|e| panic!("{e}\n{jmx}"));
    let toml = dir.join("plan.toml");
    let s = Scenario::parse(toml.to_str().unwrap(), &out.scenario)
        .unwrap_or_else(|e| panic!("{e}\n{}", out.scenario));
    // The data's rows are read: the directory has served.
    let _ = std::fs::remove_dir_all(dir);
    (out, s)
}

// The plans' elements, as JMeter 5.6.3 saves them (each followed by its hashTree).

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn children(body: &str) -> String {
    match body {
        "" => "<hashTree/>\n".into(),
        _ => format!("<hashTree>\n{body}</hashTree>\n"),
    }
}

fn plan(udv: &[(&str, &str)], body: &str) -> String {
    let args: String = udv
        .iter()
        .map(|(n, v)| format!("<elementProp name=\"{n}\" elementType=\"Argument\">\n<stringProp name=\"Argument.name\">{n}</stringProp>\n<stringProp name=\"Argument.value\">{}</stringProp>\n<stringProp name=\"Argument.metadata\">=</stringProp>\n</elementProp>\n", esc(v)))
        .collect();
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<jmeterTestPlan version=\"1.2\" properties=\"5.0\" jmeter=\"5.6.3\">\n<hashTree>\n<TestPlan guiclass=\"TestPlanGui\" testclass=\"TestPlan\" testname=\"Test Plan\">\n<elementProp name=\"TestPlan.user_defined_variables\" elementType=\"Arguments\" guiclass=\"ArgumentsPanel\" testclass=\"Arguments\" testname=\"User Defined Variables\">\n<collectionProp name=\"Arguments.arguments\">\n{args}</collectionProp>\n</elementProp>\n</TestPlan>\n{}</hashTree>\n</jmeterTestPlan>\n", children(body))
}

fn thread_group(name: &str, threads: u32, ramp: u32, loops: i32, body: &str) -> String {
    format!("<ThreadGroup guiclass=\"ThreadGroupGui\" testclass=\"ThreadGroup\" testname=\"{name}\">\n<intProp name=\"ThreadGroup.num_threads\">{threads}</intProp>\n<intProp name=\"ThreadGroup.ramp_time\">{ramp}</intProp>\n<boolProp name=\"ThreadGroup.same_user_on_next_iteration\">true</boolProp>\n<stringProp name=\"ThreadGroup.on_sample_error\">continue</stringProp>\n<elementProp name=\"ThreadGroup.main_controller\" elementType=\"LoopController\" guiclass=\"LoopControlPanel\" testclass=\"LoopController\" testname=\"Loop Controller\">\n<stringProp name=\"LoopController.loops\">{loops}</stringProp>\n<boolProp name=\"LoopController.continue_forever\">false</boolProp>\n</elementProp>\n</ThreadGroup>\n{}", children(body))
}

fn defaults(domain: &str, port: &str) -> String {
    format!("<ConfigTestElement guiclass=\"HttpDefaultsGui\" testclass=\"ConfigTestElement\" testname=\"HTTP Request Defaults\">\n<elementProp name=\"HTTPsampler.Arguments\" elementType=\"Arguments\" guiclass=\"HTTPArgumentsPanel\" testclass=\"Arguments\" testname=\"User Defined Variables\">\n<collectionProp name=\"Arguments.arguments\"/>\n</elementProp>\n<stringProp name=\"HTTPSampler.domain\">{}</stringProp>\n<stringProp name=\"HTTPSampler.port\">{}</stringProp>\n<stringProp name=\"HTTPSampler.protocol\">http</stringProp>\n<stringProp name=\"HTTPSampler.path\"></stringProp>\n</ConfigTestElement>\n<hashTree/>\n", esc(domain), esc(port))
}

fn http(name: &str, method: &str, path: &str, args: &[(&str, &str)], body: &str) -> String {
    let args: String = args
        .iter()
        .map(|(n, v)| format!("<elementProp name=\"{n}\" elementType=\"HTTPArgument\">\n<boolProp name=\"HTTPArgument.always_encode\">false</boolProp>\n<stringProp name=\"Argument.value\">{}</stringProp>\n<stringProp name=\"Argument.metadata\">=</stringProp>\n<boolProp name=\"HTTPArgument.use_equals\">true</boolProp>\n<stringProp name=\"Argument.name\">{n}</stringProp>\n</elementProp>\n", esc(v)))
        .collect();
    format!("<HTTPSamplerProxy guiclass=\"HttpTestSampleGui\" testclass=\"HTTPSamplerProxy\" testname=\"{name}\">\n<stringProp name=\"HTTPSampler.path\">{}</stringProp>\n<boolProp name=\"HTTPSampler.follow_redirects\">true</boolProp>\n<stringProp name=\"HTTPSampler.method\">{method}</stringProp>\n<boolProp name=\"HTTPSampler.use_keepalive\">true</boolProp>\n<boolProp name=\"HTTPSampler.postBodyRaw\">false</boolProp>\n<elementProp name=\"HTTPsampler.Arguments\" elementType=\"Arguments\" guiclass=\"HTTPArgumentsPanel\" testclass=\"Arguments\" testname=\"User Defined Variables\">\n<collectionProp name=\"Arguments.arguments\">\n{args}</collectionProp>\n</elementProp>\n</HTTPSamplerProxy>\n{}", esc(path), children(body))
}

/// A controller element with its properties' XML and its children.
fn controller(class: &str, gui: &str, name: &str, props: &str, body: &str) -> String {
    format!("<{class} guiclass=\"{gui}\" testclass=\"{class}\" testname=\"{name}\">\n{props}</{class}>\n{}", children(body))
}

fn regex_extractor(refname: &str, regex: &str) -> String {
    format!("<RegexExtractor guiclass=\"RegexExtractorGui\" testclass=\"RegexExtractor\" testname=\"Regular Expression Extractor\">\n<stringProp name=\"RegexExtractor.useHeaders\">false</stringProp>\n<stringProp name=\"RegexExtractor.refname\">{refname}</stringProp>\n<stringProp name=\"RegexExtractor.regex\">{}</stringProp>\n<stringProp name=\"RegexExtractor.template\">$1$</stringProp>\n<stringProp name=\"RegexExtractor.default\"></stringProp>\n<boolProp name=\"RegexExtractor.default_empty_value\">false</boolProp>\n<stringProp name=\"RegexExtractor.match_number\">1</stringProp>\n</RegexExtractor>\n<hashTree/>\n", esc(regex))
}

/// A Response Assertion on `field` (`response_code`, `response_data`) of `test_type`.
fn assertion(field: &str, test_type: u32, text: &str) -> String {
    format!("<ResponseAssertion guiclass=\"AssertionGui\" testclass=\"ResponseAssertion\" testname=\"Response Assertion\">\n<collectionProp name=\"Asserion.test_strings\">\n<stringProp name=\"0\">{}</stringProp>\n</collectionProp>\n<stringProp name=\"Assertion.custom_message\"></stringProp>\n<stringProp name=\"Assertion.test_field\">Assertion.{field}</stringProp>\n<boolProp name=\"Assertion.assume_success\">false</boolProp>\n<intProp name=\"Assertion.test_type\">{test_type}</intProp>\n</ResponseAssertion>\n<hashTree/>\n", esc(text))
}

fn uniform_timer(delay: u32, range: u32) -> String {
    format!("<UniformRandomTimer guiclass=\"UniformRandomTimerGui\" testclass=\"UniformRandomTimer\" testname=\"Uniform Random Timer\">\n<stringProp name=\"ConstantTimer.delay\">{delay}</stringProp>\n<stringProp name=\"RandomTimer.range\">{range}.0</stringProp>\n</UniformRandomTimer>\n<hashTree/>\n")
}

const COOKIES: &str = "<CookieManager guiclass=\"CookiePanel\" testclass=\"CookieManager\" testname=\"HTTP Cookie Manager\">\n<collectionProp name=\"CookieManager.cookies\"/>\n<boolProp name=\"CookieManager.clearEachIteration\">false</boolProp>\n<boolProp name=\"CookieManager.controlledByThreadGroup\">false</boolProp>\n</CookieManager>\n<hashTree/>\n";

const HEADERS: &str = "<HeaderManager guiclass=\"HeaderPanel\" testclass=\"HeaderManager\" testname=\"HTTP Header Manager\">\n<collectionProp name=\"HeaderManager.headers\">\n<elementProp name=\"\" elementType=\"Header\">\n<stringProp name=\"Header.name\">Accept</stringProp>\n<stringProp name=\"Header.value\">text/html</stringProp>\n</elementProp>\n</collectionProp>\n</HeaderManager>\n<hashTree/>\n";

const CSV: &str = "<CSVDataSet guiclass=\"TestBeanGUI\" testclass=\"CSVDataSet\" testname=\"CSV Data Set Config\">\n<stringProp name=\"delimiter\">,</stringProp>\n<stringProp name=\"fileEncoding\"></stringProp>\n<stringProp name=\"filename\">accounts.csv</stringProp>\n<boolProp name=\"ignoreFirstLine\">false</boolProp>\n<boolProp name=\"quotedData\">false</boolProp>\n<boolProp name=\"recycle\">true</boolProp>\n<stringProp name=\"shareMode\">shareMode.all</stringProp>\n<boolProp name=\"stopThread\">false</boolProp>\n<stringProp name=\"variableNames\"></stringProp>\n</CSVDataSet>\n<hashTree/>\n";

const VIEW_RESULTS_TREE: &str = "<ResultCollector guiclass=\"ViewResultsFullVisualizer\" testclass=\"ResultCollector\" testname=\"View Results Tree\">\n<boolProp name=\"ResultCollector.error_logging\">false</boolProp>\n<objProp>\n<name>saveConfig</name>\n<value class=\"SampleSaveConfiguration\">\n<time>true</time>\n<latency>true</latency>\n</value>\n</objProp>\n<stringProp name=\"filename\"></stringProp>\n</ResultCollector>\n<hashTree/>\n";

const JSR223_POST: &str = "<JSR223PostProcessor guiclass=\"TestBeanGUI\" testclass=\"JSR223PostProcessor\" testname=\"JSR223 PostProcessor\">\n<stringProp name=\"scriptLanguage\">groovy</stringProp>\n<stringProp name=\"parameters\"></stringProp>\n<stringProp name=\"filename\"></stringProp>\n<stringProp name=\"cacheKey\">true</stringProp>\n<stringProp name=\"script\">log.info(&quot;done: &quot; + prev.getResponseCode())</stringProp>\n</JSR223PostProcessor>\n<hashTree/>\n";

const CACHE: &str = "<CacheManager guiclass=\"CacheManagerGui\" testclass=\"CacheManager\" testname=\"HTTP Cache Manager\">\n<boolProp name=\"clearEachIteration\">false</boolProp>\n<boolProp name=\"useExpires\">true</boolProp>\n</CacheManager>\n<hashTree/>\n";

/// A Throughput Controller's properties, by percentage.
fn percent(pct: &str) -> String {
    format!("<intProp name=\"ThroughputController.style\">1</intProp>\n<boolProp name=\"ThroughputController.perThread\">false</boolProp>\n<intProp name=\"ThroughputController.maxThroughput\">1</intProp>\n<FloatProperty>\n<name>ThroughputController.percentThroughput</name>\n<value>{pct}</value>\n<savedValue>0.0</savedValue>\n</FloatProperty>\n")
}

/// The login plan: log in once, browse orders in a transaction, log out, in a loop of 5.
fn login_plan() -> String {
    let csrf = regex_extractor("csrf", r#"name="_csrf" type="hidden" value="([^"]+)""#);
    let form = [
        ("username", "${username}"),
        ("password", "${password}"),
        ("_csrf", "${csrf}"),
    ];
    let login = http("login page", "GET", "/login", &[], &csrf)
        + &http("sign in", "POST", "/login", &form, "");
    let checks = assertion("response_code", 8, "200") + &assertion("response_data", 2, "orders of");
    let orders = http(
        "orders",
        "GET",
        "/account/orders",
        &[("user", "${username}")],
        &checks,
    );
    let transaction = "<boolProp name=\"TransactionController.includeTimers\">false</boolProp>\n";
    let group = [
        defaults("${host}", "${port}"),
        COOKIES.into(),
        HEADERS.into(),
        CSV.into(),
        controller(
            "OnceOnlyController",
            "OnceOnlyControllerGui",
            "login",
            "",
            &login,
        ),
        controller(
            "TransactionController",
            "TransactionControllerGui",
            "browse",
            transaction,
            &orders,
        ),
        uniform_timer(1000, 2000),
        http(
            "sign out",
            "POST",
            "/logout",
            &[("_csrf", "${csrf}")],
            JSR223_POST,
        ),
        VIEW_RESULTS_TREE.into(),
    ];
    let udv = [
        ("host", "${__P(host,127.0.0.1)}"),
        ("port", "${__P(port,8080)}"),
    ];
    plan(&udv, &thread_group("Users", 200, 20, 5, &group.concat()))
}

fn names(steps: &[ScenarioStep]) -> Vec<&str> {
    steps.iter().map(|s| s.name.as_str()).collect()
}

/// An http step's method, and its path, body and expected body for user 0 of the
/// login plan's accounts (its other variables' values are their names).
fn request(s: &Scenario, step: &ScenarioStep) -> (String, String, String, Option<String>) {
    let value = |name: &String| match name.as_str() {
        "username" => "user0".to_string(),
        "password" => "pw0".into(),
        other => other.to_string(),
    };
    let values: Vec<Option<String>> = s.vars.names().iter().map(|n| Some(value(n))).collect();
    let cx = Context {
        user: 0,
        room: 0,
        values: &values,
    };
    let Action::Http {
        method,
        path,
        body,
        expect_body,
        ..
    } = &step.action
    else {
        panic!("not http: {:?}", step.action);
    };
    let expect = expect_body.as_ref().map(|b| b.render(&cx).unwrap());
    (
        method.clone(),
        path.render(&cx).unwrap(),
        body.render(&cx).unwrap(),
        expect,
    )
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_login_plan_imports_its_requests_as_setup_and_loop_steps() {
    let (out, s) = import_and_read(&workdir("login-steps"), &login_plan());
    assert!(
        out.scenario.starts_with("# imported from "),
        "{}",
        out.scenario
    );
    assert_eq!(s.target.url, "http://127.0.0.1:8080");
    assert_eq!(
        (s.users.clone(), s.ramp, s.iterations),
        (vec![200], Duration::from_secs(20), Some(5))
    );
    assert!(s.cookies);
    assert_eq!(names(&s.setup), ["login page", "sign in"]);
    assert_eq!(names(&s.flows[0].steps), ["browse: orders", "sign out"]);
    let csrf = &s.setup[0].extract[0];
    assert!(
        matches!(&csrf.from, Source::Regex(re) if re.as_str() == r#"name="_csrf" type="hidden" value="([^"]+)""#)
    );
    assert_eq!(
        (csrf.name.as_str(), csrf.nth, csrf.default.as_deref()),
        ("csrf", 1, None)
    );
    let sign_in = (
        "POST".into(),
        "/login".into(),
        "username=user0&password=pw0&_csrf=csrf".into(),
        None,
    );
    assert_eq!(request(&s, &s.setup[1]), sign_in);
    let Action::Http { headers, .. } = &s.setup[1].action else {
        panic!()
    };
    let headers: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(headers, ["Accept", "Content-Type"]);
    let orders = request(&s, &s.flows[0].steps[0]);
    assert_eq!(
        (orders.1, orders.3),
        (
            "/account/orders?user=user0".into(),
            Some("orders of".into())
        )
    );
    let Action::Http { expect_status, .. } = &s.flows[0].steps[0].action else {
        panic!()
    };
    assert_eq!(expect_status, &[200]);
}

#[test]
fn a_login_plan_keeps_its_timers_and_data_and_lists_what_it_drops() {
    let (out, s) = import_and_read(&workdir("login-rest"), &login_plan());
    assert!(out
        .scenario
        .contains("\n# run with: sluice bench --scenario FILE --follow\n"));
    // The thread group's timer before every request: each step thinks before the next.
    let between = Think::Uniform(Duration::from_secs(1), Duration::from_secs(3));
    assert!(
        s.all_steps().all(|step| step.think == between),
        "{}",
        out.scenario
    );
    let data = s.data.as_ref().unwrap();
    assert_eq!(
        (data.per, data.columns.clone()),
        (Per::User, vec!["username".to_string(), "password".into()])
    );
    let dropped: Vec<(&str, &str)> = out
        .dropped
        .iter()
        .map(|d| (d.element.as_str(), d.place.as_str()))
        .collect();
    assert_eq!(
        dropped,
        [(
            "JSR223PostProcessor",
            "Test Plan > Users > sign out > JSR223 PostProcessor"
        )]
    );
    assert_eq!(
        out.dropped[0].line,
        line_of(&login_plan(), "<JSR223PostProcessor")
    );
    let comment = format!("#   line {}: Test Plan > Users > sign out > JSR223 PostProcessor (JSR223PostProcessor): a script: not translated\n", out.dropped[0].line);
    assert!(out.scenario.contains(&comment), "{}", out.scenario);
    for expected in [
        "property host: its default \"127.0.0.1\" written",
        "per = \"user\", each user keeping its row",
        "reported each under its own name, prefixed \"browse: \"",
    ] {
        assert!(
            out.notes.iter().any(|n| n.contains(expected)),
            "{expected:?} in {:#?}",
            out.notes
        );
    }
    assert!(out
        .scenario
        .contains("1 listener(s) (View Results Tree): sluice reports each step itself"));
}

/// A plan of two Throughput Controllers between requests common to both.
fn shop_plan() -> String {
    let percent = |name: &str, pct: &str, body: &str| {
        controller(
            "ThroughputController",
            "ThroughputControllerGui",
            name,
            &percent(pct),
            body,
        )
    };
    let buy = http("cart", "POST", "/cart", &[("id", "${__UUID()}")], "")
        + &http("pay", "POST", "/pay", &[], "");
    let page = [("page", "${__Random(1,5)}")];
    let group = [
        defaults("localhost", "8080"),
        http("home", "GET", "/", &[], ""),
        percent(
            "browse",
            "90.0",
            &http("products", "GET", "/products", &page, ""),
        ),
        percent("buy", "10.0", &buy),
        http("bye", "GET", "/bye", &[], ""),
    ];
    plan(&[], &thread_group("Shoppers", 50, 0, -1, &group.concat()))
}

fn noted(out: &Imported, start: &str) -> bool {
    out.notes.iter().any(|n| n.starts_with(start))
}

#[test]
fn throughput_controllers_become_weighted_flows_with_the_common_steps_in_each() {
    let (out, s) = import_and_read(&workdir("throughput"), &shop_plan());
    let flows: Vec<(&str, u32, Vec<&str>)> = s
        .flows
        .iter()
        .map(|f| (f.name.as_str(), f.weight, names(&f.steps)))
        .collect();
    let browse = ("browse", 90, vec!["home", "products", "bye"]);
    assert_eq!(
        flows,
        [browse, ("buy", 10, vec!["home", "cart", "pay", "bye"])]
    );
    assert_eq!(
        s.duration,
        Some(Duration::from_secs(60)),
        "loops for ever: 60 s"
    );
    assert!(noted(
        &out,
        "Test Plan > Shoppers: it loops for ever, with no duration"
    ));
    assert!(noted(&out, "Throughput Controllers as weighted [[flow]]s"));
    let (_, page, _, _) = request(&s, &s.flows[0].steps[1]);
    let pages: Vec<String> = (1..=5).map(|n| format!("/products?page={n}")).collect();
    assert!(pages.contains(&page), "{page}");
    let cart = "http = \"POST /cart\"\nheaders = [\"Content-Type: application/x-www-form-urlencoded\"]\nbody = \"id={uuid}\"\n";
    assert!(out.scenario.contains(cart), "{}", out.scenario);
    assert!(!s.cookies, "no Cookie Manager: no cookies");
    let cookies = "cookies = false   # the plan has no HTTP Cookie Manager";
    assert!(out.scenario.contains(cookies));
}

#[test]
fn malformed_xml_is_told_at_its_line_and_column_and_other_xml_is_no_plan() {
    let text = "<?xml version=\"1.0\"?>\n<jmeterTestPlan version=\"1.2\">\n  <hashTree>\n    <TestPlan testname=\"a & b\"/>\n";
    let e = import("plan.jmx", text).unwrap_err().to_string();
    assert!(
        e.starts_with("plan.jmx:4:") && e.contains("malformed XML") && e.contains("&amp;"),
        "{e}"
    );
    let cut = "<jmeterTestPlan version=\"1.2\">\n  <hashTree>\n    <TestPlan testname=\"x\">\n";
    let e = import("plan.jmx", cut).unwrap_err().to_string();
    assert!(
        e.starts_with("plan.jmx:3:") && e.contains("cut short"),
        "{e}"
    );
    let pom = "<?xml version=\"1.0\"?>\n<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n</project>\n";
    let e = import("pom.xml", pom).unwrap_err().to_string();
    assert_eq!(e, "pom.xml:2:1: not a JMeter test plan: its root element is <project> (a .jmx file is the <jmeterTestPlan> JMeter saves, its <TestPlan> first)");
    let e = import("plan.jmx", &plan(&[], VIEW_RESULTS_TREE))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("plan.jmx: no enabled Thread Group"), "{e}");
    let debug = "<DebugSampler guiclass=\"TestBeanGUI\" testclass=\"DebugSampler\" testname=\"Debug Sampler\">\n<boolProp name=\"displayJMeterVariables\">true</boolProp>\n</DebugSampler>\n<hashTree/>\n";
    let no_http = plan(&[], &thread_group("Users", 1, 0, 1, debug));
    let e = import("plan.jmx", &no_http).unwrap_err().to_string();
    assert!(
        e.starts_with("plan.jmx: no HTTP Request sampler in Thread Group 'Users'"),
        "{e}"
    );
}

#[test]
fn a_step_using_a_variable_nothing_defines_is_dropped_and_says_which() {
    let group = [
        defaults("127.0.0.1", "8080"),
        http("item", "GET", "/items/${itemId}", &[], ""),
        http(
            "list",
            "GET",
            "/items",
            &[],
            &regex_extractor("first", "id=(\\d+)"),
        ),
        http("first", "GET", "/items/${first}", &[], ""),
    ];
    let text = plan(&[], &thread_group("Users", 1, 0, 1, &group.concat()));
    let (out, s) = import_and_read(&workdir("undefined"), &text);
    assert_eq!(names(&s.flows[0].steps), ["list", "first"]);
    assert_eq!(out.dropped.len(), 1, "{:#?}", out.dropped);
    let d = &out.dropped[0];
    assert_eq!(
        (d.element.as_str(), d.place.as_str()),
        (
            "HTTPSamplerProxy",
            "Test Plan > Users > HTTP Request 'item'"
        )
    );
    assert!(
        d.why
            .starts_with("it uses ${itemId}, which nothing translated defines"),
        "{}",
        d.why
    );
}

#[test]
fn controllers_without_an_equivalent_are_dropped_with_their_samplers() {
    let condition = "<stringProp name=\"IfController.condition\">${__jexl3(&quot;${token}&quot; != &quot;&quot;)}</stringProp>\n<boolProp name=\"IfController.useExpression\">true</boolProp>\n";
    let complex =
        "<stringProp name=\"IfController.condition\">${__jexl3(${n} &gt; 3)}</stringProp>\n";
    let group = [
        defaults("127.0.0.1", "8080"),
        http(
            "login",
            "POST",
            "/login",
            &[],
            &regex_extractor("token", "token=(\\w+)"),
        ),
        controller(
            "IfController",
            "IfControllerPanel",
            "has token",
            condition,
            &http("refresh", "GET", "/refresh", &[], ""),
        ),
        controller(
            "IfController",
            "IfControllerPanel",
            "many",
            complex,
            &http("more items", "GET", "/items", &[], ""),
        ),
        controller(
            "IfController",
            "IfControllerPanel",
            "always",
            "<stringProp name=\"IfController.condition\">true</stringProp>\n",
            &http("ping", "GET", "/ping", &[], ""),
        ),
        controller(
            "LoopController",
            "LoopControlPanel",
            "three times",
            "<stringProp name=\"LoopController.loops\">3</stringProp>\n",
            &http("poll", "GET", "/poll", &[], ""),
        ),
        controller(
            "WhileController",
            "WhileControllerGui",
            "poll more",
            "<stringProp name=\"WhileController.condition\">${more}</stringProp>\n",
            &http("more", "GET", "/more", &[], ""),
        ),
    ];
    let text = plan(&[], &thread_group("Users", 5, 0, 2, &group.concat()));
    let (out, s) = import_and_read(&workdir("controllers"), &text);
    assert_eq!(
        names(&s.flows[0].steps),
        ["login", "refresh", "ping", "poll"]
    );
    assert_eq!(s.flows[0].steps[3].repeat, 3);
    let condition = s.flows[0].steps[1].condition.as_ref().unwrap();
    assert_eq!(
        (condition.name.as_str(), &condition.test),
        ("token", &crate::scenario::Test::Differs(String::new()))
    );
    assert!(
        out.scenario.contains("if = \"{token} != ''\""),
        "{}",
        out.scenario
    );
    let dropped: Vec<String> = out
        .dropped
        .iter()
        .map(|d| format!("{}: {}", d.place, d.why))
        .collect();
    assert_eq!(dropped, [
        "Test Plan > Users > If Controller 'many': a condition other than one variable compared with a text (== or !=): not translated: its samplers 'more items' are not imported",
        "Test Plan > Users > While Controller 'poll more': it repeats while a condition holds: a sluice step repeats a fixed number of times: its samplers 'more' are not imported",
    ]);
}

/// A plan whose thread group sends requests sluice cannot, among other thread groups.
fn mixed_plan() -> String {
    let group = [
        defaults("127.0.0.1", "8080"),
        CACHE.into(),
        http("elsewhere", "GET", "https://cdn.test/app.js", &[], ""),
        http("groovy", "GET", "/t?x=${__groovy(1+1)}", &[], ""),
        http("braces", "GET", "/items/{id}", &[], ""),
    ];
    let seed = http("seed", "POST", "/seed", &[], "");
    let setup = thread_group("init", 1, 0, 1, &seed)
        .replace("\"ThreadGroupGui\"", "\"SetupThreadGroupGui\"")
        .replace("ThreadGroup ", "SetupThreadGroup ")
        .replace("\"ThreadGroup\"", "\"SetupThreadGroup\"")
        .replace("</ThreadGroup>", "</SetupThreadGroup>");
    let admin = http("admin", "GET", "/admin", &[], "");
    let disabled =
        thread_group("Old", 2, 0, 1, "").replace("\"Old\">", "\"Old\" enabled=\"false\">");
    let groups = [
        setup,
        thread_group("Users", 5, 0, 2, &group.concat()),
        thread_group("Admins", 2, 0, 1, &admin),
        disabled,
    ];
    plan(&[], &groups.concat())
}

#[test]
fn requests_sluice_cannot_send_as_written_are_dropped_and_other_thread_groups_listed() {
    let (out, s) = import_and_read(&workdir("requests"), &mixed_plan());
    assert_eq!(names(&s.flows[0].steps), ["groovy"]);
    let why = |place: &str| {
        let d = out.dropped.iter().find(|d| d.place.ends_with(place));
        d.map(|d| d.why.as_str())
            .unwrap_or_else(|| panic!("no {place} in {:#?}", out.dropped))
    };
    assert!(why("setUp Thread Group 'init'").starts_with("a setUp Thread Group: its own users"));
    assert_eq!(
        why("Thread Group 'Admins'"),
        "one thread group per scenario file: import writes the first"
    );
    assert!(why("HTTP Cache Manager").starts_with("sluice sends no conditional requests"));
    let elsewhere = "a scenario has one target, http://127.0.0.1:8080: this request goes to https://cdn.test:443";
    assert_eq!(why("'elsewhere'"), elsewhere);
    assert!(why("'braces'").starts_with("its text {id} would read as a scenario variable"));
    assert!(
        noted(&out, "${__groovy(1+1)} left as text"),
        "{:#?}",
        out.notes
    );
    assert!(noted(
        &out,
        "Test Plan > Thread Group 'Old': disabled in the plan, not translated"
    ));
    let lines: Vec<usize> = out.dropped.iter().map(|d| d.line).collect();
    assert!(
        lines.windows(2).all(|w| w[0] <= w[1]),
        "in the plan's order: {lines:?}"
    );
    let comments = out
        .scenario
        .lines()
        .filter(|l| l.starts_with("#   line "))
        .count();
    assert_eq!(comments, out.dropped.len());
}

#[test]
fn the_spring_login_fixture_imports_to_setup_loop_and_teardown() {
    let jmx = fixtures().join("login.jmx");
    let text = std::fs::read_to_string(&jmx).unwrap();
    let out = import(jmx.to_str().unwrap(), &text).unwrap();
    let toml = fixtures().join("login.toml");
    let s = Scenario::parse(toml.to_str().unwrap(), &out.scenario)
        .unwrap_or_else(|e| panic!("{e}\n{}", out.scenario));
    assert_eq!((s.users.clone(), s.iterations), (vec![200], Some(5)));
    assert_eq!(names(&s.setup), ["login page", "sign in"]);
    assert_eq!(
        names(&s.flows[0].steps),
        ["account: home", "account: orders"]
    );
    assert_eq!(names(&s.teardown), ["sign out"]);
    assert_eq!(
        s.data.as_ref().map(|d| (d.per, d.rows.len())),
        Some((Per::User, 200))
    );
    let orders = &s.flows[0].steps[1];
    assert_eq!(request(&s, orders).3.as_deref(), Some("orders of user0"));
    assert_eq!(
        orders.timeout,
        Some(Duration::from_secs(2)),
        "the Duration Assertion"
    );
    assert!(
        matches!(orders.think, Think::Gaussian { .. }),
        "the Gaussian and Uniform timers before home"
    );
    let dropped: Vec<&str> = out.dropped.iter().map(|d| d.element.as_str()).collect();
    assert_eq!(dropped, ["CacheManager", "JSR223PostProcessor"]);
    assert!(
        out.scenario
            .contains("2 listener(s) (Summary Report, View Results Tree)"),
        "{}",
        out.scenario
    );
}

/// A JSON Extractor of two variables, a Boundary Extractor, and regular expression
/// extractors that sluice takes (a template's group) or cannot (headers, all matches).
fn extractors() -> String {
    let json = "<JSONPostProcessor guiclass=\"JSONPostProcessorGui\" testclass=\"JSONPostProcessor\" testname=\"JSON Extractor\">\n<stringProp name=\"JSONPostProcessor.referenceNames\">token;ids</stringProp>\n<stringProp name=\"JSONPostProcessor.jsonPathExprs\">$.access_token;$.items[*].id</stringProp>\n<stringProp name=\"JSONPostProcessor.match_numbers\">1;2</stringProp>\n<stringProp name=\"JSONPostProcessor.defaultValues\">;NONE</stringProp>\n</JSONPostProcessor>\n<hashTree/>\n";
    let boundary = "<BoundaryExtractor guiclass=\"BoundaryExtractorGui\" testclass=\"BoundaryExtractor\" testname=\"Boundary Extractor\">\n<stringProp name=\"BoundaryExtractor.useHeaders\">false</stringProp>\n<stringProp name=\"BoundaryExtractor.refname\">order</stringProp>\n<stringProp name=\"BoundaryExtractor.lboundary\">order=</stringProp>\n<stringProp name=\"BoundaryExtractor.rboundary\">&amp;</stringProp>\n<stringProp name=\"BoundaryExtractor.default\"></stringProp>\n<boolProp name=\"BoundaryExtractor.default_empty_value\">true</boolProp>\n<stringProp name=\"BoundaryExtractor.match_number\">0</stringProp>\n</BoundaryExtractor>\n<hashTree/>\n";
    let second = regex_extractor("id", "item (\\w+) (\\d+)").replace("$1$", "$2$");
    let headers = regex_extractor("next", "Location: (.+)").replace(">false<", ">true<");
    let every =
        regex_extractor("all", "id=(\\d+)").replace("match_number\">1<", "match_number\">-1<");
    let token = http(
        "token",
        "POST",
        "/api/token",
        &[],
        &[json, boundary].concat(),
    );
    let list = http(
        "list",
        "GET",
        "/items",
        &[],
        &[second, headers, every].concat(),
    );
    let group = [defaults("127.0.0.1", "8080"), token, list].concat();
    plan(&[], &thread_group("Users", 1, 0, 1, &group))
}

#[test]
fn extractors_take_json_paths_boundaries_and_a_template_group() {
    let (out, s) = import_and_read(&workdir("extractors"), &extractors());
    let taken: Vec<String> = s
        .all_steps()
        .flat_map(|st| &st.extract)
        .map(|e| format!("{} {} {} {:?}", e.name, e.from, e.nth, e.default))
        .collect();
    assert_eq!(
        taken,
        [
            "token json \"$.access_token\" 1 None",
            "ids json \"$.items[*].id\" 2 Some(\"NONE\")",
            "order boundary \"order=\" .. \"&\" 0 Some(\"\")",
            r#"id regex "item (?:\\w+) (\\d+)" 1 None"#,
        ]
    );
    let why: Vec<&str> = out.dropped.iter().map(|d| d.why.as_str()).collect();
    assert!(
        why[0].starts_with("it reads the response headers: sluice takes a header by name"),
        "{why:?}"
    );
    assert!(
        why[1].starts_with("match number -1 takes every match"),
        "{why:?}"
    );
}

fn cookie_manager(cookies: &[(&str, &str, &str)]) -> String {
    let items: String = cookies
        .iter()
        .map(|(name, value, domain)| format!("<elementProp name=\"{name}\" elementType=\"Cookie\" testname=\"{name}\">\n<stringProp name=\"Cookie.value\">{value}</stringProp>\n<stringProp name=\"Cookie.domain\">{domain}</stringProp>\n<stringProp name=\"Cookie.path\">/</stringProp>\n<boolProp name=\"Cookie.secure\">false</boolProp>\n<longProp name=\"Cookie.expires\">0</longProp>\n</elementProp>\n"))
        .collect();
    COOKIES.replace(
        "<collectionProp name=\"CookieManager.cookies\"/>",
        &format!("<collectionProp name=\"CookieManager.cookies\">\n{items}</collectionProp>"),
    )
}

/// A Cookie Manager's user-defined cookies are the jar's first; one for another
/// domain than the target's makes the scenario fail its check, at its place.
#[test]
fn user_defined_cookies_start_each_jar_and_one_for_another_domain_is_refused() {
    let body = |domain: &str| {
        let cookies = cookie_manager(&[("lang", "en", "127.0.0.1"), ("tracker", "1", domain)]);
        let sampler = http("home", "GET", "/", &[], "");
        plan(
            &[],
            &thread_group(
                "Users",
                1,
                0,
                1,
                &format!("{}{cookies}{sampler}", defaults("127.0.0.1", "8080")),
            ),
        )
    };
    let (out, s) = import_and_read(&workdir("user-cookies"), &body("127.0.0.1"));
    assert_eq!(
        s.initial_cookies,
        [
            "lang=en; Path=/; Domain=127.0.0.1",
            "tracker=1; Path=/; Domain=127.0.0.1"
        ],
        "{}",
        out.scenario
    );
    let out = import("plan.jmx", &body("ads.example")).unwrap();
    let errors = Scenario::parse("plan.toml", &out.scenario)
        .unwrap_err()
        .to_string();
    let line = line_of(&out.scenario, "cookies = [");
    assert!(errors.contains(&format!("plan.toml:{line}:")), "{errors}");
    assert!(errors.contains("\"tracker=1; Path=/; Domain=ads.example\" would never be sent to http://127.0.0.1:8080"), "{errors}");
}
