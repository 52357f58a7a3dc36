//! Runs that pause for a decision and resume: what runs, what the model reads, what is kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use tinyagent::agent::{Decisions, PAUSED_KEY, SessionRunner};
use tinyagent::store::{MemoryStore, SessionStore};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::middleware::{Approval, ApprovalLayer, ApprovalRequest, approval_fn};
use tinyagent::{
    Agent, AgentError, Event, Invocation, LlmAgent, Role, Session, ToolContext, ToolError,
    ToolErrorKind, tools,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

/// A read-only lookup (never asks) and a booking (waits for a person), each counting its runs.
struct Fixture {
    lookups: Arc<AtomicUsize>,
    bookings: Arc<AtomicUsize>,
    booked: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Fixture {
    fn new() -> Self {
        Self {
            lookups: Arc::new(AtomicUsize::new(0)),
            bookings: Arc::new(AtomicUsize::new(0)),
            booked: Arc::default(),
        }
    }

    fn agent(&self, model: Arc<ScriptedModel>) -> LlmAgent {
        self.builder(model).build().unwrap()
    }

    fn builder(&self, model: Arc<ScriptedModel>) -> tinyagent::agent::LlmAgentBuilder {
        let lookups = self.lookups.clone();
        let lookup = tools::new_func("lookup", "Looks a city up", move |c: City| {
            let lookups = lookups.clone();
            async move {
                lookups.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(format!("{} is nice", c.city))
            }
        })
        .read_only();
        let (bookings, booked) = (self.bookings.clone(), self.booked.clone());
        let book = tools::new_func("book", "Books a trip", move |c: City| {
            let (bookings, booked) = (bookings.clone(), booked.clone());
            async move {
                bookings.fetch_add(1, Ordering::SeqCst);
                booked.lock().unwrap().push(c.city.clone());
                Ok::<_, ToolError>(format!("booked {}", c.city))
            }
        });
        let policy = approval_fn(|req: ApprovalRequest| async move {
            if req.hints.read_only {
                Approval::Approve
            } else {
                Approval::defer(format!("{} needs a person's approval", req.tool))
            }
        });
        LlmAgent::builder("travel")
            .model(model)
            .tool(lookup)
            .tool(book)
            .middleware([ApprovalLayer::new(policy).into()])
    }
}

fn two_calls() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new([
        reply::tool_calls([
            ("call_1", "lookup", r#"{"city":"Paris"}"#),
            ("call_2", "book", r#"{"city":"Paris"}"#),
        ]),
        reply::text("All set."),
    ]))
}

#[tokio::test]
async fn a_waiting_call_pauses_the_run_after_the_others_ran_and_approval_resumes_it() {
    let fixture = Fixture::new();
    let model = two_calls();
    let store = MemoryStore::new();
    let runner = SessionRunner::new(fixture.agent(model.clone()), store.clone());

    let events: Vec<Event> = runner
        .run("s", "Book Paris")
        .map(|e| e.unwrap())
        .collect()
        .await;
    let Some(Event::Paused { pending, steps, .. }) = events.last() else {
        panic!("the run pauses: {events:?}");
    };
    assert_eq!(*steps, 1);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.id, "call_2");
    assert_eq!(pending[0].reason, "book needs a person's approval");
    assert_eq!(
        fixture.lookups.load(Ordering::SeqCst),
        1,
        "the read-only call ran"
    );
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 0);
    // The event is reported as JSON like the others.
    let json = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(json["type"], "paused");
    assert_eq!(json["pending"][0]["id"], "call_2");
    assert_eq!(
        json["pending"][0]["reason"],
        "book needs a person's approval"
    );

    // The session keeps finished turns only; the paused turn is in its state.
    let stored = store.load("s").await.unwrap().unwrap();
    assert!(stored.messages.is_empty());
    assert!(stored.state.contains_key(PAUSED_KEY));

    let answer = runner
        .resume_answer("s", Decisions::new().approve("call_2"))
        .await
        .unwrap();
    assert_eq!(answer, "All set.");
    assert_eq!(fixture.lookups.load(Ordering::SeqCst), 1, "not run again");
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 1);

    // The model read both results, in the calls' order, after the whole turn.
    let second = &model.requests()[1];
    let results: Vec<_> = second.messages.last().unwrap().tool_results().collect();
    assert_eq!(results[0].content, "Paris is nice");
    assert_eq!(results[1].content, "booked Paris");
    let stored = store.load("s").await.unwrap().unwrap();
    let roles: Vec<Role> = stored.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert!(!stored.state.contains_key(PAUSED_KEY));
}

#[tokio::test]
async fn denied_and_rewritten_calls() {
    for (decision, ran, booked, read) in [
        (
            Approval::deny("over budget"),
            0,
            None,
            "the call to book was denied: over budget",
        ),
        (
            Approval::rewrite(r#"{"city":"Lyon"}"#),
            1,
            Some("Lyon"),
            "booked Lyon",
        ),
    ] {
        let fixture = Fixture::new();
        let model = two_calls();
        let runner = SessionRunner::new(fixture.agent(model.clone()), MemoryStore::new());
        assert!(matches!(
            runner.ask("s", "Book Paris").await,
            Err(AgentError::Paused { .. })
        ));
        let answer = runner
            .resume_answer("s", Decisions::new().decide("call_2", decision))
            .await
            .unwrap();
        assert_eq!(answer, "All set.");
        assert_eq!(fixture.bookings.load(Ordering::SeqCst), ran);
        assert_eq!(
            fixture.booked.lock().unwrap().first().map(String::as_str),
            booked
        );
        let result = model.requests()[1]
            .messages
            .last()
            .unwrap()
            .tool_results()
            .nth(1)
            .unwrap()
            .clone();
        assert_eq!(result.content, read);
        // The model's call is kept as it made it.
        let stored = runner.store().load("s").await.unwrap().unwrap();
        let call = stored.messages[1].tool_calls().nth(1).unwrap().clone();
        assert_eq!(call.arguments, r#"{"city":"Paris"}"#);
    }
}

#[tokio::test]
async fn wrong_decisions_run_nothing_and_say_what_is_wrong() {
    let fixture = Fixture::new();
    let runner = SessionRunner::new(fixture.agent(two_calls()), MemoryStore::new());
    let err = runner
        .resume_answer("s", Decisions::new().approve("call_2"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no paused run"), "{err}");

    runner.ask("s", "Book Paris").await.unwrap_err();
    for (decisions, says) in [
        (Decisions::new(), "none was given for call_2"),
        (
            Decisions::new().approve("call_2").approve("call_9"),
            "no call \"call_9\"",
        ),
    ] {
        let err = runner.resume_answer("s", decisions).await.unwrap_err();
        assert!(matches!(err, AgentError::Resume { .. }), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
    }
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 0);
    // Still paused, still resumable.
    assert_eq!(
        runner.paused("s").await.unwrap().unwrap().pending()[0]
            .call
            .id,
        "call_2"
    );
}

#[tokio::test]
async fn a_deferred_decision_keeps_the_call_waiting() {
    let fixture = Fixture::new();
    let runner = SessionRunner::new(fixture.agent(two_calls()), MemoryStore::new());
    runner.ask("s", "Book Paris").await.unwrap_err();
    let err = runner
        .resume_answer(
            "s",
            Decisions::new().decide("call_2", Approval::defer("ask the manager")),
        )
        .await
        .unwrap_err();
    let AgentError::Paused { pending, .. } = err else {
        panic!("{err:?}");
    };
    assert_eq!(pending[0].reason, "ask the manager");
    let answer = runner
        .resume_answer("s", Decisions::new().approve("call_2"))
        .await
        .unwrap();
    assert_eq!(answer, "All set.");
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_tool_that_defers_itself_reads_the_decision_and_runs_in_memory_too() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let send = tools::new_tool(
        "send_email",
        "Sends an email",
        serde_json::json!({"type": "object", "properties": {"to": {"type": "string"}}}),
        move |ctx: ToolContext, _input: String| {
            let counter = counter.clone();
            async move {
                match ctx.decision() {
                    Some(Approval::Approve) => {
                        counter.fetch_add(1, Ordering::SeqCst);
                        Ok("sent".to_owned())
                    }
                    _ => Err(ToolError::deferred("the user confirms each email")),
                }
            }
        },
    );
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "send_email", r#"{"to":"a@b.c"}"#),
        reply::text("Sent."),
    ]));
    let agent = LlmAgent::builder("mailer")
        .model(model)
        .tool(send)
        .build()
        .unwrap();
    let session = Session::new();
    let mut events = agent.run(Invocation::new(session.clone(), "Email a@b.c"));
    let mut finished = Vec::new();
    while let Some(event) = events.next().await {
        if let Event::ToolCallFinished { error_kind, .. } = event.unwrap() {
            finished.push(error_kind);
        }
    }
    assert_eq!(finished, [Some(ToolErrorKind::Deferred)]);
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    // In memory: the session holds the paused run; resume it there.
    let inv = Invocation::resume(session.clone(), Decisions::new().approve("c1"));
    assert_eq!(inv.message().text(), "Email a@b.c");
    let mut events = agent.run(inv);
    let mut answer = None;
    while let Some(event) = events.next().await {
        if let Event::Finished { answer: a, .. } = event.unwrap() {
            answer = Some(a);
        }
    }
    assert_eq!(answer.as_deref(), Some("Sent."));
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(session.messages().len(), 4);
    assert!(session.get(PAUSED_KEY).is_none());
}

#[tokio::test]
async fn steps_taken_before_the_pause_count_after_it() {
    let fixture = Fixture::new();
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "lookup", r#"{"city":"Paris"}"#),
        reply::tool_call("call_2", "book", r#"{"city":"Paris"}"#),
        reply::tool_call("call_3", "lookup", r#"{"city":"Rome"}"#),
    ]));
    // Three steps allowed: two before the pause, so one after it.
    let limited = fixture.builder(model).max_steps(3).build().unwrap();
    let runner = SessionRunner::new(limited, MemoryStore::new());
    let err = runner.ask("s", "Plan a trip").await.unwrap_err();
    assert!(matches!(err, AgentError::Paused { .. }), "{err}");
    let paused = runner.paused("s").await.unwrap().unwrap();
    assert_eq!(paused.steps, 2);
    let err = runner
        .resume_answer("s", Decisions::new().approve("call_2"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::StepLimit { max_steps: 3, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_decision_does_not_override_another_layers_policy() {
    // An outer policy refuses Rome; an inner layer asks a person about every booking.
    let fixture = Fixture::new();
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "book", r#"{"city":"Paris"}"#),
        reply::text("Done."),
    ]));
    let policy = ApprovalLayer::new(approval_fn(|req: ApprovalRequest| async move {
        if req.arguments.contains("Rome") {
            Approval::deny("no trips to Rome")
        } else {
            Approval::Approve
        }
    }));
    let agent = fixture
        .builder(model.clone())
        .middleware([
            policy.into(),
            ApprovalLayer::new(approval_fn(|_| async { Approval::defer("ask") })).into(),
        ])
        .build()
        .unwrap();
    let runner = SessionRunner::new(agent, MemoryStore::new());
    runner.ask("s", "Book a trip").await.unwrap_err();
    // A person approves, rewriting the city to Rome: the outer policy still refuses it.
    let answer = runner
        .resume_answer(
            "s",
            Decisions::new().decide("call_1", Approval::rewrite(r#"{"city":"Rome"}"#)),
        )
        .await
        .unwrap();
    assert_eq!(answer, "Done.");
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 0);
    let result = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(
        result.content,
        "the call to book was denied: no trips to Rome"
    );
}

#[tokio::test]
async fn a_resume_that_fails_after_its_calls_ran_goes_on_with_no_decisions() {
    let fixture = Fixture::new();
    let model = Arc::new(ScriptedModel::new([reply::tool_call(
        "call_1",
        "book",
        r#"{"city":"Paris"}"#,
    )]));
    model.push_error(tinyagent::ModelError::new(
        tinyagent::model::ModelErrorKind::Unavailable,
        "503 from the provider",
    ));
    model.push(reply::text("Booked."));
    let runner = SessionRunner::new(fixture.agent(model.clone()), MemoryStore::new());
    runner.ask("s", "Book Paris").await.unwrap_err();
    let err = runner
        .resume_answer("s", Decisions::new().approve("call_1"))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Model(_)), "{err}");
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 1);
    // The booking is recorded; nothing waits; a new message says how to go on.
    assert!(
        runner
            .paused("s")
            .await
            .unwrap()
            .unwrap()
            .pending()
            .is_empty()
    );
    let err = runner.ask("s", "hello?").await.unwrap_err();
    assert!(
        err.to_string().contains("resume it with no decisions"),
        "{err}"
    );
    let answer = runner.resume_answer("s", Decisions::new()).await.unwrap();
    assert_eq!(answer, "Booked.");
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 1, "booked once");
    let result = model
        .requests()
        .last()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        result.tool_results().next().unwrap().content,
        "booked Paris"
    );
}

#[tokio::test]
async fn only_the_agent_that_paused_resumes() {
    let fixture = Fixture::new();
    let store = MemoryStore::new();
    let runner = SessionRunner::new(fixture.agent(two_calls()), store.clone());
    runner.ask("s", "Book Paris").await.unwrap_err();
    let other = LlmAgent::builder("other")
        .model(two_calls())
        .tool(tinyagent_demo::calculator_tool())
        .build()
        .unwrap();
    let err = SessionRunner::new(other, store)
        .resume_answer("s", Decisions::new().approve("call_2"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("paused by agent \"travel\""),
        "{err}"
    );
    assert_eq!(fixture.bookings.load(Ordering::SeqCst), 0);
}
