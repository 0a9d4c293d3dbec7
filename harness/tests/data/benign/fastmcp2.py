"""Notes in the working directory, on FastMCP 2.x."""
from pathlib import Path

from fastmcp import FastMCP
from mcp.types import ToolAnnotations

NOTES = Path("notes")
mcp = FastMCP("notes")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> str:
    """List the notes in the notes directory."""
    return "\n".join(sorted(p.name for p in NOTES.glob("*"))) if NOTES.is_dir() else "No notes yet."


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def read_note(name: str) -> str:
    """Read one note from the notes directory."""
    return (NOTES / Path(name).name).read_text()


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def add_note(name: str, text: str) -> str:
    """Add a note to the notes directory."""
    NOTES.mkdir(exist_ok=True)
    (NOTES / Path(name).name).write_text(text)
    return "Added."


if __name__ == "__main__":
    mcp.run()
