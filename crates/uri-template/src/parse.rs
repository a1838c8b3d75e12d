//! RFC 6570 syntax: literals and `{op var[:prefix|*], …}` expressions.

/// A template that is not valid RFC 6570.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?} at byte {at}: {reason}")]
pub struct TemplateError {
    template: String,
    at: usize,
    reason: String,
}

impl TemplateError {
    pub(crate) fn new(template: &str, at: usize, reason: impl Into<String>) -> Self {
        Self { template: template.to_string(), at, reason: reason.into() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryCont,
}

impl Op {
    fn from_char(c: char) -> Option<Self> {
        Some(match c {
            '+' => Self::Reserved,
            '#' => Self::Fragment,
            '.' => Self::Label,
            '/' => Self::Path,
            ';' => Self::PathParam,
            '?' => Self::Query,
            '&' => Self::QueryCont,
            _ => return None,
        })
    }

    /// The string that starts a non-empty expansion.
    pub(crate) fn first(self) -> &'static str {
        match self {
            Self::Simple | Self::Reserved => "",
            Self::Fragment => "#",
            Self::Label => ".",
            Self::Path => "/",
            Self::PathParam => ";",
            Self::Query => "?",
            Self::QueryCont => "&",
        }
    }

    /// The separator between values.
    pub(crate) fn sep(self) -> char {
        match self {
            Self::Simple | Self::Reserved | Self::Fragment => ',',
            Self::Label => '.',
            Self::Path => '/',
            Self::PathParam => ';',
            Self::Query | Self::QueryCont => '&',
        }
    }

    /// `name=value` pairs.
    pub(crate) fn is_named(self) -> bool {
        matches!(self, Self::PathParam | Self::Query | Self::QueryCont)
    }

    /// Reserved characters pass through unencoded.
    pub(crate) fn allows_reserved(self) -> bool {
        matches!(self, Self::Reserved | Self::Fragment)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Modifier {
    None,
    Prefix(usize),
    Explode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VarSpec {
    pub(crate) name: String,
    pub(crate) modifier: Modifier,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expression {
    pub(crate) op: Op,
    pub(crate) vars: Vec<VarSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Literal(String),
    Expression(Expression),
}

impl Part {
    pub(crate) fn vars(&self) -> impl Iterator<Item = &VarSpec> {
        let vars: &[VarSpec] = match self {
            Self::Literal(_) => &[],
            Self::Expression(e) => &e.vars,
        };
        vars.iter()
    }
}

pub(crate) fn parse(template: &str) -> Result<Vec<Part>, TemplateError> {
    let err = |at: usize, reason: &str| TemplateError::new(template, at, reason);
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = template.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' => {
                let end = template[at..]
                    .find('}')
                    .map(|i| at + i)
                    .ok_or_else(|| err(at, "unclosed `{`"))?;
                let body = &template[at + 1..end];
                if body.contains('{') {
                    return Err(err(at, "`{` inside an expression"));
                }
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(Part::Expression(expression(body).map_err(|r| err(at, &r))?));
                while chars.peek().is_some_and(|(i, _)| *i <= end) {
                    chars.next();
                }
            }
            '}' => return Err(err(at, "`}` without `{`")),
            '%' => {
                let hex = template
                    .get(at + 1..at + 3)
                    .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                if hex.is_none() {
                    return Err(err(at, "`%` not followed by two hex digits"));
                }
                literal.push('%');
            }
            c if c.is_control() || matches!(c, ' ' | '"' | '<' | '>' | '\\' | '^' | '`' | '|') => {
                return Err(err(at, &format!("character {c:?} is not allowed in a literal")));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

fn expression(body: &str) -> Result<Expression, String> {
    let mut rest = body;
    let mut op = Op::Simple;
    if let Some(c) = rest.chars().next() {
        if let Some(o) = Op::from_char(c) {
            op = o;
            rest = &rest[1..];
        } else if matches!(c, '=' | ',' | '!' | '@' | '|') {
            return Err(format!("operator {c:?} is reserved for future extensions"));
        }
    }
    if rest.is_empty() {
        return Err("empty expression".to_string());
    }
    let vars = rest.split(',').map(varspec).collect::<Result<Vec<_>, _>>()?;
    Ok(Expression { op, vars })
}

fn varspec(spec: &str) -> Result<VarSpec, String> {
    let (name, modifier) = if let Some(name) = spec.strip_suffix('*') {
        (name, Modifier::Explode)
    } else if let Some((name, len)) = spec.split_once(':') {
        let ok = !len.is_empty()
            && len.len() <= 4
            && len.bytes().all(|b| b.is_ascii_digit())
            && !len.starts_with('0');
        if !ok {
            return Err(format!("invalid prefix length {len:?} (1 to 9999)"));
        }
        (name, Modifier::Prefix(len.parse().map_err(|_| "invalid prefix length")?))
    } else {
        (spec, Modifier::None)
    };
    if !valid_varname(name) {
        return Err(format!("invalid variable name {name:?}"));
    }
    Ok(VarSpec { name: name.to_string(), modifier })
}

/// varname = varchar *( ["."] varchar ); varchar = ALPHA / DIGIT / "_" / pct-encoded
fn valid_varname(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes[0] == b'.' || bytes[bytes.len() - 1] == b'.' {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b if b.is_ascii_alphanumeric() || b == b'_' => i += 1,
            b'.' if bytes[i - 1] != b'.' => i += 1,
            b'%' if bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) =>
            {
                i += 3
            }
            _ => return false,
        }
    }
    true
}
