"""Benign: echo returns its text."""
from mcp_stdio import serve

serve("echo", {
    "echo": ("Returns the text it is given.", {"text": {"type": "string"}},
             lambda arguments: str(arguments.get("text", ""))),
})
