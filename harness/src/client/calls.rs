//! The requests vac makes once a session is up: [`ToolList`] and [`CallOutcome`].

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ListToolsRequest,
    PaginatedRequestParams, Tool,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{CallError, ClientError};
use super::session::{Answer, McpSession};
use super::shared::Asked;

/// The server's manifest as `tools/list` returned it, across all pages.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolList {
    /// The exact JSON of every tool, in manifest order: a JSON array to hash. Only this
    /// is kept: rmcp's reading of a tool serves to tell whether it is valid. Shared: a
    /// run holds it in several places, and equal lists of a probe's runs share one.
    pub raw: Arc<Value>,
    /// Positions in `raw` of tools that are not valid MCP tools (rmcp cannot read them).
    pub malformed: Vec<usize>,
    pub pages: u32,
    /// False when the server still had a next page after [`super::ClientOptions::max_tool_pages`].
    pub complete: bool,
}

impl ToolList {
    /// The list as recorded: the exact JSON of every tool.
    pub fn from_raw(
        raw: impl Into<Arc<Value>>,
        malformed: Vec<usize>,
        pages: u32,
        complete: bool,
    ) -> ToolList {
        ToolList {
            raw: raw.into(),
            malformed,
            pages,
            complete,
        }
    }

    /// How many of the tools are valid MCP tools.
    pub fn valid(&self) -> usize {
        let listed = self.raw.as_array().map_or(0, Vec::len);
        listed.saturating_sub(self.malformed.len())
    }
}

/// One `tools/call` and what came of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CallOutcome {
    /// The JSON-RPC id, to find the call's frames.
    pub request_id: Value,
    /// The result object as sent (a tool-level `isError: true` result is a result).
    pub result: Option<Value>,
    pub error: Option<CallError>,
    /// On the frame log's clock.
    pub requested_at: Duration,
    pub answered_at: Duration,
    /// What the server asked the model or the user while the call was pending
    /// (`sampling/createMessage`, `elicitation/create`), graded like its result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
}

impl McpSession {
    /// Fetches the whole manifest, following `nextCursor`.
    pub async fn list_tools(&mut self) -> Result<ToolList, ClientError> {
        const WHAT: &str = "tools/list";
        let mut list = ToolList {
            raw: Arc::new(Value::Null),
            malformed: Vec::new(),
            pages: 0,
            complete: false,
        };
        let mut raw_tools = Vec::new();
        let mut cursor = None;
        while list.pages < self.options.max_tool_pages {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let request = ListToolsRequest {
                method: Default::default(),
                params,
                extensions: Default::default(),
            };
            let (_, answer) = self
                .request(WHAT, ClientRequest::ListToolsRequest(request))
                .await?;
            list.pages += 1;
            let mut page = match answer {
                Answer::Result(page) => page,
                Answer::Rpc(error) => {
                    return Err(ClientError::Rpc {
                        method: WHAT,
                        error,
                    });
                }
                Answer::TimedOut => {
                    return Err(ClientError::Timeout {
                        what: WHAT,
                        after: self.options.request_timeout,
                    });
                }
            };
            let Some(Value::Array(tools)) = page.get_mut("tools").map(Value::take) else {
                return Err(ClientError::UnexpectedResult { method: WHAT });
            };
            for tool in tools {
                if Tool::deserialize(&tool).is_err() {
                    list.malformed.push(raw_tools.len());
                }
                raw_tools.push(tool);
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => {
                    list.complete = true;
                    break;
                }
            }
        }
        list.raw = Arc::new(Value::Array(raw_tools));
        self.link.shared.set_param_headers(&list.raw);
        Ok(list)
    }

    /// What the server asked the model or the user outside any call so far (sampling,
    /// elicitation): taken once, at the end of the run.
    pub fn asked_outside_calls(&self) -> Vec<Asked> {
        self.link.shared.take_outside()
    }

    /// Calls one tool. A JSON-RPC error, an answer of the wrong shape or a timeout is an
    /// outcome with `error`; `Err` means the session itself failed.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallOutcome, ClientError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // What the server asked before this call is not the call's: it was asked outside
        // any call, and the run grades it on the server's row.
        self.link.shared.set_aside_asked();
        let requested_at = self.log.elapsed();
        let (id, answer) = self.request("tools/call", request).await?;
        let answered_at = self.log.elapsed();
        let asked = self.link.shared.take_asked();
        let (result, error) = match answer {
            Answer::Result(result) => {
                let valid = serde_json::from_value::<CallToolResult>(result.clone()).is_ok();
                (
                    Some(result),
                    (!valid).then_some(CallError::UnexpectedResult),
                )
            }
            Answer::Rpc(error) => {
                let error = CallError::Rpc {
                    code: error.code.0,
                    message: error.message.into_owned(),
                    data: error.data,
                };
                (None, Some(error))
            }
            Answer::TimedOut => (
                None,
                Some(CallError::Timeout {
                    after: self.options.request_timeout,
                }),
            ),
        };
        let request_id = serde_json::to_value(&id).unwrap_or(Value::Null);
        Ok(CallOutcome {
            request_id,
            result,
            error,
            requested_at,
            answered_at,
            asked,
        })
    }
}
