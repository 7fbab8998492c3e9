//! An independent checker for logs of holders: it replays them and refuses any moment with more
//! holders inside than the limit. The fault tests of `aqs-zookeeper` and `aqs-etcd` share it.
//!
//! # The log
//! One line per event, written by a worker process (`aqs-zk-worker`, `aqs-etcd-worker`) or a
//! test with one `write` each to a file opened with `O_APPEND`, so the file's order is an order
//! in real time:
//! - `enter <who> <token> <node>` after a grant; `who` is `<pid>-<task>`, `token` the hold's
//!   fencing token (ZooKeeper's `fencing_token()`, etcd's `token()`), `node` its node or key,
//!   which starts with `/`;
//! - `exit <who> <token> <node>` before the release is sent;
//! - `lost <who> <token> <node>` once the holder knows its hold is lost (`is_lost()`), after
//!   which it touches nothing;
//! - `killed <pid>`, written by a test after the process `pid` died (SIGKILL and `wait`);
//! - `paused <pid>`, written by a test that froze the process `pid` with SIGSTOP;
//! - `error <who> <message>`, an acquire or release that failed (counted, not replayed).
//!
//! In a correct run the replay never sees more than `limit` holders inside: a holder writes
//! `exit` before it sends its delete and the next grant follows that delete, so every `exit`
//! precedes the `enter` it made room for.
//!
//! # The rule for lost holds
//! When a session expires (a ZooKeeper session, an etcd lease) the server deletes its nodes at a
//! moment no line records, and may grant the place at once. A running holder is told before that moment (`is_lost()` fires
//! before the server can expire the session), so it writes `lost` before anyone enters in its
//! place: an overlap with a running holder is a double grant, `lost` or not. Only a process
//! the test itself froze cannot be told in time; it writes `lost` when it runs again. So an
//! `enter` that finds the limit taken is accepted only if enough of the holds inside are
//! *stale*: each such hold
//! 1. belongs to a process the test paused (a `paused <pid>` line earlier in the log),
//! 2. later ends with `lost`, not `exit`: its holder was told, and stopped then, and
//! 3. has a smaller fencing token than the newcomer's, so a resource that keeps the largest
//!    token it has seen refuses the stale holder once the newcomer has used it.
//!
//! The last two are judged per hold (`who` and token), never per holder. A hold that later exits
//! normally was never taken away, so an overlap with it is a double grant. A killed process's
//! holds end at its `killed` line, not before: the line is written after the process died and
//! the server frees its nodes only a session timeout later, so a grant before the line while the
//! dead holder was inside would be a grant over a live session. Lines of a process after its
//! `killed` line are refused.
//!
//! For a mutex (limit 1) the tokens of successive enters must also strictly increase: a
//! holder's node was created before every later holder's.

use std::collections::{HashMap, HashSet};

/// What the checker saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Grants replayed.
    pub enters: usize,
    /// Holds that ended by `exit`.
    pub exits: usize,
    /// Holds that ended by `lost`.
    pub lost: usize,
    /// Holds that ended with their process (`killed`).
    pub killed: usize,
    /// Enters accepted only because stale holds were inside (the rule for lost holds).
    pub excused: usize,
    /// `error` lines.
    pub errors: usize,
    /// The most holders inside at once, stale ones included.
    pub peak: usize,
    /// Holds still inside at the end of the log.
    pub open: usize,
    /// Distinct holders (`who`) that entered at least once.
    pub holders: usize,
}

/// One hold: its holder and its fencing token.
type Hold<'a> = (&'a str, i64);

enum Event<'a> {
    Enter(Hold<'a>),
    Exit(Hold<'a>),
    Lost(Hold<'a>),
    Killed(&'a str),
    Paused(&'a str),
    Error,
}

fn parse(line: &str) -> Result<Event<'_>, String> {
    let mut f = line.split(' ');
    let event = f.next().unwrap_or("");
    let who = f
        .next()
        .filter(|w| !w.is_empty())
        .ok_or_else(|| format!("no holder in {line:?}"))?;
    let mut hold = || -> Result<Hold<'_>, String> {
        let token = f
            .next()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("no token in {line:?}"))?;
        f.next()
            .filter(|n| n.starts_with('/'))
            .ok_or_else(|| format!("no node path in {line:?}"))?;
        if who.split_once('-').is_none() {
            return Err(format!("holder {who:?} is not <pid>-<task> in {line:?}"));
        }
        Ok((who, token))
    };
    Ok(match event {
        "enter" => Event::Enter(hold()?),
        "exit" => Event::Exit(hold()?),
        "lost" => Event::Lost(hold()?),
        "killed" => Event::Killed(who),
        "paused" => Event::Paused(who),
        "error" => Event::Error,
        e => return Err(format!("unknown event {e:?} in {line:?}")),
    })
}

/// The process part of `who` (`<pid>-<task>`).
fn pid(who: &str) -> &str {
    who.split_once('-').map_or(who, |(p, _)| p)
}

/// Replays `log` against `limit`; `Err` names the first violation and its line.
pub fn check(log: &str, limit: usize) -> Result<Report, String> {
    assert!(limit > 0, "a limit of 0 admits no one");
    let events: Vec<(usize, Event<'_>)> = log
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(n, l)| {
            parse(l)
                .map(|e| (n + 1, e))
                .map_err(|e| format!("line {}: {e}", n + 1))
        })
        .collect::<Result<_, _>>()?;
    // Holds that will end with `lost`: the only ones an overlap may be excused with.
    let ends_lost: HashSet<Hold<'_>> = events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Lost(h) => Some(*h),
            _ => None,
        })
        .collect();
    let mut inside: HashMap<&str, i64> = HashMap::new();
    let mut dead: HashSet<&str> = HashSet::new();
    let mut paused: HashSet<&str> = HashSet::new();
    let mut last_token = i64::MIN;
    let mut holders: HashSet<&str> = HashSet::new();
    let mut r = Report::default();
    for (n, e) in &events {
        let n = *n;
        if let Event::Enter((who, _)) | Event::Exit((who, _)) | Event::Lost((who, _)) = e {
            if dead.contains(pid(who)) {
                return Err(format!(
                    "line {n}: {who} logged after its process was killed"
                ));
            }
        }
        match *e {
            Event::Enter((who, token)) => {
                if inside.contains_key(who) {
                    return Err(format!("line {n}: {who} entered while inside"));
                }
                if limit == 1 && token <= last_token {
                    return Err(format!(
                        "line {n}: fencing token {token} of {who} after {last_token}"
                    ));
                }
                last_token = last_token.max(token);
                let live: Vec<Hold<'_>> = inside
                    .iter()
                    .map(|(w, t)| (*w, *t))
                    .filter(|h| {
                        !(paused.contains(pid(h.0)) && ends_lost.contains(h) && h.1 < token)
                    })
                    .collect();
                if live.len() >= limit {
                    return Err(format!(
                        "line {n}: {who} (token {token}) entered while {} holders that were \
                         not stale were inside {live:?}, limit {limit}",
                        live.len()
                    ));
                }
                if inside.len() >= limit {
                    r.excused += 1;
                }
                inside.insert(who, token);
                holders.insert(who);
                r.enters += 1;
                r.peak = r.peak.max(inside.len());
            }
            Event::Exit((who, token)) | Event::Lost((who, token)) => {
                if inside.get(who) != Some(&token) {
                    return Err(format!(
                        "line {n}: {who} left with token {token} but held {:?}",
                        inside.get(who)
                    ));
                }
                inside.remove(who);
                if matches!(e, Event::Exit(_)) {
                    r.exits += 1;
                } else {
                    r.lost += 1;
                }
            }
            Event::Killed(p) => {
                let before = inside.len();
                inside.retain(|w, _| pid(w) != p);
                r.killed += before - inside.len();
                dead.insert(p);
            }
            Event::Paused(p) => {
                paused.insert(p);
            }
            Event::Error => r.errors += 1,
        }
    }
    r.open = inside.len();
    r.holders = holders.len();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_accepts_correct_logs_and_refuses_broken_ones() {
        let ok = |log: &str, limit| {
            check(log, limit).unwrap_or_else(|e| panic!("must pass: {e}\n{log}"));
        };
        let bad = |log: &str, limit| {
            if let Ok(r) = check(log, limit) {
                panic!("must fail, passed with {r:?}:\n{log}");
            }
        };
        // A mutex handed over twice.
        let log = "enter 1-0 10 /m/a\nexit 1-0 10 /m/a\nenter 2-0 12 /m/b\nexit 2-0 12 /m/b\n";
        assert_eq!(
            check(log, 1),
            Ok(Report {
                enters: 2,
                exits: 2,
                peak: 1,
                holders: 2,
                ..Report::default()
            })
        );
        // Two inside a mutex; three inside a semaphore of two (two are fine).
        bad("enter 1-0 10 /m/a\nenter 2-0 12 /m/b\n", 1);
        ok("enter 1-0 1 /s/a\nenter 2-0 2 /s/b\n", 2);
        bad("enter 1-0 1 /s/a\nenter 2-0 2 /s/b\nenter 3-0 3 /s/c\n", 2);
        // A mutex's tokens must grow from one holder to the next.
        bad("enter 1-0 10 /m/a\nexit 1-0 10 /m/a\nenter 2-0 9 /m/b\n", 1);
        bad(
            "enter 1-0 10 /m/a\nexit 1-0 10 /m/a\nenter 2-0 10 /m/b\n",
            1,
        );
        // Leaving without entering, with another token, entering twice.
        bad("exit 1-0 10 /m/a\n", 1);
        bad("enter 1-0 10 /m/a\nexit 1-0 11 /m/a\n", 1);
        bad("enter 1-0 10 /s/a\nenter 1-0 11 /s/b\n", 2);
        // Garbage and torn lines.
        bad("enter 1-0 10 /m/a\nbogus 1-0 10 /m/a\n", 1);
        bad("enter 1-0 ten /m/a\n", 1);
        bad("enter 1-0 10\n", 1);
        bad("enter 1-0 10 /m/a\nexi", 1);
        // Overlap with a holder the test paused and that later learns it lost its hold: accepted
        // when the newcomer's token fences it off, refused otherwise, and refused if the old holder
        // exits normally (nobody took its hold away: a double grant).
        let r = check(
            "enter 1-0 10 /m/a\npaused 1\nenter 2-0 12 /m/b\nlost 1-0 10 /m/a\n",
            1,
        )
        .unwrap();
        assert_eq!((r.excused, r.lost, r.peak, r.open), (1, 1, 2, 1));
        bad(
            "enter 1-0 10 /m/a\npaused 1\nenter 2-0 9 /m/b\nlost 1-0 10 /m/a\n",
            1,
        );
        bad(
            "enter 1-0 10 /m/a\npaused 1\nenter 2-0 12 /m/b\nexit 1-0 10 /m/a\n",
            1,
        );
        bad(
            "enter 1-0 10 /s/a\npaused 1\nenter 2-0 12 /s/b\nenter 3-0 8 /s/c\nlost 1-0 10 /s/a\n",
            2,
        );
        ok(
            "enter 1-0 10 /s/a\npaused 1\nenter 2-0 12 /s/b\nenter 3-0 14 /s/c\nlost 1-0 10 /s/a\n",
            2,
        );
        // A running holder must be told before anyone enters in its place: an overlap with a hold
        // of a process that was not paused is a double grant even if the hold later logs `lost`,
        // and so is one with a process paused only after the newcomer entered.
        bad(
            "enter 1-0 10 /m/a\nenter 2-0 12 /m/b\nlost 1-0 10 /m/a\n",
            1,
        );
        bad(
            "enter 1-0 10 /m/a\nenter 2-0 12 /m/b\npaused 1\nlost 1-0 10 /m/a\n",
            1,
        );
        bad(
            "enter 1-0 10 /m/a\npaused 3\nenter 2-0 12 /m/b\nlost 1-0 10 /m/a\n",
            1,
        );
        ok(
            "enter 1-0 10 /m/a\nlost 1-0 10 /m/a\nenter 2-0 12 /m/b\n",
            1,
        );
        // The excuse is per hold: a later lost hold of the same task excuses nothing earlier.
        bad(
            "enter 1-0 10 /m/a\npaused 1\nenter 2-0 12 /m/b\nexit 1-0 10 /m/a\nexit 2-0 12 /m/b\n\
             enter 1-0 14 /m/c\nlost 1-0 14 /m/c\n",
            1,
        );
        // A killed process's holds end at its `killed` line, not before, and it logs no more.
        let r = check("enter 7-0 10 /m/a\nkilled 7\nenter 2-0 12 /m/b\n", 1).unwrap();
        assert_eq!((r.killed, r.excused, r.open), (1, 0, 1));
        bad("enter 7-0 10 /m/a\nenter 2-0 12 /m/b\nkilled 7\n", 1);
        bad("enter 7-0 10 /m/a\nkilled 7\nexit 7-0 10 /m/a\n", 1);
        // Errors are counted, not replayed.
        assert_eq!(check("error 1-0 acquire: boom\n", 1).unwrap().errors, 1);
    }
}
