//! A server's identity: its name for a server shared by everyone; its name and its scope (a
//! session's or a working directory's) for an instance run per scope. Two sessions' instances
//! of one entry are two servers: trusted, kept and told apart by identity, shown by name.

/// What separates a scoped instance's name from its scope in its identity (no server name
/// has it: names are `[A-Za-z0-9_-]`).
const SEPARATOR: char = '\u{1f}';

/// The identity of `name`'s instance tagged `tag` (a session's or a directory's).
pub(crate) fn instance_key(name: &str, tag: &str) -> String {
    format!("{name}{SEPARATOR}{tag}")
}

/// The server name of an identity (`instance_key`'s, or a shared server's name).
pub(crate) fn name_of(key: &str) -> &str {
    key.split(SEPARATOR).next().unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_names_its_server_and_is_never_a_name() {
        let key = instance_key("notes", "/home/ada/project");
        assert_eq!(name_of(&key), "notes");
        assert_eq!(name_of("notes"), "notes");
        assert!(!crate::is_valid_server_name(&key), "no configured name is an identity");
    }
}
