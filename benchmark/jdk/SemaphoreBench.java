// The JDK anchor of the aqs benchmarks: the workloads of
// benchmark/benches/semaphore.rs over java.util.concurrent.Semaphore, fair
// and nonfair, with the same parameters and the same critical section.
// Plain Java, no build tool (benchmark/scripts/bench-jdk.sh runs it):
//
//   javac -d target/bench/jdk-classes benchmark/jdk/SemaphoreBench.java
//   java -cp target/bench/jdk-classes SemaphoreBench target/bench/aqs-bench/jdk.jsonl
//
// AQS_BENCH_QUICK=1 shortens every phase, as for the Rust suite. Each cell is
// one JSON line {"group", "bench", "contender", "samples_ns": [...]} holding
// the time per operation of every sample; the thread-pool cells (contended,
// io) add the process CPU time per pair of every sample ("cpu_ns") and each
// thread's pairs over all of them ("counts").

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

public final class SemaphoreBench {
    static final int CS_ROUNDS = 50;
    static final long WORD_SEED = 0x9E3779B97F4A7C15L;
    static final int[][] CONTENDED = {{2, 1}, {4, 1}, {16, 1}, {2, 4}, {4, 4}, {16, 4}};
    /** The I/O workload: threads, permits, and how long each permit is held (ns). */
    static final long[][] IO = {{16, 4, 100_000}, {64, 8, 1_000_000}};
    static final String[] IO_NAMES = {"t16_p4_100us", "t64_p8_1ms"};
    static final int BATCH = 8;
    /** Samples (windows) per cell in the groups that run threads. */
    static final int SAMPLES = 10;
    /** Index of the protected word in its array: 128 bytes of padding on each side. */
    static final int SLOT = 16;
    static final OperatingSystemMXBean OS =
            (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    static long warmUpNs;
    static long measurementNs;
    /** The I/O cells' measurement: longer, as at 1 ms a permit short windows hold few pairs. */
    static long ioNs;
    static int fastSamples;
    static PrintWriter out;
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        String env = System.getenv("AQS_BENCH_QUICK");
        boolean quick = env != null && !env.isEmpty() && !env.equals("0");
        Path file = Paths.get(args.length > 0 ? args[0] : "target/bench/aqs-bench/jdk.jsonl");
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        String loadStart = loadavg();
        long started = System.currentTimeMillis() / 1000;
        System.out.printf("SemaphoreBench: quick %b, load average %s%n", quick, loadStart);

        // A short pass over every cell first, so that C2 has compiled every body.
        long t0 = System.nanoTime();
        configure(50_000_000L, 100_000_000L, 200_000_000L, 10);
        out = new PrintWriter(Writer.nullWriter());
        suite(false);
        System.out.printf("JIT warm-up: %.1f s%n", (System.nanoTime() - t0) / 1e9);

        if (quick) {
            configure(200_000_000L, 500_000_000L, 2_000_000_000L, 30);
        } else {
            configure(1_000_000_000L, 3_000_000_000L, 3_000_000_000L, 100);
        }
        out = new PrintWriter(Files.newBufferedWriter(file));
        suite(true);
        String java = System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
        out.printf(Locale.ROOT, "{\"group\": \"meta\", \"quick\": %b, \"java\": \"%s\", \"started_unix\": %d, "
                + "\"ended_unix\": %d, \"loadavg_start\": \"%s\", \"loadavg_end\": \"%s\"}%n",
                quick, java, started, System.currentTimeMillis() / 1000, loadStart, loadavg());
        out.close();
        System.out.println("wrote " + file);
        System.exit(0);
    }

    static void configure(long warmUp, long measurement, long io, int fast) {
        warmUpNs = warmUp;
        measurementNs = measurement;
        ioNs = io;
        fastSamples = fast;
    }

    static void suite(boolean print) throws Exception {
        for (boolean fair : new boolean[] {false, true}) {
            Semaphore one = new Semaphore(1, fair);
            emit(print, "uncontended", "acquire_release", name(fair), measure(fastSamples, n -> acquireRelease(one, n)));
            emit(print, "uncontended", "try_acquire_release", name(fair),
                    measure(fastSamples, n -> tryAcquireRelease(one, n)));
        }
        long[] cs = newWord();
        emit(print, "uncontended", "critical_section", "jdk-alone", measure(fastSamples, n -> criticalSections(cs, n)));
        for (int[] tp : CONTENDED) {
            for (boolean fair : new boolean[] {false, true}) {
                pooled(print, "contended", "t" + tp[0] + "_p" + tp[1], fair, tp[0], tp[1], 0, measurementNs);
            }
        }
        for (boolean fair : new boolean[] {false, true}) {
            emit(print, "handoff", "round_trip", name(fair), handoff(fair));
        }
        for (boolean fair : new boolean[] {false, true}) {
            emit(print, "batch_wake", "wake8", name(fair), batchWake(fair));
        }
        for (int i = 0; i < IO.length; i++) {
            for (boolean fair : new boolean[] {false, true}) {
                pooled(print, "io", IO_NAMES[i], fair, (int) IO[i][0], (int) IO[i][1], IO[i][2], ioNs);
            }
        }
    }

    static String name(boolean fair) {
        return fair ? "jdk-fair" : "jdk-nonfair";
    }

    // ------------------------------------------------------------------ bodies

    static void criticalSection(long[] w) {
        long x = w[SLOT];
        for (int i = 0; i < CS_ROUNDS; i++) {
            x ^= x >>> 29;
            x *= 0xBF58476D1CE4E5B9L;
        }
        w[SLOT] = x;
    }

    static long[] newWord() {
        long[] w = new long[2 * SLOT + 1];
        w[SLOT] = WORD_SEED;
        return w;
    }

    static long acquireRelease(Semaphore s, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            s.acquireUninterruptibly();
            s.release();
        }
        return System.nanoTime() - t0;
    }

    static long tryAcquireRelease(Semaphore s, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            if (!s.tryAcquire()) {
                throw new IllegalStateException("no free permit");
            }
            s.release();
        }
        return System.nanoTime() - t0;
    }

    static long criticalSections(long[] w, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            criticalSection(w);
        }
        long t = System.nanoTime() - t0;
        sink = w[SLOT];
        return t;
    }

    /**
     * Sleeps at least ns. Thread.sleep(millis, nanos) rounds to whole
     * milliseconds, so this parks until the deadline (parkNanos may return
     * early), as Rust's thread::sleep loops on nanosleep.
     */
    static void sleepNs(long ns) {
        long end = System.nanoTime() + ns;
        for (long left = ns; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    static Thread daemon(Runnable r) {
        Thread t = new Thread(r);
        t.setDaemon(true);
        t.start();
        return t;
    }

    // ------------------------------------------------------------ measurement

    interface Body {
        /** Runs n operations; returns the nanoseconds they took. */
        long run(long n) throws Exception;
    }

    /**
     * Like criterion: doubles the batch for the warm-up time to estimate the
     * wall time per operation, then takes `count` samples of equal length
     * over the measurement time; returns each sample's ns per operation as
     * the body timed it.
     */
    static double[] measure(int count, Body body) throws Exception {
        long n = 1;
        long total = 0;
        long start = System.nanoTime();
        for (long end = start + warmUpNs; System.nanoTime() < end; n *= 2) {
            body.run(n);
            total += n;
        }
        double per = (double) (System.nanoTime() - start) / Math.max(total, 1);
        long iters = Math.max(1, (long) (measurementNs / count / Math.max(per, 1e-3)));
        double[] samples = new double[count];
        for (int i = 0; i < count; i++) {
            samples[i] = (double) body.run(iters) / iters;
        }
        return samples;
    }

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    static String list(double[] xs) {
        StringBuilder b = new StringBuilder("[");
        for (double x : xs) {
            b.append(b.length() == 1 ? "" : ", ").append(String.format(Locale.ROOT, "%.6g", x));
        }
        return b.append(']').toString();
    }

    static void emit(boolean print, String group, String bench, String contender, double[] samples) {
        if (print) {
            System.out.printf(Locale.ROOT, "%s/%s/%-12s %12.2f ns%n", group, bench, contender, median(samples));
        }
        out.printf(Locale.ROOT, "{\"group\": \"%s\", \"bench\": \"%s\", \"contender\": \"%s\", \"samples_ns\": %s}%n",
                group, bench, contender, list(samples));
        out.flush();
    }

    static String loadavg() {
        try {
            String[] f = Files.readString(Paths.get("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    // ------------------------------------------------------ contended and io

    /**
     * A thread-pool cell, as in the Rust suite: workers loop acquire, work,
     * release (the critical section, or a sleep of holdNs when that is not
     * 0) and wait at a barrier between windows. A window lets them run for a
     * ramp (a tenth of it, 1 to 20 ms), then counts their pairs and the
     * process CPU time while this thread sleeps. One warm-up window, then
     * SAMPLES windows over `measurement` ns.
     */
    static void pooled(boolean print, String group, String bench, boolean fair, int threads, int permits,
            long holdNs, long measurement) throws Exception {
        Semaphore sem = new Semaphore(permits, fair);
        long[] word = newWord();
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        CyclicBarrier done = new CyclicBarrier(threads + 1);
        // Pairs completed by each worker so far, one slot per 128 bytes; only its owner writes it.
        AtomicLongArray counts = new AtomicLongArray((threads + 2) * 16);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicBoolean exit = new AtomicBoolean();
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            int slot = (i + 1) * 16;
            workers[i] = daemon(() -> {
                try {
                    while (true) {
                        start.await();
                        if (exit.get()) {
                            return;
                        }
                        long n = counts.get(slot);
                        while (!stop.get()) {
                            sem.acquireUninterruptibly();
                            if (holdNs == 0) {
                                criticalSection(word);
                            } else {
                                sleepNs(holdNs);
                            }
                            sem.release();
                            counts.lazySet(slot, ++n);
                        }
                        done.await();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
        }
        double[] wall = new double[SAMPLES];
        double[] cpu = new double[SAMPLES];
        long[] totals = new long[threads];
        long[] before = new long[threads];
        for (int i = -1; i < SAMPLES; i++) {
            long ns = i < 0 ? warmUpNs : measurement / SAMPLES;
            stop.set(false);
            start.await();
            sleepNs(Math.max(1_000_000L, Math.min(ns / 10, 20_000_000L)));
            Arrays.setAll(before, t -> counts.get((t + 1) * 16));
            long t0 = System.nanoTime();
            long cpu0 = OS.getProcessCpuTime();
            sleepNs(ns);
            long pairs = 0;
            for (int t = 0; t < threads; t++) {
                long d = counts.get((t + 1) * 16) - before[t];
                totals[t] += i < 0 ? 0 : d;
                pairs += d;
            }
            long cpuNs = OS.getProcessCpuTime() - cpu0;
            long wallNs = System.nanoTime() - t0;
            stop.set(true);
            done.await();
            if (i >= 0) {
                wall[i] = (double) wallNs / Math.max(1, pairs);
                cpu[i] = (double) cpuNs / Math.max(1, pairs);
            }
        }
        exit.set(true);
        start.await();
        for (Thread t : workers) {
            t.join();
        }
        if (print) {
            System.out.printf(Locale.ROOT, "%s/%s/%-12s k pairs/s %.4f   CPU us/pair %.4f   per-thread pairs %d..%d%n",
                    group, bench, name(fair), 1e6 / median(wall), median(cpu) / 1e3,
                    Arrays.stream(totals).min().orElse(0), Arrays.stream(totals).max().orElse(0));
        }
        out.printf(Locale.ROOT, "{\"group\": \"%s\", \"bench\": \"%s\", \"contender\": \"%s\", \"samples_ns\": %s, "
                + "\"cpu_ns\": %s, \"counts\": %s}%n", group, bench, name(fair), list(wall), list(cpu),
                Arrays.toString(totals));
        out.flush();
    }

    // ---------------------------------------------------- hand-off, batch wake

    /** Two threads ping-pong over two 0-permit semaphores: ns per round trip. */
    static double[] handoff(boolean fair) throws Exception {
        Semaphore ping = new Semaphore(0, fair);
        Semaphore pong = new Semaphore(0, fair);
        AtomicBoolean exit = new AtomicBoolean();
        Thread partner = daemon(() -> {
            while (true) {
                ping.acquireUninterruptibly();
                if (exit.get()) {
                    return;
                }
                pong.release();
            }
        });
        double[] samples = measure(SAMPLES, n -> {
            long t0 = System.nanoTime();
            for (long i = 0; i < n; i++) {
                ping.release();
                pong.acquireUninterruptibly();
            }
            return System.nanoTime() - t0;
        });
        exit.set(true);
        ping.release();
        partner.join();
        return samples;
    }

    /**
     * BATCH threads park on a 0-permit semaphore and one release(BATCH)
     * frees them all: ns until the last has returned from acquire.
     */
    static double[] batchWake(boolean fair) throws Exception {
        Semaphore sem = new Semaphore(0, fair);
        long base = System.nanoTime();
        AtomicInteger ready = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        AtomicLong last = new AtomicLong();
        CyclicBarrier start = new CyclicBarrier(BATCH + 1);
        AtomicBoolean exit = new AtomicBoolean();
        Thread measurer = Thread.currentThread();
        Thread[] workers = new Thread[BATCH];
        for (int i = 0; i < BATCH; i++) {
            workers[i] = daemon(() -> {
                try {
                    while (true) {
                        start.await();
                        if (exit.get()) {
                            return;
                        }
                        ready.incrementAndGet();
                        sem.acquireUninterruptibly();
                        last.accumulateAndGet(System.nanoTime() - base, Math::max);
                        if (done.incrementAndGet() == BATCH) {
                            LockSupport.unpark(measurer);
                        }
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
        }
        double[] samples = measure(SAMPLES, n -> {
            long sum = 0;
            for (long r = 0; r < n; r++) {
                ready.set(0);
                done.set(0);
                last.set(0);
                start.await();
                while (ready.get() < BATCH) {
                    sleepNs(50_000);
                }
                sleepNs(1_000_000); // let them park
                long t0 = System.nanoTime() - base;
                sem.release(BATCH);
                while (done.get() < BATCH) { // the last waiter unparks this thread
                    LockSupport.parkNanos(5_000_000);
                }
                sum += Math.max(0, last.get() - t0);
            }
            return sum;
        });
        exit.set(true);
        start.await();
        for (Thread t : workers) {
            t.join();
        }
        return samples;
    }
}
