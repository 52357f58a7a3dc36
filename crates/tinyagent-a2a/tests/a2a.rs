//! An agent served over A2A on loopback, called by the A2A project's client and by another
//! agent through `A2aAgentTool`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use a2a_client::A2AClientFactory;
use a2a_client::agent_card::AgentCardResolver;
use futures::StreamExt;
use serde_json::json;
use tinyagent::agent::SessionRunner;
use tinyagent::store::{MemoryStore, SessionStore};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{Agent, Event, Invocation, LlmAgent, Session, ToolError};
use tinyagent_a2a::protocol::{
    CancelTaskRequest, Message, Part, PartContent, Role, SendMessageRequest, SendMessageResponse,
    StreamResponse, TaskState,
};
use tinyagent_a2a::{A2aAgentTool, A2aService};

/// Serves `service` on 127.0.0.1 and returns its base URL.
async fn serve(service: A2aService) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = service.router(format!("{url}/"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The A2A project's client for the agent at `url`, from its card.
async fn client(url: &str) -> a2a_client::A2AClient<Box<dyn a2a_client::Transport>> {
    let card = AgentCardResolver::new(None).resolve(url).await.unwrap();
    A2AClientFactory::builder()
        .build()
        .create_from_card(&card)
        .await
        .unwrap()
}

fn weather_agent(model: ScriptedModel) -> LlmAgent {
    LlmAgent::builder("weather")
        .description("Answers questions about the weather")
        .model(model)
        .tool(tinyagent_demo::weather_tool())
        .build()
        .unwrap()
}

fn request(text: &str, context: Option<&str>) -> SendMessageRequest {
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.context_id = context.map(str::to_owned);
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

#[tokio::test]
async fn an_agent_served_over_a2a_answers_as_another_agents_tool_with_its_progress() {
    let remote = weather_agent(ScriptedModel::new([
        reply::tool_call("call_w", "get_weather", r#"{"city":"北京"}"#),
        reply::text("北京今天晴，22.5℃。"),
    ]));
    let store = MemoryStore::new();
    let url = serve(A2aService::new(SessionRunner::new(remote, store.clone()))).await;

    let tool = A2aAgentTool::connect(&url).await.unwrap();
    assert_eq!(tinyagent::Tool::name(&tool), "weather");
    assert!(tinyagent::Tool::description(&tool).contains("weather"));
    let lead = LlmAgent::builder("lead")
        .model(ScriptedModel::new([
            reply::tool_call("call_1", "weather", r#"{"message":"北京天气？"}"#),
            reply::text("北京晴。"),
        ]))
        .tool(tool)
        .build()
        .unwrap();
    let mut events = lead.run(Invocation::new(Session::new(), "北京天气怎么样？"));
    let (mut progress, mut result) = (Vec::new(), None);
    while let Some(event) = events.next().await {
        match event.unwrap() {
            Event::ToolProgress { message, .. } => progress.push(message.unwrap_or_default()),
            Event::ToolCallFinished { result: r, .. } => result = Some(r),
            Event::Finished { answer, .. } => assert_eq!(answer, "北京晴。"),
            _ => {}
        }
    }
    let result = result.expect("the tool ran");
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "北京今天晴，22.5℃。");
    // The remote agent's tool call reached the caller as progress, in order.
    let started = progress
        .iter()
        .position(|p| p.contains("tool_call_started") && p.contains("get_weather"))
        .unwrap_or_else(|| panic!("{progress:?}"));
    let finished = progress
        .iter()
        .position(|p| p.contains("tool_call_finished"))
        .unwrap_or_else(|| panic!("{progress:?}"));
    assert!(started < finished, "{progress:?}");

    // The A2A context is a session of the served agent's store.
    let sessions = store
        .list(&tinyagent::store::ListOptions::new())
        .await
        .unwrap();
    assert_eq!(sessions.sessions.len(), 1, "{sessions:?}");
    let stored = store.load(&sessions.sessions[0].id).await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 4, "user, call, result, answer");
}

#[tokio::test]
async fn a_context_is_one_conversation_across_tasks() {
    let store = MemoryStore::new();
    let remote = weather_agent(ScriptedModel::new([
        reply::text("Hello!"),
        reply::text("You said hi."),
    ]));
    let url = serve(A2aService::new(SessionRunner::new(remote, store.clone()))).await;
    let client = client(&url).await;
    let SendMessageResponse::Task(first) = client.send_message(&request("hi", None)).await.unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(first.status.state, TaskState::Completed);
    let answer = first.artifacts.as_ref().unwrap();
    assert_eq!(answer[0].artifact_id, "answer");
    assert_eq!(answer[0].parts[0].as_text(), Some("Hello!"));
    let SendMessageResponse::Task(second) = client
        .send_message(&request("what did I say?", Some(&first.context_id)))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_ne!(second.id, first.id);
    assert_eq!(second.context_id, first.context_id);
    let stored = store.load(&first.context_id).await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 4, "both turns in one session");
    let text = second.status.message.as_ref().and_then(|m| m.text());
    assert_eq!(text, Some("You said hi."));
}

/// A tool that waits until it is dropped, noting that it was.
fn blocking_tool(dropped: Arc<AtomicBool>) -> Arc<dyn tinyagent::Tool> {
    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    tinyagent::tools::new_tool(
        "wait_forever",
        "Waits",
        json!({"type": "object", "properties": {}}),
        move |_ctx, _input: String| {
            let flag = Flag(dropped.clone());
            async move {
                let _flag = flag;
                std::future::pending::<()>().await;
                Ok::<_, ToolError>(String::new())
            }
        },
    )
}

#[tokio::test]
async fn cancelling_a_task_stops_its_run_and_a_full_handler_rejects_more() {
    let dropped = Arc::new(AtomicBool::new(false));
    let remote = LlmAgent::builder("slow")
        .model(ScriptedModel::new([reply::tool_call(
            "call_1",
            "wait_forever",
            "{}",
        )]))
        .tool(blocking_tool(dropped.clone()))
        .build()
        .unwrap();
    let url = serve(A2aService::from_agent(remote).max_running(1)).await;
    let client = client(&url).await;
    let mut events = client
        .send_streaming_message(&request("wait", None))
        .await
        .unwrap();
    let mut task_id = None;
    while let Some(event) = events.next().await {
        if let StreamResponse::StatusUpdate(update) = event.unwrap() {
            let data = update
                .status
                .message
                .as_ref()
                .and_then(|m| m.parts.first())
                .map(|p| &p.content);
            if let Some(PartContent::Data(data)) = data {
                if data["type"] == "tool_call_started" {
                    task_id = Some(update.task_id.clone());
                    break;
                }
            }
        }
    }
    let task_id = task_id.expect("the tool started");

    // One task runs: a second is rejected, with why.
    let SendMessageResponse::Task(second) =
        client.send_message(&request("more", None)).await.unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(second.status.state, TaskState::Rejected);
    let why = second
        .status
        .message
        .as_ref()
        .and_then(|m| m.text())
        .unwrap();
    assert!(why.contains("at most 1"), "{why}");

    let cancelled = client
        .cancel_task(&CancelTaskRequest {
            id: task_id.clone(),
            metadata: None,
            tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    // The run's stream is dropped, and the tool with it.
    tokio::time::timeout(Duration::from_secs(10), async {
        while !dropped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the tool was dropped");
}

#[tokio::test]
async fn a_failed_remote_run_is_an_error_result_with_its_words() {
    // The remote model has nothing to say: its run fails.
    let remote = weather_agent(ScriptedModel::new([]));
    let url =
        serve(A2aService::from_agent(remote).error_text(|_| "the model is unavailable".into()))
            .await;
    let tool = A2aAgentTool::connect(&url).await.unwrap();
    let output = tinyagent::Tool::handle(
        &tool,
        &tinyagent::ToolContext::new(),
        r#"{"message":"北京天气？"}"#,
    )
    .await;
    let err = output.unwrap_err();
    assert!(err.message().contains("weather failed"), "{err}");
    assert!(err.message().contains("the model is unavailable"), "{err}");

    let missing = tinyagent::Tool::handle(&tool, &tinyagent::ToolContext::new(), "{}").await;
    assert!(missing.unwrap_err().message().contains("message"));
}

#[tokio::test]
async fn an_unreachable_card_is_a_clear_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let err = A2aAgentTool::connect(&url).await.unwrap_err();
    assert!(err.to_string().contains("agent card"), "{err}");
}

#[tokio::test]
async fn a_0_3_client_sends_reads_and_cancels_on_the_same_endpoint() {
    let remote = weather_agent(ScriptedModel::new([
        reply::tool_call("call_w", "get_weather", r#"{"city":"北京"}"#),
        reply::text("晴"),
    ]));
    let url = serve(A2aService::from_agent(remote)).await;
    let http = reqwest::Client::new();
    let rpc = |method: &str, params: serde_json::Value| {
        http.post(format!("{url}/"))
            .json(&json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}))
            .send()
    };
    let message = json!({"message": {"kind": "message", "messageId": "m1", "role": "user",
        "parts": [{"kind": "text", "text": "北京天气？"}]}});
    let sent: serde_json::Value = rpc("message/send", message)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = &sent["result"];
    assert_eq!(sent["id"], "r1");
    assert_eq!(task["kind"], "task", "{sent}");
    assert_eq!(task["status"]["state"], "completed", "{sent}");
    assert_eq!(
        task["artifacts"][0]["parts"][0],
        json!({"kind": "text", "text": "晴"})
    );
    assert_eq!(task["history"][0]["role"], "user", "{sent}");

    let id = task["id"].as_str().unwrap();
    let got: serde_json::Value = rpc("tasks/get", json!({"id": id}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["result"]["id"], id);
    assert_eq!(got["result"]["status"]["state"], "completed");

    // A finished task cannot be cancelled; a task that does not exist is not found.
    let cancel: serde_json::Value = rpc("tasks/cancel", json!({"id": id}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(cancel["error"]["code"], -32002, "{cancel}");
    let missing: serde_json::Value = rpc("tasks/get", json!({"id": "nope"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    let bad: serde_json::Value = rpc(
        "message/send",
        json!({"message": {"role": "robot", "parts": []}}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let push: serde_json::Value = rpc("tasks/pushNotificationConfig/set", json!({}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(push["error"]["code"], -32003, "{push}");
}

#[tokio::test]
async fn a_paused_run_asks_for_input_and_decisions_resume_it() {
    use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
    let agent = LlmAgent::builder("weather")
        .model(ScriptedModel::new([
            reply::tool_call("call_1", "get_weather", r#"{"city":"Beijing"}"#),
            reply::text("Sunny, 22.5°C."),
        ]))
        .tool(tinyagent_demo::weather_tool())
        .middleware([ApprovalLayer::new(approval_fn(|_| async {
            Approval::defer("a person approves lookups")
        }))
        .into()])
        .build()
        .unwrap();
    let url = serve(A2aService::from_agent(agent)).await;
    let client = client(&url).await;
    let SendMessageResponse::Task(paused) = client
        .send_message(&request("Weather in Beijing?", None))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(paused.status.state, TaskState::InputRequired);
    let why = paused
        .status
        .message
        .as_ref()
        .and_then(|m| m.text())
        .unwrap();
    assert!(
        why.contains("get_weather (call_1)") && why.contains("decisions"),
        "{why}"
    );

    let mut decision = Message::new(
        Role::User,
        vec![Part::data(json!({"decisions": {"call_1": "approve"}}))],
    );
    decision.task_id = Some(paused.id.clone());
    decision.context_id = Some(paused.context_id.clone());
    let SendMessageResponse::Task(done) = client
        .send_message(&SendMessageRequest {
            message: decision,
            configuration: None,
            metadata: None,
            tenant: None,
        })
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(done.id, paused.id, "the same task goes on");
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    let answer = done.status.message.as_ref().and_then(|m| m.text());
    assert_eq!(answer, Some("Sunny, 22.5°C."));
}

#[tokio::test]
async fn the_key_goes_only_where_it_was_given_and_requests_are_json() {
    // A card that sends calls to another address than the one it was read from.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app =
        A2aService::from_agent(weather_agent(ScriptedModel::new([]))).router("http://127.0.0.2:9/");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let tool = A2aAgentTool::builder(&url)
        .bearer_token("sk-secret")
        .connect()
        .await
        .unwrap();
    let err = tinyagent::Tool::handle(&tool, &tinyagent::ToolContext::new(), r#"{"message":"hi"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), tinyagent::ToolErrorKind::Denied, "{err}");
    assert!(err.message().contains("not sent elsewhere"), "{err}");

    // Another site's page cannot post a form or text to the endpoint.
    let http = reqwest::Client::new();
    let text = http
        .post(format!("{url}/"))
        .header("content-type", "text/plain")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 415);

    // Push notifications are refused before a task is made.
    let push: serde_json::Value = http
        .post(format!("{url}/"))
        .header("a2a-version", "1.0")
        .json(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:1/hook"}}}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(push["error"]["code"], -32003, "{push}");
    let listed: serde_json::Value = http
        .post(format!("{url}/"))
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(listed["result"].is_object(), "{listed}");
    let tasks = listed["result"]["tasks"].as_array().map_or(0, Vec::len);
    assert_eq!(tasks, 0, "no task was made: {listed}");
}

#[tokio::test]
async fn the_calls_of_one_session_go_on_in_one_remote_context() {
    for keep in [true, false] {
        let store = MemoryStore::new();
        let remote = weather_agent(ScriptedModel::new([
            reply::text("北京晴。"),
            reply::text("上海多云。"),
        ]));
        let url = serve(A2aService::new(SessionRunner::new(remote, store.clone()))).await;
        let tool = A2aAgentTool::builder(&url)
            .keep_context(keep)
            .connect()
            .await
            .unwrap();
        let lead = LlmAgent::builder("lead")
            .model(ScriptedModel::new([
                reply::tool_call("c1", "weather", r#"{"message":"北京？"}"#),
                reply::text("北京晴。"),
                reply::tool_call("c2", "weather", r#"{"message":"那上海呢？"}"#),
                reply::text("上海多云。"),
            ]))
            .tool(tool)
            .build()
            .unwrap();
        let session = Session::new();
        for question in ["北京天气？", "那上海呢？"] {
            let mut events = lead.run(Invocation::new(session.clone(), question));
            while let Some(event) = events.next().await {
                event.unwrap();
            }
        }
        let listed = store
            .list(&tinyagent::store::ListOptions::new())
            .await
            .unwrap();
        if keep {
            assert_eq!(listed.sessions.len(), 1, "one remote conversation");
            let remote = store.load(&listed.sessions[0].id).await.unwrap().unwrap();
            assert_eq!(remote.messages.len(), 4, "both turns in it");
            assert_eq!(
                session.get_str("a2a/weather/context").as_deref(),
                Some(listed.sessions[0].id.as_str()),
                "the remote context is kept in the caller's session"
            );
        } else {
            assert_eq!(listed.sessions.len(), 2, "a new context each call");
            assert!(session.get("a2a/weather/context").is_none());
        }
    }
}
