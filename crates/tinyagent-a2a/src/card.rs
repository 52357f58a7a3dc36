//! The agent card: how a remote client learns an agent's name, skills and endpoint.

use std::collections::HashMap;

use serde_json::{Value, json};

use a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme,
    SecurityScheme, TRANSPORT_PROTOCOL_JSONRPC,
};

/// The older protocol version the endpoint also speaks.
const LEGACY_VERSION: &str = "0.3";

/// The name under which a card declares bearer-token auth.
const BEARER: &str = "bearer";

/// The card of an agent served over A2A's JSON-RPC binding at `url`: one skill (the agent
/// itself), text in and out, streaming; `bearer` declares that calls need
/// `Authorization: Bearer <key>`.
pub(crate) fn agent_card(name: &str, description: &str, url: &str, bearer: bool) -> AgentCard {
    let description = if description.is_empty() {
        format!("The {name} agent")
    } else {
        description.to_owned()
    };
    let (security_schemes, security_requirements) = if bearer {
        let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            scheme: "Bearer".into(),
            description: Some("An API key of this server".into()),
            bearer_format: None,
        });
        (
            Some(HashMap::from([(BEARER.to_owned(), scheme)])),
            Some(vec![HashMap::from([(BEARER.to_owned(), Vec::new())])]),
        )
    } else {
        (None, None)
    };
    AgentCard {
        name: name.to_owned(),
        description: description.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        supported_interfaces: vec![
            AgentInterface::new(url, TRANSPORT_PROTOCOL_JSONRPC),
            // The same endpoint answers 0.3's methods.
            AgentInterface {
                protocol_version: LEGACY_VERSION.into(),
                ..AgentInterface::new(url, TRANSPORT_PROTOCOL_JSONRPC)
            },
        ],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: None,
        },
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![AgentSkill {
            id: name.to_owned(),
            name: name.to_owned(),
            description,
            tags: vec!["agent".into()],
            examples: None,
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    }
}

/// The card as JSON, with the fields of a 0.3 card merged in (as the A2A Python SDK serves
/// it): `url`, `preferredTransport`, `protocolVersion`, and `security` beside the 1.0 names.
pub(crate) fn card_json(card: &AgentCard) -> Value {
    let mut json = serde_json::to_value(card).unwrap_or_else(|_| json!({}));
    let Some(object) = json.as_object_mut() else {
        return json;
    };
    if let Some(first) = card.supported_interfaces.first() {
        object.insert("url".into(), json!(first.url));
    }
    object.insert(
        "preferredTransport".into(),
        json!(TRANSPORT_PROTOCOL_JSONRPC),
    );
    object.insert("protocolVersion".into(), json!("0.3.0"));
    if card.security_schemes.is_some() {
        if let Some(bearer) = object
            .get_mut("securitySchemes")
            .and_then(|s| s.get_mut(BEARER))
            .and_then(Value::as_object_mut)
        {
            bearer.insert("type".into(), json!("http"));
            bearer.insert("scheme".into(), json!("bearer"));
        }
        object.insert("security".into(), json!([{ BEARER: [] }]));
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_names_its_endpoint_and_its_auth() {
        let card = agent_card("assistant", "", "http://127.0.0.1:8080/a2a/assistant", true);
        let json = serde_json::to_value(&card).unwrap();
        assert_eq!(json["name"], "assistant");
        assert_eq!(json["description"], "The assistant agent");
        assert_eq!(
            json["supportedInterfaces"][0]["url"],
            "http://127.0.0.1:8080/a2a/assistant"
        );
        assert_eq!(json["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
        assert_eq!(json["capabilities"]["streaming"], true);
        assert_eq!(
            json["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert_eq!(json["supportedInterfaces"][1]["protocolVersion"], "0.3");
        let open = serde_json::to_value(agent_card("a", "d", "http://x", false)).unwrap();
        assert!(open.get("securitySchemes").is_none(), "{open}");

        // Served, the card also reads as a 0.3 card.
        let served = card_json(&card);
        assert_eq!(served["url"], "http://127.0.0.1:8080/a2a/assistant");
        assert_eq!(served["protocolVersion"], "0.3.0");
        assert_eq!(served["securitySchemes"]["bearer"]["type"], "http");
        assert_eq!(served["security"][0]["bearer"], json!([]));
        let back: AgentCard = serde_json::from_value(served).unwrap();
        assert_eq!(back, card, "a 1.0 client reads the same card");
    }
}
