use std::time::Duration;

use aqs_zookeeper::server::TestServer;

#[test]
fn server_starts_serves_and_reports_standalone_mode() {
    let server = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");
    let srvr = server.four_letter("srvr").unwrap();
    assert!(srvr.contains("Mode: standalone"), "srvr said: {srvr}");
    let addr = server.addr();
    drop(server);
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}
