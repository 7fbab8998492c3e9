use std::net::TcpStream;
use std::time::Duration;

use aqs_test_servers::zookeeper::TestServer;

fn refuses(addr: std::net::SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err()
}

#[test]
fn server_starts_serves_and_reports_standalone_mode() {
    let server = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");
    let srvr = server.four_letter("srvr").unwrap();
    assert!(srvr.contains("Mode: standalone"), "srvr said: {srvr}");
    let addr = server.addr();
    drop(server);
    assert!(refuses(addr));
}

#[test]
fn stop_restart_freeze_and_thaw() {
    let mut server = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let (addr, pid) = (server.addr(), server.pid());
    server.stop();
    assert!(refuses(addr));
    server.stop(); // stopping a stopped server does nothing
    server.restart(Duration::from_secs(60)).expect("restart");
    assert_eq!(server.addr(), addr, "a restart keeps the port");
    assert_ne!(server.pid(), pid);
    assert!(server.four_letter("srvr").unwrap().contains("Mode: "));

    server.freeze().unwrap();
    assert!(server.is_frozen());
    assert!(
        server.four_letter("ruok").is_err(),
        "a frozen server answers nothing"
    );
    server.thaw();
    assert!(!server.is_frozen());
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");
    server.freeze().unwrap();
    drop(server); // kills a frozen server too
    assert!(refuses(addr));
}
