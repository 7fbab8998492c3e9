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
// io) add the process CPU time per pair of every sample ("cpu_ns"), each
// thread's pairs over all of them ("counts") and in each ("window_counts");
// the hand-off adds the CPU time per round trip.
//
// The measuring harness here (run, measure, pooled, pingPong, wakeAll,
// emit) serves MutexBench.java too, which calls it by name; this file still
// compiles alone.

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
        run("SemaphoreBench", args, "target/bench/aqs-bench/jdk.jsonl", SemaphoreBench::suite);
    }

    /** A whole suite of cells; prints each cell's medians when `print` is set. */
    interface Suite {
        void run(boolean print) throws Exception;
    }

    /**
     * Runs `suite` twice, a short pass so that C2 has compiled every body and
     * then the measured one, writing the JSON lines to args[0] (by default
     * `file`) and a meta line last.
     */
    static void run(String name, String[] args, String file, Suite suite) throws Exception {
        String env = System.getenv("AQS_BENCH_QUICK");
        boolean quick = env != null && !env.isEmpty() && !env.equals("0");
        Path path = Paths.get(args.length > 0 ? args[0] : file);
        if (path.getParent() != null) {
            Files.createDirectories(path.getParent());
        }
        String loadStart = loadavg();
        long started = System.currentTimeMillis() / 1000;
        System.out.printf("%s: quick %b, load average %s%n", name, quick, loadStart);

        long t0 = System.nanoTime();
        configure(50_000_000L, 100_000_000L, 200_000_000L, 10);
        out = new PrintWriter(Writer.nullWriter());
        suite.run(false);
        System.out.printf("JIT warm-up: %.1f s%n", (System.nanoTime() - t0) / 1e9);

        if (quick) {
            configure(200_000_000L, 500_000_000L, 2_000_000_000L, 30);
        } else {
            configure(1_000_000_000L, 3_000_000_000L, 3_000_000_000L, 100);
        }
        out = new PrintWriter(Files.newBufferedWriter(path));
        suite.run(true);
        String java = System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
        out.printf(Locale.ROOT, "{\"group\": \"meta\", \"quick\": %b, \"java\": \"%s\", \"started_unix\": %d, "
                + "\"ended_unix\": %d, \"loadavg_start\": \"%s\", \"loadavg_end\": \"%s\"}%n",
                quick, java, started, System.currentTimeMillis() / 1000, loadStart, loadavg());
        out.close();
        System.out.println("wrote " + path);
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
            emit(print, "uncontended", "acquire_release", name(fair),
                    measure(fastSamples, n -> acquireRelease(one, n)).ns());
            emit(print, "uncontended", "try_acquire_release", name(fair),
                    measure(fastSamples, n -> tryAcquireRelease(one, n)).ns());
        }
        long[] cs = newWord();
        emit(print, "uncontended", "critical_section", "jdk-alone",
                measure(fastSamples, n -> criticalSections(cs, n)).ns());
        for (int[] tp : CONTENDED) {
            for (boolean fair : new boolean[] {false, true}) {
                semaphorePool(print, "contended", "t" + tp[0] + "_p" + tp[1], fair, tp[0], tp[1], 0, measurementNs);
            }
        }
        for (boolean fair : new boolean[] {false, true}) {
            Semaphore ping = new Semaphore(0, fair);
            Semaphore pong = new Semaphore(0, fair);
            AtomicBoolean exit = new AtomicBoolean();
            emit(print, "handoff", "round_trip", name(fair), pingPong(() -> {
                ping.acquireUninterruptibly();
                if (exit.get()) {
                    return false;
                }
                pong.release();
                return true;
            }, () -> {
                ping.release();
                pong.acquireUninterruptibly();
            }, () -> {
                exit.set(true);
                ping.release();
            }));
        }
        for (boolean fair : new boolean[] {false, true}) {
            Semaphore sem = new Semaphore(0, fair);
            double[] samples = wakeAll(BATCH, ready -> {
                ready.incrementAndGet();
                sem.acquireUninterruptibly();
            }, () -> sem.release(BATCH));
            emit(print, "batch_wake", "wake8", name(fair), samples);
        }
        for (int i = 0; i < IO.length; i++) {
            for (boolean fair : new boolean[] {false, true}) {
                semaphorePool(print, "io", IO_NAMES[i], fair, (int) IO[i][0], (int) IO[i][1], IO[i][2], ioNs);
            }
        }
    }

    static String name(boolean fair) {
        return fair ? "jdk-fair" : "jdk-nonfair";
    }

    // ------------------------------------------------------------------ bodies

    /** `rounds` dependent xorshift-multiply rounds on the protected word. */
    static void criticalSection(long[] w, int rounds) {
        long x = w[SLOT];
        for (int i = 0; i < rounds; i++) {
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
            criticalSection(w, CS_ROUNDS);
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

    /** Each sample's ns per operation, and its process CPU ns per operation. */
    record Samples(double[] ns, double[] cpu) {}

    /**
     * Like criterion: doubles the batch for the warm-up time to estimate the
     * wall time per operation, then takes `count` samples of equal length
     * over the measurement time; returns each sample's ns per operation as
     * the body timed it, and the process CPU time per operation around it.
     */
    static Samples measure(int count, Body body) throws Exception {
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
        double[] cpu = new double[count];
        for (int i = 0; i < count; i++) {
            long cpu0 = OS.getProcessCpuTime();
            samples[i] = (double) body.run(iters) / iters;
            cpu[i] = (double) (OS.getProcessCpuTime() - cpu0) / iters;
        }
        return new Samples(samples, cpu);
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

    /** A cell with CPU time: a ping-pong's. */
    static void emit(boolean print, String group, String bench, String contender, Samples s) {
        if (print) {
            System.out.printf(Locale.ROOT, "%s/%s/%-16s k ops/s %.4f   CPU us/op %.4f%n", group, bench, contender,
                    1e6 / median(s.ns()), median(s.cpu()) / 1e3);
        }
        out.printf(Locale.ROOT, "{\"group\": \"%s\", \"bench\": \"%s\", \"contender\": \"%s\", \"samples_ns\": %s, "
                + "\"cpu_ns\": %s}%n", group, bench, contender, list(s.ns()), list(s.cpu()));
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
     * A semaphore pool cell: workers loop acquire, work, release; the work is
     * the critical section, or a sleep of holdNs when that is not 0.
     */
    static void semaphorePool(boolean print, String group, String bench, boolean fair, int threads, int permits,
            long holdNs, long measurement) throws Exception {
        Semaphore sem = new Semaphore(permits, fair);
        long[] word = newWord();
        pooled(print, group, bench, name(fair), threads, measurement, i -> {
            sem.acquireUninterruptibly();
            if (holdNs == 0) {
                criticalSection(word, CS_ROUNDS);
            } else {
                sleepNs(holdNs);
            }
            sem.release();
        });
    }

    /** One operation of a pool's worker `worker`. */
    interface Op {
        void run(int worker) throws Exception;
    }

    /**
     * A thread-pool cell, as in the Rust suite: workers loop `op` (every
     * worker must be able to stop after any operation without leaving another
     * blocked for good) and wait at a barrier between windows. A window lets
     * them run for a ramp (a tenth of it, 1 to 20 ms), then counts their
     * operations and the process CPU time while this thread sleeps. One
     * warm-up window, then SAMPLES windows over `measurement` ns.
     */
    static void pooled(boolean print, String group, String bench, String contender, int threads, long measurement,
            Op op) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        CyclicBarrier done = new CyclicBarrier(threads + 1);
        // Operations completed by each worker so far, one slot per 128 bytes; only its owner writes it.
        AtomicLongArray counts = new AtomicLongArray((threads + 2) * 16);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicBoolean exit = new AtomicBoolean();
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            int worker = i;
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
                            op.run(worker);
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
        double[] spread = new double[SAMPLES];
        long[][] perWindow = new long[SAMPLES][threads];
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
            long[] d = new long[threads];
            Arrays.setAll(d, t -> counts.get((t + 1) * 16) - before[t]);
            long cpuNs = OS.getProcessCpuTime() - cpu0;
            long wallNs = System.nanoTime() - t0;
            stop.set(true);
            done.await();
            if (i >= 0) {
                long pairs = Arrays.stream(d).sum();
                Arrays.setAll(totals, t -> totals[t] + d[t]);
                perWindow[i] = d;
                wall[i] = (double) wallNs / Math.max(1, pairs);
                cpu[i] = (double) cpuNs / Math.max(1, pairs);
                spread[i] = (double) Arrays.stream(d).max().orElse(0) / Arrays.stream(d).min().orElse(0);
            }
        }
        exit.set(true);
        start.await();
        for (Thread t : workers) {
            t.join();
        }
        if (print) {
            System.out.printf(Locale.ROOT, "%s/%s/%-16s k pairs/s %.4f   CPU us/pair %.4f   max/min per window %.4f%n",
                    group, bench, contender, 1e6 / median(wall), median(cpu) / 1e3, median(spread));
        }
        out.printf(Locale.ROOT, "{\"group\": \"%s\", \"bench\": \"%s\", \"contender\": \"%s\", \"samples_ns\": %s, "
                + "\"cpu_ns\": %s, \"counts\": %s, \"window_counts\": %s}%n", group, bench, contender, list(wall),
                list(cpu), Arrays.toString(totals), Arrays.deepToString(perWindow));
        out.flush();
    }

    // ----------------------------------------------------- ping-pong, wake-all

    /** One step of a ping-pong. */
    interface Step {
        void run() throws Exception;
    }

    /** The partner's turn of a ping-pong: false once it has seen the stop. */
    interface Turn {
        boolean run() throws Exception;
    }

    /**
     * Two threads taking turns: a partner thread loops `turn` while it
     * returns true, and this one loops `round`, which must wait for one
     * partner turn; the samples are per round. Then `stop` runs, which must
     * not wait for the partner: it raises a flag and wakes the partner's
     * turn, which looks at the flag between being woken and answering (a
     * partner that looked after answering could leave while a round waits
     * for it) and returns false.
     */
    static Samples pingPong(Turn turn, Step round, Step stop) throws Exception {
        Thread partner = daemon(() -> {
            try {
                while (turn.run()) {
                    // the next turn
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        Samples samples = measure(SAMPLES, n -> {
            long t0 = System.nanoTime();
            for (long i = 0; i < n; i++) {
                round.run();
            }
            return System.nanoTime() - t0;
        });
        stop.run();
        partner.join();
        return samples;
    }

    /** How a waiter of wakeAll blocks: it counts itself in `ready` first. */
    interface Park {
        void run(AtomicInteger ready) throws Exception;
    }

    /**
     * `waiters` threads each call `park`, and one `wake` releases them all:
     * ns from the wake until the last `park` has returned.
     */
    static double[] wakeAll(int waiters, Park park, Runnable wake) throws Exception {
        long base = System.nanoTime();
        AtomicInteger ready = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        AtomicLong last = new AtomicLong();
        CyclicBarrier start = new CyclicBarrier(waiters + 1);
        AtomicBoolean exit = new AtomicBoolean();
        Thread measurer = Thread.currentThread();
        Thread[] workers = new Thread[waiters];
        for (int i = 0; i < waiters; i++) {
            workers[i] = daemon(() -> {
                try {
                    while (true) {
                        start.await();
                        if (exit.get()) {
                            return;
                        }
                        park.run(ready);
                        last.accumulateAndGet(System.nanoTime() - base, Math::max);
                        if (done.incrementAndGet() == waiters) {
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
                while (ready.get() < waiters) {
                    sleepNs(50_000);
                }
                sleepNs(1_000_000); // let them park
                long t0 = System.nanoTime() - base;
                wake.run();
                while (done.get() < waiters) { // the last waiter unparks this thread
                    LockSupport.parkNanos(5_000_000);
                }
                sum += Math.max(0, last.get() - t0);
            }
            return sum;
        }).ns();
        exit.set(true);
        start.await();
        for (Thread t : workers) {
            t.join();
        }
        return samples;
    }
}
