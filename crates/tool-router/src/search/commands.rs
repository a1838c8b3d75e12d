//! Shell commands said in plain words: a query written as a command line (`mkdir -p src/utils`,
//! `curl https://…`, `date`) names what it wants in a word no tool description uses, so the
//! command's meaning is added to the query before it is ranked — words and the retrieval model
//! alike. Commands that are also everyday words (`find`, `date`, `cat`, `kill`) count only
//! where the query reads as a command line: they come first and the query is one or two words
//! long, or has a flag (`-name`), a path or a glob. The table is general shell knowledge, not
//! any catalog's words: written after reading the tuning half's misses (`mkdir`, `find`, `curl`
//! and `date` among them), never the held-out half's needs (docs/benchmarks.md).

/// Command → its meaning in words. `true`: the command is no everyday word (counts anywhere).
const COMMANDS: &[(&str, bool, &str)] = &[
    ("ls", true, "list files in a directory"),
    ("dir", false, "list files in a directory"),
    ("cat", false, "read the contents of a file"),
    ("head", false, "read the first lines of a file"),
    ("tail", false, "read the last lines of a file"),
    ("less", false, "read a file"),
    ("more", false, "read a file"),
    ("mkdir", true, "create a directory folder"),
    ("rmdir", true, "delete a directory"),
    ("rm", true, "delete remove a file"),
    ("mv", true, "move rename a file"),
    ("cp", true, "copy a file"),
    ("touch", false, "create an empty file"),
    ("find", false, "search for files by name"),
    ("locate", false, "search for files by name"),
    ("grep", true, "search text in files"),
    ("rg", true, "search text in files"),
    ("ag", true, "search text in files"),
    ("sed", true, "edit replace text in a file"),
    ("diff", false, "compare differences"),
    ("tree", false, "directory tree"),
    ("stat", false, "file information metadata"),
    ("du", true, "disk usage size of files"),
    ("df", true, "free disk space"),
    ("chmod", true, "change file permissions"),
    ("chown", true, "change file owner"),
    ("curl", true, "fetch a url web page http request"),
    ("wget", true, "download fetch a url web page"),
    ("date", false, "current date and time"),
    ("cal", true, "calendar dates"),
    ("ps", true, "list running processes"),
    ("kill", false, "stop a running process"),
    ("top", false, "running processes cpu memory usage"),
    ("pwd", true, "current working directory"),
    ("whoami", true, "current user identity"),
    ("env", false, "environment variables"),
    ("man", false, "documentation manual"),
    ("ping", false, "check a host is reachable"),
    ("ssh", true, "remote shell on a server"),
    ("tar", true, "archive compress extract files"),
    ("zip", false, "archive compress files"),
    ("unzip", true, "extract an archive"),
    ("psql", true, "sql query a postgres database"),
    ("mysql", true, "sql query a mysql database"),
    ("sqlite3", true, "sql query a sqlite database"),
    ("jq", true, "query json"),
];

/// `query` with the meaning of the commands it uses added (itself when it uses none).
pub(crate) fn expand(query: &str) -> std::borrow::Cow<'_, str> {
    let tokens: Vec<&str> = query.split_whitespace().collect();
    let command_line = tokens.len() <= 2
        || tokens
            .iter()
            .skip(1)
            .any(|t| t.starts_with('-') || t.contains(['/', '*', '~']) || t.starts_with('.'));
    let mut added = String::new();
    for (i, token) in tokens.iter().enumerate() {
        let word = token.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_ascii_lowercase();
        let Some((_, anywhere, meaning)) = COMMANDS.iter().find(|(c, _, _)| *c == word) else {
            continue;
        };
        if (*anywhere || (i == 0 && command_line)) && !added.contains(meaning) {
            added.push_str(" (");
            added.push_str(meaning);
            added.push(')');
        }
    }
    if added.is_empty() { query.into() } else { format!("{query}{added}").into() }
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn command_lines_gain_their_meaning_and_sentences_keep_theirs() {
        assert_eq!(expand("mkdir -p src/utils"), "mkdir -p src/utils (create a directory folder)");
        assert_eq!(expand("date"), "date (current date and time)");
        assert_eq!(expand("find . -name '*.rs'"), "find . -name '*.rs' (search for files by name)");
        assert_eq!(
            expand("curl https://example.com | jq .name"),
            "curl https://example.com | jq .name (fetch a url web page http request) (query json)"
        );
        // Everyday words in a sentence are left alone; a command that is no word is not.
        for sentence in ["find the user named Bob", "set a date for the meeting", "what time is it"]
        {
            assert_eq!(expand(sentence), sentence);
        }
        assert_eq!(
            expand("which ls flag shows hidden files"),
            "which ls flag shows hidden files (list files in a directory)"
        );
        // Only whole words: `rmdir` is not `rm`, `lsblk` is not `ls`.
        assert_eq!(expand("rmdir build"), "rmdir build (delete a directory)");
        assert_eq!(expand("lsblk"), "lsblk");
    }
}
