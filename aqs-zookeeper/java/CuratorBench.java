// The Curator side of aqs-zookeeper's benchmark (benches/curator.rs runs it).
//
// Usage: CuratorBench <connectString> <mutex|semaphore> <path> <clients> <permits> <warm ms> <run ms>
// One CuratorFramework (one session) per client, one thread per client, as the Rust side has one
// client per task. After connecting and warming up, it prints "warm" and waits for a "go" line
// on stdin (so the driver can read the server's counters around the measured window only),
// then runs every client in a loop of acquire + release for <run ms> and prints
//   result <acquisitions> <elapsed ns> <process cpu ns> <median ns> <p99 ns>
// where the quantiles are of single acquire+release cycles.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorBench {
    private CuratorBench() {}

    interface Cycle {
        void run() throws Exception;
    }

    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Runs every client's cycle until the deadline; returns each cycle's duration. */
    static List<Long> phase(List<Cycle> cycles, long millis) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        List<List<Long>> per = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        List<Exception> failures = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch start = new CountDownLatch(1);
        for (Cycle c : cycles) {
            List<Long> mine = new ArrayList<>();
            per.add(mine);
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    while (System.nanoTime() < deadline) {
                        long t0 = System.nanoTime();
                        c.run();
                        mine.add(System.nanoTime() - t0);
                    }
                } catch (Exception e) {
                    failures.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw failures.get(0);
        }
        List<Long> all = new ArrayList<>();
        per.forEach(all::addAll);
        return all;
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String recipe = args[1];
        String path = args[2];
        int clients = Integer.parseInt(args[3]);
        int permits = Integer.parseInt(args[4]);
        long warm = Long.parseLong(args[5]);
        long run = Long.parseLong(args[6]);
        List<CuratorFramework> frameworks = new ArrayList<>();
        List<Cycle> cycles = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework f = CuratorFrameworkFactory.newClient(
                    connect, 10_000, 10_000, new RetryNTimes(3, 100));
            f.start();
            if (!f.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected");
            }
            frameworks.add(f);
            if (recipe.equals("mutex")) {
                InterProcessMutex m = new InterProcessMutex(f, path);
                cycles.add(() -> {
                    m.acquire();
                    m.release();
                });
            } else {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(f, path, permits);
                cycles.add(() -> {
                    Lease l = s.acquire();
                    s.returnLease(l);
                });
            }
        }
        phase(cycles, warm);
        System.out.println("warm");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (!"go".equals(in.readLine())) {
            return;
        }
        long cpu0 = cpuNanos();
        long t0 = System.nanoTime();
        List<Long> d = phase(cycles, run);
        long elapsed = System.nanoTime() - t0;
        long cpu = cpuNanos() - cpu0;
        Collections.sort(d);
        long median = d.isEmpty() ? 0 : d.get(d.size() / 2);
        long p99 = d.isEmpty() ? 0 : d.get(Math.min(d.size() - 1, d.size() * 99 / 100));
        System.out.println("result " + d.size() + " " + elapsed + " " + cpu + " " + median + " " + p99);
        System.out.flush();
        for (CuratorFramework f : frameworks) {
            f.close();
        }
    }
}
