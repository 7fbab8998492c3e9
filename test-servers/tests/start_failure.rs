//! A server that cannot start: the error says why and carries its log, and nothing is left in
//! the temporary directory. One test in its own binary, because it changes the environment;
//! it needs `java` (run by `scripts/zookeeper-ci.sh`), but not etcd.

use std::time::Duration;

/// Names in the temporary directory that this process's servers would use.
fn scratch_dirs(prefix: &str) -> Vec<String> {
    let mine = format!("{prefix}-{}-", std::process::id());
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&mine))
        .collect()
}

#[test]
fn a_server_that_exits_fails_start_with_its_log_and_leaves_no_directory() {
    std::env::set_var("AQS_ZK_CLASSPATH", "/nonexistent/aqs-test-servers");
    let err = aqs_test_servers::zookeeper::TestServer::start(Duration::from_secs(60)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("ZooKeeper test server: exited with"),
        "{msg}"
    );
    assert!(msg.contains("ZooKeeperServerMain"), "the log tail: {msg}");
    assert_eq!(scratch_dirs("aqs-zk"), Vec::<String>::new());

    // `false` exits at once with status 1, printing nothing.
    std::env::set_var("AQS_ETCD_BIN", "false");
    let err = aqs_test_servers::etcd::TestServer::start(Duration::from_secs(30)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("etcd test server: exited with"), "{msg}");
    assert_eq!(scratch_dirs("aqs-etcd"), Vec::<String>::new());

    std::env::set_var("AQS_ETCD_BIN", "/nonexistent/etcd");
    let err = aqs_test_servers::etcd::TestServer::start(Duration::from_secs(30)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
    assert_eq!(scratch_dirs("aqs-etcd"), Vec::<String>::new());
}
