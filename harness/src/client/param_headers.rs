//! The `Mcp-Param-*` headers of the stateless protocol (2026-07-28, SEP-2243): a tool may
//! mark properties of its input schema with `x-mcp-header: NAME`, and a `tools/call` over
//! HTTP then repeats each such argument in an `Mcp-Param-NAME` header, so that
//! intermediaries route without reading the body. A server may refuse a call without them.

use std::collections::HashMap;

use serde_json::Value;

/// Per tool, the arguments its schema asks to be repeated in headers: the property path
/// from the schema's root (through `properties` alone) and the header's name.
#[derive(Debug, Default)]
pub(crate) struct ParamHeaders(HashMap<String, Vec<(Vec<String>, String)>>);

/// Declarations read per tool, at most: a hostile schema cannot make every call carry
/// thousands of headers.
const MAX_PER_TOOL: usize = 32;

impl ParamHeaders {
    /// The declarations of every tool of a tools/list array. A declaration that is not a
    /// non-empty HTTP token is passed over: the call goes without that header, and a
    /// server that insists refuses it, which the frames record.
    pub(crate) fn from_tools(tools: &Value) -> ParamHeaders {
        let mut all = HashMap::new();
        for tool in tools.as_array().into_iter().flatten() {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let mut found = Vec::new();
            collect(tool.get("inputSchema"), &mut Vec::new(), &mut found);
            if !found.is_empty() {
                all.insert(name.to_owned(), found);
            }
        }
        ParamHeaders(all)
    }

    /// The `Mcp-Param-*` headers of a `tools/call` with these `params`: one per declared
    /// argument present as a string, number or boolean.
    pub(crate) fn for_call(&self, params: &Value) -> Vec<(String, String)> {
        let declared = params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.0.get(name));
        let Some(arguments) = params.get("arguments") else {
            return Vec::new();
        };
        declared
            .into_iter()
            .flatten()
            .filter_map(|(path, header)| {
                let value = path.iter().try_fold(arguments, |v, key| v.get(key))?;
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    _ => return None,
                };
                Some((format!("mcp-param-{header}"), encode(&text)))
            })
            .collect()
    }
}

fn collect(schema: Option<&Value>, path: &mut Vec<String>, found: &mut Vec<(Vec<String>, String)>) {
    let Some(Value::Object(properties)) = schema.and_then(|s| s.get("properties")) else {
        return;
    };
    for (name, property) in properties {
        if found.len() >= MAX_PER_TOOL || path.len() >= MAX_DEPTH {
            return;
        }
        path.push(name.clone());
        if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str)
            && !header.is_empty()
            && header.chars().all(is_tchar)
        {
            found.push((path.clone(), header.to_owned()));
        }
        collect(Some(property), path, found);
        path.pop();
    }
}

/// Nesting followed at most.
const MAX_DEPTH: usize = 16;

/// RFC 9110 §5.6.2 token character.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// A header value as SEP-2243 carries it: as is when it is plain visible ASCII without
/// surrounding blanks, else (or when it looks like the sentinel itself) base64-wrapped as
/// `=?base64?…?=`.
pub(crate) fn encode(value: &str) -> String {
    use base64::Engine;
    let visible = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    match visible && !padded && !sentinel {
        true => value.to_owned(),
        false => format!(
            "=?base64?{}?=",
            base64::prelude::BASE64_STANDARD.encode(value)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declared_arguments_become_headers_and_others_do_not() {
        let tools = json!([{
            "name": "query",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                "filter": {"type": "object", "properties": {
                    "owner": {"type": "string", "x-mcp-header": "Owner"}}},
                "bad": {"type": "string", "x-mcp-header": "has space"},
                "text": {"type": "string"}}}
        }, {"name": "plain", "inputSchema": {"type": "object"}}]);
        let headers = ParamHeaders::from_tools(&tools);
        let call = json!({"name": "query", "arguments": {
            "region": "eu-west", "limit": 5, "filter": {"owner": "Zoë"},
            "bad": "x", "text": "y"}});
        let mut got = headers.for_call(&call);
        got.sort();
        assert_eq!(
            got,
            [
                ("mcp-param-Limit".to_owned(), "5".to_owned()),
                ("mcp-param-Owner".into(), "=?base64?Wm/Dqw==?=".into()),
                ("mcp-param-Region".into(), "eu-west".into()),
            ]
        );
        // Absent or null arguments, and tools without declarations, send nothing.
        let sparse = json!({"name": "query", "arguments": {"limit": null}});
        assert!(headers.for_call(&sparse).is_empty());
        let plain = json!({"name": "plain", "arguments": {"region": "x"}});
        assert!(headers.for_call(&plain).is_empty());
    }
}
