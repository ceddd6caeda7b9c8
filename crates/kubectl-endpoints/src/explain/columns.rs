//! Columns aligned the way kubectl aligns `get`'s output.
//!
//! kubectl writes its tables through Go's `text/tabwriter` with a minimum cell width of 6, a
//! padding of 3 and spaces: each column is as wide as its widest cell plus three spaces, and
//! the last cell of a line is not padded (it ends the line). Users read our tables beside
//! kubectl's, so we lay them out the same way rather than with a table crate's own style.

/// The space after the widest cell of a column.
const PADDING: usize = 3;
/// The narrowest a column is, padding included.
const MIN_WIDTH: usize = 6;

/// Lays out `rows` (the header first, in caps by the caller) as aligned text, one line per
/// row. Rows may be shorter than others: missing cells are empty. Widths count characters,
/// which is what a terminal shows for the names, IPs and reasons we print.
pub(crate) fn align(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let width = (widths[i] + PADDING).max(MIN_WIDTH);
                let pad = width - cell.chars().count();
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        // An empty last cell would leave the padding of the one before it.
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| (*c).to_owned()).collect()
    }

    #[test]
    fn columns_are_padded_to_the_widest_cell_plus_three_and_the_last_is_not() {
        let text = align(&[
            row(&["NAME", "IP", "REASON"]),
            row(&["web-1", "10.0.0.1", "ready"]),
            row(&["a", "10.0.0.22", "no IP yet"]),
        ]);
        assert_eq!(
            text,
            "NAME    IP          REASON\n\
             web-1   10.0.0.1    ready\n\
             a       10.0.0.22   no IP yet\n"
        );
    }

    #[test]
    fn a_narrow_column_is_still_six_wide_as_in_kubectl() {
        let text = align(&[row(&["A", "B"]), row(&["x", "y"])]);
        assert_eq!(text, "A     B\nx     y\n");
    }

    #[test]
    fn an_empty_last_cell_leaves_no_trailing_spaces() {
        let text = align(&[row(&["NAME", "REASON"]), row(&["web-1", ""])]);
        assert_eq!(text, "NAME    REASON\nweb-1\n");
    }
}
