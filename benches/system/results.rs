//! The measurements of a run: per metric, one (A, B) pair per round, and
//! their statistics (ratios A / B, min / median / max over the rounds).

#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    /// Lower is better (microseconds, milliseconds, bytes).
    Cost,
    /// Higher is better (operations per second).
    Throughput,
}

impl Kind {
    pub fn better(self) -> &'static str {
        match self {
            Kind::Cost => "lower is better",
            Kind::Throughput => "higher is better",
        }
    }
}

pub struct Metric {
    pub workload: String,
    pub metric: String,
    pub unit: &'static str,
    pub kind: Kind,
    /// Per round: (A, B) = (FerroBloom, RedisBloom) or (tracked, untracked).
    pub rounds: Vec<(f64, f64)>,
}

impl Metric {
    fn ratios(&self) -> Vec<f64> {
        self.rounds.iter().map(|(a, b)| a / b).collect()
    }

    pub fn ratio_summary(&self) -> (f64, f64, f64) {
        summary(&self.ratios())
    }

    pub fn median_ratio(&self) -> f64 {
        self.ratio_summary().1
    }

    pub fn medians(&self) -> (f64, f64) {
        let a: Vec<f64> = self.rounds.iter().map(|r| r.0).collect();
        let b: Vec<f64> = self.rounds.iter().map(|r| r.1).collect();
        (summary(&a).1, summary(&b).1)
    }
}

/// (min, median, max); the median of an even count is the mean of the
/// middle two.
pub fn summary(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    assert!(n > 0, "no values");
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (v[0], median, v[n - 1])
}

#[derive(Default)]
pub struct Results {
    pub metrics: Vec<Metric>,
    pub notes: Vec<String>,
}

impl Results {
    /// Adds one round's (A, B) of a metric, creating the metric at its
    /// first round (the report lists metrics in that order).
    pub fn record(
        &mut self,
        workload: &str,
        metric: &str,
        unit: &'static str,
        kind: Kind,
        values: (f64, f64),
    ) {
        assert!(
            values.0.is_finite() && values.1.is_finite() && values.0 > 0.0 && values.1 > 0.0,
            "{workload} / {metric}: unusable measurement {values:?}"
        );
        match self
            .metrics
            .iter_mut()
            .find(|m| m.workload == workload && m.metric == metric)
        {
            Some(m) => m.rounds.push(values),
            None => self.metrics.push(Metric {
                workload: workload.into(),
                metric: metric.into(),
                unit,
                kind,
                rounds: vec![values],
            }),
        }
    }

    /// Records one round of a metric from both sides' results, the value
    /// of each taken by `value`.
    pub fn record_both<T>(
        &mut self,
        workload: &str,
        metric: &str,
        unit: &'static str,
        kind: Kind,
        sides: &[T; 2],
        value: impl Fn(&T) -> f64,
    ) {
        let values = (value(&sides[0]), value(&sides[1]));
        self.record(workload, metric, unit, kind, values);
    }

    pub fn get(&self, workload: &str, metric: &str) -> Option<&Metric> {
        self.metrics
            .iter()
            .find(|m| m.workload == workload && m.metric == metric)
    }

    pub fn note(&mut self, text: String) {
        println!("note: {text}");
        self.notes.push(text);
    }
}
