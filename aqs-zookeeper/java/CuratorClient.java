// A Curator 5 client driven line by line, for aqs-zookeeper's interoperability tests.
//
// Usage: CuratorClient <connectString> <recipe> <path> [limit]
//   recipe: mutex | semaphore | semaphore-mutex | read | write
// stdin, one command a line:  acquire | acquire <millis> | release | quit
// stdout, one answer a line:  ready | acquired | timeout | released | error <message>
// One session per process, as each Rust client in the tests has one.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorClient {
    private CuratorClient() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String recipe = args[1];
        String path = args[2];
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10_000, 10_000, new RetryNTimes(3, 200));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("error not connected");
            return;
        }
        InterProcessLock lock = null;
        InterProcessSemaphoreV2 semaphore = null;
        switch (recipe) {
            case "mutex": lock = new InterProcessMutex(client, path); break;
            case "semaphore-mutex": lock = new InterProcessSemaphoreMutex(client, path); break;
            case "read": lock = new InterProcessReadWriteLock(client, path).readLock(); break;
            case "write": lock = new InterProcessReadWriteLock(client, path).writeLock(); break;
            case "semaphore":
                semaphore = new InterProcessSemaphoreV2(client, path, Integer.parseInt(args[3]));
                break;
            default:
                System.out.println("error unknown recipe " + recipe);
                return;
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Lease lease = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            try {
                if (cmd[0].equals("acquire")) {
                    boolean got;
                    if (semaphore != null) {
                        lease = cmd.length > 1
                                ? semaphore.acquire(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS)
                                : semaphore.acquire();
                        got = lease != null;
                    } else if (cmd.length > 1) {
                        got = lock.acquire(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS);
                    } else {
                        lock.acquire();
                        got = true;
                    }
                    System.out.println(got ? "acquired" : "timeout");
                } else if (cmd[0].equals("release")) {
                    if (semaphore != null) {
                        semaphore.returnLease(lease);
                        lease = null;
                    } else {
                        lock.release();
                    }
                    System.out.println("released");
                } else if (cmd[0].equals("quit")) {
                    break;
                } else {
                    System.out.println("error unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                System.out.println("error " + e);
            }
            System.out.flush();
        }
        client.close();
    }
}
