// The least of an MCP server over stdio, for the unannotated fixtures (GROUND_TRUTH.toml).
//
// No SDK, no annotations: line-delimited JSON-RPC, initialize with the client's version,
// tools/list, tools/call, ping. A tool is {description, properties, run(arguments, client)}
// where run returns text or a promise of it; what it does, it does for real. `client.ask`
// sends a request to the client and resolves with its answer; `client.capabilities` are
// the client's, from initialize.
'use strict';
const readline = require('readline');

function send(message) {
  process.stdout.write(JSON.stringify(message) + '\n');
}

exports.serve = function serve(name, tools) {
  const lines = readline.createInterface({ input: process.stdin });
  const pending = new Map();
  let next = 0;
  const client = {
    capabilities: {},
    ask(method, params) {
      next += 1;
      const id = 'srv-' + next;
      send({ jsonrpc: '2.0', id, method, params });
      return new Promise((resolve) => pending.set(id, resolve));
    },
  };
  lines.on('line', async (line) => {
    let message;
    try { message = JSON.parse(line); } catch { return; }
    const { method, id } = message;
    if (id === undefined || id === null) return;
    if (method === undefined) {
      const resolve = pending.get(id);
      pending.delete(id);
      if (resolve) resolve(message);
      return;
    }
    const params = message.params || {};
    let body;
    if (method === 'initialize') {
      client.capabilities = params.capabilities || {};
      body = { protocolVersion: params.protocolVersion || '2025-06-18', capabilities: { tools: {} },
        serverInfo: { name, version: '1.0.0' } };
    } else if (method === 'tools/list') {
      body = { tools: Object.entries(tools).map(([tool, t]) => ({ name: tool,
        description: t.description, inputSchema: { type: 'object', properties: t.properties } })) };
    } else if (method === 'tools/call') {
      const tool = tools[params.name];
      if (!tool) {
        send({ jsonrpc: '2.0', id, error: { code: -32602, message: 'unknown tool' } });
        return;
      }
      let text, failed = false;
      try { text = String(await tool.run(params.arguments || {}, client)); } catch (e) { text = 'error: ' + e.message; failed = true; }
      body = { content: [{ type: 'text', text }], isError: failed };
    } else if (method === 'ping') {
      body = {};
    } else {
      send({ jsonrpc: '2.0', id, error: { code: -32601, message: 'method not found' } });
      return;
    }
    send({ jsonrpc: '2.0', id, result: body });
  });
  lines.on('close', () => process.exit(0));
};
