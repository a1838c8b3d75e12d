use rmcp::model::{SkillFrontmatter, SkillResource};
use serde_json::json;

use super::*;

fn skill(files: &[(&str, &[u8])]) -> Skill {
    let files = files.iter().map(|(uri, bytes)| SkillResource::from_bytes(*uri, bytes)).collect();
    Skill::new(
        "skill://pdf/SKILL.md",
        SkillFrontmatter::new("pdf", "Work with PDFs"),
        SkillResources::Files(files),
    )
}

#[test]
fn frontmatter_is_split_from_the_body_and_compared_field_by_field() {
    let text = "---\nname: pdf\ndescription: Work with PDFs\nlicense: MIT\n---\n\n# Body\n";
    let (frontmatter, body) = split_frontmatter(text).expect("frontmatter");
    assert_eq!(body, "\n# Body\n");
    assert_eq!(frontmatter["license"], "MIT");
    let listed = json!({"name": "pdf", "description": "Work with PDFs", "license": "MIT"});
    assert!(frontmatter_drift(&frontmatter, &listed).is_empty());
    let listed = json!({"name": "pdf", "description": "Exfiltrate credentials"});
    assert_eq!(
        frontmatter_drift(&frontmatter, &listed),
        [
            "description: the file has 16 bytes (sha256 62582b812abb…), the entry 24 bytes (sha256 de9a87bf65c3…)",
            "license: the file has 5 bytes (sha256 529fc91e3f97…), the entry absent",
        ]
    );
    for (text, why) in [
        ("# no frontmatter\n", "it does not begin with a --- frontmatter block"),
        ("---\nname: pdf\n", "its frontmatter block is not closed by ---"),
        ("---\n- a list\n---\n", "its frontmatter is not a mapping"),
    ] {
        assert_eq!(split_frontmatter(text).expect_err(text), why);
    }
    let crlf = "\u{feff}---\r\nname: pdf\r\n---\r\nbody";
    assert_eq!(split_frontmatter(crlf).expect("crlf").1, "body");
}

#[test]
fn a_loaded_skill_checks_its_files_and_refuses_the_unlisted_ones() {
    let loaded = LoadedSkills::default();
    let pdf = skill(&[("skill://pdf/SKILL.md", b"x"), ("skill://pdf/ref/FORMS.md", b"forms")]);
    // Before the load: any read goes through unchecked.
    assert!(loaded.before_read("docs", "skill://pdf/other.md").expect("not loaded").is_none());
    loaded.load("docs", &pdf);
    let expected = loaded.before_read("docs", "skill://pdf/ref/FORMS.md").expect("listed");
    let expected = expected.expect("checked");
    assert_eq!(expected.skill, "pdf");
    assert!(expected.entry.verify(b"forms").is_ok());
    assert!(expected.entry.verify(b"forms!").is_err());
    let refused = loaded.before_read("docs", "skill://pdf/other.md").expect_err("unlisted");
    assert!(refused.contains("not in the manifest of skill \"pdf\""), "{refused}");
    // Another server's URI, or another folder, is not this skill's business.
    assert!(loaded.before_read("notes", "skill://pdf/other.md").expect("other server").is_none());
    assert!(loaded.before_read("docs", "skill://pdfx/SKILL.md").expect("sibling").is_none());
    // A new load replaces the manifest.
    loaded.load("docs", &skill(&[("skill://pdf/SKILL.md", b"x"), ("skill://pdf/other.md", b"o")]));
    assert!(loaded.before_read("docs", "skill://pdf/other.md").expect("now listed").is_some());
    assert!(loaded.before_read("docs", "skill://pdf/ref/FORMS.md").is_err());
}

#[test]
fn the_bytes_of_a_read_are_its_one_contents_text_or_decoded_blob() {
    let text = ResourceContents::text("hello", "skill://pdf/a.md");
    assert_eq!(
        read_bytes(std::slice::from_ref(&text), "skill://pdf/a.md").expect("text"),
        b"hello"
    );
    let blob = ResourceContents::blob("aGk=", "skill://pdf/b.bin");
    assert_eq!(read_bytes(&[blob], "skill://pdf/b.bin").expect("blob"), b"hi");
    let two = [text.clone(), ResourceContents::text("x", "skill://pdf/c.md")];
    assert!(read_bytes(&two, "skill://pdf/z.md").is_err());
    assert_eq!(read_bytes(&two, "skill://pdf/a.md").expect("by uri"), b"hello");
}
