use std::net::TcpStream;
use std::time::Duration;

use aqs_test_servers::etcd::TestServer;

fn refuses(addr: std::net::SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err()
}

#[test]
fn server_starts_healthy_with_a_leader_and_stops_on_drop() {
    let server = TestServer::start(Duration::from_secs(30)).expect("etcd must start");
    assert_eq!(server.endpoint(), server.addr().to_string());
    assert_eq!(
        server.metric_sum("etcd_server_has_leader", &[]).unwrap(),
        1.0
    );
    let addr = server.addr();
    drop(server);
    assert!(refuses(addr));
}

#[test]
fn kill_restart_freeze_and_thaw() {
    let mut server = TestServer::start(Duration::from_secs(30)).expect("etcd must start");
    let addr = server.addr();
    server.kill().unwrap();
    assert!(refuses(addr));
    server.restart(Duration::from_secs(30)).expect("restart");
    assert_eq!(server.addr(), addr, "a restart keeps the ports");
    assert!(server.metrics().is_ok());

    server.freeze().unwrap();
    assert!(server.metrics().is_err(), "a frozen server answers nothing");
    server.thaw().unwrap();
    assert!(server.metrics().is_ok());
    server.freeze().unwrap();
    drop(server); // kills a frozen server too
    assert!(refuses(addr));
}
