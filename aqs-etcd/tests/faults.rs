//! Faults against a real etcd started by the test, judged by the server's own record.

mod common;

use std::time::Duration;

use aqs_etcd::etcd_client::{Client, EventType, WatchOptions};
use aqs_etcd::{Mutex, Session};
use common::*;
use tokio::time::Instant;

/// A holder cut off by a partition (a proxy that stops forwarding both ways) learns it lost
/// its hold before the server deletes its key. The server's record decides: at the moment the
/// holder's `lost()` fired, another client still reads the key (at a revision below the
/// delete's), and a watch on the key sees the delete only later.
#[tokio::test]
async fn a_cut_off_holder_learns_of_loss_before_the_server_deletes_its_key() {
    let server = server();
    let proxy = Proxy::start(server.addr());
    let observer = client(&server).await;
    let behind = bounded(
        "connect through the proxy",
        Client::connect([proxy.addr().to_string()], None),
    )
    .await
    .unwrap();
    let session = Session::new(behind, Duration::from_secs(2)).await.unwrap();
    let ttl = session.ttl();
    let guard = Mutex::new(&session, "/f/cut")
        .unwrap()
        .lock()
        .await
        .unwrap();
    let key = guard.key().to_owned();

    // The server's record of the key, from another client.
    let mut watch = observer
        .watch_client()
        .watch(
            key.as_str(),
            Some(WatchOptions::new().with_start_revision(guard.token())),
        )
        .await
        .unwrap();
    let deleted = tokio::spawn(async move {
        loop {
            let msg = watch.message().await.unwrap().expect("watch open");
            if let Some(e) = msg
                .events()
                .iter()
                .find(|e| e.event_type() == EventType::Delete)
            {
                return (Instant::now(), e.kv().unwrap().mod_revision());
            }
        }
    });

    proxy.cut();
    let cut_at = Instant::now();
    bounded("suspended", session.suspended()).await;
    let suspended_at = Instant::now();
    bounded("lost", guard.lost()).await;
    let lost_at = Instant::now();
    let seen = observer.kv_client().get(key.as_str(), None).await.unwrap();
    assert_eq!(
        seen.kvs().len(),
        1,
        "the server had already deleted the key when the holder learned of loss"
    );
    let seen_rev = seen.header().unwrap().revision();
    let (deleted_at, delete_rev) = bounded("the server deleting the key", deleted)
        .await
        .unwrap();
    assert!(delete_rev > seen_rev);
    assert!(lost_at < deleted_at);
    println!(
        "ttl {ttl:?}: suspended {:?} and lost {:?} after the cut; the server deleted the key \
         {:?} later (revision {delete_rev} > {seen_rev})",
        suspended_at - cut_at,
        lost_at - cut_at,
        deleted_at - lost_at
    );
}
