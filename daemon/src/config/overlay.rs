//! Setting any field by its dotted path, from `--set` and `EDGEWISED__*` variables: the named
//! flags cover the common settings, this covers every one without a flag per field.

use anyhow::Context;
use toml::{Table, Value};

/// Environment variables named `EDGEWISED__SECTION__KEY` set `section.key`.
pub const ENV_PREFIX: &str = "EDGEWISED__";

/// Applies the `EDGEWISED__*` variables among `env`, then each `key=value` of `sets`, to the
/// parsed file `doc`; later ones win.
pub fn apply(
    doc: &mut Table,
    env: impl IntoIterator<Item = (String, String)>,
    sets: &[String],
) -> anyhow::Result<()> {
    let mut vars: Vec<(String, String)> = env
        .into_iter()
        .filter(|(name, _)| name.starts_with(ENV_PREFIX))
        .collect();
    // Deterministic order, whatever order the environment lists them in.
    vars.sort();
    for (name, value) in vars {
        let path = name[ENV_PREFIX.len()..]
            .to_ascii_lowercase()
            .replace("__", ".");
        set(doc, &path, &value).with_context(|| format!("environment variable {name}"))?;
    }
    for assignment in sets {
        let (path, value) = assignment
            .split_once('=')
            .with_context(|| format!("--set {assignment:?}: expected KEY=VALUE"))?;
        set(doc, path.trim(), value).with_context(|| format!("--set {assignment:?}"))?;
    }
    Ok(())
}

/// Sets the field at dotted `path` to `raw` read as a TOML value (`50`, `true`,
/// `["a:1", "b:2"]`, `"quoted"`); anything that is not one is taken as a bare string.
fn set(doc: &mut Table, path: &str, raw: &str) -> anyhow::Result<()> {
    let mut keys: Vec<&str> = path.split('.').collect();
    let last = keys.pop().unwrap_or_default();
    if last.is_empty() || keys.iter().any(|k| k.is_empty()) {
        anyhow::bail!("{path:?} is not a setting path like tokens.memcached.timeout_ms");
    }
    let mut table = doc;
    for key in keys {
        let entry = table
            .entry(key)
            .or_insert_with(|| Value::Table(Table::new()));
        table = match entry {
            Value::Table(inner) => inner,
            _ => anyhow::bail!("{key:?} in {path:?} is a value, not a section"),
        };
    }
    table.insert(last.to_owned(), value(raw));
    Ok(())
}

fn value(raw: &str) -> Value {
    let parsed = toml::from_str::<Table>(&format!("v = {raw}"));
    match parsed {
        Ok(mut one) if one.len() == 1 => one.remove("v").unwrap_or_else(|| string(raw)),
        _ => string(raw),
    }
}

fn string(raw: &str) -> Value {
    Value::String(raw.to_owned())
}
