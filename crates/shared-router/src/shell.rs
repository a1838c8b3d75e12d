//! Words as a shell reads them, for the commands the router prints (`cd DIR && …`).

/// `text` as one shell word: as it is when that is safe, else single-quoted.
pub fn shell_word(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./,:=@%+".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}
