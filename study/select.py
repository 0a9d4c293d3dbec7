#!/usr/bin/env python3
"""The study's selection rule, applied mechanically, and its catalogue.

    python3 study/select.py [--prefix /opt/vac-study] [--n-npm 120] [--n-pypi 120]

Reads the registry snapshots (npm.tsv, pypi.tsv), picks the candidates by the rule below,
merges study/overrides.toml, and -- where a server is installed under --prefix -- derives
its command, environment and argument hints from the installed files (package.json bin,
dist-info entry_points.txt, README / METADATA text). Nothing installed is ever run: this
script only reads files. Writes study/catalogue.toml.

    python3 study/select.py --list        # id, registry, package, version (install.sh)

The rule (README.md says it in words):
  1. Pool: a package is an MCP-server candidate when its summary says it is an MCP server
     (SUMMARY_SERVER), or its name does (NAME_SERVER), or its name has "mcp" as a word
     (NAME_TOKEN).
  2. Exclusions (EXCLUDE, first match wins, each with its reason), tested on the name and
     the summary: platform binaries, type packages, deprecated/renamed, SDKs/libraries,
     frameworks/generators, clients, proxies/gateways, inspectors/instrumentation/evals,
     installers/registries, CLIs that do not say they are servers.
  3. Ranking: npm by downloads a month (descending), then name. PyPI by rank among the
     15,000 most downloaded (ascending; ranked before unranked), then by the month of the
     snapshot's version (newest first: a sign of upkeep), then by sha256 of the normalised
     name (a reproducible pseudo-random order, neither alphabetical nor hand-picked).
  4. Candidates: walking each registry's ranking, the first N packages that no exclusion
     removes (N = 140 per registry by default), and every excluded package ranked above
     the N-th kept one (recorded with `excluded`). N was 120 (the brief's ~240); after
     install the catalogue had 181 installed servers with a command, so N became 140.
  5. Always in the catalogue: the six pinned servers of .ci/install-thirdparty.sh (at the
     pinned versions) and vac's fixtures (honest, dishonest, broad).
  6. After install, a kept candidate is excluded when it has no way to start (no npm bin;
     no console_scripts and no __main__), and its install outcome is recorded.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tomllib
from pathlib import Path

STUDY = Path(__file__).resolve().parent
PACKAGES = Path("/work/.library/env/packages")
NODE = "/usr/bin/node"

# ---------------------------------------------------------------------------------------
# 1. The pool
MCP = r"(?:mcp|model[ -]context[ -]protocol)"
SUMMARY_SERVER = re.compile(
    rf"(?i)\b{MCP}\b[^.;:]{{0,60}}?\bservers?\b|\bservers?\b[^.;:]{{0,30}}?\b(?:for|of|via|using|with|implementing)\b[^.;:]{{0,20}}?\b{MCP}\b"
)
NAME_SERVER = re.compile(r"(?i)mcp[-_.]?servers?|servers?[-_.]?mcp")
NAME_TOKEN = re.compile(r"(?i)(?:^|[^a-z0-9])mcp(?:[^a-z0-9]|$)")

# ---------------------------------------------------------------------------------------
# 2. Exclusions: (key, where, regex, reason). where: "name", "summary" or "both".
#    Applied to the lowercased text; the first that matches decides.
EXCLUDE = [
    # key, where, regex, exempt, reason. exempt "server_word": the rule does not apply when
    # the name or summary also says "server" (or "serveur"); "name_server": when the name
    # says mcp-server (NAME_SERVER); False: always applies.
    ("platform_binary", "name", r"-(?:linux|darwin|win32|windows|macos|freebsd)-(?:x64|amd64|arm64|ia32|x86_64|aarch64)\b", False,
     "a platform-specific binary package of another package, not a server of its own"),
    ("types", "name", r"^@types/|[-/]types$", False, "a type-declaration package"),
    ("deprecated", "summary", r"\bdeprecated\b|\brenamed\b|\bno longer maintained\b|\bhas moved to\b|\bunmaintained\b", False,
     "its summary says it is deprecated or renamed (superseded by another package)"),
    ("sdk", "both", r"\bsdk\b|\bimplementation for (?:typescript|python|javascript)\b|\bfor internal use only\b", "name_server",
     "an SDK or internal component for building MCP software, not a server"),
    ("sdk", "both", r"\blibrar(?:y|ies)\b|\bbindings?\b|\bhelpers?\b|\butilit(?:y|ies)\b|\bschemas?\b", "server_word",
     "a library, helper or schema package (it does not say it is a server)"),
    ("framework", "both", r"(?:^|\b(?:a|an|the|mcp|typescript|python|full stack)\s+)framework\b|\bframework (?:for|to)\b|\bfor (?:building|creating|writing) (?:mcp|model context|your own)|\bbuild(?:ing)? (?:your own |custom |production |remote )?mcp\b|\bcreate (?:your own )?mcp servers?\b|\btoolkit for\b|\badapters?\b|\bmiddleware\b|\bboilerplate\b|\btemplate\b|\bstarter\b|\bscaffold|\bgenerat(?:or|es mcp)\b|\bcodegen\b|\bdecorators?\b|\blangchain\b|\blanggraph\b|\bllama[-_ ]?index\b|\bcrewai\b|\bautogen\b", "name_server",
     "a framework, generator or adapter for building or embedding MCP servers, not a server"),
    ("plugin", "name", r"(?:^|[/-])plugin-|-plugin$|addon|add-on|^n8n-nodes-|mcp-provider|-extensions?$", False,
     "a plugin, add-on or provider loaded by another program (its name says so), not a standalone server"),
    ("proxy", "name", r"proxy|gateway|bridge|remote|router|tunnel|transport|relay|multiplex", False,
     "a proxy, gateway, bridge or transport between MCP endpoints (its name says so), not a server with tools of its own"),
    ("proxy", "summary", r"\bproxy\b(?! settings)|\bproxies\b|\bgateway\b|\bbridge (?:between|from|for) mcp|\brouter\b|\btunnel\b|\btransport (?:for|layer|to)\b|\baggregat(?:or|es) (?:multiple )?mcp", False,
     "a proxy, gateway, bridge or transport between MCP endpoints, not a server with tools of its own"),
    ("inspector", "both", r"\binspector\b|\binstrumentation\b|\bopentelemetry\b|\bevals?\b", "name_server",
     "an inspector, instrumentation or evaluation tool for MCP servers, not a server"),
    ("inspector", "both", r"\bevaluat(?:e|ing|ion)\b|\bmock\b|\bscann(?:er|ing)\b|\bbenchmark", "server_word",
     "a scanning, evaluation or mocking tool for MCP (it does not say it is a server)"),
    ("client", "both", r"\bfor connecting to\b", "name_server",
     "an MCP client: it connects to configured MCP servers"),
    ("client", "both", r"\bclients?\b", "server_word",
     "an MCP client (its name or summary says client and not server)"),
    ("installer", "both", r"\binstall(?:er|s)?\b[^.]{0,30}\bmcp\b|\bmcp\b[^.]{0,20}\b(?:manager|registry|installer|marketplace|config(?:uration)?s?)\b", "server_word",
     "an installer, registry, manager or configuration tool for MCP servers (it does not say it is a server)"),
    ("cli", "both", r"\bcli\b|\bcommand[- ]line (?:tool|interface)\b", "server_word",
     "a command-line tool that does not say it is a server"),
]
SERVER_WORD = re.compile(r"(?i)\bserv(?:er|eur)s?\b|mcp[-_.]?server")
EXCLUDE_RE = [(k, w, re.compile(r, re.I), u, reason) for k, w, r, u, reason in EXCLUDE]

# 5. The six pinned servers of .ci/install-thirdparty.sh, at its versions.
PINNED = {
    ("npm", "@modelcontextprotocol/server-filesystem"): "2026.8.31",
    ("npm", "@modelcontextprotocol/server-everything"): "2026.8.31",
    ("npm", "@modelcontextprotocol/server-memory"): "2026.8.31",
    ("pypi", "mcp-server-time"): "2026.10.19",
    ("pypi", "mcp-server-git"): "2026.10.19",
    ("pypi", "mcp-server-fetch"): "2026.10.24",
}
FIXTURES = ["honest", "dishonest", "broad"]

TESTED = re.compile(r"^\[tested here:[^\]]*\]\s*")


def norm_pypi(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def make_id(registry: str, name: str) -> str:
    if registry == "pypi":
        base = norm_pypi(name)
    else:
        base = name.lower().lstrip("@").replace("/", ".")
    base = re.sub(r"[^a-z0-9._-]+", "-", base).strip(".")
    return f"{registry}.{base}"[:128]


def in_pool(name: str, summary: str) -> str | None:
    if SUMMARY_SERVER.search(summary):
        return "summary says MCP server"
    if NAME_SERVER.search(name):
        return "name says MCP server"
    if NAME_TOKEN.search(name):
        return "name has the word mcp"
    return None


def exclusion(name: str, summary: str) -> tuple[str, str] | None:
    n, s = name.lower(), summary.lower()
    says_server = bool(SERVER_WORD.search(n) or SERVER_WORD.search(s))
    name_server = bool(NAME_SERVER.search(n))
    for key, where, rx, exempt, reason in EXCLUDE_RE:
        if (exempt == "server_word" and says_server) or (exempt == "name_server" and name_server):
            continue
        texts = {"name": [n], "summary": [s], "both": [n, s]}[where]
        if any(rx.search(t) for t in texts):
            return key, reason
    return None


def read_npm(path: Path):
    out = []
    with path.open(encoding="utf-8", errors="replace") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            name, version, downloads = parts[0], parts[1], parts[2]
            summary = TESTED.sub("", parts[3] if len(parts) > 3 else "")
            try:
                dl = int(downloads)
            except ValueError:
                dl = 0
            out.append({"registry": "npm", "package": name, "version": version,
                        "downloads_a_month": dl, "summary": summary})
    return out


def read_pypi(path: Path):
    out = []
    with path.open(encoding="utf-8", errors="replace") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            name, version, month, rank = parts[0], parts[1], parts[2], parts[3]
            summary = parts[4] if len(parts) > 4 else ""
            out.append({"registry": "pypi", "package": name, "version": version, "month": month,
                        "rank_among_15000": int(rank) if rank.strip().isdigit() else None,
                        "summary": summary})
    return out


def npm_key(p):
    return (-p["downloads_a_month"], p["package"])


def pypi_key(p):
    r = p["rank_among_15000"]
    month = p["month"] or "0000-00"
    # newest month first: invert the digits so an ascending sort puts it first
    inv = "".join(str(9 - int(c)) if c.isdigit() else c for c in month)
    return (0 if r is not None else 1, r or 0, inv,
            hashlib.sha256(norm_pypi(p["package"]).encode()).hexdigest())


def pick(pkgs, key, n):
    pool = []
    for p in pkgs:
        why = in_pool(p["package"], p["summary"])
        if why:
            p["pool_reason"] = why
            pool.append(p)
    pool.sort(key=key)
    kept = 0
    chosen = []
    for pos, p in enumerate(pool, 1):
        if kept >= n:
            break
        p["position"] = pos
        ex = exclusion(p["package"], p["summary"])
        if ex:
            p["excluded_key"], p["excluded"] = ex[0], "selection: " + ex[1]
        else:
            kept += 1
        chosen.append(p)
    return pool, chosen


# ---------------------------------------------------------------------------------------
# Installed metadata (read only, never run)

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS\b|_PASS|AUTH|CREDENTIAL|PRIVATE|COOKIE|SESSION", re.I)
PATHISH = re.compile(r"^(?:/path/to|/Users/|/home/|~/|C:\\|/absolute/path|/your/|path/to|<[^>]*(?:path|dir|folder|directory)[^>]*>)", re.I)
PLACEHOLDER = re.compile(r"<[^>]+>|\byour[_-]|\bYOUR[_-]|\bxxx|\.\.\.|\*\*\*|\bREPLACE|\bchangeme\b|^\$|\$\{|\{\{", re.I)
SECRET_FLAG = re.compile(r"^--?[a-z0-9-]*(?:key|token|secret|password|pass|auth|credential)[a-z0-9-]*$", re.I)
DUMMY_PREFIX = [
    (re.compile(r"GITHUB|^GH_"), "ghp_dummy" + "0" * 31),
    (re.compile(r"GITLAB"), "glpat-dummy" + "0" * 15),
    (re.compile(r"OPENAI"), "sk-dummy" + "0" * 40),
    (re.compile(r"ANTHROPIC"), "sk-ant-dummy" + "0" * 36),
    (re.compile(r"SLACK.*(BOT|TOKEN)"), "xoxb-dummy-000000000000-000000000000"),
    (re.compile(r"AWS_ACCESS_KEY_ID"), "AKIADUMMY0000000000"),
    (re.compile(r"AWS_SECRET_ACCESS_KEY"), "dummy" + "0" * 35),
]
ENV_BLOCK = re.compile(r'"env"\s*:\s*\{([^{}]*)\}', re.S)
ENV_PAIR = re.compile(r'"([A-Z_][A-Z0-9_]*)"\s*:\s*"([^"\n]*)"')
ENV_CRED = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:API_KEY|APIKEY|TOKEN|ACCESS_TOKEN|API_TOKEN|SECRET|SECRET_KEY|PASSWORD))\b")
ARGS_BLOCK = re.compile(r'"args"\s*:\s*\[([^\[\]]*)\]', re.S)
JSON_STR = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
MAX_ENV = 16
# Not taken from a README's env block: tool filters (the study wants every tool) and the
# host's network plumbing (proxies, CA bundles: the sandbox has its own).
TOOL_FILTER = re.compile(r"_TOOLS?$|^TOOLS?$|TOOLSETS?$|_PROXY$|^NO_PROXY$|CA_BUNDLE$|CERT_FILE$|EXTRA_CA_CERTS$|^SSL_CERT_DIR$")
TRANSPORT_FLAG = re.compile(r"^--transport(?:-type)?$|^--mode$", re.I)
NOT_STDIO = re.compile(r"^(?:http|https|sse|streamable[-_]?http|streamablehttp|ws|websocket)$", re.I)


def dummy_value(name: str) -> str:
    for rx, val in DUMMY_PREFIX:
        if rx.search(name):
            return val
    return "dummy-" + name.lower().replace("_", "-")


def lab_path(p: str) -> str:
    """A README's placeholder path becomes the lab's work directory, keeping a file's name."""
    base = re.split(r"[/\\]", p.rstrip("/\\"))[-1]
    if re.fullmatch(r"[A-Za-z0-9_.-]+\.[A-Za-z0-9]{1,5}", base):
        return "{work}/" + base
    return "{work}"


def env_value(name: str, example: str) -> str:
    if SECRET_NAME.search(name):
        return dummy_value(name)
    if PATHISH.search(example):
        return lab_path(example)
    if not example or PLACEHOLDER.search(example):
        return dummy_value(name)
    return example


def arg_value(a: str, prev: str = "") -> str:
    if a.startswith("--") and "=" in a and SECRET_FLAG.match(a.split("=", 1)[0]):
        return a.split("=", 1)[0] + "=dummy"
    if SECRET_FLAG.match(prev) and not a.startswith("-"):
        return "dummy"
    if PATHISH.search(a):
        return lab_path(a)
    if PLACEHOLDER.search(a):
        # keep a flag's name: --api-key=<KEY> -> --api-key=dummy
        if a.startswith("--") and "=" in a:
            return a.split("=", 1)[0] + "=dummy"
        return "dummy"
    return a


def env_from_readme(text: str, tokens: list[str], words: set[str]):
    """The keys of the README's first `"env": {…}` block that configures this package (its
    name or an executable's within 300 characters either side of the block); else the
    credential-like names (…_API_KEY, …_TOKEN, …) whose first word is a word of the
    package's name or summary."""
    env: dict[str, str] = {}
    low = text.lower()
    toks = [t.lower() for t in tokens if t and len(t) > 2]
    for m in ENV_BLOCK.finditer(text):
        window = low[max(0, m.start() - 300): m.end() + 300]
        if not any(t in window for t in toks):
            continue
        for name, example in ENV_PAIR.findall(m.group(1)):
            if TOOL_FILTER.search(name):
                continue  # a README's example narrowing of the tools: the study wants them all
            if name not in env and len(env) < MAX_ENV:
                env[name] = env_value(name, example)
        if env:
            break  # the first block: a README's later blocks are alternatives and options
    source = "README's first env block for this package" if env else ""
    if not env:
        for name in ENV_CRED.findall(text):
            first = name.split("_")[0].lower()
            if first in ("your", "my", "the") or first not in words:
                continue
            if name not in env and len(env) < MAX_ENV:
                env[name] = dummy_value(name)
        source = "README credential names of this package's service" if env else ""
    return env, source


def args_from_readme(text: str, tokens: list[str]):
    """The arguments after the package's own token in the first README "args" list that
    names it (as `npx -y PKG ARGS…` or `uvx PKG ARGS…` configurations give them)."""
    toks = [t.lower() for t in tokens if t]
    for block in ARGS_BLOCK.findall(text):
        items = [s.encode().decode("unicode_escape", "replace") if "\\" in s else s for s in JSON_STR.findall(block)]
        hits = [i for i, it in enumerate(items)
                if re.sub(r"@(?:latest|next|\d[^/]*)$", "", it.lower()) in toks]
        if hits:
            # the last mention: `uv run --with PKG … PKG ARGS`, `npx --package PKG -- BIN ARGS`
            i = hits[-1]
            if True:
                rest = items[i + 1:]
                if rest and rest[0] == "--":
                    rest = rest[1:]
                if rest and rest[0].lower() in toks:
                    rest = rest[1:]
                out = [arg_value(a, rest[j - 1] if j else "") for j, a in enumerate(rest)]
                # the study speaks stdio: a README's HTTP transport choice becomes stdio
                for j, a in enumerate(out):
                    if j and TRANSPORT_FLAG.match(out[j - 1]) and NOT_STDIO.match(a):
                        out[j] = "stdio"
                    elif "=" in a and TRANSPORT_FLAG.match(a.split("=", 1)[0]) and NOT_STDIO.match(a.split("=", 1)[1]):
                        out[j] = a.split("=", 1)[0] + "=stdio"
                return out
    return None


def readme_text(d: Path) -> str:
    for f in sorted(d.iterdir()) if d.is_dir() else []:
        if f.is_file() and f.name.lower().startswith("readme"):
            try:
                return f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return ""
    return ""


def choose(names: list[str], package: str) -> str:
    """Several executables: those that say mcp first; among them, the one named as the
    package (unscoped, normalised); then one that says server; then the shortest; then
    alphabetical."""
    want = norm_pypi(package.split("/")[-1])

    def score(n):
        nn = norm_pypi(n)
        return ("mcp" not in nn, nn != want, "server" not in nn, len(nn), nn)

    return sorted(names, key=score)[0]


def npm_meta(prefix: Path, sid: str, package: str):
    pdir = prefix / "npm" / sid / "node_modules" / package
    pj = pdir / "package.json"
    if not pj.is_file():
        return None
    meta = json.loads(pj.read_text(encoding="utf-8", errors="replace"))
    bins = meta.get("bin") or {}
    if isinstance(bins, str):
        bins = {package.split("/")[-1]: bins}
    info = {"readme": readme_text(pdir) or meta.get("readme", ""), "engines": meta.get("engines", {}),
            "installed_version": meta.get("version")}
    if not bins and meta.get("directories", {}).get("bin"):
        info["note"] = "bin given as a directory"
    if not bins:
        info["command"] = None
        info["why_no_command"] = "no `bin` in package.json (a library, or started another way)"
        return info
    name = choose(list(bins), package)
    script = os.path.normpath(str(pdir / bins[name]))
    info["command"] = [NODE, script.replace(str(prefix), "{prefix}", 1)]
    info["command_source"] = f"package.json bin `{name}`" + (f" (of {len(bins)}: {', '.join(sorted(bins))})" if len(bins) > 1 else "")
    info["bin_names"] = sorted(bins)
    return info


def pypi_dist(prefix: Path, sid: str, package: str):
    libs = list((prefix / "pypi" / sid / "lib").glob("python3*/site-packages"))
    if not libs:
        return None, None
    site = libs[0]
    want = norm_pypi(package)
    for d in site.glob("*.dist-info"):
        n = d.name[: -len(".dist-info")].rsplit("-", 1)[0]
        if norm_pypi(n) == want:
            return site, d
    return site, None


def parse_entry_points(text: str):
    scripts, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif section == "console_scripts" and "=" in line:
            k, v = line.split("=", 1)
            scripts[k.strip()] = v.strip()
    return scripts


def pypi_meta(prefix: Path, sid: str, package: str):
    site, dist = pypi_dist(prefix, sid, package)
    if dist is None:
        return None
    md = (dist / "METADATA").read_text(encoding="utf-8", errors="replace") if (dist / "METADATA").is_file() else ""
    head, _, body = md.partition("\n\n")
    version = next((l.split(":", 1)[1].strip() for l in head.splitlines() if l.startswith("Version:")), None)
    rp = next((l.split(":", 1)[1].strip() for l in head.splitlines() if l.startswith("Requires-Python:")), "")
    info = {"readme": body, "installed_version": version, "requires_python": rp}
    ep = dist / "entry_points.txt"
    scripts = parse_entry_points(ep.read_text(encoding="utf-8", errors="replace")) if ep.is_file() else {}
    if scripts:
        name = choose(list(scripts), package)
        info["command"] = [f"{{prefix}}/pypi/{sid}/bin/{name}"]
        info["command_source"] = f"console_scripts `{name} = {scripts[name]}`" + (f" (of {len(scripts)}: {', '.join(sorted(scripts))})" if len(scripts) > 1 else "")
        info["bin_names"] = sorted(scripts)
        return info
    # no console script: a top-level module of this distribution with a __main__
    mods = []
    rec = dist / "RECORD"
    if rec.is_file():
        for line in rec.read_text(encoding="utf-8", errors="replace").splitlines():
            path = line.split(",", 1)[0]
            parts = path.split("/")
            if len(parts) == 2 and parts[1] == "__main__.py" and not parts[0].endswith(".dist-info"):
                mods.append(parts[0])
    if mods:
        mod = choose(mods, package)
        info["command"] = [f"{{prefix}}/pypi/{sid}/bin/python", "-m", mod]
        info["command_source"] = f"no console_scripts; `{mod}/__main__.py`"
        info["bin_names"] = []
        return info
    info["command"] = None
    info["why_no_command"] = "no console_scripts entry point and no top-level module with __main__"
    return info


# ---------------------------------------------------------------------------------------
# TOML output (tomllib reads; the writer is ours)

def q(s) -> str:
    if isinstance(s, bool):
        return "true" if s else "false"
    if isinstance(s, int):
        return str(s)
    if isinstance(s, list):
        return "[" + ", ".join(q(x) for x in s) + "]"
    if isinstance(s, dict):
        return "{ " + ", ".join(f"{qk(k)} = {q(v)}" for k, v in s.items()) + " }" if s else "{}"
    return json.dumps(str(s), ensure_ascii=False)


def qk(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


KEY_ORDER = ["id", "registry", "package", "version", "pinned", "fixture", "position", "downloads_a_month",
             "rank_among_15000", "month", "pool_reason", "summary", "excluded", "install", "install_detail",
             "installed_version", "command", "command_source", "args", "args_source", "env", "env_source",
             "plant", "arg_hints", "http", "needs", "node_engines", "requires_python", "notes", "override"]


def write_catalogue(path: Path, meta: dict, servers: list[dict]):
    lines = ["# The study's catalogue. GENERATED by study/select.py from the registry snapshots,",
             "# study/overrides.toml and the installed metadata: do not edit, edit overrides.toml.",
             "# {prefix} in a command is install.sh's prefix (study/campaign.py --prefix fills it in).",
             ""]
    lines.append("[meta]")
    for k, v in meta.items():
        lines.append(f"{qk(k)} = {q(v)}")
    for s in servers:
        lines.append("")
        lines.append("[[server]]")
        for k in KEY_ORDER + sorted(set(s) - set(KEY_ORDER)):
            if k in s and s[k] is not None and s[k] != "":
                lines.append(f"{qk(k)} = {q(s[k])}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


BROWSER_DEPS = {"playwright", "playwright-core", "puppeteer", "puppeteer-core", "selenium", "pyppeteer", "chrome-launcher"}
SERVICE_HINT = re.compile(r"localhost|127\.0\.0\.1|(?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis|amqp|clickhouse)://|_HOST=|_PORT=\d|CONNECTION_STRING=|DATABASE_URL=", re.I)


def lock_names(registry: str, sid: str) -> set[str]:
    """The package names in a server's lock (study/locks)."""
    if registry == "npm":
        f = STUDY / "locks" / "npm" / f"{sid}.package-lock.json"
        if f.is_file():
            return {p.split("node_modules/")[-1] for p in json.loads(f.read_text()).get("packages", {}) if p}
    elif registry == "pypi":
        f = STUDY / "locks" / "pypi" / f"{sid}.txt"
        if f.is_file():
            return {norm_pypi(m.group(1)) for m in re.finditer(r"(?m)^([A-Za-z0-9_.-]+)==", f.read_text())}
    return set()


def read_status(path: Path):
    st = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) >= 6:
                st[parts[0]] = {"outcome": parts[4], "reason": parts[5], "detail": parts[6] if len(parts) > 6 else ""}
    return st


def read_states(d: Path):
    """install.sh's per-server state files (status.tsv is assembled from them at the end)."""
    st = {}
    if d.is_dir():
        for f in sorted(d.glob("*.tsv")):
            parts = f.read_text(encoding="utf-8").rstrip("\n").split("\t")
            if len(parts) >= 6:
                st[parts[0]] = {"outcome": parts[4], "reason": parts[5], "detail": parts[6] if len(parts) > 6 else ""}
    return st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", default=os.environ.get("VAC_STUDY_PREFIX", "/opt/vac-study"))
    ap.add_argument("--n-npm", type=int, default=140)
    ap.add_argument("--n-pypi", type=int, default=140)
    ap.add_argument("--packages", default=str(PACKAGES))
    ap.add_argument("--out", default=str(STUDY / "catalogue.toml"))
    ap.add_argument("--list", action="store_true", help="print id, registry, package, version of every server to install")
    a = ap.parse_args()

    if a.list:
        cat = tomllib.loads(Path(a.out).read_text(encoding="utf-8"))
        for s in cat["server"]:
            if s["registry"] in ("npm", "pypi") and not s.get("excluded", "").startswith("selection:"):
                print(f"{s['id']}\t{s['registry']}\t{s['package']}\t{s['version']}")
        return

    pk = Path(a.packages)
    npm_all = read_npm(pk / "npm.tsv")
    pypi_all = read_pypi(pk / "pypi.tsv")
    npm_pool, npm_chosen = pick(npm_all, npm_key, a.n_npm)
    pypi_pool, pypi_chosen = pick(pypi_all, pypi_key, a.n_pypi)

    overrides = tomllib.loads((STUDY / "overrides.toml").read_text(encoding="utf-8")) if (STUDY / "overrides.toml").is_file() else {}
    ov = overrides.get("server", {})

    servers: list[dict] = []
    seen = set()
    for fx in FIXTURES:
        servers.append({"id": f"fixture.{fx}", "registry": "fixture", "package": "vac", "version": "workspace",
                        "fixture": True, "command": ["vac", "fixture", "--mode", fx],
                        "command_source": "vac's built-in fixture", "install": "builtin"})
    index = {(p["registry"], p["package"]): p for p in npm_all + pypi_all}
    for (reg, pkg), ver in PINNED.items():
        p = dict(index.get((reg, pkg), {"registry": reg, "package": pkg, "summary": ""}))
        p["version"] = ver
        p["pinned"] = True
        p.pop("excluded", None)
        p.pop("excluded_key", None)
        seen.add((reg, pkg))
        servers.append(p)
    for p in npm_chosen + pypi_chosen:
        if (p["registry"], p["package"]) in seen:
            continue
        seen.add((p["registry"], p["package"]))
        servers.append(dict(p))

    prefix = Path(a.prefix)
    status = read_states(prefix / "state") or read_status(prefix / "status.tsv") or read_status(STUDY / "install-status.tsv")
    for s in servers:
        if s.get("fixture"):
            continue
        s["id"] = make_id(s["registry"], s["package"])
        s.pop("excluded_key", None)
        st = status.get(s["id"])
        if "excluded" in s:
            continue
        if st:
            s["install"] = st["outcome"] if st["outcome"] != "failed" else f"failed: {st['reason']}"
            if st["detail"]:
                s["install_detail"] = st["detail"][:300]
        else:
            s["install"] = "pending"
        info = None
        if st and st["outcome"] in ("installed", "needs_install_scripts"):
            info = (npm_meta if s["registry"] == "npm" else pypi_meta)(prefix, s["id"], s["package"])
        if info:
            s["installed_version"] = info.get("installed_version")
            if info.get("command"):
                s["command"] = info["command"]
                s["command_source"] = info["command_source"]
            else:
                s["excluded"] = "no command: " + info["why_no_command"]
            text = info.get("readme", "")
            tokens = [s["package"], s["package"].split("/")[-1]] + info.get("bin_names", [])
            words = set(re.findall(r"[a-z0-9]+", (s["package"] + " " + s.get("summary", "")).lower()))
            env, esrc = env_from_readme(text, tokens, words)
            if env:
                s["env"], s["env_source"] = env, esrc
            args = args_from_readme(text, tokens)
            if args:
                s["args"], s["args_source"] = args, "README args after the package name"
            if s["registry"] == "npm" and isinstance(info.get("engines"), dict) and info["engines"].get("node"):
                s["node_engines"] = str(info["engines"]["node"])
            if info.get("requires_python"):
                s["requires_python"] = info["requires_python"]
    # what a server evidently needs beyond itself (read from its lock and its settings)
    for s in servers:
        if s.get("fixture") or s.get("excluded") or s.get("install") not in ("installed", "needs_install_scripts"):
            continue
        needs = []
        deps = lock_names(s["registry"], s["id"])
        if deps & BROWSER_DEPS:
            needs.append("browser")
        hints = " ".join(s.get("args", []) + [f"{k}={v}" for k, v in (s.get("env") or {}).items()])
        if SERVICE_HINT.search(hints):
            needs.append("service")
        if any(SECRET_NAME.search(k) for k in (s.get("env") or {})) or any(SECRET_FLAG.match(a.split("=")[0]) for a in s.get("args", [])):
            needs.append("credentials")
        if needs:
            s["needs"] = needs
    # overrides last: each replaces keys, with its reason recorded
    for s in servers:
        o = ov.get(s["id"])
        if not o:
            continue
        reason = o.get("reason")
        if not reason:
            sys.exit(f"overrides.toml: [server.\"{s['id']}\"] has no reason")
        for k, v in o.items():
            if k == "reason":
                continue
            if k == "command" and isinstance(v, list):
                s[k] = v
            else:
                s[k] = v
        s["override"] = reason
    unknown = set(ov) - {s["id"] for s in servers}
    if unknown:
        print(f"select.py: overrides for ids not in the catalogue: {sorted(unknown)}", file=sys.stderr)

    def count(reg, pred):
        return sum(1 for s in servers if s["registry"] == reg and pred(s))

    meta = {
        "rule": "study/select.py docstring and study/README.md",
        "snapshots": [str(pk / "npm.tsv"), str(pk / "pypi.tsv")],
        "n_npm": a.n_npm, "n_pypi": a.n_pypi,
        "pool_npm": len(npm_pool), "pool_pypi": len(pypi_pool),
        "candidates_npm": len(npm_chosen), "candidates_pypi": len(pypi_chosen),
        "excluded_by_selection": sum(1 for s in servers if s.get("excluded", "").startswith("selection:")),
        "servers": len(servers),
    }
    write_catalogue(Path(a.out), meta, servers)
    print(f"select.py: pool npm {len(npm_pool)} pypi {len(pypi_pool)}; candidates npm {len(npm_chosen)} pypi {len(pypi_chosen)}; "
          f"catalogue {len(servers)} entries, {sum(1 for s in servers if not s.get('excluded'))} not excluded -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
