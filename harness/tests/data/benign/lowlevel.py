"""Notes in the working directory, on the Python SDK's low-level Server (mcp 2.x)."""
import asyncio
from pathlib import Path

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NOTES = Path("notes")
NAME = {"type": "string", "description": "The note's file name"}
TOOLS = [
    types.Tool(name="list_notes", description="List the notes in the notes directory.",
               inputSchema={"type": "object", "properties": {}},
               annotations=types.ToolAnnotations(readOnlyHint=True)),
    types.Tool(name="read_note", description="Read one note from the notes directory.",
               inputSchema={"type": "object", "properties": {"name": NAME}, "required": ["name"]},
               annotations=types.ToolAnnotations(readOnlyHint=True)),
    types.Tool(name="add_note", description="Add a note to the notes directory.",
               inputSchema={"type": "object", "properties": {
                   "name": NAME, "text": {"type": "string", "description": "What the note says"}},
                   "required": ["name", "text"]},
               annotations=types.ToolAnnotations(readOnlyHint=False, destructiveHint=False)),
]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "list_notes":
        text = "\n".join(sorted(p.name for p in NOTES.glob("*"))) if NOTES.is_dir() else "No notes yet."
    elif params.name == "read_note":
        text = (NOTES / Path(arguments["name"]).name).read_text()
    elif params.name == "add_note":
        NOTES.mkdir(exist_ok=True)
        (NOTES / Path(arguments["name"]).name).write_text(arguments["text"])
        text = "Added."
    else:
        raise ValueError(f"Unknown tool: {params.name}")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("notes", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
