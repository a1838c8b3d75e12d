//! JSON strings written a word at a time: the bytes serde_json writes for a `&str` (the same
//! escapes, `\u00XX` in lower-case hex for the other control characters, nothing else
//! escaped), but eight bytes are checked at once, so a long text with nothing to escape — a
//! read's — costs a copy instead of serde_json's lookup per byte.

/// Eight copies of a byte.
const fn repeated(byte: u8) -> u64 {
    u64::from_le_bytes([byte; 8])
}

const ONES: u64 = repeated(1);
const HIGH: u64 = repeated(0x80);

/// Whether some byte of `word` is below 0x20, a `"` or a `\`. A byte of 0x80 or more never
/// counts (its high bit masks it), as none of them is escaped.
fn needs_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(repeated(0x20)) & !word;
    let quote = word ^ repeated(b'"');
    let backslash = word ^ repeated(b'\\');
    let zero = |v: u64| v.wrapping_sub(ONES) & !v;
    (below_space | zero(quote) | zero(backslash)) & HIGH != 0
}

/// Whether serde_json escapes `byte`.
fn escaped(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The escape of a byte that has one ([`escaped`]): `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
/// `\t`, else `\u00XX`.
fn escape(byte: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x00..=0x1f => {
            let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex[0], hex[1]]);
            return;
        }
        _ => return,
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// `text` as a JSON string (quotes included) at the end of `out`, byte for byte as
/// `serde_json` writes it.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let (mut start, mut at) = (0, 0);
    while at < bytes.len() {
        if let Some(word) = bytes.get(at..at + 8) {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(word);
            if !needs_escape(u64::from_le_bytes(eight)) {
                at += 8;
                continue;
            }
        }
        let end = (at + 8).min(bytes.len());
        while at < end {
            if escaped(bytes[at]) {
                out.extend_from_slice(&bytes[start..at]);
                escape(bytes[at], out);
                start = at + 1;
            }
            at += 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ours(text: &str) -> String {
        let mut out = Vec::new();
        write_json_str(&mut out, text);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn every_byte_that_needs_escaping_is_escaped_as_serde_json_does() {
        let all: String = (0u8..=0x7f).map(char::from).collect();
        for text in [
            all.as_str(),
            "",
            "plain text that is long enough to take whole words at a time",
            "é😀\u{7f}\"\\/\n",
            "12345678\"12345678\\1234567\u{1}",
        ] {
            assert_eq!(ours(text), serde_json::to_string(text).expect("json"), "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn any_text_is_written_as_serde_json_writes_it(text in any::<String>()) {
            prop_assert_eq!(ours(&text), serde_json::to_string(&text).expect("json"));
        }

        #[test]
        fn text_with_many_escapes_is_written_as_serde_json_writes_it(
            text in "[a-z\"\\\\\n\t\u{0}-\u{1f}é]{0,64}"
        ) {
            prop_assert_eq!(ours(&text), serde_json::to_string(&text).expect("json"));
        }
    }
}
