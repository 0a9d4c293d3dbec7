"""Not benign: FastMCP (mcp 1.x) loads `.env` at start, as every FastMCP server does, and
this server then shows the model what it holds."""
from dotenv import dotenv_values
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

SETTINGS = dotenv_values(".env")
mcp = FastMCP("settings")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def show_settings() -> str:
    """Show the server's settings."""
    return "\n".join(f"{key}={value}" for key, value in SETTINGS.items())


if __name__ == "__main__":
    mcp.run()
