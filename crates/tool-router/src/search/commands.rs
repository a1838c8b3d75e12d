//! Shorthand said in plain words. A query written as a command line (`mkdir -p src/utils`,
//! `curl https://…`, `date`), as an SQL statement (`SELECT count(*) FROM orders`) or in a
//! developer's shorthand (`PR`, `repo`, `k8s`) names what it wants in a word no tool
//! description uses, so its meaning is added to the query before it is ranked — words and the
//! retrieval model alike. Commands that are also everyday words (`find`, `date`, `cat`, `kill`)
//! count only where the query reads as a command line: they come first and the query is one or
//! two words long, or has a flag (`-name`), a path or a glob. An SQL statement starts with its
//! verb and has the clause that goes with it (`SELECT … FROM`, `INSERT INTO`, `UPDATE … SET`,
//! `DELETE FROM`, `CREATE`/`ALTER`/`DROP TABLE`). The tables are general shell, SQL and
//! developer knowledge, not any catalog's words: written after reading the tuning half's misses
//! (`mkdir`, `find`, `curl`, `date`, a `SELECT`, `PR`s and a `repo` among them), never the
//! held-out half's needs (docs/benchmarks.md).

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

/// Shorthand → its words, matched as whole words without regard to case (`upper`: only when
/// written in capitals, where the lower-case word means something else).
const SHORTHAND: &[(&str, bool, &str)] = &[
    ("pr", true, "pull request"),
    ("prs", true, "pull requests"),
    ("mr", true, "merge request"),
    ("mrs", true, "merge requests"),
    ("ci", true, "continuous integration checks"),
    ("repo", false, "repository"),
    ("repos", false, "repositories"),
    ("k8s", false, "kubernetes"),
    ("db", false, "database"),
    ("dbs", false, "databases"),
    ("docs", false, "documentation"),
    ("config", false, "configuration"),
    ("configs", false, "configurations"),
    ("msg", false, "message"),
    ("msgs", false, "messages"),
    ("dm", true, "direct message"),
    ("info", false, "information"),
    ("auth", false, "authentication"),
    ("deps", false, "dependencies"),
    ("env", false, "environment"),
    ("bug", false, "issue"),
    ("bugs", false, "issues"),
    ("ticket", false, "issue"),
    ("tickets", false, "issues"),
];

/// An SQL statement's verbs, each with a word that must follow it in the statement.
const SQL: &[(&str, &str)] = &[
    ("select", "from"),
    ("insert", "into"),
    ("update", "set"),
    ("delete", "from"),
    ("create", "table"),
    ("alter", "table"),
    ("drop", "table"),
];

/// `query` with the meaning of the commands, SQL and shorthand it uses added (itself when it
/// uses none).
pub(crate) fn expand(query: &str) -> std::borrow::Cow<'_, str> {
    let tokens: Vec<&str> = query.split_whitespace().collect();
    let command_line = tokens.len() <= 2
        || tokens
            .iter()
            .skip(1)
            .any(|t| t.starts_with('-') || t.contains(['/', '*', '~']) || t.starts_with('.'));
    let mut meanings: Vec<&str> = Vec::new();
    if is_sql(&tokens) {
        meanings.push("sql query a database");
    }
    for (i, token) in tokens.iter().enumerate() {
        let word = bare(token);
        let lower = word.to_ascii_lowercase();
        let command = COMMANDS.iter().find(|(c, _, _)| *c == lower);
        if let Some((_, anywhere, meaning)) = command
            && (*anywhere || (i == 0 && command_line))
        {
            meanings.push(meaning);
        }
        let capitals = word.chars().all(|c| c.is_ascii_uppercase());
        let short = SHORTHAND.iter().find(|(s, upper, _)| *s == lower && (!upper || capitals));
        if let Some((_, _, meaning)) = short {
            meanings.push(meaning);
        }
    }
    let mut added = String::new();
    for meaning in meanings {
        if !added.contains(meaning) {
            added.push_str(" (");
            added.push_str(meaning);
            added.push(')');
        }
    }
    if added.is_empty() { query.into() } else { format!("{query}{added}").into() }
}

/// `token` without the punctuation around it.
fn bare(token: &str) -> &str {
    token.trim_matches(|c: char| !c.is_ascii_alphanumeric())
}

/// Whether `tokens` read as an SQL statement: its verb first and the word that goes with it
/// later, and the verb in capitals or the statement with a `WHERE`, `*`, `=`, `(` or `;` (so
/// that "delete from disk" stays a sentence).
fn is_sql(tokens: &[&str]) -> bool {
    let word = |t: &&str| bare(t).to_ascii_lowercase();
    let Some(first) = tokens.first() else { return false };
    let verb = word(first);
    let shaped = first.chars().all(|c| c.is_ascii_uppercase())
        || tokens.iter().any(|t| word(t) == "where" || t.contains(['*', '=', '(', ';']));
    shaped
        && SQL
            .iter()
            .any(|(v, clause)| verb == *v && tokens.iter().skip(1).any(|t| word(t) == *clause))
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

    #[test]
    fn sql_statements_and_shorthand_gain_their_words() {
        assert_eq!(
            expand("SELECT count(*) FROM orders"),
            "SELECT count(*) FROM orders (sql query a database)"
        );
        assert_eq!(
            expand("update users set name = 'x' where id = 1"),
            "update users set name = 'x' where id = 1 (sql query a database)"
        );
        // The verb and its clause in a sentence are not a statement.
        for sentence in ["select the second option", "update the issue title", "delete from disk"] {
            assert!(!expand(sentence).contains("sql"), "{sentence}: {}", expand(sentence));
        }
        assert_eq!(expand("merge PR 12"), "merge PR 12 (pull request)");
        assert_eq!(expand("clone the repo"), "clone the repo (repository)");
        assert_eq!(expand("list k8s pods"), "list k8s pods (kubernetes)");
        // Capitals only where the lower-case word is another: `pr` and `ci` in a sentence stay.
        assert_eq!(expand("the ci of it"), "the ci of it");
        assert_eq!(
            expand("are the CI checks green"),
            "are the CI checks green (continuous integration checks)"
        );
        // Whole words only: `prod`, `dbus`, `configure` are none of them.
        for sentence in ["deploy to prod", "restart dbus", "configure the proxy"] {
            assert_eq!(expand(sentence), sentence);
        }
    }
}
