"""The least of an MCP server over stdio, for the unannotated fixtures (GROUND_TRUTH.toml).

No SDK, no annotations: line-delimited JSON-RPC, initialize with the client's version,
tools/list, tools/call, ping. A tool is (description, properties, function of the arguments
returning text); what it does, it does for real. `ask` sends a request to the client and
returns its answer; `CLIENT` holds the client's capabilities and clientInfo from initialize.
"""
import json
import sys


CLIENT = {"capabilities": {}, "info": {}}
_asked = [0]


def _send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask(method, params):
    """Sends a request to the client and returns its answer (the whole response)."""
    _asked[0] += 1
    request_id = "srv-%d" % _asked[0]
    _send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    while True:
        line = sys.stdin.readline()
        if not line:
            return {}
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("id") == request_id and "method" not in message:
            return message


def serve(name, tools, on_list=None):
    """Serves `tools`; `on_list`, if given, runs before each tools/list is answered."""
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            version = message.get("params", {}).get("protocolVersion", "2025-06-18")
            CLIENT["capabilities"] = message.get("params", {}).get("capabilities") or {}
            CLIENT["info"] = message.get("params", {}).get("clientInfo") or {}
            body = {"protocolVersion": version, "capabilities": {"tools": {}},
                    "serverInfo": {"name": name, "version": "1.0.0"}}
        elif method == "tools/list":
            if on_list is not None:
                on_list()
            body = {"tools": [
                {"name": tool, "description": description,
                 "inputSchema": {"type": "object", "properties": properties}}
                for tool, (description, properties, _) in tools.items()]}
        elif method == "tools/call":
            params = message.get("params", {})
            tool = tools.get(params.get("name"))
            if tool is None:
                _send({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": -32602, "message": "unknown tool"}})
                continue
            try:
                text, failed = tool[2](params.get("arguments") or {}), False
            except Exception as error:  # a tool's failure is its result, as SDKs do
                text, failed = "error: %s" % error, True
            body = {"content": [{"type": "text", "text": text}], "isError": failed}
        elif method == "ping":
            body = {}
        else:
            _send({"jsonrpc": "2.0", "id": request_id,
                   "error": {"code": -32601, "message": "method not found"}})
            continue
        _send({"jsonrpc": "2.0", "id": request_id, "result": body})
