//! A2A protocol 0.3 on the same endpoint: its method names (`message/send`,
//! `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`) and its JSON shapes
//! (`kind` tags, lower-case states and roles) translated to and from protocol 1.0, so the
//! clients of frameworks still on 0.3 reach the same tasks.

use std::convert::Infallible;
use std::sync::Arc;

use a2a::{
    A2AError, Artifact, CancelTaskRequest, GetTaskRequest, Message, Part, PartContent, Role,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState, TaskStatus, new_message_id,
};
use a2a_server::{DefaultRequestHandler, RequestHandler, ServiceParams};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};

/// How often a quiet 0.3 stream sends a comment line.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// The 0.3 methods this endpoint answers.
pub(crate) const METHODS: &[&str] = &[
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

/// Answers one 0.3 JSON-RPC request (`request` is its parsed body).
pub(crate) async fn handle(
    handler: &Arc<DefaultRequestHandler>,
    headers: &HeaderMap,
    request: Value,
) -> Response {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let service = service_params(headers);
    let result = match method {
        "message/send" => match send_request(&params) {
            Ok(req) => handler
                .send_message(&service, req)
                .await
                .map(|answer| match answer {
                    SendMessageResponse::Task(task) => task_json(&task),
                    SendMessageResponse::Message(message) => message_json(&message),
                }),
            Err(err) => Err(err),
        },
        "message/stream" => {
            let events = match send_request(&params) {
                Ok(req) => handler.send_streaming_message(&service, req).await,
                Err(err) => Err(err),
            };
            return stream_or_error(id, events);
        }
        "tasks/get" => match task_id(&params) {
            Ok(task) => handler
                .get_task(
                    &service,
                    GetTaskRequest {
                        id: task,
                        history_length: params
                            .get("historyLength")
                            .and_then(Value::as_i64)
                            .and_then(|n| i32::try_from(n).ok()),
                        tenant: None,
                    },
                )
                .await
                .map(|task| task_json(&task)),
            Err(err) => Err(err),
        },
        "tasks/cancel" => match task_id(&params) {
            Ok(task) => handler
                .cancel_task(
                    &service,
                    CancelTaskRequest {
                        id: task,
                        metadata: None,
                        tenant: None,
                    },
                )
                .await
                .map(|task| task_json(&task)),
            Err(err) => Err(err),
        },
        "tasks/resubscribe" => {
            let events = match task_id(&params) {
                Ok(task) => {
                    handler
                        .subscribe_to_task(
                            &service,
                            SubscribeToTaskRequest {
                                id: task,
                                tenant: None,
                            },
                        )
                        .await
                }
                Err(err) => Err(err),
            };
            return stream_or_error(id, events);
        }
        "agent/getAuthenticatedExtendedCard" => Err(A2AError::extended_card_not_configured()),
        _ => Err(A2AError::push_notification_not_supported()),
    };
    axum::Json(envelope(&id, result)).into_response()
}

/// A JSON-RPC response: the result, or the error's code and message.
fn envelope(id: &Value, result: Result<Value, A2AError>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(err) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": err.code, "message": err.message},
        }),
    }
}

fn stream_or_error(
    id: Value,
    events: Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError>,
) -> Response {
    let events = match events {
        Ok(events) => events,
        Err(err) => return axum::Json(envelope(&id, Err(err))).into_response(),
    };
    let frames = events
        .map(move |event| {
            let body = envelope(&id, event.map(|e| event_json(&e)));
            Some(Bytes::from(format!("data: {body}\n\n")))
        })
        .chain(futures::stream::once(async { None }));
    // A comment line now and then keeps proxies from cutting a quiet stream (a long tool call).
    let beats = futures::stream::unfold((), |()| async {
        tokio::time::sleep(KEEP_ALIVE).await;
        Some((Some(Bytes::from_static(b": keep-alive\n\n")), ()))
    });
    let frames = futures::stream::select(frames, beats)
        .take_while(|frame| std::future::ready(frame.is_some()))
        .filter_map(|frame| std::future::ready(frame.map(Ok::<_, Infallible>)));
    let mut response = Body::from_stream(frames).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn service_params(headers: &HeaderMap) -> ServiceParams {
    let mut params = ServiceParams::new();
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            params
                .entry(name.as_str().to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    params
}

fn task_id(params: &Value) -> Result<String, A2AError> {
    params
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| A2AError::invalid_params("`id` (the task's) is required"))
}

/// 0.3's `MessageSendParams` as a 1.0 request.
fn send_request(params: &Value) -> Result<SendMessageRequest, A2AError> {
    let message = params
        .get("message")
        .ok_or_else(|| A2AError::invalid_params("`message` is required"))?;
    let configuration = params.get("configuration").filter(|c| !c.is_null());
    if configuration
        .and_then(|c| c.get("pushNotificationConfig"))
        .is_some_and(|p| !p.is_null())
    {
        return Err(A2AError::push_notification_not_supported());
    }
    Ok(SendMessageRequest {
        message: message_from(message)?,
        configuration: configuration.map(|c| SendMessageConfiguration {
            accepted_output_modes: c.get("acceptedOutputModes").and_then(|m| {
                m.as_array().map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
            }),
            task_push_notification_config: None,
            history_length: c
                .get("historyLength")
                .and_then(Value::as_i64)
                .and_then(|n| i32::try_from(n).ok()),
            // 0.3 `blocking: false` is 1.0's "return immediately".
            return_immediately: c.get("blocking").and_then(Value::as_bool).map(|b| !b),
        }),
        metadata: object_map(params.get("metadata")),
        tenant: None,
    })
}

fn object_map(value: Option<&Value>) -> Option<std::collections::HashMap<String, Value>> {
    value
        .and_then(Value::as_object)
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn message_from(value: &Value) -> Result<Message, A2AError> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    let role = match value.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("agent") => Role::Agent,
        other => {
            return Err(A2AError::invalid_params(format!(
                "message.role must be \"user\" or \"agent\", not {other:?}"
            )));
        }
    };
    let parts = value
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| A2AError::invalid_params("message.parts must be a list"))?
        .iter()
        .enumerate()
        .map(|(i, p)| {
            part_from(p)
                .map_err(|why| A2AError::invalid_params(format!("message.parts[{i}]: {why}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Message {
        message_id: text("messageId").unwrap_or_else(new_message_id),
        context_id: text("contextId"),
        task_id: text("taskId"),
        role,
        parts,
        metadata: object_map(value.get("metadata")),
        extensions: None,
        reference_task_ids: None,
    })
}

fn part_from(value: &Value) -> Result<Part, String> {
    let part = match value.get("kind").and_then(Value::as_str) {
        Some("text") => Part::text(value.get("text").and_then(Value::as_str).unwrap_or("")),
        Some("data") => Part::data(value.get("data").cloned().unwrap_or(Value::Null)),
        Some("file") => {
            let file = value.get("file").unwrap_or(&Value::Null);
            let mut part = if let Some(bytes) = file.get("bytes").and_then(Value::as_str) {
                Part::raw(
                    BASE64
                        .decode(bytes)
                        .map_err(|e| format!("file.bytes is not base64: {e}"))?,
                )
            } else if let Some(uri) = file.get("uri").and_then(Value::as_str) {
                Part::url(uri)
            } else {
                return Err("a file part needs file.bytes or file.uri".into());
            };
            if let Some(mime) = file.get("mimeType").and_then(Value::as_str) {
                part = part.with_media_type(mime);
            }
            if let Some(name) = file.get("name").and_then(Value::as_str) {
                part = part.with_filename(name);
            }
            part
        }
        other => return Err(format!("unknown part kind {other:?}")),
    };
    Ok(part)
}

fn part_json(part: &Part) -> Value {
    let file = |key: &str, value: Value| {
        let mut file = Map::new();
        file.insert(key.to_owned(), value);
        if let Some(mime) = &part.media_type {
            file.insert("mimeType".into(), json!(mime));
        }
        if let Some(name) = &part.filename {
            file.insert("name".into(), json!(name));
        }
        json!({"kind": "file", "file": file})
    };
    match &part.content {
        PartContent::Text(text) => json!({"kind": "text", "text": text}),
        // 0.3's data parts hold objects.
        PartContent::Data(data) if data.is_object() => json!({"kind": "data", "data": data}),
        PartContent::Data(data) => json!({"kind": "data", "data": {"value": data}}),
        PartContent::Raw(bytes) => file("bytes", json!(BASE64.encode(bytes))),
        PartContent::Url(url) => file("uri", json!(url)),
    }
}

fn role_name(role: &Role) -> &'static str {
    match role {
        Role::User => "user",
        _ => "agent",
    }
}

fn state_name(state: &TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "input-required",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth-required",
        _ => "unknown",
    }
}

/// A JSON object without its `null` members.
fn compact(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

fn message_json(message: &Message) -> Value {
    compact(json!({
        "kind": "message",
        "messageId": message.message_id,
        "contextId": message.context_id,
        "taskId": message.task_id,
        "role": role_name(&message.role),
        "parts": message.parts.iter().map(part_json).collect::<Vec<_>>(),
        "metadata": message.metadata,
    }))
}

fn status_json(status: &TaskStatus) -> Value {
    compact(json!({
        "state": state_name(&status.state),
        "message": status.message.as_ref().map(message_json),
        "timestamp": status.timestamp.map(|t| t.to_rfc3339()),
    }))
}

fn artifact_json(artifact: &Artifact) -> Value {
    compact(json!({
        "artifactId": artifact.artifact_id,
        "name": artifact.name,
        "description": artifact.description,
        "parts": artifact.parts.iter().map(part_json).collect::<Vec<_>>(),
        "metadata": artifact.metadata,
    }))
}

fn task_json(task: &Task) -> Value {
    compact(json!({
        "kind": "task",
        "id": task.id,
        "contextId": task.context_id,
        "status": status_json(&task.status),
        "artifacts": task.artifacts.as_ref().map(|a| a.iter().map(artifact_json).collect::<Vec<_>>()),
        "history": task.history.as_ref().map(|h| h.iter().map(message_json).collect::<Vec<_>>()),
        "metadata": task.metadata,
    }))
}

fn event_json(event: &StreamResponse) -> Value {
    match event {
        StreamResponse::Task(task) => task_json(task),
        StreamResponse::Message(message) => message_json(message),
        StreamResponse::StatusUpdate(update) => compact(json!({
            "kind": "status-update",
            "taskId": update.task_id,
            "contextId": update.context_id,
            "status": status_json(&update.status),
            "final": update.status.state.is_terminal()
                || matches!(update.status.state, TaskState::InputRequired | TaskState::AuthRequired),
            "metadata": update.metadata,
        })),
        StreamResponse::ArtifactUpdate(update) => compact(json!({
            "kind": "artifact-update",
            "taskId": update.task_id,
            "contextId": update.context_id,
            "artifact": artifact_json(&update.artifact),
            "append": update.append,
            "lastChunk": update.last_chunk,
            "metadata": update.metadata,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_0_3_message_becomes_a_1_0_request() {
        let params = json!({
            "message": {"kind": "message", "messageId": "m1", "role": "user", "contextId": "c1",
                "parts": [{"kind": "text", "text": "7 × 8?"}, {"kind": "data", "data": {"a": 1}},
                          {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}}]},
            "configuration": {"blocking": false, "historyLength": 2},
        });
        let req = send_request(&params).unwrap();
        assert_eq!(req.message.message_id, "m1");
        assert_eq!(req.message.context_id.as_deref(), Some("c1"));
        assert_eq!(req.message.role, Role::User);
        assert_eq!(req.message.parts[0].as_text(), Some("7 × 8?"));
        assert_eq!(
            req.message.parts[2].content,
            PartContent::Raw(b"hi".to_vec())
        );
        let config = req.configuration.unwrap();
        assert_eq!(config.return_immediately, Some(true));
        assert_eq!(config.history_length, Some(2));

        let bad = json!({"message": {"role": "robot", "parts": []}});
        assert!(send_request(&bad).unwrap_err().message.contains("role"));
        let bad_part = json!({"message": {"role": "user", "parts": [{"kind": "video"}]}});
        assert!(
            send_request(&bad_part)
                .unwrap_err()
                .message
                .contains("parts[0]")
        );
    }

    #[test]
    fn a_1_0_task_and_events_read_as_0_3() {
        let task = Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: None,
            },
            artifacts: Some(vec![Artifact {
                artifact_id: "answer".into(),
                name: Some("answer".into()),
                description: None,
                parts: vec![Part::text("56")],
                metadata: None,
                extensions: None,
            }]),
            history: None,
            metadata: None,
        };
        let json = task_json(&task);
        assert_eq!(json["kind"], "task");
        assert_eq!(json["status"]["state"], "completed");
        assert_eq!(
            json["artifacts"][0]["parts"][0],
            json!({"kind": "text", "text": "56"})
        );
        assert!(json.get("history").is_none(), "{json}");

        let update = StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        let json = event_json(&update);
        assert_eq!(json["kind"], "status-update");
        assert_eq!(json["status"]["state"], "input-required");
        assert_eq!(json["final"], true);
    }
}
