"""What the study's scripts share: reading a receipt log (plain or zstd-packed) record by
record, and the classes of why a target could not start. Stdlib only; runs nothing but the
`zstd` program.

A script in study/ imports this after dropping study/ from the front of sys.path (study/
select.py would shadow the standard `select` that subprocess imports) and appending it at
the end, so the standard library wins.
"""
import json
import re
import subprocess
from pathlib import Path


def records(log: Path):
    """Each record of `log`, in order; stops at a torn tail. Splits on "\\n" only: a record
    may hold U+2028 or U+0085 inside a string, where `splitlines` would cut it."""
    if log.suffix == ".zst":
        text = subprocess.run(["zstd", "-dcq", str(log)], check=True, capture_output=True).stdout.decode()
    else:
        text = log.read_text()
    for line in text.split("\n"):
        try:
            yield json.loads(line)
        except ValueError:
            return  # a torn tail (or the empty string after the last newline)


def log_of(probe_dir: Path):
    """A receipt directory's log, plain or packed; None without one."""
    for name in ("receipts.jsonl", "receipts.jsonl.zst"):
        if (probe_dir / name).is_file():
            return probe_dir / name
    return None


# Why a target was not audited, from what its server last wrote to stderr: the first
# matching class names it. Hand-written patterns, checked by reading the lines they
# classify; the first two are what vac itself tells apart.
WHY = [
    (r"not json-rpc", "printed something other than JSON-RPC (a CLI, an HTTP server)"),
    (r"requires node|node\.js \d+ or later|node\.js v\d+|does not provide an export", "a runtime version (Node 22)"),
    (r"modulenotfounderror|importerror|cannot find module|err_module_not_found|no module named", "a module the installed tree lacks"),
    (r"usage:|required option|required command|unknown command|--help", "a required argument or subcommand"),
    (r"api_key|api key|token|credential|unauthori[sz]ed|\b401\b|oauth|auth", "credentials or an account"),
    (r"econnrefused|getaddrinfo|enotfound|connection refused|connecterror|not reachable|sslerror|certificate|fetch failed|timed out|download", "a service or the network"),
    (r"config|not set|missing|environment variable|must be set|no such file|enoent|does not exist", "a config file or variable"),
    (r"no answer within", "no answer to initialize"),
]


def why_not_started(text: str) -> str:
    """The class of `text` (a server's last stderr lines, or a map row's detail)."""
    lowered = text.lower()
    for pattern, name in WHY:
        if re.search(pattern, lowered):
            return name
    return "another start-up failure"
