//! `ferrobloom stats`' report as text (a table for the plain and Cuckoo
//! filters, one for the windowed filters, fitted to a screen) and as JSON
//! (each type's entry from its own module).

use console::measure_text_width;
use serde_json::{json, Value as Json};

use super::{
    bloom, cms, cuckoo, tdigest, topk, window, Detail, Level, Report, Row, Screen, Source,
};
use crate::fmt::{self, Column};

/// A key in JSON: the key itself when it is UTF-8 (JSON escapes what it
/// must), else its text form with `\xHH` for the bytes that are not; then
/// `key_hex`, the key's bytes in hexadecimal for keys that are not UTF-8
/// (null for the others), so that any key can be named exactly.
pub fn json_key(key: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(key) {
        Ok(text) => (text.to_string(), None),
        Err(_) => (
            fmt::key(key),
            Some(key.iter().map(|b| format!("{b:02x}")).collect()),
        ),
    }
}

pub fn to_json(report: &Report) -> Json {
    let filters: Vec<Json> = report
        .rows
        .iter()
        .map(|r| {
            let (key, key_hex) = json_key(&r.key);
            match &r.detail {
                Detail::Bloom(b) => bloom::json(r, b, key, key_hex),
                Detail::Cuckoo(c) => cuckoo::json(r, c, key, key_hex),
                Detail::Window(w) => window::json(r, w, key, key_hex),
                Detail::Cms(c) => cms::json(r, c, key, key_hex),
                Detail::TopK(t) => topk::json(r, t, key, key_hex),
                Detail::TDigest(t) => tdigest::json(r, t, key, key_hex),
            }
        })
        .collect();
    json!({
        "server": report.server,
        "cluster_nodes": report.cluster_nodes,
        "source": if report.fallback { "BF.INFO+BF.DEBUG" } else { "BF.STATS" },
        "thresholds": {
            "warning": report.thresholds.warning,
            "alert": report.thresholds.alert,
            "from": report.thresholds.source,
        },
        "filters": filters,
        "summary": {
            "filters": report.rows.len(),
            "ok": report.count(Level::Ok),
            "warning": report.count(Level::Warning),
            "alert": report.count(Level::Alert),
        },
        "exit_code": report.worst().exit_code(),
    })
}

/// The report as text: all of it, or on a screen, what fits it: the
/// fullest filters, then a line counting those left out.
pub fn to_text(report: &Report, screen: Option<Screen>) -> String {
    let all = report.rows.len();
    let Some(screen) = screen else {
        return render(report, all);
    };
    let mut shown = all;
    loop {
        let text = render(report, shown);
        let used = screen_lines(&text, screen.columns);
        if used <= screen.lines || shown <= 1 {
            return text;
        }
        let excess = used - screen.lines;
        // The first cut also makes room for the line about the rest.
        let cut = if shown == all { excess + 1 } else { excess };
        shown = shown.saturating_sub(cut).max(1);
    }
}

/// Lines the text takes on a screen `columns` wide (long lines wrap).
fn screen_lines(text: &str, columns: usize) -> usize {
    text.lines()
        .map(|l| measure_text_width(l).div_ceil(columns.max(1)).max(1))
        .sum()
}

/// What the report holds, by kind: `5 Bloom filters (4 windowed)`, `2 Bloom
/// filters, 1 Cuckoo filter, 3 Count-Min sketches, 1 Top-K sketch, 2
/// t-digests`.
/// A Cuckoo filter is not a Bloom filter, nor is a sketch or a digest, so
/// they are counted apart; a windowed filter is one, so it is counted in.
fn filter_counts(report: &Report) -> String {
    let of = |kind: fn(&Detail) -> bool| report.rows.iter().filter(|r| kind(&r.detail)).count();
    let cuckoos = of(|d| matches!(d, Detail::Cuckoo(_))) as u64;
    let sketches = of(|d| matches!(d, Detail::Cms(_))) as u64;
    let topks = of(|d| matches!(d, Detail::TopK(_))) as u64;
    let digests = of(|d| matches!(d, Detail::TDigest(_))) as u64;
    let others = cuckoos + sketches + topks + digests;
    let blooms = report.rows.len() as u64 - others;
    let windows = report.windows() as u64;
    let mut parts = Vec::new();
    if blooms > 0 || others == 0 {
        let mut bloom = format!("{blooms} Bloom {}", fmt::noun(blooms, "filter"));
        if windows > 0 {
            bloom.push_str(&format!(" ({windows} windowed)"));
        }
        parts.push(bloom);
    }
    if cuckoos > 0 {
        parts.push(format!("{cuckoos} Cuckoo {}", fmt::noun(cuckoos, "filter")));
    }
    if sketches > 0 {
        parts.push(format!(
            "{sketches} Count-Min {}",
            fmt::noun(sketches, "sketch")
        ));
    }
    if topks > 0 {
        parts.push(format!("{topks} {}", fmt::noun(topks, "Top-K sketch")));
    }
    if digests > 0 {
        parts.push(format!("{digests} {}", fmt::noun(digests, "t-digest")));
    }
    parts.join(", ")
}

/// The report with its first `shown` rows.
fn render(report: &Report, shown: usize) -> String {
    let t = &report.thresholds;
    let server = match report.cluster_nodes {
        Some(n) => format!(
            "{} (cluster, {n} {})",
            report.server,
            fmt::noun(n as u64, "master")
        ),
        None => report.server.clone(),
    };
    let windows = report.windows();
    let mut out = format!(
        "{} · {} · thresholds: warning {}, alert {} ({})\n",
        server,
        filter_counts(report),
        fmt::percent(t.warning),
        fmt::percent(t.alert),
        t.source
    );
    if report.rows.is_empty() {
        out.push_str("no filters found\n");
        return out;
    }
    let col = |title, right| Column { title, right };
    let columns = [
        col("KEY", false),
        col("ITEMS", true),
        col("CAPACITY", true),
        col("FILL", true),
        col("EST. FPR", true),
        col("SIZE", true),
        col("LINKS", true),
        col("POLICY", false),
        col("LEVEL", false),
    ];
    let (all_sketches, filters): (Vec<&Row>, Vec<&Row>) = report.rows[..shown]
        .iter()
        .partition(|r| r.detail.is_sketch());
    let of = |kind: fn(&Detail) -> bool| -> Vec<&Row> {
        all_sketches
            .iter()
            .copied()
            .filter(|r| kind(&r.detail))
            .collect()
    };
    let sketches = of(|d| matches!(d, Detail::Cms(_)));
    let topks = of(|d| matches!(d, Detail::TopK(_)));
    let digests = of(|d| matches!(d, Detail::TDigest(_)));
    let (windowed, plain): (Vec<&Row>, Vec<&Row>) = filters
        .into_iter()
        .partition(|r| matches!(r.detail, Detail::Window(_)));
    let rows: Vec<Vec<String>> = plain
        .iter()
        .filter_map(|r| {
            let (links, policy) = match &r.detail {
                Detail::Bloom(b) => (b.links, b.policy.clone().unwrap_or_else(|| "n/a".into())),
                Detail::Cuckoo(c) => (c.sub_filters, format!("cuckoo/{}", c.bucket_size)),
                Detail::Window(_) | Detail::Cms(_) | Detail::TopK(_) | Detail::TDigest(_) => {
                    return None
                }
            };
            let mut fpr = fmt::g(r.fpr, 3);
            if r.source == Source::InfoDebug {
                fpr.push('*');
            }
            Some(vec![
                fmt::key(&r.key),
                fmt::int(r.items),
                fmt::int(r.capacity),
                fmt::percent(r.fill),
                fpr,
                fmt::bytes(r.size),
                links.to_string(),
                policy,
                r.level.styled(),
            ])
        })
        .collect();
    if !rows.is_empty() {
        out.push('\n');
        out.push_str(&fmt::table(&columns, &rows, ""));
    }
    if !windowed.is_empty() {
        out.push('\n');
        out.push_str(&window::table(&windowed));
    }
    if !sketches.is_empty() {
        out.push('\n');
        out.push_str(&cms::table(&sketches));
    }
    if !topks.is_empty() {
        out.push('\n');
        out.push_str(&topk::table(&topks));
    }
    if !digests.is_empty() {
        out.push('\n');
        out.push_str(&tdigest::table(&digests));
    }
    let rest = &report.rows[shown..];
    if !rest.is_empty() {
        let count = |level| rest.iter().filter(|r| r.level == level).count();
        out.push_str(&format!(
            "… {} more {} not shown ({} {}, {} {}, {} {}): a taller terminal or --pattern \
             shows them\n",
            fmt::int(rest.len() as u64),
            fmt::noun(rest.len() as u64, "filter"),
            fmt::int(count(Level::Alert) as u64),
            Level::Alert.styled(),
            fmt::int(count(Level::Warning) as u64),
            Level::Warning.styled(),
            fmt::int(count(Level::Ok) as u64),
            Level::Ok.styled(),
        ));
    }
    out.push('\n');
    let mut summary = Vec::new();
    for level in [Level::Alert, Level::Warning, Level::Ok] {
        let n = report.count(level);
        if n > 0 {
            summary.push(format!("{n} {}", level.styled()));
        }
    }
    out.push_str(&summary.join(", "));
    out.push('\n');
    if windows > 0 {
        out.push_str(window::NOTE);
    }
    let cuckoos = report.rows[..shown]
        .iter()
        .filter(|r| matches!(r.detail, Detail::Cuckoo(_)))
        .count();
    if cuckoos > 0 {
        out.push_str(
            "cuckoo/B: a Cuckoo filter with B slots a bucket; CAPACITY is its slots, LINKS its \
             sub-filters, FILL its newest sub-filter's load (where it expands, typically well \
             before 100%: `ferrobloom plan --cuckoo`)\n",
        );
    }
    if !sketches.is_empty() {
        out.push_str(&cms::note(&sketches));
    }
    if !topks.is_empty() {
        out.push_str(topk::NOTE);
    }
    if !digests.is_empty() {
        out.push_str(tdigest::NOTE);
    }
    if report.fallback {
        out.push_str(
            "* estimated from the item counts (the server has no BF.STATS): \
             (1 - (1 - 1/m)^(k·n))^k per link; for Cuckoo filters (no CF.STATS), \
             1 - (1 - load/255)^(2·B) per sub-filter with FILL = items / slots\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{order, Thresholds};
    use super::*;

    fn report(fills: &[f64]) -> Report {
        let t = Thresholds {
            warning: 0.75,
            alert: 0.9,
            source: "default",
        };
        let mut rows: Vec<Row> = fills
            .iter()
            .enumerate()
            .map(|(i, &fill)| Row {
                key: format!("k{i}").into_bytes(),
                items: (fill * 1000.0) as u64,
                capacity: 1000,
                fill,
                fpr: 0.001,
                source: Source::Stats,
                size: 1480,
                bytes: 1384,
                level: Level::of(fill, &t),
                detail: Detail::Bloom(bloom::Bloom {
                    links: 1,
                    policy: Some("exact".into()),
                    expansion: Some(2),
                }),
            })
            .collect();
        rows.sort_by(order);
        Report {
            server: "redis://127.0.0.1:6379/".into(),
            cluster_nodes: None,
            thresholds: t,
            rows,
            fallback: false,
        }
    }

    fn a_cuckoo() -> Detail {
        Detail::Cuckoo(cuckoo::Cuckoo {
            sub_filters: 1,
            expansion: 2,
            bucket_size: 2,
        })
    }

    #[test]
    fn the_title_counts_cuckoo_filters_apart_from_bloom_filters() {
        let title = |r: &Report| to_text(r, None).lines().next().unwrap().to_string();
        let mut r = report(&[0.5, 0.5, 0.5, 0.5]);
        assert!(title(&r).contains(" · 4 Bloom filters · "), "{}", title(&r));
        for row in &mut r.rows[1..] {
            row.detail = a_cuckoo();
        }
        assert!(
            title(&r).contains(" · 1 Bloom filter, 3 Cuckoo filters · "),
            "{}",
            title(&r)
        );
        r.rows[0].detail = a_cuckoo();
        assert!(
            title(&r).contains(" · 4 Cuckoo filters · "),
            "{}",
            title(&r)
        );
        r.rows.truncate(1);
        let mut mixed = r.rows.clone();
        mixed[0].detail = Detail::TopK(topk::TopKDetail {
            k: 3,
            width: 8,
            depth: 7,
            decay: 0.9,
            entry_count: 0,
            top_count: 0,
            occupied_buckets: 0,
            occupancy: 0.0,
        });
        mixed.extend(r.rows.clone());
        let both = Report {
            rows: mixed,
            ..report(&[])
        };
        assert!(
            title(&both).contains(" · 1 Cuckoo filter, 1 Top-K sketch · "),
            "{}",
            title(&both)
        );
        let text = to_text(&both, None);
        assert!(text.contains("\nTOP-K "), "{text}");
        assert!(text.contains("Top-K: LISTED is"), "{text}");
        r.cluster_nodes = Some(1);
        assert!(
            title(&r).contains(" (cluster, 1 master) · 1 Cuckoo filter · "),
            "{}",
            title(&r)
        );
        r.rows.clear();
        assert!(to_text(&r, None).contains("no filters found"));
    }

    #[test]
    fn a_screen_shows_the_fullest_and_counts_the_rest() {
        // 3000 filters: 2 alert, 3 warning, the rest ok.
        let mut fills = vec![0.95, 0.91, 0.8, 0.78, 0.76];
        fills.extend((0..2995).map(|i| 0.1 + (i % 500) as f64 / 1000.0));
        let r = report(&fills);
        let screen = Screen {
            lines: 22,
            columns: 120,
        };
        let text = to_text(&r, Some(screen));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 22, "{text}");
        assert!(lines[0].contains("3000 Bloom filters"), "{}", lines[0]);
        assert!(lines[2].starts_with("KEY"));
        // The fullest first: both alerts and all warnings are on screen.
        assert!(lines[3].starts_with("k0 ") && lines[3].ends_with("ALERT"));
        assert!(lines[7].ends_with("WARNING"), "{}", lines[7]);
        let shown = lines.iter().filter(|l| l.starts_with('k')).count();
        assert_eq!(shown, 22 - 6);
        let more = lines
            .iter()
            .find(|l| l.starts_with('…'))
            .expect("a line for the rest");
        assert!(
            more.contains(&format!(
                "{} more filters not shown (0 ALERT, 0 WARNING, 2,984 ok)",
                fmt::int(3000 - shown as u64)
            )),
            "{more}"
        );
        // The summary still counts every filter.
        assert!(text.contains("2 ALERT, 3 WARNING, 2995 ok"), "{text}");

        // A screen too short even for the alerts says how many it hides.
        let tiny = to_text(
            &r,
            Some(Screen {
                lines: 7,
                columns: 120,
            }),
        );
        assert!(
            tiny.contains("2,999 more filters not shown (1 ALERT, 3 WARNING, 2,995 ok)"),
            "{tiny}"
        );

        // Not a terminal, or everything fits: every row, no such line.
        let all = to_text(&r, None);
        assert_eq!(all.lines().filter(|l| l.starts_with('k')).count(), 3000);
        assert!(!all.contains('…'));
        let few = report(&[0.5, 0.95]);
        let fits = to_text(&few, Some(screen));
        assert_eq!(fits, to_text(&few, None));

        // Wrapped lines count: on a narrow screen fewer rows fit.
        let narrow = to_text(
            &r,
            Some(Screen {
                lines: 22,
                columns: 40,
            }),
        );
        assert!(screen_lines(&narrow, 40) <= 22, "{narrow}");
        assert!(narrow.lines().filter(|l| l.starts_with('k')).count() < shown);
    }

    #[test]
    fn keys_are_escaped_in_text_and_exact_in_json() {
        let mut r = report(&[0.5, 0.2]);
        r.rows[0].key = b"evil\x1b[2J\nkey".to_vec();
        r.rows[1].key = b"bin\xff\x00".to_vec();
        let text = to_text(&r, None);
        assert!(!text.contains('\x1b'), "{text:?}");
        assert!(text.contains("evil\\x1b[2J\\nkey "), "{text}");
        assert!(text.contains("bin\\xff\\x00 "), "{text}");
        // One line per row: the newline did not break the table.
        assert_eq!(text.lines().count(), 7, "{text}");
        let json = to_json(&r);
        let text = serde_json::to_string(&json).unwrap();
        let back: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(back["filters"][0]["key"], "evil\x1b[2J\nkey");
        assert_eq!(back["filters"][0]["key_hex"], Json::Null);
        assert_eq!(back["filters"][1]["key"], "bin\\xff\\x00");
        assert_eq!(back["filters"][1]["key_hex"], "62696eff00");
    }
}
