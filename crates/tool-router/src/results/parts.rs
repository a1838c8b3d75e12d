//! Where the parts of a kept result are and how they are read: the string in the server's
//! result, a text decoded or serialized for it, or a file in the private directory (0700,
//! files 0600, named for the process; directories of processes that are gone are removed);
//! pages of them by byte range, moved to character boundaries.

use std::collections::HashMap;
use std::fs;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::results::content::{Paging, floor_char_boundary};

/// Which piece of a tool result a kept part is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PartSource {
    /// The result's `content[i]`: a text, an image, audio, or an embedded resource.
    Content(usize),
    /// The result's `structuredContent`, as JSON text.
    Structured,
}

impl PartSource {
    pub(crate) fn name(self) -> String {
        match self {
            Self::Content(i) => format!("content/{i}"),
            Self::Structured => "structuredContent".to_string(),
        }
    }
}

/// Where a part of a result in memory is: the string in the result, or a text decoded or
/// serialized for it (on each read while in memory; these parts are rare).
pub(crate) fn memory_source(
    result: &Arc<CallToolResult>,
    texts: &HashMap<PartSource, Arc<str>>,
    source: PartSource,
) -> Result<Source, String> {
    match texts.get(&source) {
        Some(text) => Ok(Source::Owned(text.clone())),
        None if borrowed(result, source).is_some() => Ok(Source::Shared(result.clone(), source)),
        None => owned_text(result, source).map(|t| Source::Owned(t.into())),
    }
}

/// A part's text (or base64) as it sits in the server's result, when it is there as a string.
pub(crate) fn borrowed(result: &CallToolResult, source: PartSource) -> Option<&str> {
    let PartSource::Content(i) = source else { return None };
    match result.content.get(i)? {
        ContentBlock::Text(text) => Some(&text.text),
        ContentBlock::Image(image) => Some(&image.data),
        ContentBlock::Audio(audio) => Some(&audio.data),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => Some(text),
            ResourceContents::BlobResourceContents { blob, mime_type, .. }
                if !mime_type.as_deref().is_some_and(crate::results::content::is_textual) =>
            {
                Some(blob)
            }
            _ => None,
        },
        _ => None,
    }
}

/// A part's text that is not a string in the result: `structuredContent` as JSON, or an
/// embedded textual blob decoded.
pub(crate) fn owned_text(result: &CallToolResult, source: PartSource) -> Result<String, String> {
    match source {
        PartSource::Structured => serde_json::to_string(&result.structured_content)
            .map_err(|e| format!("structuredContent cannot be serialized: {e}")),
        PartSource::Content(i) => match result.content.get(i) {
            Some(ContentBlock::Resource(embedded)) => match &embedded.resource {
                ResourceContents::BlobResourceContents { blob, .. } => STANDARD
                    .decode(blob.trim())
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| "the embedded blob is not UTF-8 text".to_string()),
                ResourceContents::TextResourceContents { text, .. } => Ok(text.clone()),
                _ => Err(format!("content/{i} holds no text")),
            },
            _ => Err(format!("content/{i} holds no text")),
        },
    }
}

/// The store's directory, made on first use: private to this user, named for this process.
/// Directories left by router processes that are gone are removed first.
pub(crate) fn results_dir(dir: &mut Option<PathBuf>) -> std::io::Result<PathBuf> {
    if let Some(dir) = dir {
        return Ok(dir.clone());
    }
    let tmp = std::env::temp_dir();
    remove_orphans(&tmp);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = tmp.join(format!("mcp-router-results-{}-{nanos}", std::process::id()));
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&path)?;
    *dir = Some(path.clone());
    Ok(path)
}

fn remove_orphans(tmp: &Path) {
    let Ok(read) = fs::read_dir(tmp) else { return };
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix("mcp-router-results-").and_then(|r| r.split('-').next());
        if let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok())
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)
}

/// Where a part's text is.
pub(crate) enum Source {
    Shared(Arc<CallToolResult>, PartSource),
    Owned(Arc<str>),
    File(PathBuf, usize),
}

impl Source {
    pub(crate) fn whole(&self) -> Result<String, String> {
        match self {
            Self::Shared(result, source) => Ok(borrowed(result, *source).unwrap_or("").to_string()),
            Self::Owned(text) => Ok(text.to_string()),
            Self::File(path, _) => fs::read_to_string(path).map_err(|e| e.to_string()),
        }
    }

    /// Write the whole text to a new private file at `path`, without copying it first.
    pub(crate) fn write_to(&self, path: &Path) -> Result<(), String> {
        let written = match self {
            Self::Shared(result, source) => {
                write_private(path, borrowed(result, *source).unwrap_or("").as_bytes())
            }
            Self::Owned(text) => write_private(path, text.as_bytes()),
            Self::File(from, _) => fs::copy(from, path).map(drop),
        };
        written.map_err(|e| e.to_string())
    }

    /// Text from `offset` (moved back to a character start), at most `budget` bytes, cut on a
    /// character boundary; with the paging facts reads give.
    pub(crate) fn page(
        &self,
        offset: usize,
        budget: usize,
    ) -> Result<(String, Option<Paging>), String> {
        let (text, start, total) = match self {
            Self::Shared(result, source) => {
                let text = borrowed(result, *source).unwrap_or("");
                let start = floor_char_boundary(text, offset.min(text.len()));
                (page_of(text, start, budget).to_string(), start, text.len())
            }
            Self::Owned(text) => {
                let start = floor_char_boundary(text, offset.min(text.len()));
                (page_of(text, start, budget).to_string(), start, text.len())
            }
            Self::File(path, total) => {
                let (text, start) = file_page(path, offset.min(*total), budget, *total)
                    .map_err(|e| format!("the kept result cannot be read: {e}"))?;
                (text, start, *total)
            }
        };
        if offset > total {
            return Err(format!("offset {offset} is past the end of the text ({total} bytes)"));
        }
        let end = start + text.len();
        Ok((text, Paging::of(start, total, end)))
    }
}

fn page_of(text: &str, start: usize, budget: usize) -> &str {
    let end = floor_char_boundary(text, start.saturating_add(budget));
    &text[start..end]
}

/// A page of a file of UTF-8 text: from `offset` moved back to a character start (at most 3
/// bytes), `budget` bytes at most, ending on a character boundary.
fn file_page(
    path: &Path,
    offset: usize,
    budget: usize,
    total: usize,
) -> std::io::Result<(String, usize)> {
    let from = offset.saturating_sub(3);
    let to = offset.saturating_add(budget).saturating_add(1).min(total);
    let mut file = fs::File::open(path)?;
    file.seek(SeekFrom::Start(from as u64))?;
    let mut bytes = vec![0; to - from];
    file.read_exact(&mut bytes)?;
    let is_start = |b: u8| b & 0xC0 != 0x80;
    let mut start = offset - from;
    while start > 0 && start < bytes.len() && !is_start(bytes[start]) {
        start -= 1;
    }
    let mut end = (offset + budget).min(total) - from;
    while end > start && end < bytes.len() && !is_start(bytes[end]) {
        end -= 1;
    }
    bytes.truncate(end);
    bytes.drain(..start);
    let text = String::from_utf8(bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((text, from + start))
}
