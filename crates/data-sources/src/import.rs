//! CSV parsing and type inference.

use serde::Serialize;

use crate::error::DataSourceError;

/// A column's inferred SQLite type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// Every non-empty value is a 64-bit integer.
    Integer,
    /// Every non-empty value is a number.
    Real,
    /// Anything else.
    Text,
}

impl ColumnType {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Self::Integer => "INTEGER",
            Self::Real => "REAL",
            Self::Text => "TEXT",
        }
    }
}

/// A column of an imported table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnInfo {
    /// The column name (from the header, made unique and non-empty).
    pub name: String,
    /// The inferred type.
    #[serde(rename = "type")]
    pub column_type: ColumnType,
}

/// A parsed CSV: columns and rows of optional cells (empty cells are NULL).
pub(crate) struct Parsed {
    pub(crate) columns: Vec<ColumnInfo>,
    pub(crate) rows: Vec<Vec<Option<String>>>,
}

/// Parse CSV bytes. Quotes and embedded newlines follow RFC 4180; a row with a different number
/// of fields than the header, an empty input and non-UTF-8 bytes are errors naming the line.
pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed, DataSourceError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(DataSourceError::Csv("the resource is empty (no header row)".into()));
    }
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(bytes);
    let header = reader.byte_headers().map_err(csv_error)?.clone();
    let names = column_names(&header)?;
    let mut rows = Vec::new();
    for record in reader.byte_records() {
        let record = record.map_err(csv_error)?;
        let line = record.position().map_or(0, |p| p.line());
        let mut row = Vec::with_capacity(record.len());
        for field in record.iter() {
            let text = std::str::from_utf8(field)
                .map_err(|_| DataSourceError::Csv(format!("line {line} is not valid UTF-8")))?;
            row.push((!text.is_empty()).then(|| text.to_string()));
        }
        rows.push(row);
    }
    let columns = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| ColumnInfo {
            name,
            column_type: infer(rows.iter().map(|r| r[i].as_deref())),
        })
        .collect();
    Ok(Parsed { columns, rows })
}

fn column_names(header: &csv::ByteRecord) -> Result<Vec<String>, DataSourceError> {
    let mut names: Vec<String> = Vec::with_capacity(header.len());
    for (i, field) in header.iter().enumerate() {
        let name = std::str::from_utf8(field)
            .map_err(|_| DataSourceError::Csv("the header (line 1) is not valid UTF-8".into()))?
            .trim();
        let mut name = if name.is_empty() { format!("column_{}", i + 1) } else { name.to_string() };
        if names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            let base = name.clone();
            let mut n = 2;
            while names.iter().any(|existing| existing.eq_ignore_ascii_case(&name)) {
                name = format!("{base}_{n}");
                n += 1;
            }
        }
        names.push(name);
    }
    Ok(names)
}

fn infer<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ColumnType {
    let mut kind = ColumnType::Integer;
    let mut any = false;
    for value in values.flatten() {
        any = true;
        let value = value.trim();
        if kind == ColumnType::Integer && value.parse::<i64>().is_err() {
            kind = ColumnType::Real;
        }
        if kind == ColumnType::Real && !value.parse::<f64>().is_ok_and(f64::is_finite) {
            return ColumnType::Text;
        }
    }
    if any { kind } else { ColumnType::Text }
}

fn csv_error(error: csv::Error) -> DataSourceError {
    let line = error.position().map(|p| p.line());
    let message = match error.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!(
                "line {} has {len} fields, but the header has {expected_len}",
                line.unwrap_or(0)
            )
        }
        csv::ErrorKind::Utf8 { .. } => format!("line {} is not valid UTF-8", line.unwrap_or(0)),
        _ => error.to_string(),
    };
    DataSourceError::Csv(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_newlines_and_types() {
        let csv = b"name,age,score,note\n\"Smith, J\",42,3.5,\"line one\nline two\"\nLee,7,,\"say \"\"hi\"\"\"\n";
        let parsed = parse(csv).expect("parse");
        let types: Vec<ColumnType> = parsed.columns.iter().map(|c| c.column_type).collect();
        assert_eq!(
            types,
            [ColumnType::Text, ColumnType::Integer, ColumnType::Real, ColumnType::Text]
        );
        assert_eq!(parsed.rows[0][0].as_deref(), Some("Smith, J"));
        assert_eq!(parsed.rows[0][3].as_deref(), Some("line one\nline two"));
        assert_eq!(parsed.rows[1][2], None);
        assert_eq!(parsed.rows[1][3].as_deref(), Some("say \"hi\""));
    }

    #[test]
    fn errors_say_what_and_where() {
        let err = |bytes: &[u8]| parse(bytes).err().map(|e| e.to_string());
        assert_eq!(
            err(b"a,b\n1,2\n3\n"),
            Some("CSV import failed: line 3 has 1 fields, but the header has 2".into())
        );
        assert_eq!(
            err(b""),
            Some("CSV import failed: the resource is empty (no header row)".into())
        );
        assert_eq!(
            err(b"  \n"),
            Some("CSV import failed: the resource is empty (no header row)".into())
        );
        assert_eq!(
            err(b"a,b\n1,\xff\n"),
            Some("CSV import failed: line 2 is not valid UTF-8".into())
        );
        assert_eq!(
            err(b"\xfe,b\n1,2\n"),
            Some("CSV import failed: the header (line 1) is not valid UTF-8".into())
        );
    }

    #[test]
    fn header_names_are_unique_and_non_empty() {
        let parsed = parse(b"a,,A,a\n1,2,3,4\n").expect("parse");
        let names: Vec<&str> = parsed.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "column_2", "A_2", "a_3"]);
        let header_only = parse(b"x,y\n").expect("header only");
        assert!(header_only.rows.is_empty());
        assert_eq!(header_only.columns[0].column_type, ColumnType::Text);
    }
}
