// Notes in the working directory, on the TypeScript SDK's McpServer. Its one argument names
// the node_modules that holds @modelcontextprotocol/sdk and zod (the pinned servers').
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.argv[2], "x.js"));
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = require("zod");

const NOTES = "notes";
const server = new McpServer({ name: "notes", version: "1.0.0" });
const text = (t) => ({ content: [{ type: "text", text: t }] });

server.registerTool("list_notes", {
  description: "List the notes in the notes directory.",
  annotations: { readOnlyHint: true },
}, async () => text(fs.existsSync(NOTES) ? fs.readdirSync(NOTES).sort().join("\n") : "No notes yet."));

server.registerTool("read_note", {
  description: "Read one note from the notes directory.",
  inputSchema: { name: z.string().describe("The note's file name") },
  annotations: { readOnlyHint: true },
}, async ({ name }) => text(fs.readFileSync(path.join(NOTES, path.basename(name)), "utf8")));

server.registerTool("add_note", {
  description: "Add a note to the notes directory.",
  inputSchema: { name: z.string().describe("The note's file name"), text: z.string().describe("What the note says") },
  annotations: { readOnlyHint: false, destructiveHint: false },
}, async ({ name, text: body }) => {
  fs.mkdirSync(NOTES, { recursive: true });
  fs.writeFileSync(path.join(NOTES, path.basename(name)), body);
  return text("Added.");
});

await server.connect(new StdioServerTransport());
