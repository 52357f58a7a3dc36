//! Rich tool results: [`ContentPart`]s (text, images, audio, resources), carried with the text a
//! model reads in a [`ToolOutput`](crate::output::ToolOutput).

use std::fmt::Write as _;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// One piece of a rich tool result, in the shape of MCP's content types.
///
/// Serialized with a `type` tag; binary data travels as base64 text:
/// `{"type":"text","text":"…"}`, `{"type":"image","data":"iVBOR…","mime_type":"image/png"}`,
/// `{"type":"audio","data":"UklGR…","mime_type":"audio/wav"}`,
/// `{"type":"resource","uri":"file:///a.txt","mime_type":"text/plain","text":"…"}` (or `"blob"`
/// instead of `"text"`), `{"type":"resource_link","uri":"file:///a.txt","name":"a.txt"}`.
/// More kinds may come, so match with a wildcard arm.
///
/// ```
/// use tinyagent::ContentPart;
///
/// let png = ContentPart::image_bytes(&[0x89, b'P', b'N', b'G'], "image/png");
/// assert_eq!(png.describe(), "[image image/png, 4 B]");
/// let v = serde_json::to_value(&png).unwrap();
/// assert_eq!(v, serde_json::json!({"type": "image", "data": "iVBORw==", "mime_type": "image/png"}));
/// assert_eq!(serde_json::from_value::<ContentPart>(v).unwrap(), png);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The image's bytes, base64-encoded (standard alphabet, padded).
        data: String,
        /// Its MIME type, such as `image/png`.
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// The sound's bytes, base64-encoded (standard alphabet, padded).
        data: String,
        /// Its MIME type, such as `audio/wav`.
        mime_type: String,
    },
    /// A resource whose contents come with the result (MCP's embedded resource).
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its contents, when it is text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Its contents, base64-encoded, when it is binary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
    /// A link to a resource the reader may fetch (MCP's `resource_link`).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is, when said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image from base64 data.
    pub fn image(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: data_base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An image from its bytes (encoded here).
    pub fn image_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::image(encode(bytes), mime_type)
    }

    /// A sound from base64 data.
    pub fn audio(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: data_base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// A sound from its bytes (encoded here).
    pub fn audio_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::audio(encode(bytes), mime_type)
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: Option<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            mime_type,
            text: Some(text.into()),
            blob: None,
        }
    }

    /// An embedded binary resource from base64 data.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: Option<String>,
        blob_base64: impl Into<String>,
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            mime_type,
            text: None,
            blob: Some(blob_base64.into()),
        }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        }
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }

    /// The base64 data of an image, a sound or a binary resource.
    pub fn base64_data(&self) -> Option<&str> {
        match self {
            Self::Image { data, .. } | Self::Audio { data, .. } => Some(data),
            Self::Resource {
                blob: Some(blob), ..
            } => Some(blob),
            _ => None,
        }
    }

    /// How many characters the part weighs in a request: its text, or its base64 data (a
    /// binary part's bytes are about three quarters of that).
    pub fn weight(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Image { data, .. } | Self::Audio { data, .. } => data.len(),
            Self::Resource {
                uri, text, blob, ..
            } => {
                uri.len()
                    + text.as_ref().map_or(0, String::len)
                    + blob.as_ref().map_or(0, String::len)
            }
            Self::ResourceLink {
                uri,
                name,
                description,
                ..
            } => uri.len() + name.len() + description.as_ref().map_or(0, String::len),
        }
    }

    /// A short description of the part for a reader of text: the text itself for a text part,
    /// otherwise a placeholder such as `[image image/png, 5.2 kB]`,
    /// `[resource file:///notes.txt (text/plain)]` followed by a text resource's contents, or
    /// `[resource link file:///big.csv "big.csv"]`.
    pub fn describe(&self) -> String {
        match self {
            Self::Text { text } => text.clone(),
            Self::Image { data, mime_type } => {
                format!("[image {mime_type}, {}]", human_size(decoded_len(data)))
            }
            Self::Audio { data, mime_type } => {
                format!("[audio {mime_type}, {}]", human_size(decoded_len(data)))
            }
            Self::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => {
                let mut out = format!("[resource {uri}");
                if let Some(mime) = mime_type {
                    let _ = write!(out, " ({mime})");
                }
                if let Some(blob) = blob {
                    let _ = write!(out, ", {}", human_size(decoded_len(blob)));
                }
                out.push(']');
                if let Some(text) = text {
                    out.push('\n');
                    out.push_str(text);
                }
                out
            }
            Self::ResourceLink {
                uri,
                name,
                description,
                mime_type,
            } => {
                let mut out = format!("[resource link {uri} {name:?}");
                if let Some(mime) = mime_type {
                    let _ = write!(out, " ({mime})");
                }
                if let Some(description) = description {
                    let _ = write!(out, ": {description}");
                }
                out.push(']');
                out
            }
        }
    }

    /// Whether the part is text (a text part), as opposed to media or a resource.
    pub fn is_text(&self) -> bool {
        matches!(self, Self::Text { .. })
    }
}

/// Encodes bytes as standard, padded base64.
fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The number of bytes base64 text decodes to (without decoding it).
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

/// `532 B`, `5.2 kB`, `50.0 MB` (decimal units).
fn human_size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)] // a size for people to read
    let b = bytes as f64;
    if bytes < 1000 {
        format!("{bytes} B")
    } else if bytes < 1_000_000 {
        format!("{:.1} kB", b / 1e3)
    } else if bytes < 1_000_000_000 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.1} GB", b / 1e9)
    }
}

/// The text a reader of text gets for these parts: text parts as they are, every other part
/// [described](ContentPart::describe), joined by newlines.
///
/// ```
/// use tinyagent::{ContentPart, tools::content_text};
///
/// let parts = [ContentPart::text("the chart:"), ContentPart::image("AAAA", "image/png")];
/// assert_eq!(content_text(&parts), "the chart:\n[image image/png, 3 B]");
/// ```
pub fn content_text(parts: &[ContentPart]) -> String {
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match part {
            ContentPart::Text { text } => out.push_str(text),
            other => out.push_str(&other.describe()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_length_matches_real_decoding() {
        for n in 0..20 {
            let bytes = vec![7u8; n];
            assert_eq!(decoded_len(&encode(&bytes)), n, "{n} bytes");
        }
        assert_eq!(human_size(5_200), "5.2 kB");
        assert_eq!(human_size(50_000_000), "50.0 MB");
    }

    #[test]
    fn every_part_describes_itself_and_round_trips() {
        let parts = vec![
            ContentPart::text("hello"),
            ContentPart::image_bytes(&[0u8; 5200], "image/png"),
            ContentPart::audio_bytes(&[0u8; 10], "audio/wav"),
            ContentPart::resource_text("file:///a.txt", Some("text/plain".into()), "A"),
            ContentPart::resource_blob("file:///b.bin", None, encode(&[1, 2, 3])),
            ContentPart::resource_link("file:///c.csv", "c.csv"),
        ];
        assert_eq!(
            content_text(&parts),
            "hello\n[image image/png, 5.2 kB]\n[audio audio/wav, 10 B]\n\
             [resource file:///a.txt (text/plain)]\nA\n[resource file:///b.bin, 3 B]\n\
             [resource link file:///c.csv \"c.csv\"]"
        );
        let v = serde_json::to_value(&parts).unwrap();
        assert_eq!(v[3]["type"], "resource");
        assert_eq!(v[5]["type"], "resource_link");
        assert!(v[4].get("text").is_none());
        let back: Vec<ContentPart> = serde_json::from_value(v).unwrap();
        assert_eq!(back, parts);
        assert_eq!(parts[1].base64_data().map(str::len), Some(6936));
    }
}
