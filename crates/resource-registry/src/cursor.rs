//! Opaque cursors: `c1.` + base64url of `{kind}:{generation}:{offset}`. The generation is the
//! registry's change counter: a cursor issued before a registration or unregistration is
//! stale, because the offsets it counts no longer mean the same items.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const PREFIX: &str = "c1.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Resources,
    Templates,
}

impl Kind {
    fn tag(self) -> char {
        match self {
            Self::Resources => 'r',
            Self::Templates => 't',
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CursorError {
    Invalid,
    Stale,
}

pub(crate) fn encode(kind: Kind, generation: u64, offset: usize) -> String {
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(format!("{}:{generation}:{offset}", kind.tag())))
}

/// The offset a cursor points at. `None` and the empty string mean the first page.
pub(crate) fn decode(
    cursor: Option<&str>,
    kind: Kind,
    generation: u64,
) -> Result<usize, CursorError> {
    let Some(cursor) = cursor.filter(|c| !c.is_empty()) else {
        return Ok(0);
    };
    let raw = cursor.strip_prefix(PREFIX).ok_or(CursorError::Invalid)?;
    let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| CursorError::Invalid)?;
    let text = String::from_utf8(bytes).map_err(|_| CursorError::Invalid)?;
    let mut fields = text.split(':');
    let (Some(tag), Some(issued), Some(offset), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(CursorError::Invalid);
    };
    if tag.len() != 1 || !tag.starts_with(kind.tag()) {
        return Err(CursorError::Invalid);
    }
    let issued: u64 = issued.parse().map_err(|_| CursorError::Invalid)?;
    let offset: usize = offset.parse().map_err(|_| CursorError::Invalid)?;
    if issued != generation {
        return Err(CursorError::Stale);
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let c = encode(Kind::Resources, 7, 100);
        assert_eq!(decode(Some(&c), Kind::Resources, 7), Ok(100));
        assert_eq!(decode(Some(&c), Kind::Resources, 8), Err(CursorError::Stale));
        assert_eq!(decode(Some(&c), Kind::Templates, 7), Err(CursorError::Invalid));
        assert_eq!(decode(None, Kind::Resources, 1), Ok(0));
        assert_eq!(decode(Some(""), Kind::Resources, 1), Ok(0));
        for bad in [
            "x",
            "c1.",
            "c1.!!!",
            "c1.cjox",
            &format!("c1.{}", URL_SAFE_NO_PAD.encode("r:1:2:3")),
            &"c1.a".repeat(10_000),
        ] {
            assert_eq!(decode(Some(bad), Kind::Resources, 1), Err(CursorError::Invalid), "{bad}");
        }
    }
}
