//! The figures the docs quote, printed beside the ones a bench has just measured: nothing else
//! guards a quoted figure, so every bench that measures one prints both, and a reader sees at
//! once whether the doc still holds (same machine and load as the quote, or not: the conditions
//! are part of the quote).

use std::fmt::Display;

/// The figures one doc section quotes: where (file and section), when and under what load.
pub struct Quotes {
    /// The doc and section, e.g. `docs/cost.md "Colony rows per pod, measured"`.
    pub source: &'static str,
    /// The date and conditions of the quoted run, as the doc gives them.
    pub conditions: &'static str,
    /// (figure, value as the doc writes it).
    pub figures: &'static [(&'static str, &'static str)],
}

impl Quotes {
    /// The value the doc quotes for `figure`, or `—` when it quotes none (a size it did not run).
    pub fn of(&self, figure: &str) -> &'static str {
        self.figures
            .iter()
            .find(|(f, _)| *f == figure)
            .map_or("—", |(_, v)| v)
    }

    /// Prints the table's head (the source, then a Markdown header) and returns the table to
    /// print rows into as they are measured.
    pub fn table(&'static self) -> Beside {
        println!("Quoted: {} ({})", self.source, self.conditions);
        println!("| figure | quoted | measured now |");
        println!("|---|---:|---:|");
        Beside { quotes: self }
    }
}

/// A table of measured figures beside the quoted ones, printed row by row.
pub struct Beside {
    quotes: &'static Quotes,
}

impl Beside {
    /// Prints `figure`: the quoted value beside `measured`.
    pub fn row(&self, figure: &str, measured: impl Display) {
        println!("| {figure} | {} | {measured} |", self.quotes.of(figure));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static QUOTES: Quotes = Quotes {
        source: "docs/x.md",
        conditions: "today",
        figures: &[("rows per pod", "0.2")],
    };

    #[test]
    fn a_quoted_figure_is_found_by_its_name_and_an_unquoted_one_is_a_dash() {
        assert_eq!(QUOTES.of("rows per pod"), "0.2");
        assert_eq!(QUOTES.of("rows per tenant"), "—");
    }
}
