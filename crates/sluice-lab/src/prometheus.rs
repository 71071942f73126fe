//! A Prometheus server as the source of a tier: a user with twenty app servers already
//! scraped by Prometheus names the job (`--tier app=prometheus+http://prom:9090/?job=app`)
//! instead of listing twenty URLs. Its targets (`up{job="app"}`) are the tier's instances;
//! each instance's reading is every series of that target at the last scrape (an
//! instant query of its labels), read as its exporter's text would be. Counters are as
//! fresh as the scrape: a scrape interval above a third of a step is said before the run.

use crate::prom::Sample;
use std::collections::BTreeMap;

/// The scheme prefix of a Prometheus tier.
pub const SCHEME: &str = "prometheus+";

/// A Prometheus server and the label matchers that choose a job's targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `http://HOST:PORT`, the server's API base.
    pub base: String,
    /// `job="app"`, ... in the order given.
    pub matchers: Vec<(String, String)>,
}

impl Source {
    /// `prometheus+http://HOST:PORT/?job=app[&LABEL=VALUE...]`; `None` for another scheme.
    pub fn parse(url: &str) -> Option<Result<Source, String>> {
        let rest = url.strip_prefix(SCHEME)?;
        if !rest.starts_with("http://") {
            return Some(Err("write prometheus+http://HOST:PORT/?job=JOB".into()));
        }
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let matchers: Vec<(String, String)> = query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (decode(k), decode(v)))
            .collect();
        if matchers.is_empty() {
            return Some(Err(
                "name the targets: ?job=JOB (and any other label, &LABEL=VALUE)".into(),
            ));
        }
        Some(Ok(Source {
            base: base.trim_end_matches('/').to_string(),
            matchers,
        }))
    }

    /// The tier URL of one of its targets.
    pub fn instance_url(&self, instance: &str) -> String {
        let mut query: Vec<String> = self
            .matchers
            .iter()
            .filter(|(k, _)| k != "instance")
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        query.push(format!("instance={}", encode(instance)));
        format!("{SCHEME}{}/?{}", self.base, query.join("&"))
    }

    /// `{job="app",instance="..."}`.
    fn selector(&self) -> String {
        let inner: Vec<String> = self
            .matchers
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
            .collect();
        format!("{{{}}}", inner.join(","))
    }

    /// The `instance` label of each target, from `up`.
    pub fn instances(&self) -> Result<Vec<String>, String> {
        let samples = self.query(&format!("up{}", self.selector()))?;
        let mut out: Vec<String> = samples
            .into_iter()
            .filter_map(|s| s.labels.get("instance").cloned())
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Every series of the chosen targets at their last scrape.
    pub fn series(&self) -> Vec<Sample> {
        self.query(&self.selector()).unwrap_or_default()
    }

    /// CPUs of the machine at `host`, from a node_exporter Prometheus scrapes there.
    pub fn machine_cpus(&self, host: &str) -> Option<f64> {
        let q = format!(
            "count(node_cpu_seconds_total{{mode=\"idle\",instance=~\"{}(:[0-9]+)?\"}})",
            regex_escape(host)
        );
        self.query(&q).ok()?.first().map(|s| s.value)
    }

    /// The scrape interval of the chosen targets, seconds (the longest).
    pub fn scrape_interval(&self) -> Option<f64> {
        let body = crate::fetch::http_get(&format!("{}/api/v1/targets?state=active", self.base))?;
        let json: serde_json::Value = serde_json::from_str(&body).ok()?;
        json["data"]["activeTargets"]
            .as_array()?
            .iter()
            .filter(|t| {
                self.matchers
                    .iter()
                    .all(|(k, v)| t["labels"][k.as_str()].as_str() == Some(v.as_str()))
            })
            .filter_map(|t| seconds(t["scrapeInterval"].as_str()?))
            .reduce(f64::max)
    }

    /// An instant query's vector, as samples.
    fn query(&self, promql: &str) -> Result<Vec<Sample>, String> {
        let url = format!("{}/api/v1/query?query={}", self.base, encode(promql));
        let body = crate::fetch::http_get(&url)
            .ok_or_else(|| format!("no answer from {}/api/v1/query", self.base))?;
        let json: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("not Prometheus's API: {e}"))?;
        let result = json["data"]["result"]
            .as_array()
            .ok_or_else(|| format!("not Prometheus's API: {}", json["error"]))?;
        Ok(result.iter().filter_map(sample).collect())
    }
}

/// One element of a vector result: `{"metric": {...}, "value": [t, "v"]}`.
fn sample(r: &serde_json::Value) -> Option<Sample> {
    let mut labels: BTreeMap<String, String> = r["metric"]
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    let name = labels.remove("__name__").unwrap_or_default();
    let value = match r["value"][1].as_str()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// Prometheus's durations as its API writes them: `15s`, `1m`, `500ms`, `1m30s`.
fn seconds(text: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let (number, after) = rest.split_at(digits);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let scale = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return None,
        };
        total += number.parse::<f64>().ok()? * scale;
        rest = next;
    }
    Some(total)
}

/// Percent-encodes all but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect::<String>()
        .replace('\\', "\\\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tier_url_names_a_server_and_its_targets() {
        let s = Source::parse("prometheus+http://prom:9090/?job=app&env=prod%20eu")
            .unwrap()
            .unwrap();
        assert_eq!(s.base, "http://prom:9090");
        assert_eq!(s.selector(), "{job=\"app\",env=\"prod eu\"}");
        let one = s.instance_url("10.0.0.5:8080");
        assert_eq!(
            one,
            "prometheus+http://prom:9090/?job=app&env=prod%20eu&instance=10.0.0.5%3A8080"
        );
        let back = Source::parse(&one).unwrap().unwrap();
        assert_eq!(
            back.selector(),
            "{job=\"app\",env=\"prod eu\",instance=\"10.0.0.5:8080\"}"
        );
        assert!(Source::parse("prometheus+http://prom:9090/")
            .unwrap()
            .is_err());
        assert!(Source::parse("prometheus+https://prom/?job=a")
            .unwrap()
            .is_err());
        assert!(Source::parse("http://prom:9090/").is_none());
        assert_eq!(regex_escape("10.0.0.5"), "10\\\\.0\\\\.0\\\\.5");
        assert_eq!(seconds("15s"), Some(15.0));
        assert_eq!(seconds("1m30s"), Some(90.0));
        assert_eq!(seconds("500ms"), Some(0.5));
        assert_eq!(seconds("x"), None);
    }
}
