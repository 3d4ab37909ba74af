//! Kubernetes `resource.Quantity`, parsed exactly.
//!
//! The grammar is the one in apimachinery's `quantity.go`:
//!
//! ```text
//! <quantity>        ::= <signedNumber><suffix>
//! <signedNumber>    ::= <number> | <sign><number>
//! <sign>            ::= "+" | "-"
//! <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//! <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//! <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//! <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//! <decimalExponent> ::= "e" <signedInt> | "E" <signedInt>
//! ```
//!
//! Like Kubernetes, the value is never a float. Kubernetes keeps every parsed quantity at a
//! granularity of one nano-unit (`1n`): anything finer is rounded up, away from zero, at parse
//! time (`0.1n` is `1n`, `-0.1n` is `-1n`), and a binary-suffixed quantity is capped at
//! 2^63−1 units in magnitude (`9Ei` is 9223372036854775807). So a signed count of nano-units
//! is an exact representation of what Kubernetes holds; we store it in an `i128`, which makes
//! the derived `Eq`/`Ord` numeric (`1000m == 1`).
//!
//! Reading an integer out rounds up again, as `Quantity.Value()` / `MilliValue()` do: see
//! [`Quantity::milli_value_ceil`].
//!
//! Deliberate differences from `resource.ParseQuantity`, all on inputs the API server never
//! sends us (it re-serializes every quantity in canonical form):
//! - a number with no digits (`"-"`, `"+"`, `"."`, `"Mi"`, `"e3"`) is an error; Kubernetes'
//!   scanner reads these as zero, but its OpenAPI pattern for quantities rejects them;
//! - a decimal quantity whose magnitude does not fit 2^127 nano-units (about 1.7e29 units,
//!   e.g. `1e30`) is an error instead of an arbitrary-precision value; its integer value would
//!   saturate at `i64::MAX` anyway;
//! - no leading/trailing whitespace (`ParseQuantity` rejects it too; only Kubernetes' JSON
//!   decoder trims it).

use std::fmt;
use std::str::FromStr;

const NANOS_PER_UNIT: i128 = 1_000_000_000;
const NANOS_PER_MILLI: i128 = 1_000_000;
/// Kubernetes caps binary-suffixed quantities at 2^63−1 units (`maxAllowed` in `math.go`).
const BINARY_CAP_NANOS: i128 = i64::MAX as i128 * NANOS_PER_UNIT;
/// Kubernetes stores the decimal exponent in an `int32` that it later negates, so it accepts
/// exponents in `[-MaxInt32, MaxInt32]` and rejects anything outside.
const MAX_EXPONENT: i64 = i32::MAX as i64;
/// `i128::MAX` has 39 decimal digits; any more digits cannot fit.
const I128_DIGITS: i64 = 39;
/// Longest input echoed back in an error message.
const MAX_SHOWN_CHARS: usize = 64;

/// An exact Kubernetes resource quantity (`"500m"`, `"1.5Gi"`, `"1e3"`), held as a signed
/// count of nano-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Quantity {
    nanos: i128,
}

/// Why a string is not a valid quantity. Every message names the offending input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("invalid quantity \"\": empty string")]
    Empty,
    #[error("invalid quantity {input:?}: whitespace is not allowed")]
    Whitespace { input: String },
    #[error("invalid quantity {input:?}: expected a number (digits with an optional sign and decimal point)")]
    MissingNumber { input: String },
    #[error("invalid quantity {input:?}: more than one decimal point")]
    MultipleDecimalPoints { input: String },
    #[error("invalid quantity {input:?}: unknown suffix {suffix:?}")]
    UnknownSuffix { input: String, suffix: String },
    #[error("invalid quantity {input:?}: malformed exponent {exponent:?}")]
    InvalidExponent { input: String, exponent: String },
    #[error("invalid quantity {input:?}: exponent out of range (must be within ±{MAX_EXPONENT})")]
    ExponentOutOfRange { input: String },
    #[error("invalid quantity {input:?}: too large to represent")]
    TooLarge { input: String },
}

impl Quantity {
    /// The zero quantity.
    pub const ZERO: Quantity = Quantity { nanos: 0 };

    /// A quantity of exactly `nanos` nano-units (`1n` = 10^-9).
    pub const fn from_nanos(nanos: i128) -> Self {
        Quantity { nanos }
    }

    /// The exact value in nano-units.
    pub const fn as_nanos(&self) -> i128 {
        self.nanos
    }

    /// Value in thousandths (milli-CPU for `cpu`), rounded up like Kubernetes' `MilliValue()`;
    /// saturates at `i64::MAX` / `i64::MIN`.
    ///
    /// Why round up: Kubernetes accounts requests with `MilliValue()` for CPU and `Value()` for
    /// everything else, both of which round up, so a pod that asks for *some* of a resource is
    /// never counted as asking for none (`1n` CPU costs `1m`, `0.5` bytes costs a byte).
    /// Rounding the same way keeps our fit decisions identical to kube-scheduler's.
    ///
    /// "Up" is Kubernetes' meaning: away from zero. That is the ceiling for the non-negative
    /// quantities requests and capacities are; a negative one rounds down (`-1n` → `-1`), as in
    /// Kubernetes' `TestNegativeValueRoundsAwayFromZero`.
    pub fn milli_value_ceil(&self) -> i64 {
        saturate(div_away_from_zero(self.nanos, NANOS_PER_MILLI))
    }

    /// Whole value (bytes for memory, count for GPUs), rounded up (away from zero) like
    /// Kubernetes' `Value()`; saturates at `i64::MAX` / `i64::MIN`. See
    /// [`milli_value_ceil`](Self::milli_value_ceil) for why it rounds up.
    pub fn value_ceil(&self) -> i64 {
        saturate(div_away_from_zero(self.nanos, NANOS_PER_UNIT))
    }

    /// Whether the quantity is below zero (`-0` is zero, not negative).
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// Whether the quantity is exactly zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }
}

/// Canonical decimal form, as Kubernetes prints a `DecimalSI` quantity: an integer with the
/// largest decimal suffix that keeps it exact (`1500m`, `1G`, `1073741824`). Parsing it back
/// gives the same quantity. (Kubernetes would print a quantity parsed as `1Gi` as `1Gi`; we do
/// not remember the input's format.)
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SUFFIXES: [(&str, u32); 10] = [
            ("E", 27),
            ("P", 24),
            ("T", 21),
            ("G", 18),
            ("M", 15),
            ("k", 12),
            ("", 9),
            ("m", 6),
            ("u", 3),
            ("n", 0),
        ];
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.unsigned_abs();
        let (suffix, unit) = SUFFIXES
            .iter()
            .map(|&(suffix, power)| (suffix, 10u128.pow(power)))
            .find(|&(_, unit)| magnitude.is_multiple_of(unit))
            .unwrap_or(("n", 1));
        write!(f, "{sign}{}{suffix}", magnitude / unit)
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// Parses `s` and returns its value in thousandths, rounded up (milli-CPU for `cpu`).
pub fn parse_milli(s: &str) -> Result<i64, QuantityError> {
    s.parse::<Quantity>().map(|q| q.milli_value_ceil())
}

/// Parses `s` and returns its whole value, rounded up (bytes, devices, ...).
pub fn parse_value(s: &str) -> Result<i64, QuantityError> {
    s.parse::<Quantity>().map(|q| q.value_ceil())
}

/// What the suffix multiplies the number by.
#[derive(Debug, Clone, Copy)]
enum Scale {
    /// × 10^exp
    Decimal(i64),
    /// × 2^shift
    Binary(u32),
}

fn parse(s: &str) -> Result<Quantity, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Empty);
    }
    if s.chars().any(char::is_whitespace) {
        return Err(QuantityError::Whitespace { input: shown(s) });
    }

    let bytes = s.as_bytes();
    let mut pos = 0;
    let negative = match bytes[0] {
        b'-' => {
            pos = 1;
            true
        }
        b'+' => {
            pos = 1;
            false
        }
        _ => false,
    };

    let int_start = pos;
    pos += count_digits(&bytes[pos..]);
    let int_digits = &bytes[int_start..pos];
    let mut frac_digits: &[u8] = &[];
    if bytes.get(pos) == Some(&b'.') {
        pos += 1;
        let frac_start = pos;
        pos += count_digits(&bytes[pos..]);
        frac_digits = &bytes[frac_start..pos];
        if bytes.get(pos) == Some(&b'.') {
            return Err(QuantityError::MultipleDecimalPoints { input: shown(s) });
        }
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(QuantityError::MissingNumber { input: shown(s) });
    }

    // Everything consumed so far is ASCII, so `pos` is a char boundary.
    let scale = parse_suffix(s, &s[pos..])?;

    // The number's significant digits, as values 0..=9, without leading zeros.
    let digits: Vec<u8> = int_digits
        .iter()
        .chain(frac_digits)
        .map(|d| d - b'0')
        .skip_while(|&d| d == 0)
        .collect();
    if digits.is_empty() {
        // Zero stays zero whatever the sign or suffix: "-0", "0Ei", "0e2147483647".
        return Ok(Quantity::ZERO);
    }
    // `frac_digits.len()` is bounded by `isize::MAX`, so this cannot wrap.
    let frac_len = frac_digits.len() as i64;

    // value = digits × 10^-frac_len × suffix; nanos = value × 10^9 = digits' × 10^shift.
    let magnitude = match scale {
        Scale::Decimal(exp) => scaled_nanos(&digits, exp - frac_len + 9)
            .ok_or_else(|| QuantityError::TooLarge { input: shown(s) })?,
        Scale::Binary(shift) => {
            let digits = mul_pow2(&digits, shift);
            // Kubernetes caps binary quantities rather than rejecting them.
            scaled_nanos(&digits, 9 - frac_len)
                .map_or(BINARY_CAP_NANOS, |n| n.min(BINARY_CAP_NANOS))
        }
    };
    Ok(Quantity {
        nanos: if negative { -magnitude } else { magnitude },
    })
}

/// Interprets the text after the number. `input` is the whole string, for error messages.
fn parse_suffix(input: &str, suffix: &str) -> Result<Scale, QuantityError> {
    let scale = match suffix {
        "" => Scale::Decimal(0),
        "n" => Scale::Decimal(-9),
        "u" => Scale::Decimal(-6),
        "m" => Scale::Decimal(-3),
        "k" => Scale::Decimal(3),
        "M" => Scale::Decimal(6),
        "G" => Scale::Decimal(9),
        "T" => Scale::Decimal(12),
        "P" => Scale::Decimal(15),
        "E" => Scale::Decimal(18),
        "Ki" => Scale::Binary(10),
        "Mi" => Scale::Binary(20),
        "Gi" => Scale::Binary(30),
        "Ti" => Scale::Binary(40),
        "Pi" => Scale::Binary(50),
        "Ei" => Scale::Binary(60),
        _ => return parse_exponent(input, suffix),
    };
    Ok(scale)
}

/// `e<int>` / `E<int>`, where `<int>` is an optionally signed decimal integer (as Go's
/// `strconv.ParseInt` reads it: leading zeros allowed, no underscores).
fn parse_exponent(input: &str, suffix: &str) -> Result<Scale, QuantityError> {
    let bytes = suffix.as_bytes();
    let looks_like_exponent = matches!(bytes, [b'e' | b'E', b'0'..=b'9' | b'+' | b'-', ..]);
    if !looks_like_exponent {
        return Err(QuantityError::UnknownSuffix {
            input: shown(input),
            suffix: shown(suffix),
        });
    }
    let (negative, digits) = match bytes[1] {
        b'-' => (true, &bytes[2..]),
        b'+' => (false, &bytes[2..]),
        _ => (false, &bytes[1..]),
    };
    if digits.is_empty() || count_digits(digits) != digits.len() {
        return Err(QuantityError::InvalidExponent {
            input: shown(input),
            exponent: shown(suffix),
        });
    }
    let magnitude = digits.iter().fold(0i64, |acc, d| {
        acc.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    if magnitude > MAX_EXPONENT {
        return Err(QuantityError::ExponentOutOfRange {
            input: shown(input),
        });
    }
    Ok(Scale::Decimal(if negative {
        -magnitude
    } else {
        magnitude
    }))
}

/// `digits × 10^shift`, rounded up (away from zero) to an integer; `None` if it does not fit
/// an `i128`. `digits` are values 0..=9, most significant first, with no leading zero.
fn scaled_nanos(digits: &[u8], shift: i64) -> Option<i128> {
    let len = digits.len() as i64;
    if shift >= 0 {
        if len + shift > I128_DIGITS {
            return None;
        }
        // shift <= 39 here.
        accumulate(digits)?.checked_mul(10i128.checked_pow(shift as u32)?)
    } else {
        // Keep the first `len + shift` digits; any non-zero digit dropped rounds up.
        let keep = (len + shift).max(0) as usize;
        let (head, tail) = digits.split_at(keep);
        if head.len() as i64 > I128_DIGITS {
            return None;
        }
        let whole = accumulate(head)?;
        if tail.iter().any(|&d| d != 0) {
            whole.checked_add(1)
        } else {
            Some(whole)
        }
    }
}

fn accumulate(digits: &[u8]) -> Option<i128> {
    digits.iter().try_fold(0i128, |acc, &d| {
        acc.checked_mul(10)?.checked_add(i128::from(d))
    })
}

/// Multiplies a decimal digit string by 2^shift (`shift <= 60`), exactly.
fn mul_pow2(digits: &[u8], shift: u32) -> Vec<u8> {
    let factor = 1u128 << shift;
    let mut out = Vec::with_capacity(digits.len() + 19);
    let mut carry = 0u128;
    for &d in digits.iter().rev() {
        // carry < factor, so this stays below 10 × 2^60.
        let t = u128::from(d) * factor + carry;
        out.push((t % 10) as u8);
        carry = t / 10;
    }
    while carry > 0 {
        out.push((carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    out
}

fn count_digits(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// `n / d` rounded away from zero (`d > 0`).
fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let (q, r) = (n / d, n % d);
    match r.signum() {
        0 => q,
        1 => q + 1,
        _ => q - 1,
    }
}

fn saturate(n: i128) -> i64 {
    i64::try_from(n).unwrap_or(if n > 0 { i64::MAX } else { i64::MIN })
}

/// The input as echoed in an error message, cut short if it is very long.
fn shown(s: &str) -> String {
    match s.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `m × 10^e` units, in nanos (Go's `decQuantity(m, e, _)`).
    fn dec(m: i128, e: u32) -> i128 {
        m * 10i128.pow(e + 9)
    }

    /// `m × 10^-e` units, in nanos, for `e <= 9`.
    fn frac(m: i128, e: u32) -> i128 {
        m * 10i128.pow(9 - e)
    }

    fn q(s: &str) -> Quantity {
        s.parse()
            .unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    /// Kubernetes' `TestQuantityParse` table (apimachinery `pkg/api/resource/quantity_test.go`),
    /// expected values converted to nano-units. Like the Go test, every entry is also checked
    /// with a leading `-` (negated value) and a leading `+` (same value).
    fn parse_table() -> Vec<(&'static str, i128)> {
        let max = BINARY_CAP_NANOS;
        vec![
            ("0", 0),
            ("0n", 0),
            ("0u", 0),
            ("0m", 0),
            ("0Ki", 0),
            ("0k", 0),
            ("0Mi", 0),
            ("0M", 0),
            ("0Gi", 0),
            ("0G", 0),
            ("0Ti", 0),
            ("0T", 0),
            // Quantity-less numbers are allowed.
            ("1", dec(1, 0)),
            // Binary suffixes.
            ("1Ki", dec(1024, 0)),
            ("8Ki", dec(8 * 1024, 0)),
            ("7Mi", dec(7 << 20, 0)),
            ("6Gi", dec(6 << 30, 0)),
            ("5Ti", dec(5 << 40, 0)),
            ("4Pi", dec(4 << 50, 0)),
            ("3Ei", dec(3 << 60, 0)),
            ("10Ti", dec(10 << 40, 0)),
            ("100Ti", dec(100 << 40, 0)),
            // Decimal suffixes.
            ("5n", 5),
            ("4u", 4_000),
            ("3m", 3_000_000),
            ("9", dec(9, 0)),
            ("8k", dec(8, 3)),
            ("50k", dec(5, 4)),
            ("7M", dec(7, 6)),
            ("6G", dec(6, 9)),
            ("5T", dec(5, 12)),
            ("40T", dec(4, 13)),
            ("300T", dec(3, 14)),
            ("2P", dec(2, 15)),
            ("1E", dec(1, 18)),
            // Decimal exponents.
            ("1E-3", frac(1, 3)),
            ("1e3", dec(1, 3)),
            ("1E6", dec(1, 6)),
            ("1e9", dec(1, 9)),
            ("1E12", dec(1, 12)),
            ("1e15", dec(1, 15)),
            ("1E18", dec(1, 18)),
            // Nonstandard but still parsable.
            ("1e14", dec(1, 14)),
            ("1e13", dec(1, 13)),
            ("100.035k", dec(100_035, 0)),
            // Things that look like floating point.
            ("0.001", frac(1, 3)),
            ("0.0005k", frac(5, 1)),
            ("0.005", frac(5, 3)),
            ("0.05", frac(5, 2)),
            ("0.5", frac(5, 1)),
            ("0.00050k", frac(5, 1)),
            ("0.00500", frac(5, 3)),
            ("0.05000", frac(5, 2)),
            ("0.50000", frac(5, 1)),
            ("0.5e0", frac(5, 1)),
            ("0.5e-1", frac(5, 2)),
            ("0.5e-2", frac(5, 3)),
            ("10.035M", dec(10_035, 3)),
            ("1.2e3", dec(12, 2)),
            ("1.3E+6", dec(13, 5)),
            ("1.40e9", dec(14, 8)),
            ("1.53E12", dec(153, 10)),
            ("1.6e15", dec(16, 14)),
            ("1.7E18", dec(17, 17)),
            ("9.01", frac(901, 2)),
            ("8.1k", dec(81, 2)),
            ("7.123456M", dec(7_123_456, 0)),
            ("6.987654321G", dec(6_987_654_321, 0)),
            ("5.444T", dec(5444, 9)),
            ("40.1T", dec(401, 11)),
            ("300.2T", dec(3002, 11)),
            ("2.5P", dec(25, 14)),
            ("1.01E", dec(101, 16)),
            // Things that saturate/round.
            ("3.001n", 4),
            ("1.1E-9", 2),
            ("0.0000000001", 1),
            ("0.0000000005", 1),
            ("0.00000000050", 1),
            ("0.5e-9", 1),
            ("0.9n", 1),
            ("0.00000012345", 124),
            ("0.00000012354", 124),
            ("9Ei", max),
            ("9223372036854775807Ki", max),
            ("12E", dec(12, 18)),
            // Fractional binary quantities.
            ("100.035Ki", frac(10_243_584, 2)),
            ("0.5Mi", dec(512 * 1024, 0)),
            ("0.05Gi", frac(536_870_912, 1)),
            ("0.025Ti", frac(274_877_906_944, 1)),
            // Things written by trolls.
            ("0.000000000001Ki", 2),
            (".001", frac(1, 3)),
            (".0001k", frac(100, 3)),
            ("1.", dec(1, 0)),
            ("1.G", dec(1, 9)),
        ]
    }

    #[test]
    fn quantity_parse_table_from_kubernetes() {
        for (input, nanos) in parse_table() {
            assert_eq!(q(input).as_nanos(), nanos, "{input}");
            let neg = format!("-{input}");
            assert_eq!(q(&neg).as_nanos(), -nanos, "{neg}");
            let plus = format!("+{input}");
            assert_eq!(q(&plus).as_nanos(), nanos, "{plus}");
        }
    }

    #[test]
    fn quantity_extra_parse_cases() {
        let cases: &[(&str, i128)] = &[
            ("5.", dec(5, 0)),
            (".5", frac(5, 1)),
            ("1.5", frac(15, 1)),
            ("100m", frac(1, 1)),
            ("12e+6", dec(12, 6)),
            ("1e-9", 1),
            ("1e-10", 1),
            ("-1e-10", -1),
            ("-0.1n", -1),
            ("1.5e-3", frac(15, 4)),
            ("0001.2500", frac(125, 2)),
            ("0e2147483647", 0),
            ("-0", 0),
            ("+0.000", 0),
            ("1E-2147483647", 1),
            ("1e028", dec(1, 28)),
            ("1.5Gi", dec(3 << 29, 0)),
            ("1Ei", dec(1 << 60, 0)),
            ("7Ei", dec(7 << 60, 0)),
            ("8Ei", BINARY_CAP_NANOS),
            ("-8Ei", -BINARY_CAP_NANOS),
            ("1024Ei", BINARY_CAP_NANOS),
            (
                "99999999999999999999999999999999999999999999999Ki",
                BINARY_CAP_NANOS,
            ),
            ("9223372036854775807", dec(i64::MAX.into(), 0)),
            ("100000000000000000000", dec(1, 20)),
            (
                "1000000000000000000000000000000000000000000000000e-40",
                dec(1, 8),
            ),
            (
                "0.000000000000000000000000000000000000000000000000000000000000000000000001Ei",
                1,
            ),
            (
                "1.000000000000000000000000000000000000000000000000000000000000000000",
                dec(1, 0),
            ),
            // serde_json renders JSON numbers like these.
            ("1000.0", dec(1000, 0)),
            ("2.5e-7", 250),
        ];
        for &(input, nanos) in cases {
            assert_eq!(q(input).as_nanos(), nanos, "{input}");
        }
    }

    #[test]
    fn quantity_invalid_inputs_are_rejected() {
        let invalid = [
            // Kubernetes' invalid list.
            "1.1.M",
            "1+1.0M",
            "0.1mi",
            "0.1am",
            "aoeu",
            ".5i",
            "1i",
            "-3.01i",
            "-3.01e-",
            "1e4294967297",
            " 1",
            "1 ",
            // Ours.
            "",
            "-",
            "+",
            ".",
            "-.",
            "+-1",
            "--1",
            "k",
            "Mi",
            "e3",
            "12xy",
            "1Kb",
            "1ki",
            "1KI",
            "1m1",
            "1Mi3",
            "1.2.3",
            "1..2",
            "1e",
            "1e+",
            "1e+-3",
            "1e3.5",
            "1e3i",
            "1ee3",
            "1E2147483648",
            "1e-2147483648",
            "1e9223372036854775808",
            "1e1000",
            "1e30",
            "0x10",
            "1_000",
            "1,5",
            "NaN",
            "inf",
            "１",
            "1\n",
            "\t1",
            "1\u{a0}",
            "1µ",
            "1m\0",
        ];
        for input in invalid {
            assert!(
                input.parse::<Quantity>().is_err(),
                "{input:?} should not parse"
            );
        }
    }

    #[test]
    fn quantity_errors_name_input_and_problem() {
        let cases = [
            ("", "invalid quantity \"\": empty string"),
            ("12xy", r#"invalid quantity "12xy": unknown suffix "xy""#),
            ("1Kb", r#"invalid quantity "1Kb": unknown suffix "Kb""#),
            ("1m1", r#"invalid quantity "1m1": unknown suffix "m1""#),
            (" 1", r#"invalid quantity " 1": whitespace is not allowed"#),
            (
                "1.2.3",
                r#"invalid quantity "1.2.3": more than one decimal point"#,
            ),
            (
                "-",
                r#"invalid quantity "-": expected a number (digits with an optional sign and decimal point)"#,
            ),
            (
                "-3.01e-",
                r#"invalid quantity "-3.01e-": malformed exponent "e-""#,
            ),
            (
                "1e3.5",
                r#"invalid quantity "1e3.5": malformed exponent "e3.5""#,
            ),
            (
                "1E2147483648",
                r#"invalid quantity "1E2147483648": exponent out of range (must be within ±2147483647)"#,
            ),
            ("1e30", r#"invalid quantity "1e30": too large to represent"#),
            (
                "1\n",
                r#"invalid quantity "1\n": whitespace is not allowed"#,
            ),
        ];
        for (input, message) in cases {
            let err = input.parse::<Quantity>().unwrap_err();
            assert_eq!(err.to_string(), message, "{input:?}");
        }
        assert_eq!(
            "1e+-3".parse::<Quantity>(),
            Err(QuantityError::InvalidExponent {
                input: "1e+-3".into(),
                exponent: "e+-3".into()
            })
        );
        assert_eq!(
            "lots".parse::<Quantity>(),
            Err(QuantityError::MissingNumber {
                input: "lots".into()
            })
        );
        let long = format!("1{}x", "0".repeat(200));
        let message = long.parse::<Quantity>().unwrap_err().to_string();
        assert!(message.len() < 200, "{message}");
        assert!(message.starts_with("invalid quantity \"1000"), "{message}");
    }

    /// Kubernetes' `TestInterpretExponentInt32Bounds`, through the whole parser.
    #[test]
    fn quantity_exponent_bounds_match_kubernetes() {
        let cases = [
            ("e14", true),
            ("E2147483647", true),
            ("E-2147483647", true),
            ("E2147483648", false),
            ("E-2147483648", false),
            ("E4294967297", false),
            ("E8589934592", false),
            ("E9223372036854775807", false),
            ("E9223372036854775808", false),
            ("E6024865272343", false),
        ];
        for (suffix, ok) in cases {
            // A zero mantissa keeps huge positive exponents representable.
            let input = format!("0{suffix}");
            let got = input.parse::<Quantity>();
            if ok {
                assert_eq!(got, Ok(Quantity::ZERO), "{input}");
            } else {
                assert_eq!(
                    got,
                    Err(QuantityError::ExponentOutOfRange {
                        input: input.clone()
                    })
                );
            }
        }
    }

    /// Kubernetes' `TestNegativeValueRoundsAwayFromZero`, plus the brief's cases: `Value()`
    /// and `MilliValue()` round away from zero.
    #[test]
    fn quantity_value_and_milli_round_up() {
        let cases: &[(&str, i64, i64)] = &[
            // (input, value_ceil, milli_value_ceil)
            ("-.484785E-7466", -1, -1),
            (".484785E-7466", 1, 1),
            ("-.484785E-1", -1, -49),
            (".484785E-1", 1, 49),
            ("-0.0005", -1, -1),
            ("0.0005", 1, 1),
            ("-1500m", -2, -1500),
            ("1500m", 2, 1500),
            ("-9.5000000001Gi", -10_200_547_329, -10_200_547_328_108),
            ("9.5000000001Gi", 10_200_547_329, 10_200_547_328_108),
            ("-1", -1, -1000),
            ("1", 1, 1000),
            ("0", 0, 0),
            ("1.5Gi", 1_610_612_736, 1_610_612_736_000),
            ("0.5", 1, 500),
            ("100m", 1, 100),
            ("1n", 1, 1),
            ("-1n", -1, -1),
            ("1u", 1, 1),
            ("1m", 1, 1),
            ("1e3", 1000, 1_000_000),
            ("1.5e-3", 1, 2),
            ("1234", 1234, 1_234_000),
            ("1024m", 2, 1024),
            ("1.001", 2, 1001),
            ("1.0001", 2, 1001),
            ("2Gi", 2 << 30, (2 << 30) * 1000),
            ("1k", 1000, 1_000_000),
            // Saturation.
            ("9Ei", i64::MAX, i64::MAX),
            ("-9Ei", -i64::MAX, i64::MIN),
            ("9223372036854775807", i64::MAX, i64::MAX),
            ("9223372036854775807m", 9_223_372_036_854_776, i64::MAX),
            ("-9223372036854775808m", -9_223_372_036_854_776, i64::MIN),
            ("9223372036854775808", i64::MAX, i64::MAX),
            ("-9223372036854775808", i64::MIN, i64::MIN),
            ("-9223372036854775809", i64::MIN, i64::MIN),
            ("1e20", i64::MAX, i64::MAX),
            ("-1e28", i64::MIN, i64::MIN),
        ];
        for &(input, value, milli) in cases {
            let got = q(input);
            assert_eq!(got.value_ceil(), value, "value_ceil({input})");
            assert_eq!(got.milli_value_ceil(), milli, "milli_value_ceil({input})");
            assert_eq!(parse_value(input), Ok(value), "parse_value({input})");
            assert_eq!(parse_milli(input), Ok(milli), "parse_milli({input})");
        }
    }

    #[test]
    fn quantity_sign() {
        assert!(q("-1n").is_negative());
        assert!(q("-0.0000000000001").is_negative());
        assert!(!q("-0").is_negative());
        assert!(q("-0").is_zero());
        assert!(!q("1n").is_negative());
        assert!(!q("0").is_negative());
        assert_eq!(q("1000m"), q("1"));
        assert_eq!(q("1Ki"), q("1024"));
        assert!(q("10000T") > q("100Gi"));
        assert!(q("50m") < q("100m"));
    }

    /// Kubernetes' `TestQuantityParseEmit` and the decimal rows of `TestQuantityString`: the
    /// canonical form of decimal quantities.
    #[test]
    fn quantity_display_is_canonical_decimal() {
        let cases = [
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
            ("0.001T", "1G"),
            ("1000000k", "1G"),
            ("1000u", "1m"),
            ("80m", "80m"),
            ("1.08", "1080m"),
            ("1080000000n", "1080m"),
            ("300M", "300M"),
            ("1T", "1T"),
            ("1E", "1E"),
            ("1234567M", "1234567M"),
            ("3k", "3k"),
            ("1025", "1025"),
            ("0", "0"),
            ("-0", "0"),
            ("5000m", "5"),
            ("0.5", "500m"),
            ("1080n", "1080n"),
            ("1.080u", "1080n"),
            ("1080u", "1080u"),
            ("1Ki", "1024"),
            ("1e21", "1000E"),
            ("-1.5", "-1500m"),
            ("9Ei", "9223372036854775807"),
        ];
        for (input, canonical) in cases {
            assert_eq!(q(input).to_string(), canonical, "{input}");
            assert_eq!(q(canonical), q(input), "{canonical} re-parses");
        }
    }

    /// Reference model: the value computed with plain rational arithmetic on small inputs.
    fn model_nanos(negative: bool, int: u64, frac_digits: &str, suffix: &str) -> i128 {
        let f = frac_digits.len() as u32;
        let frac: i128 = if f == 0 {
            0
        } else {
            frac_digits.parse().unwrap()
        };
        let mantissa = i128::from(int) * 10i128.pow(f) + frac; // value = mantissa / 10^f × suffix
        let ceil_div = |n: i128, d: i128| (n + d - 1) / d;
        let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .iter()
            .position(|s| *s == suffix);
        let magnitude = if let Some(i) = binary {
            let n = mantissa * (1i128 << (10 * (i as u32 + 1))) * NANOS_PER_UNIT;
            ceil_div(n, 10i128.pow(f)).min(BINARY_CAP_NANOS)
        } else {
            let exp: i32 = match suffix {
                "n" => -9,
                "u" => -6,
                "m" => -3,
                "" => 0,
                "k" => 3,
                "M" => 6,
                "G" => 9,
                "T" => 12,
                "P" => 15,
                "E" => 18,
                e => e[1..].parse().unwrap(),
            };
            let power = exp + 9 - f as i32;
            if power >= 0 {
                mantissa * 10i128.pow(power as u32)
            } else {
                ceil_div(mantissa, 10i128.pow(power.unsigned_abs()))
            }
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    fn suffix_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi",
                "Ei",
            ])
            .prop_map(String::from),
            (prop::sample::select(vec!["e", "E"]), -25i32..=18)
                .prop_map(|(e, x)| format!("{e}{x}")),
            (prop::sample::select(vec!["e+", "E+"]), 0i32..=18)
                .prop_map(|(e, x)| format!("{e}{x}")),
        ]
    }

    proptest! {
        #[test]
        fn quantity_arbitrary_strings_never_panic(s in any::<String>()) {
            let _ = s.parse::<Quantity>();
        }

        #[test]
        fn quantity_near_miss_strings_never_panic_and_round_trip(
            s in "[+-]?[0-9]{0,45}(\\.[0-9]{0,45})?\\.?([numkKMGTPEei]{0,2}[+-]?[0-9]{0,12})?"
        ) {
            if let Ok(parsed) = s.parse::<Quantity>() {
                // Display is exact: it parses back to the same quantity.
                prop_assert_eq!(parsed.to_string().parse::<Quantity>(), Ok(parsed));
                // Nested rounding agrees with direct rounding when nothing saturates.
                let milli = parsed.milli_value_ceil();
                if milli != i64::MAX && milli != i64::MIN {
                    prop_assert_eq!(parsed.value_ceil(), saturate(div_away_from_zero(milli.into(), 1000)));
                }
                // The sign is symmetric.
                if !s.starts_with('-') {
                    let unsigned = s.strip_prefix('+').unwrap_or(&s);
                    let negated = format!("-{unsigned}").parse::<Quantity>();
                    prop_assert_eq!(negated, Ok(Quantity::from_nanos(-parsed.as_nanos())));
                }
            }
        }

        #[test]
        fn quantity_matches_rational_model(
            negative in any::<bool>(),
            int in 0u64..10_000,
            frac in "[0-9]{0,4}",
            dot in any::<bool>(),
            suffix in suffix_strategy(),
        ) {
            let number = if dot || !frac.is_empty() { format!("{int}.{frac}") } else { int.to_string() };
            let s = format!("{}{number}{suffix}", if negative { "-" } else { "" });
            let expected = model_nanos(negative, int, &frac, &suffix);
            prop_assert_eq!(s.parse::<Quantity>().map(|q| q.as_nanos()), Ok(expected), "{}", s);
        }

        #[test]
        fn quantity_milli_round_trip(n in any::<i64>()) {
            prop_assert_eq!(parse_milli(&format!("{n}m")), Ok(n));
            prop_assert_eq!(parse_value(&n.to_string()), Ok(n));
            prop_assert_eq!(parse_milli(&n.to_string()), Ok(n.saturating_mul(1000)));
        }

        #[test]
        fn quantity_binary_round_trip(n in -(i64::MAX / 1024)..=(i64::MAX / 1024)) {
            prop_assert_eq!(parse_value(&format!("{n}Ki")), Ok(n * 1024));
            prop_assert_eq!(parse_milli(&format!("{n}Ki")), Ok(n.saturating_mul(1_024_000)));
        }

        #[test]
        fn quantity_binary_caps_like_kubernetes(n in any::<i64>()) {
            let expected = (i128::from(n) << 20).clamp(-i128::from(i64::MAX), i128::from(i64::MAX));
            prop_assert_eq!(parse_value(&format!("{n}Mi")).map(i128::from), Ok(expected));
        }
    }
}
