//! Splitting a server's command line into words.

/// Splits a command line on whitespace; single and double quotes group, a backslash escapes
/// the next character outside single quotes.
pub(crate) fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => current.push(c),
                        None => return Err("a single quote is not closed".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => current.push(c),
                            None => return Err("it ends with a backslash".to_owned()),
                        },
                        Some(c) => current.push(c),
                        None => return Err("a double quote is not closed".to_owned()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => current.push(c),
                    None => return Err("it ends with a backslash".to_owned()),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_a_shell() {
        assert_eq!(
            split_command_line(r#"python3  "my server.py" --name 'a b' c\ d"#).unwrap(),
            ["python3", "my server.py", "--name", "a b", "c d"]
        );
        assert_eq!(split_command_line("x ''").unwrap(), ["x", ""]);
        assert!(split_command_line("x \"y").is_err());
        assert!(split_command_line("").unwrap().is_empty());
    }
}
