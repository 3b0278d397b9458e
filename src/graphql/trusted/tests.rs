use std::{io::Write, sync::LazyLock};

use super::*;
use crate::{
    cursor::{CursorCodec, DEVELOPMENT_KEY_SPEC, KeyRing},
    pagination::PageLimits,
};

/// The shop's API, built once.
static API: LazyLock<Api> = LazyLock::new(|| {
    let text = include_str!("../../../examples/shop/dynarelay.toml");
    let model = crate::model::check::parse("dynarelay.toml", text).expect("the shop model");
    let ring: KeyRing = DEVELOPMENT_KEY_SPEC.parse().expect("a ring");
    super::super::build_schema(
        Box::leak(Box::new(model)),
        PageLimits::default(),
        CursorCodec::new(&ring),
        QueryLimits::default(),
    )
    .expect("the schema")
});

const USER: &str = "query User($id: String!) { user(userId: $id) { name } }";
const PRODUCT: &str = "query Product { product(sku: \"S\") { name } }";

fn manifest(text: &str) -> tempfile_path::Path {
    tempfile_path::Path::with(text)
}

/// A manifest written to a file of its own, removed when dropped.
mod tempfile_path {
    pub struct Path(pub std::path::PathBuf);
    impl Path {
        pub fn with(text: &str) -> Self {
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!(
                "dynarelay-manifest-{}-{n}.json",
                std::process::id()
            ));
            let mut file = std::fs::File::create(&path).unwrap();
            super::Write::write_all(&mut file, text.as_bytes()).unwrap();
            Self(path)
        }
    }
    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn load(texts: &[&str]) -> Result<TrustedDocuments, LoadErrors> {
    let files: Vec<_> = texts.iter().map(|text| manifest(text)).collect();
    let paths: Vec<_> = files.iter().map(|file| file.0.clone()).collect();
    TrustedDocuments::load(&paths, &API, &QueryLimits::default())
}

fn sha256(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

fn apollo(operations: &[(&str, &str, &str)]) -> String {
    let operations: Vec<_> = operations
        .iter()
        .map(|(id, name, body)| {
            serde_json::json!({ "id": id, "name": name, "type": "query", "body": body })
        })
        .collect();
    serde_json::json!({
        "format": "apollo-persisted-query-manifest",
        "version": 1,
        "operations": operations,
    })
    .to_string()
}

#[test]
fn listed_operations_are_found_by_each_client_s_id_and_by_their_exact_text() {
    let relay = serde_json::json!({ "0f5e": PRODUCT }).to_string();
    let documents = load(&[&apollo(&[(&sha256(USER), "User", USER)]), &relay]).unwrap();
    assert_eq!(documents.len(), 2);
    let user = documents.by_id(Id::Apollo(&sha256(USER))).unwrap();
    assert_eq!(user.name.as_deref(), Some("User"));
    assert!(user.document.validated());
    let product = documents.by_id(Id::Relay("0f5e")).unwrap();
    assert_eq!(
        product.name.as_deref(),
        Some("Product"),
        "the document's own name"
    );
    assert_eq!(product.sha256, sha256(PRODUCT));
    // documentId: `sha256:` names a text by its hash, whichever manifest listed it; anything
    // else is a manifest's id.
    let by_hash = format!("sha256:{}", sha256(PRODUCT));
    assert!(documents.by_id(Id::Document(&by_hash)).is_some());
    assert!(documents.by_id(Id::Document("0f5e")).is_some());
    // Apollo's hash is the SHA-256 of the text, whichever manifest listed it.
    assert!(documents.by_id(Id::Apollo(&sha256(PRODUCT))).is_some());
    // Ids are not hashes of other kinds, nor hashes with other spellings.
    assert!(documents.by_id(Id::Relay(&sha256(PRODUCT))).is_none());
    assert!(documents.by_id(Id::Document(&sha256(PRODUCT))).is_none());
    let upper = format!("sha256:{}", sha256(PRODUCT).to_uppercase());
    assert!(documents.by_id(Id::Document(&upper)).is_none());
    assert!(documents.by_id(Id::Document("md5:0f5e")).is_none());
    // Text: exactly, not a whitespace or comment variant.
    assert!(documents.by_text(PRODUCT).is_some());
    assert!(documents.by_text(&format!("{PRODUCT} ")).is_none());
    assert!(documents.by_text(&format!("# hi\n{PRODUCT}")).is_none());
}

#[test]
fn every_problem_of_every_manifest_is_reported_at_once_with_its_operation_and_place() {
    let broken = apollo(&[
        ("a", "Bad", "query Bad { user(userId: \"u\") { nope } }"),
        ("b", "Syntax", "query Syntax { user("),
        ("c", "Fine", USER),
        (
            "d",
            "Undeclared",
            "query Undeclared { user(userId: $id) { name } }",
        ),
        (
            "e",
            "Two",
            "subscription Two { a: nodeChanged(id: \"x\") { id } b: nodeChanged(id: \"y\") { id } }",
        ),
    ]);
    let not_json = "{ \"x\": ";
    let errors = load(&[&broken, not_json]).unwrap_err();
    let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
    let text = errors.to_string();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[0].contains("operation \"a\" (Bad) at 1:33 of its text: Unknown field \"nope\""),
        "{text}"
    );
    assert!(
        lines[1].ends_with("operation \"b\" (Syntax) at 1:21 of its text: expected name"),
        "{text}"
    );
    assert!(lines[2].contains("operation \"d\" (Undeclared)"), "{text}");
    assert!(lines[2].contains("$id"), "{text}");
    assert!(lines[3].contains("operation \"e\" (Two)"), "{text}");
    assert!(
        lines[4].ends_with(":1:7: is not valid JSON: EOF while parsing a value"),
        "{text}"
    );
}

#[test]
fn an_operation_over_the_server_s_limits_does_not_load() {
    let deep = "query Deep { user(userId: \"u\") { purchases { edges { node { amount } } } } }";
    let manifest = manifest(&apollo(&[("deep", "Deep", deep)]));
    let paths = [manifest.0.clone()];
    let shallow = QueryLimits {
        depth: 3,
        ..QueryLimits::default()
    };
    let errors = TrustedDocuments::load(&paths, &API, &shallow).unwrap_err();
    assert!(
        errors
            .to_string()
            .contains("is nested 5 deep; the server's --max-depth is 3 (QUERY_TOO_DEEP)"),
        "{errors}"
    );
    // Control: under the default limits it loads.
    assert!(TrustedDocuments::load(&paths, &API, &QueryLimits::default()).is_ok());
}

#[test]
fn one_id_for_two_documents_is_refused_and_one_document_twice_is_not() {
    let one = serde_json::json!({ "x": USER }).to_string();
    let other = serde_json::json!({ "x": PRODUCT }).to_string();
    assert!(load(&[&one, &one]).is_ok());
    let errors = load(&[&one, &other]).unwrap_err();
    assert!(
        errors.to_string().contains("operation \"x\" (Product)"),
        "{errors}"
    );
}

fn verdict(
    documents: &TrustedDocuments,
    mode: TrustedMode,
    require_ids: bool,
    asked: Asked<'_>,
    exempt: bool,
) -> String {
    match judge(documents, mode, require_ids, asked, || exempt) {
        Verdict::Listed(entry) => format!("listed {}", entry.id),
        Verdict::Unlisted => "unlisted".to_owned(),
        Verdict::Refused(refusal) => refusal.code().to_owned(),
    }
}

#[test]
fn what_runs_in_each_mode() {
    let documents = load(&[&serde_json::json!({ "u": USER }).to_string()]).unwrap();
    let text = |text| Asked {
        text: Some(text),
        id: None,
    };
    let id = |id| Asked {
        text: None,
        id: Some(id),
    };
    let other = "{ product(sku: \"S\") { name } }";
    let hash = sha256(other);
    let prefixed = format!("sha256:{hash}");
    let listed = sha256(USER);
    let both = |text, id| Asked {
        text: Some(text),
        id: Some(id),
    };
    const MISMATCH: &str = "BAD_USER_INPUT";
    const NOT_FOUND: &str = "PERSISTED_QUERY_NOT_FOUND";
    use TrustedMode::{Enforce, Log, Off};
    let cases: Vec<(TrustedMode, bool, Asked<'_>, bool, &str)> = vec![
        // Listed operations run in every mode, by id or by their text.
        (Enforce, false, id(Id::Relay("u")), false, "listed u"),
        (Enforce, false, text(USER), false, "listed u"),
        (Off, false, id(Id::Document("u")), false, "listed u"),
        // Requiring ids refuses even a listed text, unless the caller is exempt.
        (
            Enforce,
            true,
            text(USER),
            false,
            "PERSISTED_QUERY_ID_REQUIRED",
        ),
        (Enforce, true, text(USER), true, "listed u"),
        (Enforce, true, id(Id::Relay("u")), false, "listed u"),
        // Other documents: refused when enforcing, unless exempt; they run otherwise.
        (
            Enforce,
            false,
            text(other),
            false,
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            Enforce,
            true,
            text(other),
            false,
            "PERSISTED_QUERY_ID_REQUIRED",
        ),
        (Enforce, false, text(other), true, "unlisted"),
        (Log, false, text(other), false, "unlisted"),
        (Off, false, text(other), false, "unlisted"),
        // Unknown ids: only Apollo's hash may name an automatic persisted query, and not when
        // enforcing.
        (
            Enforce,
            false,
            id(Id::Apollo(&hash)),
            false,
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (Log, false, id(Id::Apollo(&hash)), false, "unlisted"),
        (Enforce, false, id(Id::Apollo(&hash)), true, "unlisted"),
        (
            Log,
            false,
            id(Id::Relay("nope")),
            false,
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            Off,
            false,
            id(Id::Document("sha256:00")),
            false,
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        // An automatic persisted query's registration is judged by its text.
        (
            Enforce,
            false,
            Asked {
                text: Some(other),
                id: Some(Id::Apollo(&hash)),
            },
            false,
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            Log,
            false,
            Asked {
                text: Some(other),
                id: Some(Id::Apollo(&hash)),
            },
            false,
            "unlisted",
        ),
        // A hash naming nothing listed, with a text it is not the hash of: refused in every
        // mode, whichever form the hash came in.
        (Log, false, both(USER, Id::Apollo(&hash)), false, MISMATCH),
        (
            Off,
            false,
            both(USER, Id::Document(&prefixed)),
            false,
            MISMATCH,
        ),
        // `documentId`'s `sha256:` with the text it is the hash of: no listed operation has
        // it, and only Apollo's hash registers a text.
        (
            Log,
            false,
            both(other, Id::Document(&prefixed)),
            false,
            NOT_FOUND,
        ),
        // A plain id naming nothing, with a text: not found.
        (Log, false, both(other, Id::Relay("nope")), false, NOT_FOUND),
        // A listed operation's id with another text, in every form and mode.
        (
            Enforce,
            false,
            both(other, Id::Apollo(&listed)),
            false,
            MISMATCH,
        ),
        (
            Log,
            false,
            both(other, Id::Apollo(&listed)),
            false,
            MISMATCH,
        ),
        // An id with another text.
        (
            Off,
            false,
            Asked {
                text: Some(other),
                id: Some(Id::Relay("u")),
            },
            false,
            "BAD_USER_INPUT",
        ),
        (
            Enforce,
            false,
            Asked {
                text: Some(USER),
                id: Some(Id::Relay("u")),
            },
            false,
            "listed u",
        ),
    ];
    for (mode, require_ids, asked, exempt, expected) in cases {
        assert_eq!(
            verdict(&documents, mode, require_ids, asked, exempt),
            expected,
            "{mode:?}, ids required: {require_ids}, {asked:?}, exempt: {exempt}"
        );
    }
}
