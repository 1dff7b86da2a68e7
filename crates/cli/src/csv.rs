//! Reading box files: `id,min_x,min_y[,min_z],max_x,max_y[,max_z]`.
//!
//! The whole input is read into memory once and parsed in place: no
//! allocation per line. Every problem is reported with its line number.

use broadphase::{Aabb, Scalar};

/// A box file, parsed.
#[derive(Debug)]
pub enum Boxes {
    /// A 2D file.
    Two(Vec<Aabb<f64, 2>>, Vec<i64>),
    /// A 3D file.
    Three(Vec<Aabb<f64, 3>>, Vec<i64>),
}

impl Boxes {
    pub fn len(&self) -> usize {
        match self {
            Boxes::Two(b, _) => b.len(),
            Boxes::Three(b, _) => b.len(),
        }
    }

    pub fn dim(&self) -> usize {
        match self {
            Boxes::Two(..) => 2,
            Boxes::Three(..) => 3,
        }
    }
}

/// What is wrong with an input, and where.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum CsvError {
    #[error("empty input: expected a header line `{HEADER_2D}` or `{HEADER_3D}`")]
    Empty,
    #[error("line 1: missing header: the first line must be `{HEADER_2D}` or `{HEADER_3D}`, found `{found}`")]
    MissingHeader { found: String },
    #[error("line 1: unknown header `{found}`: expected `{HEADER_2D}` or `{HEADER_3D}`")]
    UnknownHeader { found: String },
    #[error("line {line}: not valid UTF-8")]
    Utf8 { line: usize },
    #[error("line {line}: empty line")]
    EmptyLine { line: usize },
    #[error("line {line}: expected {expected} fields, found {found}{hint}")]
    FieldCount { line: usize, expected: usize, found: usize, hint: &'static str },
    #[error("line {line}: column {column}: empty value")]
    EmptyValue { line: usize, column: &'static str },
    #[error("line {line}: column id: `{text}` is not an integer id")]
    BadId { line: usize, text: String },
    #[error("line {line}: column {column}: `{text}` is not a number")]
    BadNumber { line: usize, column: &'static str, text: String },
    #[error("line {line}: column {column}: `{text}` is NaN")]
    Nan { line: usize, column: &'static str, text: String },
    #[error("line {line}: column {column}: `{text}` is infinite")]
    Infinite { line: usize, column: &'static str, text: String },
    #[error("line {line}: column {column}: `{text}` overflows to infinity")]
    Overflow { line: usize, column: &'static str, text: String },
    #[error("line {line}: {min_column} {min} is greater than {max_column} {max}")]
    Inverted { line: usize, min_column: &'static str, max_column: &'static str, min: f64, max: f64 },
    #[error("line {line}: duplicate id {id} (first on line {first})")]
    DuplicateId { line: usize, id: i64, first: usize },
    #[error("{count} boxes: more than this tool handles ({max})")]
    TooMany { count: usize, max: usize },
}

impl CsvError {
    /// The same error with its line number moved by `first`: a piece parsed
    /// with `first = 0` numbers its k-th row `k - 1`; its true line is
    /// `first + k - 1`.
    fn shift_lines(self, first: usize) -> Self {
        let shift = |line: usize| line + first;
        match self {
            CsvError::Utf8 { line } => CsvError::Utf8 { line: shift(line) },
            CsvError::EmptyLine { line } => CsvError::EmptyLine { line: shift(line) },
            CsvError::FieldCount { line, expected, found, hint } => {
                CsvError::FieldCount { line: shift(line), expected, found, hint }
            }
            CsvError::EmptyValue { line, column } => CsvError::EmptyValue { line: shift(line), column },
            CsvError::BadId { line, text } => CsvError::BadId { line: shift(line), text },
            CsvError::BadNumber { line, column, text } => CsvError::BadNumber { line: shift(line), column, text },
            CsvError::Nan { line, column, text } => CsvError::Nan { line: shift(line), column, text },
            CsvError::Infinite { line, column, text } => CsvError::Infinite { line: shift(line), column, text },
            CsvError::Overflow { line, column, text } => CsvError::Overflow { line: shift(line), column, text },
            CsvError::Inverted { line, min_column, max_column, min, max } => {
                CsvError::Inverted { line: shift(line), min_column, max_column, min, max }
            }
            other => other,
        }
    }
}

pub const HEADER_2D: &str = "id,min_x,min_y,max_x,max_y";
pub const HEADER_3D: &str = "id,min_x,min_y,min_z,max_x,max_y,max_z";
const COLUMNS_2D: [&str; 5] = ["id", "min_x", "min_y", "max_x", "max_y"];
const COLUMNS_3D: [&str; 7] = ["id", "min_x", "min_y", "min_z", "max_x", "max_y", "max_z"];

/// Splits into lines, accepting `\n` and `\r\n` and a missing final newline.
/// Yields `(line number, content)`. Line ends are found with `memchr`
/// (lines are long enough for it to pay).
fn lines(input: &str) -> impl Iterator<Item = (usize, &str)> {
    let body = input.strip_suffix('\n').unwrap_or(input);
    let body_lines = (!body.is_empty() || !input.is_empty()).then_some(body);
    body_lines
        .into_iter()
        .flat_map(|b| b.split('\n'))
        .enumerate()
        .map(|(k, l)| (k + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// Parses a whole box file; with `parallel`, chunks of lines on rayon's
/// threads (the result, errors included, is the same).
pub fn parse(input: &[u8], parallel: bool) -> Result<Boxes, CsvError> {
    if input.is_empty() {
        return Err(CsvError::Empty);
    }
    // Validate UTF-8 once for the whole input; an error names its line.
    let text = std::str::from_utf8(input).map_err(|e| {
        let line = 1 + input[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        CsvError::Utf8 { line }
    })?;
    // A UTF-8 byte-order mark (spreadsheets write one) is not part of the
    // header.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (header, body) = match text.find('\n') {
        Some(k) => (&text[..k], &text[k + 1..]),
        None => (text, ""),
    };
    let header = header.strip_suffix('\r').unwrap_or(header);
    match header {
        HEADER_2D => parse_body::<2>(body, &COLUMNS_2D, parallel).map(|(b, i)| Boxes::Two(b, i)),
        HEADER_3D => parse_body::<3>(body, &COLUMNS_3D, parallel).map(|(b, i)| Boxes::Three(b, i)),
        h if h.trim().is_empty() => Err(CsvError::Empty),
        h => {
            let first = h.split(',').next().unwrap_or("");
            if first.trim().parse::<f64>().is_ok() {
                Err(CsvError::MissingHeader { found: h.to_string() })
            } else {
                Err(CsvError::UnknownHeader { found: h.to_string() })
            }
        }
    }
}

type Rows<const D: usize> = (Vec<Aabb<f64, D>>, Vec<i64>);

/// The rows after the header (line 2 on), in chunks on threads when asked.
fn parse_body<const D: usize>(
    body: &str,
    columns: &'static [&'static str],
    parallel: bool,
) -> Result<Rows<D>, CsvError> {
    let chunks = if parallel { rayon::current_num_threads() * 4 } else { 1 };
    let (boxes, ids) = if chunks <= 1 || body.len() < 1 << 20 {
        parse_rows::<D>(lines(body), 2, columns)?
    } else {
        use rayon::prelude::*;
        // Cut at line ends; each piece knows its first line number only when
        // it needs it (to report an error).
        let mut pieces = Vec::new();
        let mut rest = body;
        let target = body.len() / chunks;
        while !rest.is_empty() {
            let cut = match rest.get(target..).and_then(|t| t.find('\n')) {
                Some(k) => target + k + 1,
                None => rest.len(),
            };
            pieces.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        let results: Vec<Result<Rows<D>, CsvError>> =
            pieces.par_iter().map(|p| parse_rows::<D>(lines(p), 0, columns)).collect();
        let (mut boxes, mut ids) = (Vec::with_capacity(body.len() / 64), Vec::with_capacity(body.len() / 64));
        let mut first_line = 2;
        for (piece, r) in pieces.iter().zip(results) {
            match r {
                Ok((b, i)) => {
                    boxes.extend_from_slice(&b);
                    ids.extend_from_slice(&i);
                }
                Err(e) => return Err(e.shift_lines(first_line)),
            }
            first_line += piece.matches('\n').count() + usize::from(!piece.ends_with('\n'));
        }
        (boxes, ids)
    };
    if boxes.len() > broadphase::MAX_BOXES {
        return Err(CsvError::TooMany { count: boxes.len(), max: broadphase::MAX_BOXES });
    }
    check_unique(&ids)?;
    Ok((boxes, ids))
}

/// Parses rows; `first` is the line number of the first row (or 0 when not
/// known yet: the caller then shifts an error's line by the true first line).
fn parse_rows<'a, const D: usize>(
    rows: impl Iterator<Item = (usize, &'a str)>,
    first: usize,
    columns: &'static [&'static str],
) -> Result<Rows<D>, CsvError> {
    let mut boxes = Vec::new();
    let mut ids = Vec::new();
    let width = 1 + 2 * D;
    for (k, text) in rows {
        // `lines` numbers rows from 1.
        let line = first + k - 1;
        if text.is_empty() {
            return Err(CsvError::EmptyLine { line });
        }
        // Fields by a plain byte scan (they are short: memchr does not pay).
        let bytes = text.as_bytes();
        let mut vals = [0.0f64; 6];
        let mut id = 0i64;
        let (mut found, mut start) = (0, 0);
        for end in (0..=bytes.len()).filter(|&k| k == bytes.len() || bytes[k] == b',') {
            let f = &text[start..end];
            start = end + 1;
            if found < width {
                if f.is_empty() {
                    return Err(CsvError::EmptyValue { line, column: columns[found] });
                }
                if found == 0 {
                    id = f.parse().map_err(|_| CsvError::BadId { line, text: f.to_string() })?;
                } else {
                    vals[found - 1] = number(f, line, columns[found])?;
                }
            }
            found += 1;
        }
        if found != width {
            return Err(CsvError::FieldCount {
                line,
                expected: width,
                found,
                hint: if text.ends_with(',') { " (trailing comma?)" } else { "" },
            });
        }
        let min: [f64; D] = core::array::from_fn(|k| vals[k]);
        let max: [f64; D] = core::array::from_fn(|k| vals[D + k]);
        let b = Aabb::new(min, max).map_err(|e| match e {
            broadphase::AabbError::Inverted { axis, min, max } => {
                CsvError::Inverted { line, min_column: columns[1 + axis], max_column: columns[1 + D + axis], min, max }
            }
            // `number` already rejected non-finite values.
            other => unreachable!("validated values rejected: {other}"),
        })?;
        boxes.push(b);
        ids.push(id);
    }
    Ok((boxes, ids))
}

fn number(f: &str, line: usize, column: &'static str) -> Result<f64, CsvError> {
    let v: f64 = f.parse().map_err(|_| CsvError::BadNumber { line, column, text: f.to_string() })?;
    if v.is_nan() {
        return Err(CsvError::Nan { line, column, text: f.to_string() });
    }
    if !Scalar::is_finite(v) {
        let literal = f.to_ascii_lowercase().contains("inf");
        let text = f.to_string();
        return Err(if literal {
            CsvError::Infinite { line, column, text }
        } else {
            CsvError::Overflow { line, column, text }
        });
    }
    Ok(v)
}

/// Ids must be unique; the error names the later line of the first
/// duplicate found in file order.
fn check_unique(ids: &[i64]) -> Result<(), CsvError> {
    // Files usually list ids in increasing order: then they are unique.
    if ids.windows(2).all(|w| w[0] < w[1]) {
        return Ok(());
    }
    let mut order: Vec<u32> = (0..ids.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (ids[i as usize], i));
    let mut worst: Option<(usize, usize)> = None; // (later row, first row)
    for w in order.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        if ids[a] == ids[b] && worst.is_none_or(|(later, _)| b < later) {
            worst = Some((b, a));
        }
    }
    match worst {
        // Rows are numbered from line 2 (line 1 is the header).
        Some((later, first)) => Err(CsvError::DuplicateId { line: later + 2, id: ids[later], first: first + 2 }),
        None => Ok(()),
    }
}

/// Writes boxes as a box file (shortest round-trip decimals).
pub fn write<const D: usize>(boxes: &[Aabb<f64, D>], out: &mut impl std::io::Write) -> std::io::Result<()> {
    let header = if D == 2 { HEADER_2D } else { HEADER_3D };
    writeln!(out, "{header}")?;
    for (i, b) in boxes.iter().enumerate() {
        write!(out, "{i}")?;
        for v in b.min().iter().chain(b.max()) {
            write!(out, ",{v:?}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        let seq = parse(s.as_bytes(), false).unwrap_err().to_string();
        assert_eq!(parse(s.as_bytes(), true).unwrap_err().to_string(), seq);
        seq
    }

    #[test]
    fn chunks_report_the_same_line() {
        // Large enough to be cut into pieces; errors deep in the file keep
        // their line numbers.
        let mut text = String::from("id,min_x,min_y,max_x,max_y\n");
        for i in 0..60_000 {
            text += &format!("{i},0,0,1,1\n");
        }
        let ok = parse(text.as_bytes(), true).unwrap();
        assert_eq!(ok.len(), 60_000);
        for bad_row in [0usize, 12_345, 45_678, 59_999] {
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            lines[bad_row + 1] = format!("{bad_row},2,0,1,1");
            let t = lines.join("\n");
            let msg = parse(t.as_bytes(), true).unwrap_err().to_string();
            assert!(msg.starts_with(&format!("line {}: min_x 2", bad_row + 2)), "{msg}");
        }
    }

    #[test]
    fn accepts_crlf_and_missing_newline() {
        let b = parse(b"id,min_x,min_y,max_x,max_y\r\n1,0,0,1,1\r\n7,-0.5,1e-300,2,3", false).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b.dim(), 2);
        let b = parse(b"id,min_x,min_y,min_z,max_x,max_y,max_z\n", false).unwrap();
        assert_eq!((b.len(), b.dim()), (0, 3));
    }

    #[test]
    fn accepts_a_byte_order_mark_before_the_header_only() {
        let b = parse("\u{feff}id,min_x,min_y,max_x,max_y\r\n1,0,0,1,1\r\n".as_bytes(), false).unwrap();
        assert_eq!((b.len(), b.dim()), (1, 2));
        // Anywhere else it is a bad value.
        assert!(err("id,min_x,min_y,max_x,max_y\n\u{feff}1,0,0,1,1\n").contains("line 2: column id"));
        assert!(err("\u{feff}\u{feff}id,min_x,min_y,max_x,max_y\n").contains("unknown header"));
    }

    #[test]
    fn names_line_and_problem() {
        let h = "id,min_x,min_y,max_x,max_y\n";
        assert_eq!(err(""), CsvError::Empty.to_string());
        assert!(err("1,0,0,1,1\n").contains("missing header"));
        assert!(err("id,x,y\n").contains("unknown header"));
        assert!(err(&format!("{h}1,0,0,1,1,\n")).contains("line 2: expected 5 fields, found 6 (trailing comma?)"));
        assert!(err(&format!("{h}1,0,0,1\n")).contains("line 2: expected 5 fields, found 4"));
        assert!(err(&format!("{h}1,0,0,1,1\n2,0,nan,1,1\n")).contains("line 3: column min_y: `nan` is NaN"));
        assert!(err(&format!("{h}1,0,0,inf,1\n")).contains("column max_x: `inf` is infinite"));
        assert!(err(&format!("{h}1,0,0,1e400,1\n")).contains("column max_x: `1e400` overflows to infinity"));
        assert!(err(&format!("{h}1,0,0,1,x\n")).contains("column max_y: `x` is not a number"));
        assert!(err(&format!("{h}1.5,0,0,1,1\n")).contains("`1.5` is not an integer id"));
        assert!(err(&format!("{h}1,2,0,1,1\n")).contains("line 2: min_x 2 is greater than max_x 1"));
        assert!(err(&format!("{h}1,0,0,1,1\n\n2,0,0,1,1\n")).contains("line 3: empty line"));
        assert!(
            err(&format!("{h}5,0,0,1,1\n6,0,0,1,1\n5,0,0,1,1\n")).contains("line 4: duplicate id 5 (first on line 2)")
        );
        assert!(err(&format!("{h}1,,0,1,1\n")).contains("column min_x: empty value"));
    }

    /// What a reading of a file came to: the boxes (as bit patterns) and
    /// ids, or the line of the first problem (0: the whole input) and its
    /// kind.
    type Outcome = Result<(Vec<Vec<u64>>, Vec<i64>), (usize, &'static str)>;

    fn outcome(r: Result<Boxes, CsvError>) -> Outcome {
        fn bits<const D: usize>(b: &[Aabb<f64, D>]) -> Vec<Vec<u64>> {
            b.iter().map(|b| b.min().iter().chain(b.max()).map(|v| v.to_bits()).collect()).collect()
        }
        match r {
            Ok(Boxes::Two(b, ids)) => Ok((bits(&b), ids)),
            Ok(Boxes::Three(b, ids)) => Ok((bits(&b), ids)),
            Err(e) => Err(match e {
                CsvError::Empty => (0, "empty"),
                CsvError::MissingHeader { .. } | CsvError::UnknownHeader { .. } => (1, "header"),
                CsvError::Utf8 { line } => (line, "utf8"),
                CsvError::EmptyLine { line } => (line, "empty line"),
                CsvError::FieldCount { line, .. } => (line, "fields"),
                CsvError::EmptyValue { line, .. } => (line, "empty value"),
                CsvError::BadId { line, .. } => (line, "id"),
                CsvError::BadNumber { line, .. } => (line, "number"),
                CsvError::Nan { line, .. } => (line, "nan"),
                CsvError::Infinite { line, .. } => (line, "infinite"),
                CsvError::Overflow { line, .. } => (line, "overflow"),
                CsvError::Inverted { line, .. } => (line, "inverted"),
                CsvError::DuplicateId { line, .. } => (line, "duplicate"),
                CsvError::TooMany { .. } => (0, "too many"),
            }),
        }
    }

    /// The format read again, plainly: lines split with the standard
    /// library, one rule after the other, and no chunks. The reference the
    /// parser (sequential and in chunks) is compared with.
    fn reference(input: &[u8]) -> Outcome {
        if input.is_empty() {
            return Err((0, "empty"));
        }
        // UTF-8 first, line by line ('\n' never occurs inside a character).
        for (k, l) in input.split(|&b| b == b'\n').enumerate() {
            if std::str::from_utf8(l).is_err() {
                return Err((k + 1, "utf8"));
            }
        }
        let text = std::str::from_utf8(input).unwrap();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines: Vec<&str> = text.split('\n').collect();
        if text.ends_with('\n') {
            lines.pop();
        }
        let lines: Vec<&str> = lines.iter().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        let d = match lines[0] {
            HEADER_2D => 2,
            HEADER_3D => 3,
            h if h.trim().is_empty() => return Err((0, "empty")),
            _ => return Err((1, "header")),
        };
        let (mut boxes, mut ids) = (Vec::new(), Vec::new());
        for (k, l) in lines.iter().enumerate().skip(1) {
            let line = k + 1;
            if l.is_empty() {
                return Err((line, "empty line"));
            }
            let fields: Vec<&str> = l.split(',').collect();
            let mut vals = Vec::new();
            for (c, f) in fields.iter().take(1 + 2 * d).enumerate() {
                if f.is_empty() {
                    return Err((line, "empty value"));
                }
                if c == 0 {
                    ids.push(f.parse::<i64>().map_err(|_| (line, "id"))?);
                    continue;
                }
                let v = f.parse::<f64>().map_err(|_| (line, "number"))?;
                if v.is_nan() {
                    return Err((line, "nan"));
                }
                if v.is_infinite() {
                    return Err((line, if f.to_lowercase().contains("inf") { "infinite" } else { "overflow" }));
                }
                vals.push(v);
            }
            if fields.len() != 1 + 2 * d {
                return Err((line, "fields"));
            }
            if (0..d).any(|a| vals[a] > vals[d + a]) {
                return Err((line, "inverted"));
            }
            boxes.push(vals.iter().map(|v| v.to_bits()).collect());
        }
        let mut seen = std::collections::HashSet::new();
        for (r, id) in ids.iter().enumerate() {
            if !seen.insert(*id) {
                return Err((r + 2, "duplicate"));
            }
        }
        Ok((boxes, ids))
    }

    /// Reads `input` both ways (sequential and in chunks on threads) and
    /// compares each with the reference.
    fn agrees(input: &[u8]) -> Result<(), proptest::test_runner::TestCaseError> {
        let want = reference(input);
        let seq = outcome(parse(input, false));
        proptest::prop_assert_eq!(&seq, &want, "sequential");
        let par = outcome(parse(input, true));
        proptest::prop_assert_eq!(&par, &want, "in chunks");
        Ok(())
    }

    /// A field: numbers of every form the grammar takes, and the bad values.
    fn field() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (-50i64..50).prop_map(|v| v.to_string()),
            3 => any::<f64>().prop_map(|v| format!("{v:?}")),
            2 => any::<f64>().prop_map(|v| format!("{v:e}")),
            1 => prop::sample::select(vec![
                "", "-0", "+1", ".5", "5.", "1e400", "-1e400", "1e-400", "nan", "NaN", "inf", "-Infinity", "x", "1.5",
                " 1", "0x10", "9223372036854775808", "-9223372036854775808", "1_0", "\u{e9}",
            ])
            .prop_map(String::from),
        ]
    }

    /// A file: a header (usually right), rows of 0-9 fields (usually the
    /// right count), line ends `\n` or `\r\n`, maybe a final newline, maybe
    /// a byte-order mark; then a few bytes inserted, deleted or replaced.
    fn file() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let header = prop_oneof![
            8 => Just(HEADER_2D.to_string()),
            8 => Just(HEADER_3D.to_string()),
            1 => prop::sample::select(vec!["", " ", "id,x,y", "1,0,0,1,1", "id,min_x,min_y,max_x,max_y,"])
                .prop_map(String::from),
        ];
        let row = (prop::bool::weighted(0.9), 0usize..10, prop::collection::vec(field(), 9));
        let rows = prop::collection::vec(row, 0..12);
        let mutation = (any::<prop::sample::Index>(), 0u8..3, prop::sample::select(b",\n\r-.e0179 \xff\xc3".to_vec()));
        (header, rows, any::<bool>(), any::<bool>(), any::<bool>(), prop::collection::vec(mutation, 0..3)).prop_map(
            |(header, rows, crlf, last, bom, mutations)| {
                let d = if header == HEADER_2D { 2 } else { 3 };
                let end = if crlf { "\r\n" } else { "\n" };
                let mut text = String::new();
                if bom {
                    text.push('\u{feff}');
                }
                text += &header;
                for (k, (right, width, fields)) in rows.iter().enumerate() {
                    text += end;
                    let width = if *right { 1 + 2 * d } else { *width };
                    let mut f: Vec<String> = fields[..width].to_vec();
                    if *right && k % 8 != 7 {
                        // Mostly valid rows: finite values in order, an id
                        // that now and then repeats an earlier one.
                        f[0] = match k % 7 {
                            6 => k / 2,
                            5 => k - 1, // in order and repeated
                            _ => k,
                        }
                        .to_string();
                        for v in &mut f[1..] {
                            if !v.parse::<f64>().is_ok_and(f64::is_finite) {
                                *v = (k as f64 * 0.5).to_string();
                            }
                        }
                        for a in 0..d {
                            if let (Ok(x), Ok(y)) = (f[1 + a].parse::<f64>(), f[1 + d + a].parse::<f64>()) {
                                if x > y {
                                    f.swap(1 + a, 1 + d + a);
                                }
                            }
                        }
                    }
                    text += &f.join(",");
                }
                if last {
                    text += end;
                }
                let mut bytes = text.into_bytes();
                for (at, op, b) in mutations {
                    let i = at.index(bytes.len() + 1);
                    match op {
                        0 => bytes.insert(i, b),
                        1 if i < bytes.len() => {
                            bytes.remove(i);
                        }
                        _ if i < bytes.len() => bytes[i] = b,
                        _ => {}
                    }
                }
                bytes
            },
        )
    }

    /// 2000 cases per property unless `PROPTEST_CASES` asks for more.
    fn cases() -> u32 {
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(cases()))]

        /// Generated files, valid and not, read as the reference reads them.
        #[test]
        fn files_read_as_the_reference_reads_them(input in file()) {
            agrees(&input)?;
        }

        /// Arbitrary bytes: an error or boxes, never a panic, as the
        /// reference reads them.
        #[test]
        fn arbitrary_bytes_read_as_the_reference_reads_them(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            header in proptest::prelude::any::<bool>(),
        ) {
            let mut bytes = if header { format!("{HEADER_2D}\n").into_bytes() } else { Vec::new() };
            bytes.extend(input);
            agrees(&bytes)?;
        }

        /// Any finite boxes written and read back give the same bits
        /// (signed zeros, subnormals, the largest values).
        #[test]
        fn boxes_round_trip(
            vals in proptest::collection::vec(
                (proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO,
                 proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO),
                0..30),
        ) {
            let boxes: Vec<Aabb<f64, 3>> = vals
                .chunks_exact(3)
                .map(|c| {
                    let lo = core::array::from_fn(|k| if c[k].0 <= c[k].1 { c[k].0 } else { c[k].1 });
                    let hi = core::array::from_fn(|k| if c[k].0 <= c[k].1 { c[k].1 } else { c[k].0 });
                    Aabb::new(lo, hi).unwrap()
                })
                .collect();
            let mut text = Vec::new();
            write(&boxes, &mut text).unwrap();
            let Ok(Boxes::Three(back, ids)) = parse(&text, false) else {
                return Err(proptest::test_runner::TestCaseError::fail("not read back as 3D boxes"));
            };
            let bits = |b: &[Aabb<f64, 3>]| b.iter().map(|b| (b.min().map(f64::to_bits), b.max().map(f64::to_bits))).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&back), bits(&boxes));
            proptest::prop_assert_eq!(ids, (0..boxes.len() as i64).collect::<Vec<_>>());
        }
    }

    /// Large files (read in chunks on threads) with a few bytes changed
    /// anywhere: the same outcome as the reference, errors' lines included.
    #[test]
    fn large_files_with_damage_read_as_the_reference_reads_them() {
        let mut text = String::from("id,min_x,min_y,max_x,max_y\n");
        for i in 0..70_000 {
            text += &format!("{i},{}.25,0,{}.5,1e-3\n", i % 100, i % 100 + 1);
        }
        let good = text.into_bytes();
        assert!(agrees(&good).is_ok());
        assert!(reference(&good).is_ok());
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % m as u64) as usize
        };
        for case in 0..40 {
            let mut bytes = good.clone();
            for _ in 0..1 + case % 3 {
                let i = next(bytes.len());
                let b = b",\n\r-.e0179 \xff"[next(12)];
                match next(3) {
                    0 => bytes.insert(i, b),
                    1 => {
                        bytes.remove(i);
                    }
                    _ => bytes[i] = b,
                }
            }
            if let Err(e) = agrees(&bytes) {
                panic!("case {case}: {e}");
            }
        }
    }
}
