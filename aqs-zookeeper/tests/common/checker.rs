//! An independent checker for the fault tests: it replays the workers' log and refuses any
//! moment with more holders inside than the limit.
//!
//! The log (written by `aqs-zk-worker`, one `write` per line to a file opened for appending)
//! is in real-time order: a holder writes `exit` before it sends its delete, and the next grant
//! follows that delete, so in a correct run every `exit` precedes the `enter` it made room for.
//!
//! A holder whose session expired cannot log when the server took its hold away. The rule for
//! it: an overlap is forgiven only for holders that later log `lost` (they were told), or that
//! the test killed (`killed <pid>`: a dead process touches nothing). For a mutex, the newcomer's
//! fencing token must then be larger than every such holder's, so a resource that checks
//! tokens would refuse the stale holder. Everything else is a violation.

use std::collections::{HashMap, HashSet};

/// What the checker saw.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Grants replayed.
    pub enters: usize,
    /// Holds that ended by release.
    pub exits: usize,
    /// Holds that ended by loss.
    pub lost: usize,
    /// The most holders inside at once, forgiven ones included.
    pub peak: usize,
}

struct Line<'a> {
    event: &'a str,
    who: &'a str,
    token: i64,
}

fn parse(line: &str) -> Result<Line<'_>, String> {
    let mut f = line.split(' ');
    let event = f.next().unwrap_or("");
    let who = f.next().ok_or_else(|| format!("no holder in {line:?}"))?;
    let token = match event {
        "enter" | "exit" | "lost" => f
            .next()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("no token in {line:?}"))?,
        _ => 0,
    };
    Ok(Line { event, who, token })
}

/// Replays `log` against `limit`; `Err` names the first violation.
pub fn check(log: &str, limit: usize) -> Result<Report, String> {
    let lines: Vec<Line<'_>> = log
        .lines()
        .filter(|l| !l.is_empty())
        .map(parse)
        .collect::<Result<_, _>>()?;
    // Holders that are told of their loss, or whose process the test killed, later on.
    let told: HashSet<&str> = lines
        .iter()
        .filter(|l| l.event == "lost")
        .map(|l| l.who)
        .collect();
    let killed: HashSet<&str> = lines
        .iter()
        .filter(|l| l.event == "killed")
        .map(|l| l.who)
        .collect();
    let forgiven =
        |who: &str| told.contains(who) || killed.contains(who.split('-').next().unwrap());
    let mut inside: HashMap<&str, i64> = HashMap::new();
    let mut last_token = i64::MIN;
    let mut report = Report::default();
    for (n, l) in lines.iter().enumerate() {
        match l.event {
            "enter" => {
                if inside.contains_key(l.who) {
                    return Err(format!("line {}: {} entered twice", n + 1, l.who));
                }
                let unforgiven = inside.keys().filter(|w| !forgiven(w)).count();
                if unforgiven >= limit {
                    return Err(format!(
                        "line {}: {} entered with {unforgiven} holders inside, limit {limit}",
                        n + 1,
                        l.who
                    ));
                }
                if limit == 1 {
                    if l.token <= last_token {
                        return Err(format!(
                            "line {}: fencing token {} after {last_token}",
                            n + 1,
                            l.token
                        ));
                    }
                    last_token = l.token;
                }
                inside.insert(l.who, l.token);
                report.enters += 1;
                report.peak = report.peak.max(inside.len());
            }
            "exit" | "lost" => {
                if inside.remove(l.who) != Some(l.token) {
                    return Err(format!("line {}: {} left without entering", n + 1, l.who));
                }
                if l.event == "exit" {
                    report.exits += 1;
                } else {
                    report.lost += 1;
                }
            }
            "killed" => inside.retain(|w, _| w.split('-').next() != Some(l.who)),
            "error" => {}
            e => return Err(format!("line {}: unknown event {e:?}", n + 1)),
        }
    }
    Ok(report)
}
