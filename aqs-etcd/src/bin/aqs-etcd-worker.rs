//! The fault tests' worker process: takes a `Mutex` on an etcd and holds it until killed.
//!
//! Usage: `aqs-etcd-worker ENDPOINT NAME TTL_SECS`. Prints `held KEY TOKEN` once it holds.

use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, endpoint, name, ttl] = args.as_slice() else {
        return Err("usage: aqs-etcd-worker ENDPOINT NAME TTL_SECS".into());
    };
    let client = aqs_etcd::etcd_client::Client::connect([endpoint.as_str()], None).await?;
    let session = aqs_etcd::Session::new(client, Duration::from_secs(ttl.parse()?)).await?;
    let guard = aqs_etcd::Mutex::new(&session, name)?.lock().await?;
    println!("held {} {}", guard.key(), guard.token());
    guard.lost().await;
    Err("lost".into())
}
