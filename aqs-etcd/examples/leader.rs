//! One leader among processes, on etcd: the README's quick start as a program.
//!
//! ```sh
//! etcd --data-dir /tmp/etcd-demo ...        # the README's command: a private etcd on 23790
//! cargo run -p aqs-etcd --example leader -- 127.0.0.1:23790
//! ```
//!
//! It takes the lock `/service/leader` (the layout of etcd's own `concurrency.Mutex`), leads for
//! a few seconds or until its lease may be gone, and steps down. Run two at once, or run
//! `etcdctl --endpoints 127.0.0.1:23790 lock /service/leader` beside it: they take turns.

use std::time::Duration;

const NAME: &str = "/service/leader";
const LEAD_FOR: Duration = Duration::from_secs(3);
const WAIT_AT_MOST: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let endpoint = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:23790".to_string());
    let client = etcd_client::Client::connect([endpoint.as_str()], None).await?;
    let session = aqs_etcd::Session::new(client, Duration::from_secs(10)).await?;
    let leader = aqs_etcd::Mutex::new(&session, NAME)?;

    println!("waiting for {NAME} at {endpoint}");
    match leader.try_lock_for(WAIT_AT_MOST).await? {
        Some(guard) => {
            // Stamp writes with the token, so a paused, expired holder cannot overwrite newer
            // work.
            println!(
                "leading, fencing token {} (key {})",
                guard.token(),
                guard.key()
            );
            tokio::select! {
                _ = guard.lost() => println!("the lease may be gone: stopped leading"),
                _ = tokio::time::sleep(LEAD_FOR) => println!("stepping down after {LEAD_FOR:?}"),
            }
            guard.release().await?;
        }
        None => println!("someone else led for {WAIT_AT_MOST:?}; giving up"),
    }
    // Revokes the lease: any key it still had goes at once.
    session.close().await?;
    Ok(())
}
