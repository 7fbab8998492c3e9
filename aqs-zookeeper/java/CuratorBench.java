// The Curator side of aqs-zookeeper's benchmark (benches/curator.rs runs it and mirrors it).
//
// Usage: CuratorBench <connectString> <mutex|semaphore> <path> <clients> <limit> <hold ms>
//                     <warm ms> <run ms>
//
// One CuratorFramework (one session) and one thread per client, as the Rust side has one
// zookeeper_client::Client and one task per client. Each client loops: acquire, hold for
// <hold ms> (none if 0), release. After connecting and a warm-up phase it prints "warm" and waits
// for "go" on stdin, so that the driver reads the server's counters around the measured phase
// only. Then it runs the measured phase, prints one line of key=value pairs (times in ns) and
// closes its sessions when stdin ends:
//   result acquisitions= elapsed= cpu= jit= gc= cycle_p50= cycle_p99= acquire_p50= acquire_p99=
//          release_p50= hold_p50= handoff_n= handoff_p50= handoff_p99=
// where cpu is the process's CPU time, and jit and gc the JIT compilers' and the collectors'
// elapsed time (the JVM's own accounts), in the measured phase.
// A hand-off is a mutex's time from the holder starting its release to the next holder's
// acquire returning, as the next holder sees it; it is measured with more than one client.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorBench {
    private CuratorBench() {}

    /** One client's recipe: acquire returns what release needs. */
    interface Client {
        Object acquire() throws Exception;

        void release(Object held) throws Exception;
    }

    /** Durations of one phase, all clients pooled. */
    static final class Samples {
        final List<Long> acquire = new ArrayList<>();
        final List<Long> release = new ArrayList<>();
        final List<Long> hold = new ArrayList<>();
        final List<Long> handoff = new ArrayList<>();
        final List<Long> cycle = new ArrayList<>();

        void addAll(Samples o) {
            cycle.addAll(o.cycle);
            acquire.addAll(o.acquire);
            release.addAll(o.release);
            hold.addAll(o.hold);
            handoff.addAll(o.handoff);
        }
    }

    /** When the last holder started its release (System.nanoTime), 0 if none since it was read. */
    static final AtomicLong LAST_RELEASE = new AtomicLong();

    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Time the JIT compilers and the garbage collectors have spent so far, in ns. */
    static long jitNanos() {
        return TimeUnit.MILLISECONDS.toNanos(ManagementFactory.getCompilationMXBean().getTotalCompilationTime());
    }

    static long gcNanos() {
        long ms = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ms += Math.max(0, gc.getCollectionTime());
        }
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }

    static long quantile(List<Long> v, double q) {
        if (v.isEmpty()) {
            return 0;
        }
        Collections.sort(v);
        return v.get(Math.min(v.size() - 1, (int) (v.size() * q)));
    }

    /** Runs every client's loop until the deadline; the same loop as the Rust side's. */
    static Samples phase(List<Client> clients, long holdMillis, long millis, boolean handoff)
            throws Exception {
        LAST_RELEASE.set(0);
        List<Samples> per = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        List<Exception> failures = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch start = new CountDownLatch(1);
        long[] deadline = new long[1];
        for (Client c : clients) {
            Samples mine = new Samples();
            per.add(mine);
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    while (System.nanoTime() < deadline[0]) {
                        long t0 = System.nanoTime();
                        Object held = c.acquire();
                        long t1 = System.nanoTime();
                        if (handoff) {
                            long last = LAST_RELEASE.getAndSet(0);
                            if (last != 0) {
                                mine.handoff.add(t1 - last);
                            }
                        }
                        if (holdMillis > 0) {
                            Thread.sleep(holdMillis);
                        }
                        long t2 = System.nanoTime();
                        if (handoff) {
                            LAST_RELEASE.set(t2);
                        }
                        c.release(held);
                        long t3 = System.nanoTime();
                        mine.acquire.add(t1 - t0);
                        mine.hold.add(t2 - t1);
                        mine.release.add(t3 - t2);
                        mine.cycle.add(t3 - t0);
                    }
                } catch (Exception e) {
                    failures.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        deadline[0] = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw failures.get(0);
        }
        Samples all = new Samples();
        per.forEach(all::addAll);
        return all;
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String recipe = args[1];
        String path = args[2];
        int n = Integer.parseInt(args[3]);
        int limit = Integer.parseInt(args[4]);
        long hold = Long.parseLong(args[5]);
        long warm = Long.parseLong(args[6]);
        long run = Long.parseLong(args[7]);
        boolean handoff = recipe.equals("mutex") && n > 1;
        List<CuratorFramework> frameworks = new ArrayList<>();
        List<Client> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            // The same session timeout as the Rust clients'.
            CuratorFramework f = CuratorFrameworkFactory.newClient(
                    connect, 10_000, 10_000, new RetryNTimes(3, 100));
            f.start();
            if (!f.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected");
            }
            frameworks.add(f);
            if (recipe.equals("mutex")) {
                InterProcessMutex m = new InterProcessMutex(f, path);
                clients.add(new Client() {
                    public Object acquire() throws Exception {
                        m.acquire();
                        return m;
                    }

                    public void release(Object held) throws Exception {
                        m.release();
                    }
                });
            } else {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(f, path, limit);
                clients.add(new Client() {
                    public Object acquire() throws Exception {
                        return s.acquire();
                    }

                    public void release(Object held) throws Exception {
                        s.returnLease((Lease) held);
                    }
                });
            }
        }
        phase(clients, hold, warm, handoff);
        System.out.println("warm");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (!"go".equals(in.readLine())) {
            return;
        }
        long cpu0 = cpuNanos();
        long jit0 = jitNanos();
        long gc0 = gcNanos();
        long t0 = System.nanoTime();
        Samples s = phase(clients, hold, run, handoff);
        long elapsed = System.nanoTime() - t0;
        long cpu = cpuNanos() - cpu0;
        long jit = jitNanos() - jit0;
        long gc = gcNanos() - gc0;
        System.out.println("result acquisitions=" + s.acquire.size()
                + " elapsed=" + elapsed
                + " cpu=" + cpu
                + " jit=" + jit
                + " gc=" + gc
                + " cycle_p50=" + quantile(s.cycle, 0.5)
                + " cycle_p99=" + quantile(s.cycle, 0.99)
                + " acquire_p50=" + quantile(s.acquire, 0.5)
                + " acquire_p99=" + quantile(s.acquire, 0.99)
                + " release_p50=" + quantile(s.release, 0.5)
                + " hold_p50=" + quantile(s.hold, 0.5)
                + " handoff_n=" + s.handoff.size()
                + " handoff_p50=" + quantile(s.handoff, 0.5)
                + " handoff_p99=" + quantile(s.handoff, 0.99));
        System.out.flush();
        // Closing sessions sends requests: wait until the driver has read the server's counters
        // and closed stdin.
        while (in.readLine() != null) {
            continue;
        }
        for (CuratorFramework f : frameworks) {
            f.close();
        }
    }
}
