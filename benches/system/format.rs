//! How numbers are written in the report and on the chart.

/// A value with its unit: thousands grouped from 10,000 up, fewer
/// decimals the larger it is; ops/s shown as "/s".
pub fn fmt_value(v: f64, unit: &str) -> String {
    let unit = if unit == "ops/s" { "/s" } else { unit };
    if v >= 10_000.0 {
        return format!("{} {unit}", group_thousands(&format!("{v:.0}")));
    }
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$} {unit}")
}

fn group_thousands(digits: &str) -> String {
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    grouped
}

pub fn fmt_ratio(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}
