// The JDK anchor of the aqs mutex benchmarks: the workloads of
// benchmark/benches/mutex.rs over ReentrantLock, nonfair and fair, and
// `synchronized`, with the same parameters and critical sections. The
// condition workloads use ReentrantLock's Condition, and Object.wait /
// notifyAll under `synchronized`. It measures with SemaphoreBench's harness,
// so both files are compiled together (benchmark/scripts/bench-jdk.sh runs it):
//
//   javac -d target/bench/jdk-classes benchmark/jdk/SemaphoreBench.java benchmark/jdk/MutexBench.java
//   java -XX:-EliminateLocks -cp target/bench/jdk-classes MutexBench target/bench/aqs-bench/jdk-mutex.jsonl
//
// -XX:-EliminateLocks keeps C2 from coarsening the uncontended loop's
// synchronized blocks (it unrolls the loop and takes the monitor once for
// several: 4 ns a "lock + unlock" instead of 16 on this kind of machine);
// every other lock here is taken once an operation on a shared object.
//
// AQS_BENCH_QUICK=1 shortens every phase; the JSON lines are SemaphoreBench's.

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

public final class MutexBench {
    static final int[] THREADS = {2, 4, 16};
    /** The critical sections: the semaphore suite's rounds, and ten times as many. */
    static final int[] ROUNDS = {SemaphoreBench.CS_ROUNDS, 10 * SemaphoreBench.CS_ROUNDS};
    static final String[] CONTENDERS = {"jdk-nonfair", "jdk-fair", "jdk-synchronized"};
    static final int WAITERS = 8;

    public static void main(String[] args) throws Exception {
        SemaphoreBench.run("MutexBench", args, "target/bench/aqs-bench/jdk-mutex.jsonl", MutexBench::suite);
    }

    /** A contender's lock: a ReentrantLock, or a plain object for its monitor. */
    static Object newLock(String contender) {
        return contender.equals("jdk-synchronized") ? new Object() : new ReentrantLock(contender.equals("jdk-fair"));
    }

    static void suite(boolean print) throws Exception {
        AtomicInteger floor = new AtomicInteger();
        SemaphoreBench.emit(print, "mutex_uncontended", "cas_store", "jdk-floor",
                SemaphoreBench.measure(SemaphoreBench.fastSamples, n -> casStore(floor, n)).ns());
        for (String c : CONTENDERS) {
            Object lock = newLock(c);
            SemaphoreBench.Body body = lock instanceof ReentrantLock l ? n -> lockUnlock(l, n) : n -> enterExit(lock, n);
            SemaphoreBench.emit(print, "mutex_uncontended", "lock_unlock", c,
                    SemaphoreBench.measure(SemaphoreBench.fastSamples, body).ns());
        }
        for (String c : CONTENDERS) {
            for (int threads : THREADS) {
                for (int rounds : ROUNDS) {
                    SemaphoreBench.pooled(print, "mutex_contended", "t" + threads + "_cs" + rounds, c, threads,
                            SemaphoreBench.measurementNs, criticalSection(newLock(c), rounds));
                }
            }
        }
        for (String c : CONTENDERS) {
            SemaphoreBench.emit(print, "mutex_condvar", "ping_pong", c, pingPong(newLock(c)));
        }
        for (String c : CONTENDERS) {
            SemaphoreBench.emit(print, "mutex_condvar", "notify_all" + WAITERS, c, notifyAll(newLock(c)));
        }
    }

    // ------------------------------------------------------------ uncontended

    /** What no lock beats uncontended: a compare-and-swap and a release store. */
    static long casStore(AtomicInteger word, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            if (!word.compareAndSet(0, 1)) {
                throw new IllegalStateException("the word is taken");
            }
            word.setRelease(0);
        }
        return System.nanoTime() - t0;
    }

    static long lockUnlock(ReentrantLock l, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            l.lock();
            l.unlock();
        }
        return System.nanoTime() - t0;
    }

    /** Needs -XX:-EliminateLocks, or C2 unrolls the loop and coarsens several blocks into one lock. */
    static long enterExit(Object monitor, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            synchronized (monitor) {
                // nothing: lock + unlock, as for the other contenders
            }
        }
        return System.nanoTime() - t0;
    }

    // ---------------------------------------------------- pools and ping-pong

    /** Lock, `rounds` rounds on the protected word, unlock. */
    static SemaphoreBench.Op criticalSection(Object lock, int rounds) {
        long[] word = SemaphoreBench.newWord();
        if (lock instanceof ReentrantLock l) {
            return i -> {
                l.lock();
                try {
                    SemaphoreBench.criticalSection(word, rounds);
                } finally {
                    l.unlock();
                }
            };
        }
        return i -> {
            synchronized (lock) {
                SemaphoreBench.criticalSection(word, rounds);
            }
        };
    }

    /** A pass of the condition ping-pong by thread i: false once it has seen the stop. */
    interface Pass {
        boolean run(int i) throws Exception;
    }

    /**
     * The condition ping-pong, as in the Rust suite: a pass by thread i
     * waits until the count's parity is i, counts one and wakes the other;
     * with a ReentrantLock each waits on its own Condition, with a monitor
     * both wait on it and notifyAll wakes the other. A round trip is this
     * thread's pass, which waits for the partner's. To stop, the partner is
     * woken under the lock with `exit` set, which it sees before it would
     * wait again.
     */
    static SemaphoreBench.Samples pingPong(Object lock) throws Exception {
        long[] count = new long[1];
        AtomicBoolean exit = new AtomicBoolean();
        if (lock instanceof ReentrantLock l) {
            Condition[] cv = {l.newCondition(), l.newCondition()};
            Pass pass = i -> {
                l.lock();
                try {
                    while ((count[0] & 1) != i) {
                        if (exit.get()) {
                            return false;
                        }
                        cv[i].awaitUninterruptibly();
                    }
                    count[0]++;
                    cv[1 - i].signal();
                    return true;
                } finally {
                    l.unlock();
                }
            };
            return SemaphoreBench.pingPong(() -> pass.run(1), () -> pass.run(0), () -> {
                exit.set(true);
                l.lock();
                try {
                    cv[1].signal();
                } finally {
                    l.unlock();
                }
            });
        }
        Pass pass = i -> {
            synchronized (lock) {
                while ((count[0] & 1) != i) {
                    if (exit.get()) {
                        return false;
                    }
                    lock.wait();
                }
                count[0]++;
                lock.notifyAll();
                return true;
            }
        };
        return SemaphoreBench.pingPong(() -> pass.run(1), () -> pass.run(0), () -> {
            exit.set(true);
            synchronized (lock) {
                lock.notifyAll();
            }
        });
    }

    /**
     * WAITERS threads wait for the generation to change; one signalAll (or
     * notifyAll) under the lock releases them: ns until the last has returned
     * from its wait and unlocked.
     */
    static double[] notifyAll(Object lock) throws Exception {
        long[] generation = new long[1];
        if (lock instanceof ReentrantLock l) {
            Condition cv = l.newCondition();
            return SemaphoreBench.wakeAll(WAITERS, ready -> {
                l.lock();
                try {
                    long seen = generation[0];
                    ready.incrementAndGet();
                    while (generation[0] == seen) {
                        cv.awaitUninterruptibly();
                    }
                } finally {
                    l.unlock();
                }
            }, () -> {
                l.lock();
                try {
                    generation[0]++;
                    cv.signalAll();
                } finally {
                    l.unlock();
                }
            });
        }
        return SemaphoreBench.wakeAll(WAITERS, ready -> {
            synchronized (lock) {
                long seen = generation[0];
                ready.incrementAndGet();
                while (generation[0] == seen) {
                    lock.wait();
                }
            }
        }, () -> {
            synchronized (lock) {
                generation[0]++;
                lock.notifyAll();
            }
        });
    }
}
