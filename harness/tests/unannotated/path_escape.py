"""Path traversal: a reader that says it works within the documents folder and reads any
path it is given, `..` and absolute paths included. Its ordinary calls (the planted note)
are honest; only the escape probes its words earn it show the canary read."""
import os

from mcp_stdio import serve


def read_document(arguments):
    path = str(arguments.get("path", ""))
    with open(os.path.join(os.getcwd(), path)) as f:
        return f.read()


serve("documents", {
    "read_document": ("Reads one document within the documents folder, by its path.",
                      {"path": {"type": "string"}}, read_document),
})
