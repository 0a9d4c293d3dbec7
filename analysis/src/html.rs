//! The map as one self-contained HTML page: no external script, style, font or image,
//! and a content security policy that forbids fetching any. Everything the server
//! controls (names, reasons, evidence) is escaped.

use serde_json::Value;

use crate::compare::Comparison;
use crate::map::{Map, MapCell, ServerMap, Summary, ToolMap, VERDICTS};
use crate::marks::{spoken, symbol};
use crate::read::compact;

const CELL: u32 = 26;
const LABEL: u32 = 380;
const HEADER: u32 = 130;

/// The page.
pub fn html(map: &Map, comparison: Option<&Comparison>) -> String {
    let mut h = String::with_capacity(64 * 1024 + map.servers.len() * 4096);
    let totals = map.totals();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str(&format!(
        "<title>vac conformance map: {}</title>\n",
        esc(&map.campaign)
    ));
    h.push_str(STYLE);
    h.push_str("</head>\n<body>\n");
    h.push_str(&format!(
        "<h1>Conformance map: {}</h1>\n",
        esc(&map.campaign)
    ));
    h.push_str(
        "<p class=\"lede\">Each cell is one tool × clause of an effect contract, graded from \
         what the tool did in vac's sandbox. <b>Verdict and severity are separate:</b> the \
         symbol says whether the promise held; severity says how much a broken one matters.</p>\n",
    );
    legend(&mut h);

    // Summary.
    h.push_str("<h2>Summary</h2>\n<table id=\"summary\" class=\"sortable\">\n<thead><tr>");
    for (key, label) in [("server", "server")].into_iter().chain(Summary::COLUMNS) {
        h.push_str(&format!(
            "<th data-key=\"{key}\" data-type=\"{}\" tabindex=\"0\">{label}</th>",
            if key == "server" { "text" } else { "number" }
        ));
    }
    // The overview's other axis: confirmed cells per clause.
    for clause in &map.clauses {
        h.push_str(&format!(
            "<th data-key=\"confirmed:{0}\" data-type=\"number\" tabindex=\"0\" \
             title=\"confirmed cells of {0}\">{0}</th>",
            esc(clause)
        ));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    let mut all = vec![0u64; map.clauses.len()];
    for s in &map.servers {
        h.push_str(&format!("<tr data-server=\"{}\">", esc(&s.id)));
        summary_cells(
            &mut h,
            &format!("<a href=\"#{}\">{}</a>", anchor(&s.id), esc(&s.id)),
            &s.summary,
        );
        let counts = confirmed_by_clause(map, s);
        for (n, sum) in counts.iter().zip(all.iter_mut()) {
            *sum += n;
        }
        clause_cells(&mut h, map, &counts);
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n<tfoot><tr id=\"totals\">");
    summary_cells(&mut h, "all servers", &totals);
    clause_cells(&mut h, map, &all);
    h.push_str("</tr></tfoot>\n</table>\n");

    // Filter.
    h.push_str(
        "<h2>Map</h2>\n<form id=\"filters\" onsubmit=\"return false\">\
         <label>Filter servers and tools <input id=\"filter\" type=\"search\" \
         placeholder=\"name contains…\"></label>",
    );
    for v in VERDICTS.iter().chain(["not_graded"].iter()) {
        h.push_str(&format!(
            " <label><input type=\"checkbox\" class=\"show\" value=\"{v}\" checked> {} {v}</label>",
            symbol(v)
        ));
    }
    h.push_str("</form>\n");

    // The heat map: one SVG per server, a row per tool.
    let mut evidence = Vec::new();
    for s in &map.servers {
        server_map(&mut h, map, s, &mut evidence);
    }

    // Confirmed cells with their evidence.
    h.push_str(&format!(
        "<h2>Confirmed cells ({})</h2>\n<div id=\"evidence\">\n",
        evidence.len()
    ));
    if evidence.is_empty() {
        h.push_str("<p>No tool broke a promise vac could test.</p>\n");
    }
    for (id, s, t, c) in &evidence {
        evidence_block(&mut h, id, s, t, c);
    }
    h.push_str("</div>\n");
    if let Some(comparison) = comparison {
        static_section(&mut h, comparison);
    }
    h.push_str(&format!(
        "<footer>{} servers, {} tools, {} cells. Every figure here is regenerated from the \
         receipts (<code>vac report</code>); each confirmed cell names the receipt record \
         (seq and blake3 of its line) and the contract hash it was graded against.</footer>\n",
        map.servers.len(),
        totals.tools,
        map.cells().count()
    ));
    h.push_str(SCRIPT);
    h.push_str("</body>\n</html>\n");
    h
}

/// The static-vs-dynamic section, folded (it is long, and a reader of the map comes for the
/// verdicts): the confusion matrix per clause class, then the declaration gaps, the
/// over-approximations and (folded again) the predictions not tested.
fn static_section(h: &mut String, c: &Comparison) {
    h.push_str(&format!(
        "<details class=\"section\" id=\"static-section\"><summary><h2 id=\"static\">Static vs \
         dynamic</h2></summary>\n<p>The static analyser <code>{}</code> \
         ({} findings; rules in <code>analysis/RULES.md</code>) as a predictor of what the \
         tools did: per clause class, whether a finding predicts the effect, against the \
         cell's verdict. Cells not tested (skipped or errored) are counted apart, never as \
         negatives.</p>\n",
        esc(&c.analyser),
        c.findings
    ));
    h.push_str("<table id=\"static-matrix\" class=\"sortable\">\n<thead><tr>");
    for column in crate::compare::MATRIX {
        let kind = if column.number { "number" } else { "text" };
        h.push_str(&format!(
            "<th data-key=\"{}\" data-type=\"{kind}\" tabindex=\"0\">{}</th>",
            column.key, column.label
        ));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for r in &c.rows {
        h.push_str(&format!("<tr data-class=\"{}\">", esc(&r.class)));
        for cell in r.cells() {
            h.push_str(&format!("<td>{}</td>", esc(&cell)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
    let lists = [
        (
            "gaps",
            "Declaration gaps",
            "static predicted nothing, the effect was confirmed",
            &c.gaps,
            "rules that fired on the tool",
        ),
        (
            "over",
            "Over-approximations",
            "static predicted it, the tool was seen not to do it: refuted, with successful calls and live sensors",
            &c.over_approximations,
            "rules that predicted it",
        ),
        (
            "untested",
            "Predictions not tested",
            "static predicted it, the cell was not graded by a successful call",
            &c.untested,
            "rules that predicted it",
        ),
    ];
    for (id, title, what, list, rules) in lists {
        let folded = id == "untested";
        if folded {
            h.push_str(&format!(
                "<details id=\"static-{id}\"><summary>{title} ({})</summary>\n",
                list.len()
            ));
        } else {
            h.push_str(&format!(
                "<h3 id=\"static-{id}\">{title} ({})</h3>\n",
                list.len()
            ));
        }
        h.push_str(&format!("<p>{what}.</p>\n"));
        if !list.is_empty() {
            h.push_str(&format!(
                "<table class=\"sortable static-list\">\n<thead><tr>\
                 <th data-type=\"text\" tabindex=\"0\">server</th>\
                 <th data-type=\"text\" tabindex=\"0\">tool</th>\
                 <th data-type=\"text\" tabindex=\"0\">class</th>\
                 <th data-type=\"text\" tabindex=\"0\">verdict</th>\
                 <th data-type=\"text\" tabindex=\"0\">{rules}</th>\
                 <th data-type=\"text\" tabindex=\"0\">calls ok</th>\
                 <th data-type=\"text\" tabindex=\"0\">reason</th>\
                 <th data-type=\"text\" tabindex=\"0\">receipt</th></tr></thead>\n<tbody>\n"
            ));
            for d in list {
                h.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td>\
                     <td>{}/{}</td><td>{}</td><td>{}</td></tr>\n",
                    esc(&d.server),
                    esc(&d.tool),
                    esc(&d.class),
                    symbol(&d.verdict),
                    esc(&d.verdict),
                    esc(&d.rules.join(", ")),
                    d.succeeded,
                    d.calls,
                    esc(&d.reason),
                    d.record
                        .as_ref()
                        .map(|(probe, seq, hash)| format!(
                            "<code>{}</code> seq {seq} <code>{}</code>",
                            esc(probe),
                            esc(&hash[..16.min(hash.len())])
                        ))
                        .unwrap_or_default(),
                ));
            }
            h.push_str("</tbody>\n</table>\n");
        }
        if folded {
            h.push_str("</details>\n");
        }
    }
    h.push_str("</details>\n");
}

fn summary_cells(h: &mut String, name: &str, s: &Summary) {
    h.push_str(&format!("<td data-count=\"server\">{name}</td>"));
    for ((key, _), value) in Summary::COLUMNS.iter().zip(s.values()) {
        h.push_str(&format!("<td data-count=\"{key}\">{value}</td>"));
    }
}

/// Confirmed cells of one server, per clause of the map, in its order.
fn confirmed_by_clause(map: &Map, s: &ServerMap) -> Vec<u64> {
    map.clauses
        .iter()
        .map(|clause| {
            s.tools
                .iter()
                .flat_map(|t| &t.cells)
                .filter(|c| c.verdict == "confirmed" && c.clause == *clause)
                .count() as u64
        })
        .collect()
}

fn clause_cells(h: &mut String, map: &Map, counts: &[u64]) {
    for (clause, n) in map.clauses.iter().zip(counts) {
        h.push_str(&format!(
            "<td data-clause=\"{}\"{}>{n}</td>",
            esc(clause),
            if *n > 0 { " class=\"some\"" } else { "" }
        ));
    }
}

/// A server's section id: its id with every character outside `A-Za-z0-9_-` as `-`.
fn anchor(id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("s-{safe}")
}

/// Above this many servers a map opens on its overview: each server's grid is folded.
const UNFOLDED_SERVERS: usize = 30;

fn legend(h: &mut String) {
    h.push_str("<p class=\"legend\">");
    for (v, text) in [
        ("confirmed", "confirmed: the tool broke the promise"),
        (
            "refuted",
            "refuted: called, sensors live, nothing forbidden seen",
        ),
        (
            "skipped",
            "skipped: not testable (nothing promised, no successful call, …)",
        ),
        ("errored", "errored: a sensor, the server or a cap failed"),
        ("not_graded", "not graded"),
    ] {
        h.push_str(&format!(
            "<span class=\"key\"><svg width=\"18\" height=\"18\" aria-hidden=\"true\"><rect \
             class=\"v-{v}\" width=\"18\" height=\"18\" rx=\"3\"/><text x=\"9\" y=\"13.5\">{}</text></svg> {text}</span> ",
            symbol(v)
        ));
    }
    h.push_str("<span class=\"key\"><b>~</b> repetitions disagree</span></p>\n");
}

type Confirmed<'a> = (String, &'a ServerMap, &'a ToolMap, &'a MapCell);

fn server_map<'a>(h: &mut String, map: &Map, s: &'a ServerMap, evidence: &mut Vec<Confirmed<'a>>) {
    let width = LABEL + CELL * map.clauses.len() as u32 + HEADER;
    let height = HEADER + CELL * s.tools.len() as u32 + 4;
    h.push_str(&format!(
        "<section class=\"server\" id=\"{}\" data-server=\"{}\">\n<h3>{}</h3>\n",
        anchor(&s.id),
        esc(&s.id),
        esc(&s.id)
    ));
    if let Some(name) = &s.name {
        h.push_str(&format!(
            "<p class=\"meta\">server <code>{}</code> {} · protocol {} · {} probe{}</p>\n",
            esc(name),
            esc(s.version.as_deref().unwrap_or("")),
            esc(&spoken(s)),
            s.probes.len(),
            if s.probes.len() == 1 { "" } else { "s" }
        ));
    }
    if !s.not_audited.is_empty() {
        h.push_str("<ul class=\"not-audited\">\n");
        for n in &s.not_audited {
            h.push_str(&format!(
                "<li><b>not audited</b>: {}</li>\n",
                esc(&n.to_string())
            ));
        }
        h.push_str("</ul>\n");
    }
    if s.tools.is_empty() {
        h.push_str("</section>\n");
        return;
    }
    h.push_str(&format!(
        "<details class=\"grid\"{}><summary>{} tools · {} confirmed</summary>\n",
        if map.servers.len() <= UNFOLDED_SERVERS {
            " open"
        } else {
            ""
        },
        s.summary.tools,
        s.summary.confirmed
    ));
    h.push_str(&format!(
        "<svg class=\"heatmap\" role=\"img\" aria-label=\"verdicts of {}\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" data-header=\"{HEADER}\" \
         data-cell=\"{CELL}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
        esc(&s.id)
    ));
    for (i, clause) in map.clauses.iter().enumerate() {
        let x = LABEL + CELL * i as u32 + CELL / 2;
        h.push_str(&format!(
            "<text class=\"col\" transform=\"translate({x},{}) rotate(-60)\">{}</text>\n",
            HEADER - 6,
            esc(clause)
        ));
    }
    for (row, t) in s.tools.iter().enumerate() {
        let y = HEADER + CELL * row as u32;
        h.push_str(&format!(
            "<g class=\"row\" data-row=\"{row}\" data-tool=\"{}\"><text class=\"label\" x=\"{}\" y=\"{}\">{} \
             <tspan class=\"calls\">{}/{} ok</tspan></text>\n",
            esc(&t.name),
            LABEL - 8,
            y + CELL / 2 + 5,
            esc(&t.name),
            t.succeeded,
            t.calls
        ));
        for (col, c) in t.cells.iter().enumerate() {
            let x = LABEL + CELL * col as u32;
            let ev = if c.verdict == "confirmed" {
                let id = format!("ev-{}", evidence.len() + 1);
                evidence.push((id.clone(), s, t, c));
                format!(" data-ev=\"{id}\"")
            } else {
                String::new()
            };
            let dist: Vec<String> = VERDICTS
                .iter()
                .zip(c.counts)
                .filter(|(_, n)| *n > 0)
                .map(|(v, n)| format!("{n} {v}"))
                .collect();
            h.push_str(&format!(
                "<g class=\"cell\" tabindex=\"0\" data-server=\"{}\" data-tool=\"{}\" \
                 data-clause=\"{}\" data-verdict=\"{}\" data-severity=\"{}\" data-stable=\"{}\"{ev}>\
                 <rect class=\"v-{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\"/>\
                 <text x=\"{}\" y=\"{}\">{}{}</text><title>{} × {}: {}{} — {}</title></g>\n",
                esc(&s.id),
                esc(&t.name),
                esc(&c.clause),
                c.verdict,
                c.severity.name,
                c.stable,
                c.verdict,
                x + 1,
                y + 1,
                CELL - 2,
                CELL - 2,
                x + CELL / 2,
                y + CELL / 2 + 5,
                symbol(c.verdict),
                if c.stable { "" } else { "~" },
                esc(&t.name),
                esc(&c.clause),
                c.verdict,
                if dist.len() > 1 {
                    format!(" ({})", dist.join(", "))
                } else {
                    String::new()
                },
                esc(&c.reason)
            ));
        }
        h.push_str("</g>\n");
    }
    h.push_str("</svg>\n</details>\n");
    profile(h, s);
    h.push_str("</section>\n");
}

/// A server's behaviour profile, when its receipts recorded one: folded, one item per tool
/// that did anything, then how many did nothing the sensors saw.
fn profile(h: &mut String, s: &ServerMap) {
    let profiled = s.profiled();
    if profiled.is_empty() {
        return;
    }
    let active = profiled.iter().filter(|(_, l)| !l.is_empty()).count();
    h.push_str(&format!(
        "<details class=\"profile\" data-server=\"{}\"><summary>Seen to do, whatever the \
         contract (behaviour profile): {active} of {} row{} did something the sensors saw\
         </summary>\n<ul>\n",
        esc(&s.id),
        profiled.len(),
        if profiled.len() == 1 { "" } else { "s" }
    ));
    for (tool, lines) in profiled.iter().filter(|(_, l)| !l.is_empty()) {
        h.push_str(&format!(
            "<li data-tool=\"{}\"><b>{}</b>:",
            esc(tool),
            esc(tool)
        ));
        for (i, l) in lines.iter().enumerate() {
            let targets: Vec<String> = l
                .targets
                .iter()
                .map(|t| format!("<code>{}</code>", esc(t)))
                .collect();
            h.push_str(&format!(
                "{} <span class=\"k\">{}</span> {}{}",
                if i == 0 { "" } else { ";" },
                esc(&l.kind),
                targets.join(", "),
                match l.omitted() {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                }
            ));
        }
        h.push_str("</li>\n");
    }
    if active < profiled.len() {
        h.push_str(&format!(
            "<li>{} did nothing the sensors saw</li>\n",
            profiled.len() - active
        ));
    }
    h.push_str("</ul>\n</details>\n");
}

fn evidence_block(h: &mut String, id: &str, s: &ServerMap, t: &ToolMap, c: &MapCell) {
    h.push_str(&format!(
        "<details class=\"evidence\" id=\"{id}\" data-server=\"{}\" data-tool=\"{}\" \
         data-clause=\"{}\" data-severity=\"{}\" data-touched=\"{}\">\n<summary><span class=\"sev sev-{}\">{}</span> \
         <span class=\"k\">{}</span> <b>{}</b> × <b>{}</b> on {} — {}</summary>\n",
        esc(&s.id),
        esc(&t.name),
        esc(&c.clause),
        c.severity.name,
        c.touched.map_or("", |t| t.name()),
        c.severity.name,
        c.severity.name,
        c.touched.map_or(String::new(), |t| format!("touched {}", t.name())),
        esc(&t.name),
        esc(&c.clause),
        esc(&s.id),
        esc(&c.reason)
    ));
    for r in c.records.iter().filter(|r| r.verdict == "confirmed") {
        h.push_str(&format!(
            "<dl class=\"record\"><dt>receipt</dt><dd>probe <code>{}</code>, seq {}, record \
             blake3 <code>{}</code></dd><dt>contract</dt><dd><code>{}</code></dd>",
            esc(if r.probe.is_empty() { "." } else { &r.probe }),
            r.seq,
            esc(&r.hash),
            esc(&r.contract)
        ));
        let e = &r.evidence.to_value();
        if let Some(basis) = e.get("basis").and_then(Value::as_str) {
            h.push_str(&format!("<dt>promise</dt><dd>{}</dd>", esc(basis)));
        }
        effects(h, "effects", e.get("effects"));
        if let Some(calls) = e.get("calls").and_then(Value::as_array) {
            h.push_str("<dt>calls</dt><dd><ul>");
            for call in calls {
                h.push_str(&format!(
                    "<li>#{} <code>{}</code>({}) {}</li>",
                    call.get("index").map(compact).unwrap_or_default(),
                    esc(call.get("tool").and_then(Value::as_str).unwrap_or("")),
                    esc(&call.get("arguments").map(compact).unwrap_or_default()),
                    match call.get("ok").and_then(Value::as_bool) {
                        Some(true) => "ok",
                        Some(false) => "failed",
                        None => "",
                    }
                ));
            }
            h.push_str("</ul></dd>");
        }
        effects(h, "control subtracted", e.get("control_subtracted"));
        h.push_str(&format!(
            "<dt>raw evidence</dt><dd><details><summary>JSON</summary><pre>{}</pre></details></dd></dl>\n",
            esc(&serde_json::to_string_pretty(e).unwrap_or_default())
        ));
    }
    h.push_str("</details>\n");
}

/// Effects: what, where (path, argv, host:port), and the bytes that show it.
fn effects(h: &mut String, title: &str, list: Option<&Value>) {
    let Some(list) = list.and_then(Value::as_array) else {
        return;
    };
    h.push_str(&format!("<dt>{title}</dt><dd>"));
    if list.is_empty() {
        h.push_str("none");
    } else {
        h.push_str("<ul>");
        for effect in list {
            let text = |v: &Value, key: &str| {
                v.get(key).map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => compact(other),
                })
            };
            h.push_str(&format!(
                "<li><span class=\"class\">{}</span> <code class=\"target\">{}</code>",
                esc(&text(effect, "class").unwrap_or_default()),
                esc(&text(effect, "path").unwrap_or_default())
            ));
            if let Some(detail) = effect.get("detail") {
                for key in [
                    "argv",
                    "dst",
                    "request_line",
                    "sni",
                    "attribution",
                    "canaries",
                    "blake3",
                ] {
                    if let Some(value) = text(detail, key).filter(|v| v != "null" && v != "[]") {
                        h.push_str(&format!(
                            " <span class=\"k\">{key}</span> <code>{}</code>",
                            esc(&value)
                        ));
                    }
                }
                for key in ["excerpt", "first_bytes"] {
                    if let Some(value) = text(detail, key).filter(|v| v != "null") {
                        h.push_str(&format!("<pre class=\"excerpt\">{}</pre>", esc(&value)));
                    }
                }
            }
            h.push_str("</li>");
        }
        h.push_str("</ul>");
    }
    h.push_str("</dd>");
}

/// HTML text and attribute escaping.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                out.push_str(&format!("&#x{:x};", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#1b1b1b;background:#fff;overflow-wrap:anywhere}
table{display:block;overflow-x:auto;max-width:100%;overflow-wrap:normal}#summary :is(td,th),#static-matrix :is(td,th){white-space:nowrap}section.server{overflow-x:auto}
details.section>summary{cursor:pointer}details.section>summary h2{display:inline-block;margin:0;border:0}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}h3{margin-bottom:.2em}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;padding:.4em;max-height:20em;overflow:auto}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}th{cursor:pointer;background:#f0f0f0;user-select:none}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
tfoot td{font-weight:bold}td.some{background:#ffebee}details.grid>summary{cursor:pointer;color:#555}
.legend .key{margin-right:1em;white-space:nowrap}.legend svg{vertical-align:middle}
svg text{font-size:13px;text-anchor:middle;pointer-events:none}
svg .label{text-anchor:end}svg .col{text-anchor:start;font-size:12px}svg .calls{fill:#666;font-size:11px}
.cell{cursor:pointer}.cell:focus rect,.cell:hover rect{stroke:#000;stroke-width:2}
.v-confirmed{fill:#c62828}.v-confirmed+text{fill:#fff;font-weight:bold}
.v-refuted{fill:#a5d6a7}.v-skipped{fill:#e0e0e0}.v-errored{fill:#ffb300}.v-not_graded{fill:#fff;stroke:#bbb}
.legend .v-confirmed+text{fill:#fff}
.meta{margin:0;color:#555}
details.evidence{border:1px solid #ddd;border-left:4px solid #c62828;margin:.5em 0;padding:.3em .6em}
details.evidence[open]{background:#fffafa}
dl.record{display:grid;grid-template-columns:9em 1fr;gap:.2em .8em}dt{font-weight:bold;color:#444}dd{margin:0}
.sev{font-size:11px;text-transform:uppercase;padding:0 .4em;border-radius:3px;border:1px solid #999}
.sev-critical{background:#4a0000;color:#fff}.sev-high{background:#c62828;color:#fff}.sev-medium{background:#ffb300}.sev-low{background:#eee}
.k{color:#666;font-size:12px}.hidden{display:none}
footer{margin-top:2em;color:#555;font-size:12px}
@media (max-width:600px){body{padding:0 .5em;margin:.8em auto}dl.record{grid-template-columns:1fr}td,th{padding:.2em .35em}.legend .key{white-space:normal}}
</style>
"#;

const SCRIPT: &str = r#"<script>
(function () {
  "use strict";
  // Sort a table by a column: click or Enter on its header.
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    function sort() {
      var col = th.cellIndex;
      var body = th.closest("table").tBodies[0];
      var down = th.getAttribute("aria-sort") !== "descending";
      th.closest("tr").querySelectorAll("th").forEach(function (o) { o.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var number = th.dataset.type === "number";
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].textContent, y = b.cells[col].textContent;
        var c = number ? Number(x) - Number(y) : x.localeCompare(y);
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
  });
  // A confirmed cell opens its evidence.
  function open(cell) {
    var id = cell.getAttribute("data-ev");
    if (!id) return;
    var details = document.getElementById(id);
    details.open = true;
    details.scrollIntoView({block: "nearest"});
  }
  document.querySelectorAll("g.cell").forEach(function (cell) {
    cell.addEventListener("click", function () { open(cell); });
    cell.addEventListener("keydown", function (e) { if (e.key === "Enter") open(cell); });
  });
  // Filter by name and verdict.
  var filter = document.getElementById("filter");
  var shows = document.querySelectorAll("input.show");
  function apply() {
    var text = filter.value.toLowerCase();
    var verdicts = {};
    shows.forEach(function (s) { verdicts[s.value] = s.checked; });
    document.querySelectorAll("section.server").forEach(function (section) {
      var server = section.dataset.server.toLowerCase();
      var shown = 0;
      section.querySelectorAll("g.row").forEach(function (row) {
        var match = !text || server.indexOf(text) >= 0 || row.dataset.tool.toLowerCase().indexOf(text) >= 0;
        row.querySelectorAll("g.cell").forEach(function (cell) {
          cell.style.opacity = verdicts[cell.dataset.verdict] ? "1" : "0.12";
        });
        row.style.display = match ? "" : "none";
        // The rows left close up: no blank band where a hidden one was.
        var svg = row.ownerSVGElement, cell = Number(svg.dataset.cell);
        row.setAttribute("transform", "translate(0," + (shown - Number(row.dataset.row)) * cell + ")");
        if (match) shown += 1;
      });
      var svg = section.querySelector("svg.heatmap");
      if (svg) {
        var height = Number(svg.dataset.header) + Number(svg.dataset.cell) * shown + 4;
        var width = svg.getAttribute("width");
        svg.setAttribute("height", height);
        svg.setAttribute("viewBox", "0 0 " + width + " " + height);
      }
      // A server with no tools (not audited) stays while its name matches.
      var rows = section.querySelectorAll("g.row").length;
      section.classList.toggle("hidden", rows ? shown === 0 : !(!text || server.indexOf(text) >= 0));
    });
    document.querySelectorAll("details.evidence").forEach(function (d) {
      var match = !text || d.dataset.server.toLowerCase().indexOf(text) >= 0 || d.dataset.tool.toLowerCase().indexOf(text) >= 0;
      d.classList.toggle("hidden", !match || !verdicts.confirmed);
    });
  }
  filter.addEventListener("input", apply);
  shows.forEach(function (s) { s.addEventListener("change", apply); });
})();
</script>
"#;
