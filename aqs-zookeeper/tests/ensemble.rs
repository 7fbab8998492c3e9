//! The recipes on a three-server ensemble (issue 34, section 3): clients spread over the
//! members, and a follower that serves some of them, then the leader, killed and restarted
//! under load. Their
//! sessions move to other members, where the `sync` before every protected-name lookup (Z4)
//! makes a lost create visible. Judged by the server's record: fencing tokens (the zxids that
//! created the holders' nodes) grow with every grant, and no node of any session is left once
//! the workers have released.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use aqs_test_servers::zookeeper::Ensemble;
use aqs_zookeeper::{zookeeper_client as zk, Mutex, Semaphore};
use tokio::time::timeout;

/// Every wait is bounded; an election after a kill can take a few seconds on a busy host.
const BOUND: Duration = Duration::from_secs(90);
const SESSION: Duration = Duration::from_secs(10);
const WORKERS: usize = 4;

async fn client(hosts: &str) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(SESSION)
        .connect(hosts)
        .await
        .expect("connect")
}

/// How many client sessions member `i` serves now, by its `cons` answer.
fn sessions_on(ensemble: &Ensemble, i: usize) -> usize {
    ensemble
        .four_letter(i, "cons")
        .map(|r| r.lines().filter(|l| l.contains("sid=0x")).count())
        .unwrap_or(0)
}

/// Whether a member other than the leader serves a client session now.
fn on_a_follower(ensemble: &Ensemble) -> bool {
    let leader = ensemble.leader();
    (0..3).any(|i| Some(i) != leader && sessions_on(ensemble, i) > 0)
}

async fn wait_grants(grants: &AtomicUsize, n: usize, what: &str) {
    timeout(BOUND, async {
        while grants.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no progress to {n} grants {what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_hold_while_a_follower_then_the_leader_die_and_return() {
    let mut ensemble = Ensemble::start(BOUND).expect("a ZooKeeper ensemble must start");
    let hosts = ensemble.connect_string();
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicUsize::new(0));
    let in_mutex = Arc::new(AtomicUsize::new(0));
    let in_semaphore = Arc::new(AtomicUsize::new(0));
    let last_token = Arc::new(StdMutex::new(0i64));
    // Each client picks a member at random, so all of them may land on the leader (1 in 81 for
    // four): the first kill needs a session on a follower, so connect more until one is there.
    let mut clients = Vec::new();
    while clients.len() < WORKERS || !on_a_follower(&ensemble) {
        assert!(clients.len() < 4 * WORKERS, "no session on a follower");
        clients.push(client(&hosts).await);
    }
    let mut workers = Vec::new();
    for c in clients {
        let mutex = Mutex::new(c.clone(), "/ensemble/mutex").unwrap();
        let semaphore = Semaphore::new(c, "/ensemble/semaphore", 2).unwrap();
        let (stop, grants, in_mutex, in_semaphore, last_token) = (
            stop.clone(),
            grants.clone(),
            in_mutex.clone(),
            in_semaphore.clone(),
            last_token.clone(),
        );
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let guard = timeout(BOUND, mutex.acquire())
                    .await
                    .expect("the mutex is granted within the bound")
                    .expect("a failover costs an acquire nothing");
                assert_eq!(in_mutex.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                {
                    let mut last = last_token.lock().unwrap();
                    assert!(guard.fencing_token() > *last, "a token went back");
                    *last = guard.fencing_token();
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                in_mutex.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.expect("released");

                let permit = timeout(BOUND, semaphore.acquire())
                    .await
                    .expect("a permit is granted within the bound")
                    .expect("a failover costs an acquire nothing");
                assert!(
                    in_semaphore.fetch_add(1, Ordering::SeqCst) < 2,
                    "over the limit"
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
                in_semaphore.fetch_sub(1, Ordering::SeqCst);
                permit.release().await.expect("released");
                grants.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }

    wait_grants(&grants, 20, "before the kill").await;
    // Kill a follower that serves at least one session (a leader's death is an election, not a
    // move), so that its sessions move to the other members.
    let leader = ensemble.leader();
    let victim = (0..3)
        .filter(|&i| Some(i) != leader)
        .max_by_key(|&i| sessions_on(&ensemble, i))
        .expect("two followers");
    let moving = sessions_on(&ensemble, victim);
    assert!(moving > 0, "no session on a follower");
    eprintln!("killing member {victim} (leader {leader:?}) with {moving} sessions");
    ensemble.stop(victim);
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "with a member down").await;
    ensemble
        .restart(victim, BOUND)
        .expect("the member comes back");
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "after the member came back").await;
    // Then the leader: an election, during which no member serves; sessions must outlive it.
    let leader = ensemble.leader().expect("a leader");
    eprintln!("killing the leader, member {leader}");
    ensemble.stop(leader);
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "after the leader died").await;
    ensemble
        .restart(leader, BOUND)
        .expect("the old leader comes back");
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "after the old leader came back").await;
    eprintln!("{} grants in all", grants.load(Ordering::SeqCst));
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        timeout(BOUND, w)
            .await
            .expect("workers stop")
            .expect("a worker failed");
    }

    // The server's record: no node of any session is left (a lost create that landed late,
    // Z4, would be one), read after a sync so that the member answering has everything.
    let observer = client(&hosts).await;
    for parent in [
        "/ensemble/mutex",
        "/ensemble/semaphore/locks",
        "/ensemble/semaphore/leases",
    ] {
        observer.sync(parent).await.unwrap();
        let left = observer.list_children(parent).await.unwrap_or_default();
        assert!(left.is_empty(), "{parent} kept {left:?}");
    }
}
