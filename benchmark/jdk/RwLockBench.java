// The JDK anchor of the aqs read-write lock benchmarks: the workloads of
// benchmark/benches/rwlock.rs over ReentrantReadWriteLock, nonfair and fair,
// and StampedLock's read and write locks (readLock()/unlockRead,
// writeLock()/unlockWrite) as an extra reference, with the same parameters,
// critical sections and per-thread xorshift. It measures with
// SemaphoreBench's harness, so both files are compiled together
// (benchmark/scripts/bench-jdk.sh runs it):
//
//   javac -d target/bench/jdk-classes benchmark/jdk/SemaphoreBench.java benchmark/jdk/RwLockBench.java
//   java -cp target/bench/jdk-classes RwLockBench target/bench/aqs-bench/jdk-rwlock.jsonl
//
// AQS_BENCH_QUICK=1 shortens every phase; the JSON lines are SemaphoreBench's,
// plus each worker's reads per window and the writer-wait lines, as in the
// Rust suite.

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.concurrent.locks.StampedLock;

public final class RwLockBench {
    static final int[] THREADS = {2, 4, 16};
    /** Percentages of reads in the contended cells. */
    static final int[] READ_PERCENT = {100, 99, 90, 50};
    static final String[] CONTENDERS = {"jdk-nonfair", "jdk-fair", "jdk-stamped"};
    /** Readers looping while one writer measures its waits. */
    static final int READERS = 3;

    public static void main(String[] args) throws Exception {
        SemaphoreBench.run("RwLockBench", args, "target/bench/aqs-bench/jdk-rwlock.jsonl", RwLockBench::suite);
    }

    /** A lock of one contender, as read and write sections over the protected word. */
    interface Lock {
        /** Read-locks, mixes the word into the sink, unlocks. */
        void read(long[] word);

        /** Write-locks, mixes the word and stores it back, unlocks. */
        void write(long[] word);

        /** Write-locks and unlocks. */
        void writeEmpty();

        /** Read-locks and unlocks. */
        void readEmpty();

        /** As write, and returns the ns from the lock call until the lock was held. */
        long writeWait(long[] word);
    }

    static Lock newLock(String contender) {
        if (contender.equals("jdk-stamped")) {
            StampedLock l = new StampedLock();
            return new Lock() {
                public void read(long[] word) {
                    long stamp = l.readLock();
                    try {
                        readSection(word);
                    } finally {
                        l.unlockRead(stamp);
                    }
                }

                public void write(long[] word) {
                    long stamp = l.writeLock();
                    try {
                        SemaphoreBench.criticalSection(word, SemaphoreBench.CS_ROUNDS);
                    } finally {
                        l.unlockWrite(stamp);
                    }
                }

                public void readEmpty() {
                    l.unlockRead(l.readLock());
                }

                public void writeEmpty() {
                    l.unlockWrite(l.writeLock());
                }

                public long writeWait(long[] word) {
                    long asked = System.nanoTime();
                    long stamp = l.writeLock();
                    long wait = System.nanoTime() - asked;
                    try {
                        SemaphoreBench.criticalSection(word, SemaphoreBench.CS_ROUNDS);
                    } finally {
                        l.unlockWrite(stamp);
                    }
                    return wait;
                }
            };
        }
        ReentrantReadWriteLock rw = new ReentrantReadWriteLock(contender.equals("jdk-fair"));
        ReentrantReadWriteLock.ReadLock r = rw.readLock();
        ReentrantReadWriteLock.WriteLock w = rw.writeLock();
        return new Lock() {
            public void read(long[] word) {
                r.lock();
                try {
                    readSection(word);
                } finally {
                    r.unlock();
                }
            }

            public void write(long[] word) {
                w.lock();
                try {
                    SemaphoreBench.criticalSection(word, SemaphoreBench.CS_ROUNDS);
                } finally {
                    w.unlock();
                }
            }

            public void readEmpty() {
                r.lock();
                r.unlock();
            }

            public void writeEmpty() {
                w.lock();
                w.unlock();
            }

            public long writeWait(long[] word) {
                long asked = System.nanoTime();
                w.lock();
                long wait = System.nanoTime() - asked;
                try {
                    SemaphoreBench.criticalSection(word, SemaphoreBench.CS_ROUNDS);
                } finally {
                    w.unlock();
                }
                return wait;
            }
        };
    }

    /** A read: the mutex suite's short section on the word, into the sink instead of back. */
    static void readSection(long[] w) {
        long x = w[SemaphoreBench.SLOT];
        for (int i = 0; i < SemaphoreBench.CS_ROUNDS; i++) {
            x ^= x >>> 29;
            x *= 0xBF58476D1CE4E5B9L;
        }
        SemaphoreBench.sink = x;
    }

    /** Worker i's xorshift seed, as `xorshift_seed` in benchmark/src/rwlock.rs. */
    static long seed(int i) {
        return 0x9E3779B97F4A7C15L * (i + 1) | 1;
    }

    /** One step of xorshift64 (13, 7, 17), as `xorshift` in benchmark/src/rwlock.rs. */
    static long xorshift(long x) {
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        return x;
    }

    static void suite(boolean print) throws Exception {
        for (String c : CONTENDERS) {
            Lock l = newLock(c);
            SemaphoreBench.emit(print, "rwlock_uncontended", "read", c,
                    SemaphoreBench.measure(SemaphoreBench.fastSamples, n -> {
                        long t0 = System.nanoTime();
                        for (long i = 0; i < n; i++) {
                            l.readEmpty();
                        }
                        return System.nanoTime() - t0;
                    }).ns());
            SemaphoreBench.emit(print, "rwlock_uncontended", "write", c,
                    SemaphoreBench.measure(SemaphoreBench.fastSamples, n -> {
                        long t0 = System.nanoTime();
                        for (long i = 0; i < n; i++) {
                            l.writeEmpty();
                        }
                        return System.nanoTime() - t0;
                    }).ns());
        }
        for (String c : CONTENDERS) {
            for (int threads : THREADS) {
                for (int readPercent : READ_PERCENT) {
                    Lock l = newLock(c);
                    long[] word = SemaphoreBench.newWord();
                    // One state per worker, 128 bytes apart; only its owner touches it.
                    long[] rng = new long[(threads + 2) * 16];
                    for (int i = 0; i < threads; i++) {
                        rng[(i + 1) * 16] = seed(i);
                    }
                    pooled(print, "t" + threads + "_r" + readPercent, c, threads, i -> {
                        int slot = (i + 1) * 16;
                        long x = xorshift(rng[slot]);
                        rng[slot] = x;
                        boolean read = Long.remainderUnsigned(x, 100) < readPercent;
                        if (read) {
                            l.read(word);
                        } else {
                            l.write(word);
                        }
                        return read;
                    });
                }
            }
        }
        for (String c : CONTENDERS) {
            writerWait(print, c);
        }
    }

    /** One operation of worker `worker`: true if it was a read. */
    interface ReadOrWrite {
        boolean run(int worker);
    }

    /**
     * SemaphoreBench.pooled for the contended cells, counting each worker's
     * reads beside its operations (as harness::pooled_rw in the Rust suite):
     * one warm-up window, then SAMPLES windows over the measurement time, each
     * after a ramp of a tenth of it (1 to 20 ms), counting operations, reads
     * and process CPU time while this thread sleeps.
     */
    static void pooled(boolean print, String bench, String contender, int threads, ReadOrWrite op)
            throws Exception {
        int samples = SemaphoreBench.SAMPLES;
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        CyclicBarrier done = new CyclicBarrier(threads + 1);
        // Per worker, 128 bytes apart: operations at slot, reads at slot + 8; only its owner writes them.
        AtomicLongArray counts = new AtomicLongArray((threads + 2) * 16);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicBoolean exit = new AtomicBoolean();
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            int worker = i;
            int slot = (i + 1) * 16;
            workers[i] = SemaphoreBench.daemon(() -> {
                try {
                    while (true) {
                        start.await();
                        if (exit.get()) {
                            return;
                        }
                        long n = counts.get(slot);
                        long r = counts.get(slot + 8);
                        while (!stop.get()) {
                            if (op.run(worker)) {
                                // Before the count: a snapshot never sees more reads than operations.
                                counts.lazySet(slot + 8, ++r);
                            }
                            counts.lazySet(slot, ++n);
                        }
                        done.await();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
        }
        double[] wall = new double[samples];
        double[] cpu = new double[samples];
        double[] spread = new double[samples];
        long[][] perWindow = new long[samples][threads];
        long[][] readsPerWindow = new long[samples][threads];
        long[] totals = new long[threads];
        long[] before = new long[threads];
        long[] readsBefore = new long[threads];
        for (int i = -1; i < samples; i++) {
            long ns = i < 0 ? SemaphoreBench.warmUpNs : SemaphoreBench.measurementNs / samples;
            stop.set(false);
            start.await();
            SemaphoreBench.sleepNs(Math.max(1_000_000L, Math.min(ns / 10, 20_000_000L)));
            Arrays.setAll(readsBefore, t -> counts.get((t + 1) * 16 + 8));
            Arrays.setAll(before, t -> counts.get((t + 1) * 16));
            long t0 = System.nanoTime();
            long cpu0 = SemaphoreBench.OS.getProcessCpuTime();
            SemaphoreBench.sleepNs(ns);
            long[] d = new long[threads];
            long[] dr = new long[threads];
            Arrays.setAll(dr, t -> counts.get((t + 1) * 16 + 8) - readsBefore[t]);
            Arrays.setAll(d, t -> counts.get((t + 1) * 16) - before[t]);
            long cpuNs = SemaphoreBench.OS.getProcessCpuTime() - cpu0;
            long wallNs = System.nanoTime() - t0;
            stop.set(true);
            done.await();
            if (i >= 0) {
                long ops = Arrays.stream(d).sum();
                Arrays.setAll(totals, t -> totals[t] + d[t]);
                perWindow[i] = d;
                readsPerWindow[i] = dr;
                wall[i] = (double) wallNs / Math.max(1, ops);
                cpu[i] = (double) cpuNs / Math.max(1, ops);
                spread[i] = (double) Arrays.stream(d).max().orElse(0) / Arrays.stream(d).min().orElse(0);
            }
        }
        exit.set(true);
        start.await();
        for (Thread t : workers) {
            t.join();
        }
        if (print) {
            System.out.printf(Locale.ROOT, "rwlock_contended/%s/%-16s k ops/s %.4f   CPU us/op %.4f   "
                    + "max/min per window %.4f%n", bench, contender, 1e6 / SemaphoreBench.median(wall),
                    SemaphoreBench.median(cpu) / 1e3, SemaphoreBench.median(spread));
        }
        SemaphoreBench.out.printf(Locale.ROOT, "{\"group\": \"rwlock_contended\", \"bench\": \"%s\", "
                + "\"contender\": \"%s\", \"samples_ns\": %s, \"cpu_ns\": %s, \"counts\": %s, "
                + "\"window_counts\": %s, \"window_reads\": %s}%n", bench, contender, SemaphoreBench.list(wall),
                SemaphoreBench.list(cpu), Arrays.toString(totals), Arrays.deepToString(perWindow),
                Arrays.deepToString(readsPerWindow));
        SemaphoreBench.out.flush();
    }

    /**
     * READERS threads loop read sections while this thread, the writer,
     * loops: note the time, write-lock, record the wait, the write section,
     * unlock, the section's work again outside the lock. Each of SAMPLES
     * windows (the measurement time over all) gives its longest and median
     * wait, as in the Rust suite.
     */
    static void writerWait(boolean print, String c) throws Exception {
        Lock l = newLock(c);
        long[] word = SemaphoreBench.newWord();
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] readers = new Thread[READERS];
        for (int i = 0; i < READERS; i++) {
            readers[i] = SemaphoreBench.daemon(() -> {
                while (!stop.get()) {
                    l.read(word);
                }
            });
        }
        SemaphoreBench.sleepNs(20_000_000L);
        int windows = SemaphoreBench.SAMPLES;
        long length = SemaphoreBench.measurementNs / windows;
        long[] maxNs = new long[windows];
        long[] medianNs = new long[windows];
        long[] writes = new long[windows];
        long[] waits = new long[1 << 16];
        for (int k = 0; k < windows; k++) {
            int n = 0;
            long t0 = System.nanoTime();
            while (System.nanoTime() - t0 < length) {
                long wait = l.writeWait(word);
                if (n == waits.length) {
                    waits = Arrays.copyOf(waits, 2 * n);
                }
                waits[n++] = wait;
                SemaphoreBench.sink = mixed();
            }
            Arrays.sort(waits, 0, n);
            maxNs[k] = waits[n - 1];
            medianNs[k] = waits[n / 2];
            writes[k] = n;
        }
        stop.set(true);
        for (Thread t : readers) {
            t.join();
        }
        if (print) {
            long[] m = maxNs.clone();
            Arrays.sort(m);
            long[] d = medianNs.clone();
            Arrays.sort(d);
            System.out.printf(Locale.ROOT, "rwlock_writer_wait/r%d_w1/%-16s longest wait us (median of windows) %.1f "
                    + "(worst %.1f)   median wait us %.2f   writes/window %d%n", READERS, c, m[windows / 2] / 1e3,
                    m[windows - 1] / 1e3, d[windows / 2] / 1e3, writes[windows / 2]);
        }
        SemaphoreBench.out.printf(Locale.ROOT, "{\"group\": \"rwlock_writer_wait\", \"bench\": \"r%d_w1\", "
                + "\"contender\": \"%s\", \"max_wait_ns\": %s, \"median_wait_ns\": %s, \"writes\": %s}%n", READERS, c,
                Arrays.toString(maxNs), Arrays.toString(medianNs), Arrays.toString(writes));
        SemaphoreBench.out.flush();
    }

    /** The section's work outside the lock, between two writes. */
    static long mixed() {
        long x = SemaphoreBench.WORD_SEED;
        for (int i = 0; i < SemaphoreBench.CS_ROUNDS; i++) {
            x ^= x >>> 29;
            x *= 0xBF58476D1CE4E5B9L;
        }
        return x;
    }
}
