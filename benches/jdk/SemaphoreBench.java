// The JDK anchor for benches/semaphore.rs: the same workloads over
// java.util.concurrent.Semaphore, fair and nonfair, with the same parameters
// and the same critical section. Plain Java, no build tool:
//
//   javac -d target/bench/jdk-classes benches/jdk/SemaphoreBench.java
//   java -cp target/bench/jdk-classes SemaphoreBench target/bench/aqs-bench/jdk.jsonl
//
// scripts/bench-jdk.sh does exactly that. AQS_BENCH_QUICK=1 shortens every
// phase as it does for the Rust suite. Every measurement is written as one
// JSON line: {"group", "bench", "contender", "ns", ...}, where ns is the
// median time per operation (per acquire/release pair, per round trip, per
// batch wake), over samples sized like criterion's in the Rust suite. The
// machine watch works as in the Rust suite (benches/semaphore/watch.rs): it
// looks after the JIT warm-up, before every cell that uses both CPUs, after
// each of their samples and at the end, and measures a sample again when the
// look after it is off (AQS_BENCH_PATIENCE bounds the waiting). Its looks are
// lines of group "sentinel": {"at", "cs_ns", "round_trip_ns", "after_sample"},
// and its waiting one line of group "watch".

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

public final class SemaphoreBench {
    static final int CS_ROUNDS = 50;
    static final long WORD_SEED = 0x9E3779B97F4A7C15L;
    static final int[][] CONTENDED = {{2, 1}, {4, 1}, {16, 1}, {2, 4}, {4, 4}, {16, 4}};
    static final int BATCH = 8;
    static final int FAIRNESS_THREADS = 16;
    /** Index of the protected word in its array: 128 bytes of padding on each side. */
    static final int SLOT = 16;
    /** Windows per sentinel measurement (the median is kept), and operations per window. */
    static final int SENTINEL_WINDOWS = 5;
    static final int SENTINEL_OPS = 20_000;

    static boolean quick;
    static long warmUpNs;
    static long measurementNs;
    static int samples;
    static int fastSamples;
    static long fairnessWindowNs;
    static int fairnessWindows;

    static PrintWriter out;
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        String env = System.getenv("AQS_BENCH_QUICK");
        quick = env != null && !env.isEmpty() && !env.equals("0");
        if (quick) {
            warmUpNs = 200_000_000L;
            measurementNs = 500_000_000L;
            samples = 10;
            fastSamples = 30;
            fairnessWindowNs = 100_000_000L;
            fairnessWindows = 3;
        } else {
            warmUpNs = 1_000_000_000L;
            measurementNs = 3_000_000_000L;
            samples = 10;
            fastSamples = 100;
            fairnessWindowNs = 300_000_000L;
            fairnessWindows = 4;
        }
        Path file = Paths.get(args.length > 0 ? args[0] : "target/bench/aqs-bench/jdk.jsonl");
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        String loadStart = loadavg();
        long started = System.currentTimeMillis() / 1000;
        out = new PrintWriter(new FileWriter(file.toFile()));
        System.out.printf("SemaphoreBench: %s mode, load average %s, output %s%n",
                quick ? "quick (AQS_BENCH_QUICK)" : "full", loadStart, file);

        jitWarmUp();
        String patienceEnv = System.getenv("AQS_BENCH_PATIENCE");
        patienceNs = patienceEnv != null
                ? Long.parseLong(patienceEnv.trim()) * 1_000_000_000L
                : (quick ? 120 : 900) * 1_000_000_000L;
        patienceTotalNs = patienceNs;
        String pinEnv = System.getenv("AQS_BENCH_ROUND_TRIP");
        if (pinEnv != null) {
            pinnedRt = Double.parseDouble(pinEnv.trim());
            if (!(pinnedRt > 0) || Double.isInfinite(pinnedRt)) {
                throw new IllegalArgumentException("AQS_BENCH_ROUND_TRIP must be a positive number of ns, got " + pinEnv);
            }
        }
        calibrate();
        open("jdk-start");

        // 1. uncontended
        for (boolean fair : new boolean[] {false, true}) {
            Semaphore one = new Semaphore(1, fair);
            Semaphore four = new Semaphore(4, fair);
            emit("uncontended", "acquire_release", fair, measureFast(n -> acquireRelease(one, n)));
            emit("uncontended", "try_acquire_release", fair, measureFast(n -> tryAcquireRelease(one, n)));
            emit("uncontended", "acquire_many4_release", fair, measureFast(n -> acquireMany(four, n)));
        }
        long[] cs = newWord();
        emit("uncontended", "critical_section", "jdk-alone", measureFast(n -> criticalSections(cs, n)));

        // 2. contended: contenders alternate within each point
        for (int[] tp : CONTENDED) {
            for (boolean fair : new boolean[] {false, true}) {
                String at = "contended/t" + tp[0] + "_p" + tp[1] + "/" + name(fair);
                open(at);
                Pool pool = new Pool(new Semaphore(tp[1], fair), tp[0]);
                pool.window(warmUpNs);
                double[] ns = new double[samples];
                for (int i = 0; i < samples; i++) {
                    ns[i] = checked(at, () -> pool.window(measurementNs / samples).nsPerPair());
                }
                pool.close();
                emit("contended", "t" + tp[0] + "_p" + tp[1], fair, ns);
            }
        }

        // 3. hand-off
        for (boolean fair : new boolean[] {false, true}) {
            String at = "handoff/round_trip/" + name(fair);
            open(at);
            Partner p = new Partner(fair);
            emit("handoff", "round_trip", fair, measureSlow(at, p::roundTrips));
            p.close();
        }

        // 4. batch wake
        for (boolean fair : new boolean[] {false, true}) {
            String at = "batch_wake/wake8/" + name(fair);
            open(at);
            Batch b = new Batch(fair);
            emit("batch_wake", "wake8", fair, measureSlow(at, b::rounds));
            b.close();
        }

        // 5. fairness under oversubscription
        for (boolean fair : new boolean[] {false, true}) {
            fairness(fair);
        }
        note("jdk-end");
        out.printf(Locale.ROOT, "{\"group\": \"watch\", \"off\": %s, \"round_trip_pinned_ns\": %s, "
                + "\"patience_s\": %d, \"wait_max_s\": %d, \"redone\": %d, \"waits\": %d, \"waited_s\": %.1f, "
                + "\"gave_up\": %d}%n",
                WATCH_OFF, Double.isNaN(pinnedRt) ? "null" : String.format(Locale.ROOT, "%.6g", pinnedRt),
                patienceTotalNs / 1_000_000_000L, WAIT_MAX_NS / 1_000_000_000L, redone, waits,
                waitedNs / 1e9, gaveUp);

        String java = System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
        out.printf(Locale.ROOT,
                "{\"group\": \"meta\", \"quick\": %b, \"java\": %s, \"started_unix\": %d, \"ended_unix\": %d, "
                        + "\"loadavg_start\": %s, \"loadavg_end\": %s, \"cs_rounds\": %d}%n",
                quick, str(java), started, System.currentTimeMillis() / 1000, str(loadStart), str(loadavg()),
                CS_ROUNDS);
        out.close();
        System.out.println("wrote " + file);
        System.exit(0);
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

    static long acquireMany(Semaphore s, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            s.acquireUninterruptibly(4);
            s.release(4);
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

    /** Runs every body for a while so C2 has compiled them before any measurement. */
    static void jitWarmUp() throws Exception {
        long t0 = System.nanoTime();
        long each = quick ? 300_000_000L : 1_000_000_000L;
        for (boolean fair : new boolean[] {false, true}) {
            Semaphore one = new Semaphore(1, fair);
            Semaphore four = new Semaphore(4, fair);
            long[] w = newWord();
            runFor(each / 4, n -> acquireRelease(one, n));
            runFor(each / 4, n -> tryAcquireRelease(one, n));
            runFor(each / 4, n -> acquireMany(four, n));
            runFor(each / 4, n -> criticalSections(w, n));
            Pool pool = new Pool(new Semaphore(1, fair), 2);
            pool.window(each / 4);
            pool.close();
            Partner p = new Partner(fair);
            runFor(each / 8, p::roundTrips);
            p.close();
            Batch b = new Batch(fair);
            runFor(each / 8, b::rounds);
            b.close();
        }
        // The sentinel's loops too, or the first one would time the interpreter.
        for (int i = 0; i < 3; i++) {
            sentinelCriticalSection();
            sentinelRoundTrip();
        }
        System.out.printf("JIT warm-up: %.1f s%n", (System.nanoTime() - t0) / 1e9);
    }

    // ------------------------------------------------------------ measurement

    interface Body {
        /** Runs n operations; returns the nanoseconds they took. */
        long run(long n) throws Exception;
    }

    static void runFor(long ns, Body body) throws Exception {
        long end = System.nanoTime() + ns;
        long n = 1;
        while (System.nanoTime() < end) {
            body.run(n);
            n = Math.min(n * 2, 1L << 20);
        }
    }

    /** Estimates ns per operation by doubling the batch for the warm-up time. */
    static double warmUp(Body body) throws Exception {
        long n = 1;
        long total = 0;
        long ns = 0;
        long wallEnd = System.nanoTime() + warmUpNs;
        while (System.nanoTime() < wallEnd) {
            ns += body.run(n);
            total += n;
            n *= 2;
        }
        return (double) ns / Math.max(total, 1);
    }

    /** Fast bodies (one thread, unwatched): `fastSamples` equal samples over the measurement time. */
    static double[] measureFast(Body body) throws Exception {
        return measure(body, fastSamples, null);
    }

    /** Slow bodies (hand-off, batch wake): `samples` equal samples, each watched as the cell `at`. */
    static double[] measureSlow(String at, Body body) throws Exception {
        return measure(body, samples, at);
    }

    /** Returns the per-operation time of each sample; with `at`, each sample is watched as that cell. */
    static double[] measure(Body body, int count, String at) throws Exception {
        double per = warmUp(body);
        long n = Math.max(1, (long) (measurementNs / count / Math.max(per, 1e-3)));
        Sample sample = () -> (double) body.run(n) / n;
        double[] ns = new double[count];
        for (int i = 0; i < count; i++) {
            ns[i] = at == null ? sample.run() : checked(at, sample);
        }
        return ns;
    }

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        int m = s.length / 2;
        return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
    }

    // -------------------------------------------------------------- contended

    static final class Pool {
        final Semaphore sem;
        final long[] word = newWord();
        final int threads;
        final CyclicBarrier start;
        final CyclicBarrier done;
        /** Pairs completed by each worker so far, one slot per 128 bytes; only its owner writes it. */
        final AtomicLongArray counts;
        final Thread[] workers;
        volatile boolean stop;
        volatile boolean exit;

        Pool(Semaphore sem, int threads) {
            this.sem = sem;
            this.threads = threads;
            this.start = new CyclicBarrier(threads + 1);
            this.done = new CyclicBarrier(threads + 1);
            this.counts = new AtomicLongArray((threads + 2) * 16);
            this.workers = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                final int slot = (i + 1) * 16;
                workers[i] = new Thread(() -> work(slot));
                workers[i].setDaemon(true);
                workers[i].start();
            }
        }

        void work(int slot) {
            try {
                while (true) {
                    start.await();
                    if (exit) {
                        return;
                    }
                    long n = counts.get(slot);
                    while (!stop) {
                        sem.acquireUninterruptibly();
                        criticalSection(word);
                        sem.release();
                        counts.lazySet(slot, ++n);
                    }
                    done.await();
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }

        long[] snapshot() {
            long[] c = new long[threads];
            for (int i = 0; i < threads; i++) {
                c[i] = counts.get((i + 1) * 16);
            }
            return c;
        }

        /** As Pool::window in the Rust suite: a ramp of ns / 10 (0.1 to 20 ms), then ns counted. */
        Window window(long ns) throws Exception {
            stop = false;
            start.await();
            sleepNs(Math.max(100_000L, Math.min(ns / 10, 20_000_000L)));
            long[] before = snapshot();
            long t0 = System.nanoTime();
            sleepNs(ns);
            long[] after = snapshot();
            long elapsed = System.nanoTime() - t0;
            stop = true;
            done.await();
            for (int i = 0; i < threads; i++) {
                after[i] -= before[i];
            }
            return new Window(elapsed, after);
        }

        void close() throws Exception {
            exit = true;
            start.await();
            for (Thread t : workers) {
                t.join();
            }
        }
    }

    static final class Window {
        final long elapsedNs;
        final long[] counts;

        Window(long elapsedNs, long[] counts) {
            this.elapsedNs = elapsedNs;
            this.counts = counts;
        }

        long pairs() {
            long s = 0;
            for (long c : counts) {
                s += c;
            }
            return s;
        }

        double nsPerPair() {
            return (double) elapsedNs / Math.max(1, pairs());
        }
    }

    static void sleepNs(long ns) {
        long end = System.nanoTime() + ns;
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    // ---------------------------------------------------------------- hand-off

    static final class Partner {
        final Semaphore ping;
        final Semaphore pong;
        volatile boolean exit;
        final Thread thread;

        Partner(boolean fair) {
            ping = new Semaphore(0, fair);
            pong = new Semaphore(0, fair);
            thread = new Thread(() -> {
                while (true) {
                    ping.acquireUninterruptibly();
                    if (exit) {
                        return;
                    }
                    pong.release();
                }
            });
            thread.setDaemon(true);
            thread.start();
        }

        long roundTrips(long n) {
            long t0 = System.nanoTime();
            for (long i = 0; i < n; i++) {
                ping.release();
                pong.acquireUninterruptibly();
            }
            return System.nanoTime() - t0;
        }

        void close() throws InterruptedException {
            exit = true;
            ping.release();
            thread.join();
        }
    }

    // -------------------------------------------------------------- batch wake

    static final class Batch {
        final Semaphore sem;
        final long base = System.nanoTime();
        final AtomicInteger ready = new AtomicInteger();
        final AtomicInteger done = new AtomicInteger();
        final AtomicLong last = new AtomicLong();
        final CyclicBarrier start = new CyclicBarrier(BATCH + 1);
        volatile boolean exit;
        final Thread[] workers = new Thread[BATCH];
        // The measuring thread, unparked by the last waiter to return.
        final Thread measurer = Thread.currentThread();

        Batch(boolean fair) {
            sem = new Semaphore(0, fair);
            for (int i = 0; i < BATCH; i++) {
                workers[i] = new Thread(() -> {
                    try {
                        while (true) {
                            start.await();
                            if (exit) {
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
                workers[i].setDaemon(true);
                workers[i].start();
            }
        }

        long round() throws Exception {
            ready.set(0);
            done.set(0);
            last.set(0);
            start.await();
            while (ready.get() < BATCH) {
                sleepNs(50_000);
            }
            sleepNs(1_000_000); // let them park, as SETTLE in the Rust suite
            long t0 = System.nanoTime() - base;
            sem.release(BATCH);
            // As in the Rust suite: sleep until the last waiter unparks us.
            while (done.get() < BATCH) {
                LockSupport.parkNanos(5_000_000);
            }
            return Math.max(0, last.get() - t0);
        }

        long rounds(long n) throws Exception {
            long sum = 0;
            for (long i = 0; i < n; i++) {
                sum += round();
            }
            return sum;
        }

        void close() throws Exception {
            exit = true;
            start.await();
            for (Thread t : workers) {
                t.join();
            }
        }
    }

    // ----------------------------------------------------------------- fairness

    static void fairness(boolean fair) throws Exception {
        Pool pool = new Pool(new Semaphore(1, fair), FAIRNESS_THREADS);
        pool.window(fairnessWindowNs / 2);
        long[] totals = new long[FAIRNESS_THREADS];
        long elapsed = 0;
        for (int w = 0; w < fairnessWindows; w++) {
            Window win = pool.window(fairnessWindowNs);
            elapsed += win.elapsedNs;
            for (int i = 0; i < FAIRNESS_THREADS; i++) {
                totals[i] += win.counts[i];
            }
        }
        pool.close();
        long sum = 0;
        long min = Long.MAX_VALUE;
        long max = 0;
        for (long c : totals) {
            sum += c;
            min = Math.min(min, c);
            max = Math.max(max, c);
        }
        double mean = (double) sum / FAIRNESS_THREADS;
        double var = 0;
        for (long c : totals) {
            var += (c - mean) * (c - mean);
        }
        var /= FAIRNESS_THREADS;
        double cv = mean > 0 ? Math.sqrt(var) / mean : 0;
        double perSec = sum / (elapsed / 1e9);
        String spread = min > 0 ? String.format(Locale.ROOT, "%.6g", (double) max / min) : "null";
        String name = fair ? "jdk-fair" : "jdk-nonfair";
        System.out.printf(Locale.ROOT,
                "fairness/t%d_p1/%-26s %8.3f M pairs/s   per-thread min %8d max %8d   max/min %6s   cv %.2f%n",
                FAIRNESS_THREADS, name, perSec / 1e6, min, max, min > 0 ? String.format(Locale.ROOT, "%.2f",
                        (double) max / min) : "inf", cv);
        out.printf(Locale.ROOT,
                "{\"group\": \"fairness\", \"bench\": \"t%d_p1\", \"contender\": \"%s\", \"threads\": %d, "
                        + "\"permits\": 1, \"pairs_per_sec\": %.6g, \"min\": %d, \"max\": %d, \"mean\": %.6g, "
                        + "\"max_over_min\": %s, \"cv\": %.6g}%n",
                FAIRNESS_THREADS, name, FAIRNESS_THREADS, perSec, min, max, mean, spread, cv);
        out.flush();
    }

    // ----------------------------------------------------------- machine watch

    /*
     * The machine watch of benches/semaphore/watch.rs, in Java, with the same
     * constants and rules. A look times the critical section alone and a round
     * trip between two spinning threads (which needs both CPUs and costs a
     * cache line's move between them). A look is off when either measure is
     * more than WATCH_OFF times away from the median of the reference (the
     * kept looks since the last reset), either way. A sample followed by an
     * off look is measured again once a look is back in line; one wait lasts
     * at most WAIT_MAX_NS, and all of them together at most the patience. A
     * wait that lasts WAIT_MAX_NS resets the reference to the level it ends
     * on; the first reference is the median of CALIBRATION looks a second apart.
     * AQS_BENCH_ROUND_TRIP (ns) pins the round trip's reference.
     * Only the main thread touches this state.
     */

    static final double WATCH_OFF = 1.5;
    static final long CHECK_MIN_NS = 10_000_000L;
    static final long POLL_MS = 1000;
    static final int CALIBRATION = 15;
    static final long WAIT_MAX_NS = 150_000_000_000L;
    static long patienceNs;
    static long patienceTotalNs;
    /** The round trip's reference when AQS_BENCH_ROUND_TRIP pins it, else NaN. */
    static double pinnedRt = Double.NaN;
    static int redone;
    static int waits;
    static long waitedNs;
    static int gaveUp;
    static final List<double[]> reference = new ArrayList<>();

    /** The last look of a wait, and whether it was in line. */
    record Settled(double[] look, boolean inLine) {}

    interface Sample {
        /** Runs one sample; returns its result (ns per operation). */
        double run() throws Exception;
    }

    static double[] look() throws Exception {
        return new double[] {sentinelCriticalSection(), sentinelRoundTrip()};
    }

    static double[] typical() {
        if (reference.isEmpty()) {
            return null;
        }
        double[] cs = reference.stream().mapToDouble(r -> r[0]).toArray();
        double[] rt = reference.stream().mapToDouble(r -> r[1]).toArray();
        return new double[] {upperMedian(cs), Double.isNaN(pinnedRt) ? upperMedian(rt) : pinnedRt};
    }

    /** The element at index length / 2 once sorted, as in the Rust watch and the report. */
    static double upperMedian(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    static boolean outside(double x, double t) {
        return !Double.isNaN(x) && !Double.isNaN(t) && !(t / WATCH_OFF <= x && x <= t * WATCH_OFF);
    }

    static boolean off(double[] l) {
        double[] t = typical();
        return t != null && (outside(l[0], t[0]) || outside(l[1], t[1]));
    }

    static String describe(double[] l) {
        double[] t = typical();
        double tcs = t == null ? Double.NaN : t[0];
        double trt = t == null ? Double.NaN : t[1];
        return String.format(Locale.ROOT, "critical section %.1f ns (typical %.1f), round trip %.1f ns (typical %.1f)",
                l[0], tcs, l[1], trt);
    }

    static void keep(String at, double[] l, boolean afterSample) {
        reference.add(l);
        out.printf(Locale.ROOT, "{\"group\": \"sentinel\", \"at\": %s, \"cs_ns\": %.6g, \"round_trip_ns\": %s, "
                + "\"after_sample\": %b}%n",
                str(at), l[0], Double.isNaN(l[1]) ? "null" : String.format(Locale.ROOT, "%.6g", l[1]), afterSample);
        out.flush();
    }

    static void account(long waited, boolean gaveUpNow) {
        waits++;
        waitedNs += waited;
        gaveUp += gaveUpNow ? 1 : 0;
        patienceNs = Math.max(0, patienceNs - waited);
    }

    /** Looks until a look is in line, or until the wait runs out. */
    static Settled settle(String at) throws Exception {
        long start = System.nanoTime();
        boolean slept = false;
        while (true) {
            double[] l = look();
            long waited = System.nanoTime() - start;
            if (!off(l)) {
                if (slept) {
                    System.out.printf(Locale.ROOT, "watch %-40s in line again after %.0f s: %s%n", at, waited / 1e9,
                            describe(l));
                    account(waited, false);
                }
                return new Settled(l, true);
            }
            long left = Math.max(0, patienceNs - waited);
            if (waited >= WAIT_MAX_NS || left < POLL_MS * 1_000_000L) {
                System.out.printf(Locale.ROOT, "watch %-40s still off after %.0f s, going on (%d s of patience left): %s%n",
                        at, waited / 1e9, left / 1_000_000_000L, describe(l));
                if (waited >= WAIT_MAX_NS) {
                    reference.clear();
                }
                if (slept) {
                    account(waited, true);
                } else {
                    gaveUp++;
                }
                return new Settled(l, false);
            }
            if (!slept) {
                System.out.printf(Locale.ROOT, "watch %-40s off, waiting: %s%n", at, describe(l));
            }
            slept = true;
            Thread.sleep(POLL_MS);
        }
    }

    /** The look that opens the cell (or run point) `at`, once the machine is in line or the wait ran out. */
    static void open(String at) throws Exception {
        double[] l = settle(at).look();
        printLook(at, l);
        keep(at, l, false);
    }

    static void printLook(String at, double[] l) {
        System.out.printf(Locale.ROOT, "sentinel %-40s critical section alone %6.1f ns   spin round trip %6.1f ns%n",
                at, l[0], l[1]);
    }

    /** Looks CALIBRATION times, POLL_MS apart, and makes their median the first reference. */
    static void calibrate() throws Exception {
        if (patienceNs == 0) {
            return;
        }
        double[] cs = new double[CALIBRATION];
        double[] rt = new double[CALIBRATION];
        for (int i = 0; i < CALIBRATION; i++) {
            if (i > 0) {
                Thread.sleep(POLL_MS);
            }
            double[] l = look();
            cs[i] = l[0];
            rt[i] = l[1];
        }
        double[] typical = {upperMedian(cs), upperMedian(rt)};
        System.out.printf(Locale.ROOT, "watch: reference from %d looks: critical section %.1f ns, round trip %.1f ns "
                + "(range %.1f to %.1f)%s; patience %d s%n", CALIBRATION, typical[0], typical[1],
                Arrays.stream(rt).min().orElse(Double.NaN), Arrays.stream(rt).max().orElse(Double.NaN),
                Double.isNaN(pinnedRt) ? "" : String.format(Locale.ROOT, ", pinned to %.1f ns by AQS_BENCH_ROUND_TRIP",
                        pinnedRt),
                patienceNs / 1_000_000_000L);
        reference.add(typical);
    }

    /** A look named `at`, kept without waiting (the end of the run: nothing is measured after it). */
    static void note(String at) throws Exception {
        double[] l = look();
        printLook(at, l);
        keep(at, l, false);
    }

    /** Runs one sample of the cell `at` and looks after it; see the section comment. */
    static double checked(String at, Sample sample) throws Exception {
        boolean mayWait = true;
        while (true) {
            long t0 = System.nanoTime();
            double r = sample.run();
            if (System.nanoTime() - t0 < CHECK_MIN_NS) {
                return r;
            }
            double[] l = look();
            if (!off(l) || !mayWait || patienceNs < POLL_MS * 1_000_000L) {
                keep(at, l, true);
                return r;
            }
            redone++;
            System.out.printf(Locale.ROOT, "watch %-40s off after a sample, measuring it again: %s%n", at, describe(l));
            mayWait = settle(at).inLine();
        }
    }

    static double sentinelCriticalSection() {
        long[] w = newWord();
        double[] windows = new double[SENTINEL_WINDOWS];
        for (int i = 0; i < SENTINEL_WINDOWS; i++) {
            windows[i] = (double) criticalSections(w, SENTINEL_OPS) / SENTINEL_OPS;
        }
        return median(windows);
    }

    /**
     * Median ns per round trip, or NaN with one CPU (two spinners would then
     * pass the ball once per time slice). `ball` counts strokes: the partner
     * answers odd values, this thread even ones; the first window is a
     * warm-up and is dropped.
     */
    static double sentinelRoundTrip() throws Exception {
        if (Runtime.getRuntime().availableProcessors() < 2) {
            return Double.NaN;
        }
        AtomicLongArray ball = new AtomicLongArray(2 * SLOT + 1);
        long rounds = (long) SENTINEL_OPS * (SENTINEL_WINDOWS + 1);
        Thread partner = new Thread(() -> {
            for (long i = 0; i < rounds; i++) {
                while (ball.getAcquire(SLOT) != 2 * i + 1) {
                    Thread.onSpinWait();
                }
                ball.setRelease(SLOT, 2 * i + 2);
            }
        }, "sentinel-partner");
        partner.setDaemon(true);
        partner.start();
        double[] windows = new double[SENTINEL_WINDOWS];
        for (int w = 0; w <= SENTINEL_WINDOWS; w++) {
            long t0 = System.nanoTime();
            for (long i = (long) w * SENTINEL_OPS; i < (long) (w + 1) * SENTINEL_OPS; i++) {
                ball.setRelease(SLOT, 2 * i + 1);
                while (ball.getAcquire(SLOT) != 2 * i + 2) {
                    Thread.onSpinWait();
                }
            }
            if (w > 0) {
                windows[w - 1] = (double) (System.nanoTime() - t0) / SENTINEL_OPS;
            }
        }
        partner.join();
        return median(windows);
    }

    // ------------------------------------------------------------------ output

    static String name(boolean fair) {
        return fair ? "jdk-fair" : "jdk-nonfair";
    }

    static void emit(String group, String bench, boolean fair, double[] samples) {
        emit(group, bench, name(fair), samples);
    }

    /**
     * One JSON line: the median of the samples (ns per operation), their min
     * and max, and the samples themselves (the report pools them over the
     * passes before and after the Rust suite).
     */
    static void emit(String group, String bench, String contender, double[] samples) {
        double ns = median(samples);
        double min = Arrays.stream(samples).min().orElse(ns);
        double max = Arrays.stream(samples).max().orElse(ns);
        StringBuilder each = new StringBuilder();
        for (double x : samples) {
            each.append(each.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.6g", x));
        }
        System.out.printf(Locale.ROOT, "%s/%s/%-12s %12.2f ns%n", group, bench, contender, ns);
        out.printf(Locale.ROOT, "{\"group\": \"%s\", \"bench\": \"%s\", \"contender\": \"%s\", \"ns\": %.6g, "
                + "\"min_ns\": %.6g, \"max_ns\": %.6g, \"samples\": %d, \"samples_ns\": [%s]}%n",
                group, bench, contender, ns, min, max, samples.length, each);
        out.flush();
    }

    static String loadavg() {
        try {
            String[] f = new String(Files.readAllBytes(Paths.get("/proc/loadavg"))).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
