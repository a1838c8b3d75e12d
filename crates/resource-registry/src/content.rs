//! What a handler returns, and its normalisation into MCP contents.

use base64::Engine as _;
use rmcp::model::ResourceContents;

/// A handler's answer: text, or bytes (sent base64-encoded as a blob).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// UTF-8 text.
    Text(String),
    /// Binary data.
    Binary(Vec<u8>),
}

impl From<String> for ResourceBody {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ResourceBody {
    fn from(text: &str) -> Self {
        Self::Text(text.to_string())
    }
}

impl From<Vec<u8>> for ResourceBody {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Binary(bytes)
    }
}

impl ResourceBody {
    /// Contents for `uri`: `mime_type` is the registered one, else `text/plain` for text and
    /// `application/octet-stream` for bytes.
    pub(crate) fn into_contents(self, uri: &str, mime_type: Option<&str>) -> ResourceContents {
        match self {
            Self::Text(text) => {
                ResourceContents::text(text, uri).with_mime_type(mime_type.unwrap_or("text/plain"))
            }
            Self::Binary(bytes) => {
                let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
                ResourceContents::blob(blob, uri)
                    .with_mime_type(mime_type.unwrap_or("application/octet-stream"))
            }
        }
    }
}
