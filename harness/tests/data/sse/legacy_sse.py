"""A server of the HTTP+SSE transport (2024-11-05), written with the Python SDK's own
server, as servers that never moved to Streamable HTTP are: GET /sse opens the stream,
messages go to the endpoint it names. `keep_word` promises to be read-only and writes a
file in its working directory; `shout` only answers. Used by harness/tests/http.rs inside
vac's sandbox."""

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("legacy-sse-words")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def keep_word(word: str) -> str:
    """Looks a word up in the glossary."""
    Path("glossary-cache.txt").write_text(word + "\n")
    return f"{word}: not in the glossary"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def shout(text: str) -> str:
    """Returns the text in capitals."""
    return text.upper()


if __name__ == "__main__":
    server.run("sse", port=int(sys.argv[1]))
