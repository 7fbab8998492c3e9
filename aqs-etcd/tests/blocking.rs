//! The blocking facade and `MultiLock`, from threads, against a real etcd started by the test.

mod common;

use std::time::{Duration, Instant};

use aqs_etcd::blocking::{MultiLock, Mutex, RwLock, Semaphore, Session};
use aqs_etcd::Error;

fn connect(server: &aqs_test_servers::etcd::TestServer) -> Session {
    Session::connect(&[&server.endpoint()], Duration::from_secs(10)).expect("session")
}

#[test]
fn threads_exclude_each_other_with_the_aqs_names() {
    let server = common::server();
    let (a, b) = (connect(&server), connect(&server));
    let ma = Mutex::new(&a, "/b/m").unwrap();
    let mb = Mutex::new(&b, "/b/m").unwrap();
    let g = ma.acquire().unwrap();
    assert!(mb.try_acquire().unwrap().is_none());
    let t0 = Instant::now();
    assert!(mb
        .try_acquire_for(Duration::from_millis(200))
        .unwrap()
        .is_none());
    assert!(t0.elapsed() < common::BOUND);
    let waiter = std::thread::spawn(move || mb.try_acquire_for(common::BOUND));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiter.is_finished());
    let token = g.token();
    drop(g);
    let gb = waiter.join().unwrap().unwrap().expect("b within the bound");
    assert!(gb.token() > token);

    let sem = Semaphore::new(&a, "/b/s", 3).unwrap();
    let two = sem.acquire_many(2).unwrap();
    assert!(sem
        .try_acquire_many_for(2, Duration::from_millis(100))
        .unwrap()
        .is_none());
    let one = sem
        .try_acquire_until(Instant::now() + common::BOUND)
        .unwrap();
    assert_eq!(two.permits() + one.unwrap().permits(), 3);

    let rw = RwLock::new(&a, "/b/rw").unwrap();
    let r1 = rw.read().acquire().unwrap();
    let r2 = rw.read().try_acquire().unwrap();
    assert!(r2.is_some(), "readers share");
    assert!(rw.write().try_acquire().unwrap().is_none());
    drop((r1, r2));
    assert!(rw.write().try_acquire_for(common::BOUND).unwrap().is_some());
}

#[test]
fn a_multi_lock_takes_all_or_nothing() {
    let server = common::server();
    let (a, b) = (connect(&server), connect(&server));
    assert!(matches!(
        MultiLock::new(&a, &["/b/x", "/b/x"]),
        Err(Error::DuplicateLock(_))
    ));
    let held = Mutex::new(&b, "/b/y").unwrap().acquire().unwrap();
    let both = MultiLock::new(&a, &["/b/y", "/b/x"]).unwrap();
    assert!(both
        .try_acquire_for(Duration::from_millis(300))
        .unwrap()
        .is_none());
    // Nothing of the failed attempt is held: another session takes /b/x at once.
    let x = Mutex::new(&b, "/b/x").unwrap().try_acquire().unwrap();
    assert!(x.is_some(), "the multi-lock released /b/x when it gave up");
    drop((x, held));
    let g = both.try_acquire_for(common::BOUND).unwrap().expect("both");
    let names: Vec<_> = g.guards().iter().map(|g| g.key().to_owned()).collect();
    assert!(names[0].starts_with("/b/x/") && names[1].starts_with("/b/y/"));
}
