//! The index of a [`ToolSearch`](super::ToolSearch): BM25 over the tools' names,
//! descriptions and parameters, with words split on case and punctuation and CJK text matched
//! by characters and pairs of characters.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::Tool;

/// The tools and their BM25 index.
pub(super) struct Index {
    /// The tools as offered and called: in the search's middleware.
    pub(super) tools: Vec<Arc<dyn Tool>>,
    /// The same tools as given, to wrap again.
    pub(super) unwrapped: Vec<Arc<dyn Tool>>,
    pub(super) by_name: HashMap<String, usize>,
    /// Per tool, each term's count.
    docs: Vec<HashMap<String, u32>>,
    lengths: Vec<f64>,
    average_length: f64,
    /// How many tools each term occurs in.
    document_frequency: HashMap<String, u32>,
}

impl Index {
    /// The index of `tools`, which are `unwrapped` in the search's middleware (one for one).
    pub(super) fn new(tools: Vec<Arc<dyn Tool>>, unwrapped: Vec<Arc<dyn Tool>>) -> Self {
        // One tool per name: a name offered twice would fail the run that finds both.
        let mut seen = std::collections::HashSet::new();
        let (tools, unwrapped): (Vec<_>, Vec<_>) = tools
            .into_iter()
            .zip(unwrapped)
            .filter(|(tool, _)| {
                let first = seen.insert(tool.name().to_owned());
                if !first {
                    tracing::warn!(
                        tool = tool.name(),
                        "ToolSearch: a second tool of this name is left out"
                    );
                }
                first
            })
            .unzip();
        let mut docs = Vec::with_capacity(tools.len());
        let mut document_frequency: HashMap<String, u32> = HashMap::new();
        for tool in &tools {
            let mut text = format!("{} {} {}", tool.name(), tool.name(), tool.description());
            schema_text(tool.input_schema(), &mut text);
            let mut counts: HashMap<String, u32> = HashMap::new();
            for term in terms(&text) {
                *counts.entry(term).or_default() += 1;
            }
            for term in counts.keys() {
                *document_frequency.entry(term.clone()).or_default() += 1;
            }
            docs.push(counts);
        }
        let lengths: Vec<f64> = docs
            .iter()
            .map(|d| f64::from(d.values().sum::<u32>()))
            .collect();
        let average_length = lengths.iter().sum::<f64>() / (lengths.len().max(1) as f64);
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name().to_owned(), i))
            .collect();
        Self {
            tools,
            unwrapped,
            by_name,
            docs,
            lengths,
            average_length,
            document_frequency,
        }
    }

    /// The best `n` tools for `query` with a positive score, best first.
    pub(super) fn search(&self, query: &str, n: usize) -> Vec<usize> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        let mut query_terms = terms(query);
        query_terms.sort();
        query_terms.dedup();
        let total = self.tools.len() as f64;
        let mut scores: Vec<(usize, f64)> = Vec::new();
        for (i, doc) in self.docs.iter().enumerate() {
            let mut score = 0.0;
            for term in &query_terms {
                let Some(&count) = doc.get(term) else {
                    continue;
                };
                let df = f64::from(self.document_frequency[term]);
                let idf = ((total - df + 0.5) / (df + 0.5) + 1.0).ln();
                let tf = f64::from(count);
                let norm = 1.0 - B + B * self.lengths[i] / self.average_length.max(1.0);
                score += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
            if score > 0.0 {
                scores.push((i, score));
            }
        }
        scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scores.into_iter().take(n).map(|(i, _)| i).collect()
    }
}

/// The parameter names and descriptions of a schema, appended to `out`.
fn schema_text(schema: &Value, out: &mut String) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            out.push(' ');
            out.push_str(name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                out.push(' ');
                out.push_str(description);
            }
            schema_text(property, out);
        }
    }
}

/// Whether `c` is written without spaces between words (CJK scripts).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// The search terms of a text: lower-case words of letters and digits (split on case changes
/// and anything else; words of one character left out), and for CJK text each character and
/// each pair of characters.
pub(super) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous: Option<char> = None;
    let mut cjk_run: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        if word.len() > 1 {
            out.push(std::mem::take(word));
        } else {
            word.clear();
        }
    };
    let flush_cjk = |run: &mut Vec<char>, out: &mut Vec<String>| {
        for (i, c) in run.iter().enumerate() {
            out.push(c.to_string());
            if let Some(next) = run.get(i + 1) {
                out.push(format!("{c}{next}"));
            }
        }
        run.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            cjk_run.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk_run, &mut out);
            let boundary = c.is_uppercase() && previous.is_some_and(char::is_lowercase);
            if boundary {
                flush_word(&mut word, &mut out);
            }
            word.extend(c.to_lowercase());
        } else {
            flush_cjk(&mut cjk_run, &mut out);
            flush_word(&mut word, &mut out);
        }
        previous = Some(c);
    }
    flush_word(&mut word, &mut out);
    flush_cjk(&mut cjk_run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_case_and_punctuation_and_cjk_by_characters() {
        assert_eq!(
            terms("getWeather city_name"),
            ["get", "weather", "city", "name"]
        );
        assert_eq!(
            terms("北京天气"),
            ["北", "北京", "京", "京天", "天", "天气", "气"]
        );
        assert_eq!(terms("a GPU-2 test"), ["gpu", "test"]);
        // Numbers of two digits or more are words: "report 42" finds `report_42`.
        assert_eq!(
            terms("sales report_42 on ec2"),
            ["sales", "report", "42", "on", "ec2"]
        );
    }
}
