//! The book under `docs/`: its generated references match the code's own descriptions (the
//! model file's JSON Schema, the command line's clap definitions), it builds with mdBook, and
//! every link inside it, and from the README into it, resolves, anchors included.
//!
//! The generated chapters are rewritten by the tests when they are stale, and the tests then
//! fail: run them again and commit the files (as with `schema.graphql`).

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt::Write as _,
    path::Path,
};

use clap::CommandFactory;
use serde_json::Value;

use crate::helpers::check_generated;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One line of Markdown table cell text: newlines joined, pipes escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

// ------------------------------------------------------------------------- commands and flags

/// The command and flag reference, from clap's definitions of `dynarelay`.
fn commands_reference() -> String {
    let mut cli = dynarelay::config::Cli::command();
    cli.build();
    let mut out = String::from(
        "# Commands and flags\n\n<!-- Generated from the command line's definitions (src/config.rs) by \
         tests/api/docs.rs: edit those, not this file. -->\n\n",
    );
    writeln!(
        out,
        "{}\n",
        cli.get_long_about()
            .or(cli.get_about())
            .map(ToString::to_string)
            .unwrap_or_default()
    )
    .unwrap();
    writeln!(
        out,
        "Every flag can also be set through the environment variable shown. A command that fails \
         prints one `error:` message on stderr and exits with status 1; a command line that cannot \
         be parsed exits with status 2.\n"
    )
    .unwrap();
    command_section(&mut out, &cli, "dynarelay");
    out
}

fn command_section(out: &mut String, command: &clap::Command, path: &str) {
    let args: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        // Global flags are listed once, at the top.
        .filter(|arg| path == "dynarelay" || !arg.is_global_set())
        .collect();
    if path != "dynarelay" {
        writeln!(out, "## `{path}`\n").unwrap();
        if let Some(about) = command.get_long_about().or(command.get_about()) {
            writeln!(out, "{about}\n").unwrap();
        }
    }
    if !args.is_empty() {
        writeln!(
            out,
            "| flag | environment variable | default | meaning |\n|---|---|---|---|"
        )
        .unwrap();
        for arg in args {
            let name = match (arg.get_long(), arg.get_value_names()) {
                (Some(long), Some(values))
                    if arg.get_num_args().is_none_or(|n| n.takes_values()) =>
                {
                    format!("`--{long} <{}>`", values.join(" "))
                }
                (Some(long), _) => format!("`--{long}`"),
                (None, _) => format!("`<{}>`", arg.get_id()),
            };
            let env = arg
                .get_env()
                .map(|env| format!("`{}`", env.to_string_lossy()))
                .unwrap_or_default();
            let defaults: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|value| match value.to_string_lossy() {
                    empty if empty.is_empty() => "empty".to_owned(),
                    value => format!("`{value}`"),
                })
                .collect();
            let defaults = if arg.is_required_set() {
                vec!["required".to_owned()]
            } else {
                defaults
            };
            let mut help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            let possible: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|value| !value.is_hide_set())
                .map(|value| match value.get_help() {
                    Some(help) => format!("`{}` ({help})", value.get_name()),
                    None => format!("`{}`", value.get_name()),
                })
                .collect();
            // Every help ends a sentence, so that what follows it (the values allowed) starts
            // one of its own.
            if !help.is_empty() && !help.trim_end().ends_with(['.', '!', '?', ':']) {
                help.truncate(help.trim_end().len());
                help.push('.');
            }
            if !possible.is_empty()
                && !matches!(defaults.as_slice(), [d] if d == "`true`" || d == "`false`")
            {
                write!(help, " One of: {}.", possible.join(", ")).unwrap();
            }
            if arg.is_global_set() {
                help.push_str(" (All commands.)");
            }
            writeln!(
                out,
                "| {name} | {env} | {} | {} |",
                defaults.join(", "),
                cell(&help)
            )
            .unwrap();
        }
        out.push('\n');
    }
    for sub in command
        .get_subcommands()
        .filter(|sub| sub.get_name() != "help")
    {
        command_section(out, sub, &format!("{path} {}", sub.get_name()));
    }
}

/// `docs/src/reference/commands.md` is clap's definitions of the command line, rendered.
#[test]
fn the_command_reference_is_generated_from_the_command_line() {
    let reference = commands_reference();
    // Each flag's cell reads as sentences: its help ends one before the values allowed begin
    // (`--trace-protocol` once ran "or `grpc` One of: ...").
    for line in reference.lines().filter(|line| line.contains(" One of: ")) {
        assert!(line.contains(". One of: "), "{line}");
    }
    check_generated("docs/src/reference/commands.md", &reference);
}

// ------------------------------------------------------------------------- the model file

/// The model-file reference, from the model file's JSON Schema (`dynarelay.schema.json`, itself
/// generated from the Rust types and their doc comments).
fn model_file_reference(schema: &Value) -> String {
    let defs = schema["$defs"].as_object().unwrap();
    let mut out = String::from(
        "# Model-file keys\n\n<!-- Generated from dynarelay.schema.json (src/model/file.rs) by \
         tests/api/docs.rs: edit the doc comments there, not this file. -->\n\n",
    );
    writeln!(
        out,
        "Every key a model file may hold, section by section, with its type and what it means. \
         The [guide to the model file](model-file-by-key.md) explains them with examples. Keys \
         not listed here are refused.\n"
    )
    .unwrap();
    object_section(&mut out, "The file", schema);
    for (name, def) in defs {
        object_section(&mut out, &def_title(name), def);
    }
    out
}

/// `IndexFile` is written about as "Index".
fn def_title(name: &str) -> String {
    name.strip_suffix("File").unwrap_or(name).to_owned()
}

/// The id mdBook gives the heading `## `Index``: the lower-cased title.
fn def_anchor(name: &str) -> String {
    def_title(name).to_lowercase()
}

fn description(value: &Value) -> String {
    value["description"].as_str().map(cell).unwrap_or_default()
}

/// A section for one definition: its description, then its keys or its allowed values.
fn object_section(out: &mut String, title: &str, def: &Value) {
    let heading = if title == "The file" {
        "## The file".to_owned()
    } else {
        format!("## `{title}`")
    };
    writeln!(out, "{heading}\n\n{}\n", description(def)).unwrap();
    if let Some(properties) = def["properties"].as_object() {
        let required: BTreeSet<&str> = def["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        writeln!(
            out,
            "| key | type | required | meaning |\n|---|---|---|---|"
        )
        .unwrap();
        for (key, value) in properties {
            writeln!(
                out,
                "| `{key}` | {} | {} | {} |",
                type_text(value),
                if required.contains(key.as_str()) {
                    "yes"
                } else {
                    ""
                },
                description(value)
            )
            .unwrap();
        }
        out.push('\n');
    } else if let Some(choices) = def["oneOf"].as_array().or(def["anyOf"].as_array()) {
        writeln!(out, "One of:\n").unwrap();
        for choice in choices {
            let what = match &choice["const"] {
                Value::String(constant) => format!("`\"{constant}\"`"),
                _ => type_text(choice),
            };
            let text = description(choice);
            if text.is_empty() {
                writeln!(out, "- {what}").unwrap();
            } else {
                writeln!(out, "- {what}: {text}").unwrap();
            }
        }
        out.push('\n');
    }
}

/// A schema's type in words, with links to the definitions it names.
fn type_text(value: &Value) -> String {
    if let Some(reference) = value["$ref"].as_str() {
        let name = reference.trim_start_matches("#/$defs/");
        return format!("[{}](#{})", def_title(name), def_anchor(name));
    }
    if let Some(choices) = value["anyOf"].as_array().or(value["oneOf"].as_array()) {
        let texts: Vec<String> = choices
            .iter()
            .filter(|choice| choice["type"] != "null")
            .map(type_text)
            .collect();
        return texts.join(" or ");
    }
    if let Some(constant) = value["const"].as_str() {
        return format!("`\"{constant}\"`");
    }
    if let Some(values) = value["enum"].as_array() {
        return values
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ");
    }
    let types: Vec<&str> = match &value["type"] {
        Value::String(ty) => vec![ty.as_str()],
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    };
    let mut texts = Vec::new();
    for ty in &types {
        texts.push(match *ty {
            "array" => format!("list of {}", type_text(&value["items"])),
            "object" => match &value["additionalProperties"] {
                Value::Bool(false) | Value::Null => "table".to_owned(),
                Value::Bool(true) => "table of any values".to_owned(),
                item => format!("table of name = {}", type_text(item)),
            },
            "integer" => match value["minimum"].as_f64() {
                Some(min) => format!("integer ≥ {min}"),
                None => "integer".to_owned(),
            },
            other => other.to_owned(),
        });
    }
    if texts.is_empty() {
        "any value".to_owned()
    } else {
        texts.join(" or ")
    }
}

/// `docs/src/reference/model-file.md` is the JSON Schema of the model file, rendered.
#[test]
fn the_model_file_reference_is_generated_from_the_json_schema() {
    let schema: Value = serde_json::from_str(&dynarelay::model::json_schema()).unwrap();
    check_generated(
        "docs/src/reference/model-file.md",
        &model_file_reference(&schema),
    );
}

// ------------------------------------------------------------------------- the book

/// The book builds with mdBook; every relative link in its pages (from the Markdown, as mdBook
/// rendered it) reaches a page of the book with the anchor it names, or a file of the
/// repository; the README's links into the book do too. Seen failing: with a link to
/// `#connections` left in the deploying chapter after the README was split.
#[test]
fn the_book_builds_and_every_link_in_it_resolves() {
    let docs = Path::new(ROOT).join("docs");
    let out = std::env::temp_dir().join(format!("dynarelay-book-{}", std::process::id()));
    let mut book = mdbook_driver::MDBook::load(&docs).expect("docs/book.toml loads");
    book.config.build.build_dir = out.clone();
    book.build().expect("the book builds");

    let pages = html_pages(&out);
    assert!(pages.len() > 10, "too few pages: {:?}", pages.keys());
    let mut broken = Vec::new();
    for (page, html) in &pages {
        // The page's Markdown source sits at the same path under docs/src.
        let source_dir = docs.join("src").join(page).parent().unwrap().to_owned();
        for href in hrefs(html) {
            if let Some(problem) = check_link(&href, page, &source_dir, &pages) {
                broken.push(format!("{page}: {href}: {problem}"));
            }
        }
    }
    // The README links into the book by Markdown paths (docs/src/....md#anchor).
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    for target in markdown_links(&readme) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        if path.is_empty() {
            broken.push(format!(
                "README.md: {target}: links inside the README are not checked; link into the book"
            ));
            continue;
        }
        if !Path::new(ROOT).join(path).exists() {
            broken.push(format!("README.md: {target}: no such file"));
            continue;
        }
        if let Some(page) = path
            .strip_prefix("docs/src/")
            .and_then(|p| p.strip_suffix(".md"))
        {
            let page = format!("{page}.html");
            if !anchor.is_empty()
                && !pages
                    .get(&page)
                    .is_some_and(|html| ids(html).contains(anchor))
            {
                broken.push(format!(
                    "README.md: {target}: no anchor `{anchor}` in {page}"
                ));
            }
        }
    }
    std::fs::remove_dir_all(&out).ok();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every chapter's HTML by its path in the book (`guides/deploying.html`), without mdBook's own
/// pages (print, 404, table of contents).
fn html_pages(out: &Path) -> BTreeMap<String, String> {
    let mut pages = BTreeMap::new();
    let mut dirs = vec![out.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let page = path
                    .strip_prefix(out)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if !matches!(page.as_str(), "print.html" | "404.html" | "toc.html") {
                    pages.insert(page, std::fs::read_to_string(&path).unwrap());
                }
            }
        }
    }
    pages
}

/// The `href`s of a page's content (`<main>`), HTML entities of `&` undone.
fn hrefs(html: &str) -> Vec<String> {
    let main = html
        .split_once("<main>")
        .and_then(|(_, rest)| rest.split_once("</main>"))
        .map_or(html, |(main, _)| main);
    main.split("href=\"")
        .skip(1)
        .filter_map(|rest| {
            rest.split_once('"')
                .map(|(href, _)| href.replace("&amp;", "&"))
        })
        .collect()
}

/// The `id`s of a page.
fn ids(html: &str) -> BTreeSet<String> {
    html.split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(id, _)| id.to_owned()))
        .collect()
}

/// Why `href` on `page` does not resolve, if it does not.
fn check_link(
    href: &str,
    page: &str,
    source_dir: &Path,
    pages: &BTreeMap<String, String>,
) -> Option<String> {
    if href.contains("://") || href.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = href.split_once('#').unwrap_or((href, ""));
    if path.ends_with(".md") {
        return Some("a link to Markdown that mdBook did not turn into a page".to_owned());
    }
    let target_page = if path.is_empty() {
        page.to_owned()
    } else if path.ends_with(".html") {
        normalize(&Path::new(page).parent().unwrap().join(path))
    } else {
        // A file of the repository, relative to the page's Markdown source.
        let file = source_dir.join(path);
        return (!file.exists()).then(|| format!("no file {}", file.display()));
    };
    let Some(html) = pages.get(&target_page) else {
        return Some(format!("no page {target_page}"));
    };
    (!anchor.is_empty() && !ids(html).contains(anchor))
        .then(|| format!("no anchor `{anchor}` in {target_page}"))
}

/// `a/../b.html` as `b.html`.
fn normalize(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// The targets of the Markdown links `[text](target)` in `text`, code spans and blocks left out.
fn markdown_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for (_, rest) in plain
            .match_indices("](")
            .map(|(i, _)| ((), &plain[i + 2..]))
        {
            if let Some((target, _)) = rest.split_once(')') {
                links.push(target.trim().to_owned());
            }
        }
    }
    links
}

/// The model file the "Serve your own tables" guide shows is `examples/orders/dynarelay.toml` as
/// it is (the README's five steps and `binary.rs` use that file).
#[test]
fn the_guide_shows_the_orders_example_as_it_is() {
    let guide = std::fs::read_to_string(Path::new(ROOT).join("docs/src/guides/your-own-tables.md"))
        .unwrap();
    // The whole file, which starts with its `#:schema` line (other blocks show excerpts).
    let shown = guide
        .split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("```\n").map(|(toml, _)| toml))
        .find(|toml| toml.starts_with("#:schema"))
        .expect("the guide shows a TOML file");
    let file =
        std::fs::read_to_string(Path::new(ROOT).join("examples/orders/dynarelay.toml")).unwrap();
    assert_eq!(
        shown, file,
        "docs/src/guides/your-own-tables.md shows another orders model"
    );
}
