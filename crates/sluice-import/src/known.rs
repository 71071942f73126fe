//! What sluice does instead of the nginx directives it does not translate: one line
//! each, so a user reads why nothing was written rather than guessing.

use crate::tree::Node;
use crate::Notes;

/// Notes `d` with what sluice does instead (or that it is not translated).
pub fn note(d: &Node, notes: &mut Notes) {
    notes.push(d.note(instead(&d.name)));
}

fn instead(name: &str) -> &'static str {
    let exact = EXACT.iter().find(|(names, _)| names.contains(&name));
    let family = || {
        FAMILIES.iter().find(|(parts, _)| {
            parts
                .iter()
                .any(|p| name.starts_with(p) || name.ends_with(p))
        })
    };
    exact.or_else(family).map_or(NOTHING, |(_, why)| why)
}

const NOTHING: &str = "not translated: sluice has no equivalent";

/// Directives by name.
const EXACT: &[(&[&str], &str)] = &[
    (
        &["server_tokens"],
        "sluice sends no version in any header: nothing to write",
    ),
    (
        &["sendfile", "tcp_nopush", "tcp_nodelay", "aio", "directio", "output_buffers"],
        "sluice sets TCP_NODELAY itself and streams bodies through its own buffers: nothing to write",
    ),
    (
        &["charset", "default_type", "types", "types_hash_max_size", "types_hash_bucket_size"],
        "sluice's static files carry content types of its own: nothing to write",
    ),
    (
        &["client_max_body_size"],
        "sluice sets no limit on a request body's size: a server that wants one answers 413 itself",
    ),
    (
        &["client_body_timeout", "send_timeout"],
        "sluice bounds each pause of a client with client_idle_timeout (60s), and a whole body with request_body_timeout",
    ),
    (
        &["client_header_timeout"],
        "sluice's header_timeout (10s) bounds the whole request head, for every listener",
    ),
    (
        &["client_body_buffer_size", "client_header_buffer_size", "large_client_header_buffers"],
        "sluice reads heads up to max_header_bytes (16384) and streams bodies: nothing to write",
    ),
    (
        &["keepalive_timeout"],
        "sluice's keepalive_timeout is global (30s by default): translated from the http level only",
    ),
    (
        &["keepalive_requests"],
        "sluice has no cap on requests per client connection",
    ),
    (
        &["expires"],
        "not translated: set Cache-Control with the route's response_headers",
    ),
    (
        &["ssl_protocols", "ssl_ciphers", "ssl_prefer_server_ciphers", "ssl_dhparam", "ssl_ecdh_curve", "ssl_conf_command"],
        "sluice offers TLS 1.2 and 1.3 with modern cipher suites only: nothing to choose",
    ),
    (
        &["ssl_session_cache", "ssl_session_timeout", "ssl_session_tickets", "ssl_session_ticket_key"],
        "sluice resumes TLS sessions with tickets rotated and shared by all workers: nothing to write",
    ),
    (
        &["ssl_stapling", "ssl_stapling_verify", "ssl_trusted_certificate"],
        "sluice does not staple OCSP responses; not translated",
    ),
    (
        &["ssl", "http2"],
        "sluice speaks TLS on listeners with tls, and HTTP/2 by ALPN on them: nothing more to write",
    ),
    (
        &["error_log"],
        "sluice logs to stderr (SLUICE_LOG sets the level)",
    ),
    (
        &["log_format"],
        "sluice's access log is nginx's combined format with upstream timings, or json (access_log_format); not translated",
    ),
    (
        &["pid"],
        "sluice writes its pid_file (default: in $TMPDIR); set pid_file to keep this path",
    ),
    (
        &["user"],
        "sluice does not switch users: run it as that user",
    ),
    (
        &["worker_rlimit_nofile"],
        "sluice raises its open-file limit to the hard limit at start",
    ),
    (
        &["multi_accept", "use", "accept_mutex", "worker_cpu_affinity", "worker_priority"],
        "each sluice worker accepts on its own SO_REUSEPORT socket: nothing to choose",
    ),
    (
        &["map"],
        "not translated: sluice has no map variables (the usual one, $connection_upgrade, is not needed: sluice passes WebSocket upgrades through)",
    ),
    (
        &["proxy_http_version"],
        "sluice speaks HTTP/1.1 with keep-alive to servers: nothing to write",
    ),
    (
        &["proxy_buffering", "proxy_buffer_size", "proxy_buffers", "proxy_busy_buffers_size", "proxy_max_temp_file_size", "proxy_temp_file_write_size", "proxy_request_buffering", "proxy_temp_path", "client_body_temp_path"],
        "sluice streams bodies both ways through 16 KiB buffers, never to disk: nothing to write",
    ),
    (
        &["proxy_redirect"],
        "sluice does not rewrite Location headers: servers should send the public URL; not translated",
    ),
    (
        &["proxy_send_timeout"],
        "not translated: sluice has no separate timeout for sending to a server",
    ),
    (
        &["proxy_next_upstream", "proxy_next_upstream_tries", "proxy_next_upstream_timeout"],
        "sluice retries on another server when that is safe (an upstream's retries and retry_budget); not translated",
    ),
    (
        &["proxy_pass_header", "proxy_ignore_headers", "proxy_pass_request_headers"],
        "sluice passes the servers' headers through; not translated",
    ),
    (
        &["proxy_intercept_errors", "error_page", "recursive_error_pages"],
        "sluice does not replace error pages; not translated",
    ),
    // What a route's `root` does (sluice-proxy's files module): the file at root + the
    // whole request path, `index.html` for a path ending in `/`, 404 otherwise; no
    // fallbacks, no listings, no error line for a missing file.
    (
        &["try_files"],
        "not translated: sluice's root serves the file at the request's path, or answers 404 (no fallback to another file or location)",
    ),
    (
        &["index"],
        "sluice's root serves index.html for a path ending in / and knows no other index name: only index.html carries over",
    ),
    (
        &["alias"],
        "not translated: sluice's root is nginx's root (the file is root + the whole request path); write a root under which the path is found",
    ),
    (
        &["autoindex"],
        "sluice lists no directory (one without index.html is 404); not translated",
    ),
    (
        &["open_file_cache", "open_file_cache_valid", "open_file_cache_min_uses", "open_file_cache_errors"],
        "sluice opens a static file on each request (the kernel's page cache keeps its contents): nothing to write",
    ),
    (
        &["log_not_found"],
        "sluice logs no error for a file not found (its 404 is in the access log only): nothing to write",
    ),
    (
        &["internal"],
        "nginx answers clients 404 here (only its own redirects reach it: X-Accel-Redirect, error_page); sluice has no internal redirects: the route answers every request 404",
    ),
    (
        &["rewrite"],
        "a server's own rewrites (outside a location) run before nginx picks a location; sluice rewrites on a route (its `rewrite`): move it into the locations by hand",
    ),
    (
        &["if", "set", "rewrite_log"],
        "sluice has no conditions or variables of its own (a route's `rewrite` carries nginx's rewrite); not translated",
    ),
    (
        &["break"],
        "nginx's break stops the rewrite directives after it; sluice's rewrites stop at a match with a flag: not translated, rewrite by hand if the order matters",
    ),
    (
        &["real_ip_header", "real_ip_recursive"],
        "sluice keeps a trusted proxy's forwarding headers (trusted_proxies) but takes the client address from the connection or its PROXY protocol header; not translated",
    ),
    (
        &["resolver_timeout"],
        "translate by hand as [resolver] timeout",
    ),
    (
        &["limit_conn_zone", "limit_conn"],
        "translate by hand as a listener's max_conns_per_client (one client address's connections)",
    ),
    (
        &["limit_req_status", "limit_req_log_level"],
        "sluice answers refused requests 429; not translated",
    ),
    (
        &["stream"],
        "TCP and UDP proxying (stream) is not sluice's; not translated",
    ),
    (
        &["status_zone", "zone_sync", "health_check", "status", "api"],
        "NGINX Plus; sluice's own health checks, /metrics and admin API do this: not translated",
    ),
    (
        &["stub_status"],
        "sluice's metrics are on the admin listener's /metrics; not translated",
    ),
    (
        &["ignore_invalid_headers", "underscores_in_headers"],
        "sluice answers 400 to an invalid header line: nothing to write",
    ),
    (
        &["reset_timedout_connection", "lingering_close", "lingering_time", "lingering_timeout"],
        "sluice closes timed-out connections itself: nothing to write",
    ),
    (
        &["add_trailer", "more_set_headers", "more_clear_headers"],
        "not translated: use the route's response_headers",
    ),
    (
        &["proxy_ssl_verify", "proxy_ssl_server_name", "proxy_ssl_name", "proxy_ssl_trusted_certificate"],
        "sluice verifies servers reached over https (upstream tls = true, or { server_name, ca }); set it on the upstream",
    ),
];

/// Directives by a prefix (or, for nginx's hash table sizes, a suffix) of their name.
const FAMILIES: &[(&[&str], &str)] = &[
    (
        &["proxy_cache", "proxy_no_cache"],
        "sluice does not cache responses; not translated",
    ),
    (
        &["auth_"],
        "a setting of a check sluice cannot make (the routes under the check answer 403); not translated",
    ),
    (
        &["fastcgi_", "uwsgi_", "scgi_"],
        "sluice speaks HTTP to servers, not FastCGI, uwsgi or SCGI; not translated",
    ),
    (
        &["_hash_bucket_size", "_hash_max_size"],
        "nginx's hash table sizes: nothing to set in sluice",
    ),
];

#[cfg(test)]
mod tests {
    use super::instead;

    #[test]
    fn directives_are_found_by_name_or_family() {
        assert!(instead("server_tokens").contains("no version"));
        assert!(instead("proxy_cache_valid").contains("cache"));
        assert!(instead("server_names_hash_bucket_size").contains("hash table"));
        assert!(instead("lua_code_cache").starts_with("not translated"));
    }
}
