//! `sluice plan`: capacity from traffic (the arithmetic is `sluice_bench::capacity`),
//! each step printed with its numbers, then the `sluice bench` runs that check the target
//! and the `sluice lab` run that finds which tier gives first.

use anyhow::anyhow;
use clap::Args;
use sluice_bench::capacity::{capacity, lab_steps, Capacity};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Daily active users.
    #[arg(long)]
    dau: f64,
    /// Requests each user makes a day.
    #[arg(long)]
    requests_per_user: f64,
    /// Hours of the day the traffic falls in.
    #[arg(long, default_value_t = 24.0)]
    active_hours: f64,
    /// Peak rate over the average.
    #[arg(long, default_value_t = 3.0)]
    peak_factor: f64,
    /// Response time to hold at the peak, e.g. 250ms.
    #[arg(long)]
    response_time: String,
    /// Pause of a user between requests, e.g. 1s.
    #[arg(long, default_value = "0s")]
    think: String,
    /// The target the printed `sluice bench` commands aim at.
    #[arg(long, default_value = "http://127.0.0.1:8080/")]
    target: String,
}

pub fn plan(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let response = duration("--response-time", &args.response_time)?;
    let think = duration("--think", &args.think)?;
    for (name, v) in [
        ("--dau", args.dau),
        ("--requests-per-user", args.requests_per_user),
        ("--peak-factor", args.peak_factor),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(anyhow!("{name} must be above 0"));
        }
    }
    if !(args.active_hours > 0.0 && args.active_hours <= 24.0) {
        return Err(anyhow!("--active-hours must be above 0 and at most 24"));
    }
    let c = capacity(
        args.dau,
        args.requests_per_user,
        args.active_hours,
        args.peak_factor,
        response + think,
    );
    print!("{}", report(args, &c, response, think));
    if let Some(hint) = https_hint(&args.target) {
        print!("{hint}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What the bench commands above may need for an `https://` target.
fn https_hint(target: &str) -> Option<&'static str> {
    let https = target
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    https.then_some(
        "\nOver HTTPS, sluice bench verifies the certificate against the system's roots: add\n\
         --cacert FILE for your own CA (--insecure for a self-signed test certificate),\n\
         --resolve NAME:PORT:ADDRESS to aim the name at one server, --h2 for HTTP/2.\n",
    )
}

fn report(args: &PlanArgs, c: &Capacity, response: Duration, think: Duration) -> String {
    let users = c.users.ceil() as u64;
    let (avg, peak) = (c.average_rps.round() as u64, c.peak_rps.ceil() as u64);
    let ms = |d: Duration| format!("{} ms", d.as_millis());
    let think_s = format!("{}ms", think.as_millis());
    format!(
        "requests a day      {} users x {} requests = {:.0}\n\
         average rate        {:.0} / ({} h x 3600 s) = {:.1} req/s\n\
         peak rate           {:.1} req/s x {} (peak factor) = {:.1} req/s\n\
         users in the system {:.1} req/s x ({} response + {} think) = {:.1}: {users} users (Little's law)\n\
         \n\
         Check it: the peak rate, its response time held (open model), then as many users\n\
         as the plan says (closed model), their throughput at least the peak rate:\n\
         \x20 sluice bench {t} --rate {avg},{peak} -d 60s --fail-if 'p99>{rt}ms' --fail-if 'errors>1%'\n\
         \x20 sluice bench {t} --users {users} --think {think_s} -d 60s --fail-if 'throughput<{peak}'\n\
         \n\
         Then which tier gives first: users in steps up to half again the plan, every tier\n\
         sampled (your balancer's and app servers' pids; add --tier db=postgres://USER@DB_HOST/DB\n\
         or mysql://... to see inside the database, --tier db=http://DB_HOST:9100/metrics for its\n\
         machine's node_exporter), the scalability law fitted to the steps against the peak rate:\n\
         \x20 sluice lab --target {t} --tier lb=LB_PID --tier app=APP_PID,APP_PID --users {steps} --think {think_s} -d 60s --peak-rate {peak}\n",
        args.dau,
        args.requests_per_user,
        c.requests_per_day,
        c.requests_per_day,
        args.active_hours,
        c.average_rps,
        c.average_rps,
        args.peak_factor,
        c.peak_rps,
        c.peak_rps,
        ms(response),
        ms(think),
        c.users,
        t = args.target,
        rt = response.as_millis(),
        steps = lab_steps(users),
    )
}

fn duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    sluice_config::parse_duration(text)
        .ok_or_else(|| anyhow!("{flag} {text}: not a duration (write e.g. 250ms or 1s)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_https_target_is_told_how_to_trust_and_aim() {
        let hint = https_hint("HTTPS://shop.test:8443").unwrap();
        assert!(hint.contains("--cacert FILE") && hint.contains("--resolve"));
        assert_eq!(https_hint("http://127.0.0.1:8080/"), None);
    }
}
