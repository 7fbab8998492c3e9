// A holder for tests/interop.rs: takes etcd's Go read-write lock (contrib/recipes.RWMutex, the
// layout aqs_etcd::RwLock shares) and holds it until told to let go.
//
// Usage: rwmutex ENDPOINT NAME read|write
//
// It opens a session (a lease with a 10 s TTL), prints "ready", takes the lock (RLock or
// Lock), prints "held", waits for a line on stdin, releases, prints "released", and
// exits. Any failure exits with status 1 and a message on stderr.
package main

import (
	"bufio"
	"fmt"
	"os"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	recipe "go.etcd.io/etcd/contrib/recipes"
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "rwmutex: %s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 || (os.Args[3] != "read" && os.Args[3] != "write") {
		fmt.Fprintln(os.Stderr, "usage: rwmutex ENDPOINT NAME read|write")
		os.Exit(2)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{os.Args[1]},
		DialTimeout: 10 * time.Second,
	})
	if err != nil {
		fail("connect", err)
	}
	defer c.Close()
	s, err := concurrency.NewSession(c, concurrency.WithTTL(10))
	if err != nil {
		fail("session", err)
	}
	defer s.Close()
	m := recipe.NewRWMutex(s, os.Args[2])
	fmt.Println("ready")
	write := os.Args[3] == "write"
	if write {
		err = m.Lock()
	} else {
		err = m.RLock()
	}
	if err != nil {
		fail("lock", err)
	}
	fmt.Println("held")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail("stdin", err)
	}
	if write {
		err = m.Unlock()
	} else {
		err = m.RUnlock()
	}
	if err != nil {
		fail("unlock", err)
	}
	fmt.Println("released")
}
