//! Problems found in a model file, each at its place with a hint, and their rendering as a
//! compiler renders errors (`codespan-reporting`), all at once.

use super::*;

/// A problem found while checking, before rendering.
#[derive(Debug)]
pub(super) struct Problem {
    pub(super) message: String,
    pub(super) span: Range<usize>,
    pub(super) hint: Option<String>,
    /// Other places involved, with a label each.
    pub(super) also: Vec<(Range<usize>, String)>,
}

impl Problem {
    pub(super) fn hint(&mut self, hint: impl Into<String>) -> &mut Self {
        self.hint = Some(hint.into());
        self
    }

    pub(super) fn also(&mut self, span: Range<usize>, label: impl Into<String>) -> &mut Self {
        self.also.push((span, label.into()));
        self
    }
}

/// The problems found so far.
#[derive(Debug, Default)]
pub(super) struct Problems(pub(super) Vec<Problem>);

impl Problems {
    pub(super) fn error(&mut self, span: Range<usize>, message: impl Into<String>) -> &mut Problem {
        self.0.push(Problem {
            message: message.into(),
            span,
            hint: None,
            also: Vec::new(),
        });
        let last = self.0.len() - 1;
        &mut self.0[last]
    }
}

pub(super) fn render(name: &str, text: &str, mut problems: Vec<Problem>) -> ModelErrors {
    problems.sort_by_key(|p| p.span.start);
    let file = SimpleFile::new(name, text);
    let config = term::Config::default();
    let mut report = String::new();
    let mut diagnostics = Vec::new();
    for problem in problems {
        let span = clamp(text, &problem.span);
        let mut labels = vec![Label::primary((), span.clone())];
        for (other, label) in &problem.also {
            labels.push(Label::secondary((), clamp(text, other)).with_message(label));
        }
        let notes = problem.hint.iter().map(|h| format!("hint: {h}")).collect();
        let diagnostic = Diagnostic::error()
            .with_message(&problem.message)
            .with_labels(labels)
            .with_notes(notes);
        match term::emit_into_string(&config, &file, &diagnostic) {
            Ok(rendered) => report.push_str(&rendered),
            Err(_) => report.push_str(&format!("error: {}\n", problem.message)),
        }
        report.push('\n');
        let (line, column) = line_column(text, span.start);
        diagnostics.push(Located {
            message: problem.message,
            hint: problem.hint,
            span,
            line,
            column,
        });
    }
    let count = diagnostics.len();
    let plural = if count == 1 { "problem" } else { "problems" };
    report.push_str(&format!("{count} {plural} in {name}\n"));
    ModelErrors {
        report,
        count,
        diagnostics,
    }
}

/// `span` cut to `text` and moved to character boundaries.
pub(super) fn clamp(text: &str, span: &Range<usize>) -> Range<usize> {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = span.end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// The 1-based line and column (in characters) of byte `offset`.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters_from_one() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("é\nx", 3), (2, 1));
        assert_eq!(line_column("éx", 2), (1, 2));
    }
}
