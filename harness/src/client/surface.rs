//! What a server offers beside its tools (SPEC §3.6): its prompts, resources and resource
//! templates, listed whole ([`Surface`]), and a bounded read of each ([`SurfaceRead`]).
//! Prompt texts and resource contents reach the model as tool results do.

use std::sync::Arc;

use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ListPromptsRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, PaginatedRequestParams,
    ReadResourceRequest, ReadResourceRequestParams,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::error::ClientError;
use super::session::{Answer, McpSession};

/// Prompts and resources read at most, each: a server that lists thousands of resources
/// is read in part, and the listing says how many there were.
pub const MAX_SURFACE_READS: usize = 16;

/// The listings of what a server offers beside its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Surface {
    /// Every entry of every list, in list order, as `{"name": KEY, "entry": ENTRY}` with
    /// `KEY` `prompt NAME`, `resource URI` or `template URI-TEMPLATE`: one array keyed
    /// like a tools/list, so a change is found the same way.
    pub entries: Arc<Value>,
    /// The lists the server's capabilities declared and that were asked for.
    pub lists: Vec<String>,
    /// Lists that failed, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// False when a list still had a next page after the page cap.
    pub complete: bool,
}

impl Surface {
    /// The entries as a slice (empty when there are none).
    pub fn listed(&self) -> &[Value] {
        self.entries.as_array().map_or(&[][..], Vec::as_slice)
    }

    /// Whether the server declared prompts or resources.
    pub fn offered(&self) -> bool {
        !self.lists.is_empty()
    }

    /// The entries of the lists that answered both here and in `other`: a list that
    /// failed in either (timed out, refused) says nothing of what changed in it, so its
    /// entries are not compared (a prompts listing that timed out is not a removed prompt).
    pub fn comparable(&self, other: &Surface) -> Vec<Value> {
        let failed: Vec<&str> = self
            .failed
            .iter()
            .chain(&other.failed)
            .filter_map(|why| {
                [&PROMPTS, &RESOURCES, &TEMPLATES].into_iter().find(|list| {
                    why.strip_prefix(list.method)
                        .is_some_and(|r| r.starts_with(':'))
                })
            })
            .map(|list| list.kind)
            .collect();
        self.listed()
            .iter()
            .filter(|entry| {
                let key = entry["name"].as_str().unwrap_or("");
                let kind = key.split(' ').next().unwrap_or("");
                !failed.contains(&kind)
            })
            .cloned()
            .collect()
    }
}

/// One `prompts/get` or `resources/read` and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SurfaceRead {
    /// `prompts/get` or `resources/read`.
    pub method: String,
    /// The entry's key in [`Surface::entries`].
    pub entry: String,
    pub params: Value,
    /// The result as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why there is no result: the JSON-RPC error or the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// One of the lists, how to ask for it and how to key its entries.
/// Why the server gave no result to one request, its session going on; the text is what
/// the receipts record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NoAnswer {
    #[error("error {code}: {message}")]
    Rpc { code: i32, message: String },
    #[error("no answer within {0:?}")]
    TimedOut(std::time::Duration),
    #[error("the result has no {0} array")]
    NoList(&'static str),
}

struct List {
    method: &'static str,
    field: &'static str,
    kind: &'static str,
    key: &'static str,
    request: fn(Option<PaginatedRequestParams>) -> ClientRequest,
}

const PROMPTS: List = List {
    method: "prompts/list",
    field: "prompts",
    kind: "prompt",
    key: "name",
    request: |params| {
        ClientRequest::ListPromptsRequest(ListPromptsRequest {
            method: Default::default(),
            params,
            extensions: Default::default(),
        })
    },
};

const RESOURCES: List = List {
    method: "resources/list",
    field: "resources",
    kind: "resource",
    key: "uri",
    request: |params| {
        ClientRequest::ListResourcesRequest(ListResourcesRequest {
            method: Default::default(),
            params,
            extensions: Default::default(),
        })
    },
};

const TEMPLATES: List = List {
    method: "resources/templates/list",
    field: "resourceTemplates",
    kind: "template",
    key: "uriTemplate",
    request: |params| {
        ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest {
            method: Default::default(),
            params,
            extensions: Default::default(),
        })
    },
};

impl McpSession {
    /// Lists the prompts, resources and resource templates the server's capabilities
    /// declare, every page up to the page cap. A list that fails is noted, not fatal: `Err`
    /// means the session itself failed.
    pub async fn list_surface(&mut self) -> Result<Surface, ClientError> {
        let capabilities = &self.server_info().capabilities;
        let mut wanted = Vec::new();
        if capabilities.prompts.is_some() {
            wanted.push(PROMPTS);
        }
        if capabilities.resources.is_some() {
            wanted.extend([RESOURCES, TEMPLATES]);
        }
        let mut surface = Surface {
            entries: Arc::new(Value::Null),
            lists: Vec::new(),
            failed: Vec::new(),
            complete: true,
        };
        let mut entries = Vec::new();
        for list in wanted {
            surface.lists.push(list.method.to_owned());
            match self.list_whole(&list, &mut entries).await? {
                Ok(complete) => surface.complete &= complete,
                Err(why) => surface.failed.push(format!("{}: {why}", list.method)),
            }
        }
        surface.entries = Arc::new(Value::Array(entries));
        Ok(surface)
    }

    /// Every page of one list into `entries`; whether the last page had no next cursor, or
    /// why the server gave no list.
    async fn list_whole(
        &mut self,
        list: &List,
        entries: &mut Vec<Value>,
    ) -> Result<Result<bool, NoAnswer>, ClientError> {
        let mut cursor = None;
        for _ in 0..self.options.max_tool_pages {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = match self.answer(list.method, (list.request)(params)).await? {
                Ok(page) => page,
                Err(why) => return Ok(Err(why)),
            };
            let Some(Value::Array(items)) = page.get(list.field) else {
                return Ok(Err(NoAnswer::NoList(list.field)));
            };
            for item in items {
                let id = item.get(list.key).and_then(Value::as_str).unwrap_or("");
                entries.push(json!({"name": format!("{} {id}", list.kind), "entry": item}));
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(Ok(true)),
            }
        }
        Ok(Ok(false))
    }

    /// Reads the first [`MAX_SURFACE_READS`] prompts and resources of `surface`: each
    /// resource by its URI, each prompt with a plain word for every argument it declares
    /// (never a canary: what a prompt is given is not the server's to leak). Templates are
    /// not read: their URIs need values vac would have to invent.
    pub async fn read_surface(
        &mut self,
        surface: &Surface,
    ) -> Result<Vec<SurfaceRead>, ClientError> {
        let mut reads = Vec::new();
        let (mut prompts, mut resources) = (0, 0);
        for listed in surface.listed() {
            let key = listed["name"].as_str().unwrap_or_default();
            let entry = &listed["entry"];
            let (method, params, request) = match key.split_once(' ') {
                Some(("prompt", name)) if prompts < MAX_SURFACE_READS => {
                    prompts += 1;
                    let arguments: Map<String, Value> = entry["arguments"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a["name"].as_str())
                        .map(|a| (a.to_owned(), Value::from(PROMPT_ARGUMENT)))
                        .collect();
                    let mut params = GetPromptRequestParams::new(name);
                    if !arguments.is_empty() {
                        params = params.with_arguments(arguments);
                    }
                    let shown = serde_json::to_value(&params).unwrap_or(Value::Null);
                    let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
                    ("prompts/get", shown, request)
                }
                Some(("resource", uri)) if resources < MAX_SURFACE_READS => {
                    resources += 1;
                    let params = ReadResourceRequestParams::new(uri);
                    let shown = serde_json::to_value(&params).unwrap_or(Value::Null);
                    let request =
                        ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
                    ("resources/read", shown, request)
                }
                _ => continue,
            };
            let (result, error) = match self.answer(method, request).await? {
                Ok(result) => (Some(result), None),
                Err(why) => (None, Some(Value::from(why.to_string()))),
            };
            reads.push(SurfaceRead {
                method: method.to_owned(),
                entry: key.to_owned(),
                params,
                result,
                error,
            });
        }
        Ok(reads)
    }

    /// One request's result, or why the server gave none (an error, a timeout); `Err`
    /// means the session failed.
    async fn answer(
        &mut self,
        what: &'static str,
        request: ClientRequest,
    ) -> Result<Result<Value, NoAnswer>, ClientError> {
        let (_, answer) = self.request(what, request).await?;
        Ok(match answer {
            Answer::Result(result) => Ok(result),
            Answer::Rpc(error) => Err(NoAnswer::Rpc {
                code: error.code.0,
                message: error.message.to_string(),
            }),
            Answer::TimedOut => Err(NoAnswer::TimedOut(self.options.request_timeout)),
        })
    }
}

/// The value every prompt argument gets.
const PROMPT_ARGUMENT: &str = "example";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn surface(entries: Value, failed: &[&str]) -> Surface {
        Surface {
            entries: Arc::new(entries),
            lists: vec!["prompts/list".into(), "resources/list".into()],
            failed: failed.iter().map(|f| f.to_string()).collect(),
            complete: true,
        }
    }

    #[test]
    fn a_list_that_failed_on_either_side_is_not_compared() {
        let before = surface(
            json!([{"name": "prompt greet", "entry": {}}, {"name": "resource file:///a", "entry": {}}]),
            &[],
        );
        let after = surface(
            json!([{"name": "resource file:///a", "entry": {}}]),
            &["prompts/list: no answer within 20s"],
        );
        let names = |v: Vec<Value>| -> Vec<String> {
            v.iter()
                .map(|e| e["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(names(before.comparable(&after)), ["resource file:///a"]);
        assert_eq!(names(after.comparable(&before)), ["resource file:///a"]);
        // Both answered: every entry is compared.
        let whole = surface(before.entries.as_ref().clone(), &[]);
        assert_eq!(before.comparable(&whole).len(), 2);
    }
}
