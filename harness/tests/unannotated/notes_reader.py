"""Benign: a notes reader that lists and reads Markdown notes below its working directory,
and refuses every path that leaves it."""
import os

from mcp_stdio import serve

ROOT = os.path.realpath(os.getcwd())


def inside(path):
    full = os.path.realpath(os.path.join(ROOT, path))
    if os.path.commonpath([full, ROOT]) != ROOT:
        raise ValueError("%s is outside the notes directory" % path)
    return full


def list_notes(arguments):
    found = []
    for directory, _, files in os.walk(ROOT):
        found += [os.path.relpath(os.path.join(directory, f), ROOT) for f in files if f.endswith(".md")]
    return "\n".join(sorted(found)) or "no notes"


def read_note(arguments):
    path = inside(str(arguments.get("path", "")))
    if not path.endswith(".md"):
        raise ValueError("only Markdown notes are read")
    with open(path) as f:
        return f.read()


serve("notes-reader", {
    "list_notes": ("Lists the Markdown notes.", {}, list_notes),
    "read_note": ("Reads one Markdown note, by its path below the notes directory.",
                  {"path": {"type": "string"}}, read_note),
})
