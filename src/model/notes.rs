//! What a valid model does that its author may not expect, said by `dynarelay check` after "the
//! model is valid": facts about the model, not mistakes.

use super::{Connection, Model, Read};

/// One line for each thing worth knowing about `model`: each range over a zero-padded number
/// facet (`{seq:08}`), which follows the keys' byte order, where a value wider than the width
/// sorts by its first digits.
pub fn notes(model: &Model) -> Vec<String> {
    let connections = model
        .connections
        .iter()
        .chain(model.entities.iter().flat_map(|e| &e.connections));
    connections.filter_map(|c| wide_range(model, c)).collect()
}

fn wide_range(model: &Model, connection: &Connection) -> Option<String> {
    let Read::Query {
        sort: Some(sort), ..
    } = &connection.read
    else {
        return None;
    };
    let template = sort.template.as_ref()?;
    let field = &model.entities[connection.entity].fields[sort.field];
    let width = template.pad(&field.name)?;
    let bounds: Vec<String> = [&sort.min, &sort.max]
        .into_iter()
        .flatten()
        .map(|a| format!("`{}`", a.name))
        .collect();
    if bounds.is_empty() {
        return None;
    }
    let wide = format!("1{}", "2".repeat(width));
    let (below, above) = (&wide[..width], format!("{}3", &wide[..width - 1]));
    Some(format!(
        "`{}`: {} {} in the byte order of the keys' text, where `{}` is written at least \
         {width} digits wide (`{template}`): within {width} digits that is the numbers' order, \
         but a wider value sorts by its first digits ({wide} between {below} and {above})",
        connection.label,
        bounds.join(" and "),
        if bounds.len() == 1 {
            "selects"
        } else {
            "select"
        },
        field.name,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = r#"version = 1
[tables.Tracker]
partition_key = "pk"
sort_key = "sk"
attributes = { pk = "S", sk = "S" }

[entities.Issue]
table = "Tracker"
keys = { pk = "project#{projectId}", sk = "issue#{seq:08}" }
escape_keys = false
fields.projectId = "ID!"
fields.seq = "Int!"

[connections.issues]
entity = "Issue"
partition = { argument = "projectId" }
sort.min = "fromNumber"
"#;

    #[test]
    fn a_range_on_a_padded_number_is_noted_with_its_byte_order() {
        let model = crate::model::parse("t.toml", MODEL).unwrap();
        assert_eq!(
            notes(&model),
            [
                "`Query.issues`: `fromNumber` selects in the byte order of the keys' text, where \
                 `seq` is written at least 8 digits wide (`issue#{seq:08}`): within 8 digits that \
                 is the numbers' order, but a wider value sorts by its first digits (122222222 \
                 between 12222222 and 12222223)"
            ]
        );
        // Control: no range, no note.
        let plain = MODEL.replace("sort.min = \"fromNumber\"\n", "");
        assert!(notes(&crate::model::parse("t.toml", &plain).unwrap()).is_empty());
    }
}
