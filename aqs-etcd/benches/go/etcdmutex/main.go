// The Go side of benches/v3lock.rs: etcd's own Go recipe (clientv3/concurrency.Mutex, the one
// `etcdctl lock` runs), driven the way the Rust side drives aqs_etcd::Mutex.
//
// Usage: etcdmutex ENDPOINT NAME CLIENTS PER_CLIENT
//
// It opens CLIENTS clients, each with its own session (a lease with a 10 s TTL), prints
// "ready", and waits for a line on stdin, so that the set-up stays out of the measured window.
// Then each client, in its own goroutine, does PER_CLIENT rounds of Lock and Unlock on NAME and
// nothing in between. It prints one line,
//
//	result <acquisitions per second> <CPU µs per acquisition> <hand-off µs>...
//
// where a hand-off is the time from a holder's Unlock call to the next holder's grant (only
// with more than one client), and CPU is this process's user + system time from /proc/self/stat.
// Then it closes the sessions (revoking their leases) and exits.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

// cpuTime is this process's user + system CPU time, from /proc/self/stat (10 ms ticks).
func cpuTime() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	k, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "etcdmutex: %s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: etcdmutex ENDPOINT NAME CLIENTS PER_CLIENT")
		os.Exit(2)
	}
	endpoint, name := os.Args[1], os.Args[2]
	clients, err := strconv.Atoi(os.Args[3])
	if err != nil || clients < 1 {
		fail("CLIENTS", err)
	}
	per, err := strconv.Atoi(os.Args[4])
	if err != nil || per < 1 {
		fail("PER_CLIENT", err)
	}
	sessions := make([]*concurrency.Session, clients)
	for i := range sessions {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   []string{endpoint},
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
		sessions[i] = s
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail("stdin", err)
	}

	var (
		mu          sync.Mutex
		lastRelease time.Time
		handoffs    []float64
		wg          sync.WaitGroup
	)
	ctx := context.Background()
	cpu0, t0 := cpuTime(), time.Now()
	for _, s := range sessions {
		wg.Add(1)
		go func(s *concurrency.Session) {
			defer wg.Done()
			m := concurrency.NewMutex(s, name)
			for i := 0; i < per; i++ {
				if err := m.Lock(ctx); err != nil {
					fail("lock", err)
				}
				mu.Lock()
				if clients > 1 && !lastRelease.IsZero() {
					handoffs = append(handoffs, float64(time.Since(lastRelease).Nanoseconds())/1e3)
				}
				lastRelease = time.Now()
				mu.Unlock()
				if err := m.Unlock(ctx); err != nil {
					fail("unlock", err)
				}
			}
		}(s)
	}
	wg.Wait()
	dt := time.Since(t0).Seconds()
	n := float64(clients * per)
	cpu := float64((cpuTime() - cpu0).Microseconds())
	var out strings.Builder
	fmt.Fprintf(&out, "result %.3f %.3f", n/dt, cpu/n)
	for _, h := range handoffs {
		fmt.Fprintf(&out, " %.1f", h)
	}
	fmt.Println(out.String())
	for _, s := range sessions {
		s.Close()
	}
}
