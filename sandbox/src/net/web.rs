//! What the sinkhole's listeners answer an HTTP request: a different site at every host, as
//! the web is.
//!
//! Each host (its `Host` header, else the address it was sent to) has its own server
//! software, headers, page and way of taking a POST, derived from its name, the same in every
//! run; each path of it its own page. A read gets `200` with an ordinary, harmless page (so a
//! fetch or scrape tool's call does its job, and nothing in it reads as an instruction); a
//! write is taken as a webhook or an API takes it (`200`, `201`, `202` or `204`), so a
//! sender goes on. A server that compared two hosts, two paths or a GET with a POST told the
//! sinkhole by their being one (the 242-byte page every request got until 2026-12-07).

use std::net::SocketAddr;
use std::time::SystemTime;

use super::log::HttpRequest;

/// The server software a site's `Server` header names (`None`: a site that sends none).
const SERVERS: [Option<&str>; 9] = [
    Some("nginx"),
    Some("cloudflare"),
    Some("Apache"),
    Some("nginx/1.24.0 (Ubuntu)"),
    Some("AmazonS3"),
    Some("envoy"),
    Some("openresty"),
    Some("Microsoft-IIS/10.0"),
    None,
];

const TITLES: [&str; 8] = [
    "Team notes",
    "Release notes",
    "Service status",
    "Documentation",
    "Getting started",
    "Changelog",
    "Project wiki",
    "Weekly digest",
];

const PARAGRAPHS: [&str; 10] = [
    "The weekly sync moved to Thursday at 10:00. Agenda: release checklist, on-call rota, open questions.",
    "All systems operational. No incidents were reported in the last 30 days.",
    "Version 2.4 adds export to CSV, faster search and a dark theme. Upgrading needs no migration.",
    "Install the package, copy the sample configuration and start the service. Logs go to standard output.",
    "Fixed: dates in the archive view were shown in UTC instead of local time.",
    "The office is closed on public holidays. Support answers within one working day.",
    "Questions and feature requests are welcome on the discussion board.",
    "Backups run nightly at 02:00 and are kept for 35 days.",
    "The mobile app now remembers the last opened project.",
    "Maintenance window: Sunday 04:00 to 05:00. Short interruptions are possible.",
];

/// A site as its name makes it.
struct Site {
    digest: [u8; 32],
}

impl Site {
    fn of(host: &str) -> Site {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        Site {
            digest: *blake3::hash(format!("site:{host}").as_bytes()).as_bytes(),
        }
    }

    fn pick<'a, T>(&self, byte: usize, from: &'a [T]) -> &'a T {
        &from[usize::from(self.digest[byte]) % from.len()]
    }

    /// The page at `path`: the site's title and two of its paragraphs, chosen by the path.
    fn page(&self, path: &str) -> String {
        let page = blake3::hash(format!("{}{path}", hex::encode(self.digest)).as_bytes());
        let page = page.as_bytes();
        let title = TITLES[usize::from(page[0]) % TITLES.len()];
        let first = usize::from(page[1]) % PARAGRAPHS.len();
        let second = (first + 1 + usize::from(page[2]) % (PARAGRAPHS.len() - 1)) % PARAGRAPHS.len();
        let lang = *self.pick(3, &["en", "en-US", "en-GB"]);
        format!(
            "<!doctype html>\n<html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title}</title></head>\n<body><main><h1>{title}</h1>\n<p>{}</p>\n<p>{}</p>\n\
             </main></body></html>\n",
            PARAGRAPHS[first], PARAGRAPHS[second]
        )
    }
}

/// The reply to `request`, sent to `local`: status, headers and body as the host's site
/// gives them; the body left out for `HEAD`.
pub(crate) fn reply(request: &HttpRequest, local: SocketAddr) -> Vec<u8> {
    let mut parts = request.request_line.split(' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or("/");
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let host = request
        .host
        .clone()
        .unwrap_or_else(|| local.ip().to_string());
    let site = Site::of(host.rsplit_once(':').map_or(&host, |(name, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            name
        } else {
            &host
        }
    }));
    let (status, content_type, body) = match method {
        "GET" | "HEAD" => match path {
            "/robots.txt" => (
                "200 OK",
                "text/plain",
                "User-agent: *\nDisallow: /admin/\n".to_string(),
            ),
            "/favicon.ico" => ("404 Not Found", "text/html; charset=utf-8", not_found()),
            _ => ("200 OK", "text/html; charset=utf-8", site.page(path)),
        },
        "POST" | "PUT" | "PATCH" => match site.digest[4] % 4 {
            0 => ("200 OK", "application/json", "{\"ok\":true}".to_string()),
            1 => (
                "201 Created",
                "application/json",
                format!(
                    "{{\"id\":\"{}\",\"status\":\"created\"}}",
                    hex::encode(&request_id()[..6])
                ),
            ),
            2 => (
                "202 Accepted",
                "application/json",
                "{\"status\":\"accepted\"}".to_string(),
            ),
            _ => ("204 No Content", "", String::new()),
        },
        "DELETE" | "OPTIONS" => ("204 No Content", "", String::new()),
        _ => (
            "405 Method Not Allowed",
            "text/html; charset=utf-8",
            "<html><body><h1>405 Method Not Allowed</h1></body></html>\n".to_string(),
        ),
    };
    let mut head = format!("HTTP/1.1 {status}\r\n");
    head.push_str(&format!(
        "Date: {}\r\n",
        httpdate::fmt_http_date(SystemTime::now())
    ));
    if let Some(server) = site.pick(5, &SERVERS) {
        head.push_str(&format!("Server: {server}\r\n"));
    }
    if !content_type.is_empty() {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    if !status.starts_with("204") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    if site.digest[6].is_multiple_of(2) {
        head.push_str("Cache-Control: max-age=0, must-revalidate\r\n");
    }
    if site.digest[7].is_multiple_of(3) {
        head.push_str(&format!("X-Request-Id: {}\r\n", hex::encode(request_id())));
    }
    if method == "OPTIONS" {
        head.push_str("Allow: GET, HEAD, POST, OPTIONS\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut reply = head.into_bytes();
    if method != "HEAD" {
        reply.extend_from_slice(body.as_bytes());
    }
    reply
}

fn not_found() -> String {
    "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n"
        .to_string()
}

/// A fresh id, as a site's request ids are.
fn request_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    let _ = getrandom::fill(&mut id);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(line: &str, host: Option<&str>) -> HttpRequest {
        HttpRequest {
            request_line: line.into(),
            host: host.map(str::to_string),
        }
    }

    fn split(reply: &[u8]) -> (String, String) {
        let text = String::from_utf8(reply.to_vec()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        (head.to_string(), body.to_string())
    }

    fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
        head.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
    }

    const LOCAL: &str = "104.18.0.7:80";

    #[test]
    fn a_read_gets_a_page_whose_length_says_so_and_head_gets_the_head_only() {
        let (head, body) = split(&reply(
            &request("GET /docs HTTP/1.1", Some("example.com")),
            LOCAL.parse().unwrap(),
        ));
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert_eq!(
            header(&head, "Content-Length"),
            Some(body.len().to_string().as_str())
        );
        assert!(body.contains("<h1>"), "{body}");
        let (only_head, nothing) = split(&reply(
            &request("HEAD /docs HTTP/1.1", Some("example.com")),
            LOCAL.parse().unwrap(),
        ));
        assert_eq!(nothing, "");
        assert_eq!(
            header(&only_head, "Content-Length"),
            Some(body.len().to_string().as_str())
        );
    }

    /// Two hundred hosts are not one site: their pages, servers and ways of taking a POST
    /// differ, and each host's page differs by path but not from one request to the next.
    #[test]
    fn hosts_paths_and_methods_are_answered_as_different_sites_answer() {
        let local = LOCAL.parse().unwrap();
        let get = |host: &str, path: &str| {
            split(&reply(
                &request(&format!("GET {path} HTTP/1.1"), Some(host)),
                local,
            ))
        };
        let mut bodies = std::collections::HashSet::new();
        let mut servers = std::collections::HashSet::new();
        let mut posts = std::collections::HashSet::new();
        for i in 0..200 {
            let host = format!("site{i}.example.org");
            let (head, body) = get(&host, "/");
            servers.insert(header(&head, "Server").map(str::to_string));
            bodies.insert(body);
            let (post, _) = split(&reply(&request("POST /hook HTTP/1.1", Some(&host)), local));
            posts.insert(post.lines().next().unwrap().to_string());
        }
        assert!(bodies.len() > 100, "{}", bodies.len());
        assert!(servers.len() >= 6, "{servers:?}");
        assert!(posts.len() >= 3, "{posts:?}");
        assert!(
            posts.iter().all(|p| p.starts_with("HTTP/1.1 20")),
            "{posts:?}"
        );
        assert_ne!(get("a.example.org", "/x").1, get("a.example.org", "/y").1);
        assert_eq!(
            get("a.example.org", "/x").1,
            get("A.example.org:80", "/x?q=1").1
        );
        let (head, _) = get("a.example.org", "/favicon.ico");
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    }
}
