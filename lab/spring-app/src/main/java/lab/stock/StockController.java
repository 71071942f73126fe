package lab.stock;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class StockController {
    private final StockService stockService;

    public StockController(StockService stockService) {
        this.stockService = stockService;
    }

    /** The @Transactional work lives in StockService so the Spring proxy applies. */
    @GetMapping("/stock")
    public String stock() throws InterruptedException {
        return stockService.decrement();
    }

    /**
     * A report page: a query that costs the database CPU (it counts {@code rows} rows it
     * generates), then {@code waitMs} of other calls holding the Tomcat thread.
     */
    @GetMapping("/report")
    public String report(@RequestParam(defaultValue = "20000") int rows,
            @RequestParam(name = "wait", defaultValue = "10") int waitMs) throws InterruptedException {
        long n = stockService.count(rows);
        Thread.sleep(waitMs);
        return Long.toString(n);
    }

    /**
     * A query of {@code ms} in the database, holding a pooled connection that long: with
     * a pool smaller than the users, request threads queue for a connection.
     */
    @GetMapping("/query")
    public String query(@RequestParam(defaultValue = "5") int ms) {
        stockService.sleep(ms);
        return "ok";
    }

    /**
     * Calls the service at {@code url} and answers what it answered: a blocking read on
     * its socket (HttpURLConnection), as a REST call to another service is.
     */
    @GetMapping("/call")
    public String call(@RequestParam String url) throws java.io.IOException {
        try (java.io.InputStream in = new java.net.URL(url).openStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** Waits 20 ms holding its Tomcat thread, as a call to a slow service does. */
    @GetMapping("/slow")
    public String slow() throws InterruptedException {
        Thread.sleep(20);
        return "ok";
    }

    /**
     * One request at a time: a synchronized method that holds its lock 5 ms (a shared
     * cache rebuilt under a lock, a call to a slow service inside one), the monitor every
     * other request thread queues BLOCKED to enter.
     */
    @GetMapping("/hot")
    public synchronized String hot() throws InterruptedException {
        Thread.sleep(5);
        return "ok";
    }

    /** The last 256 buffers /churn made: each lives long enough to be promoted. */
    private final byte[][] recent = new byte[256][];
    private int next;

    /**
     * Allocates 256 KiB that outlives many young collections (the last 256 requests'
     * are kept, 64 MiB), as a cache of recent sessions does: run with a small heap and
     * the serial collector, the old generation fills and its full collections stop the
     * JVM for tens of milliseconds, the stalls the lab lines up with the latency tail.
     */
    @GetMapping("/churn")
    public String churn() {
        byte[] buf = new byte[256 * 1024];
        buf[next & 1023] = 1;
        synchronized (recent) {
            recent[next] = buf;
            next = (next + 1) % recent.length;
        }
        return "ok";
    }

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private volatile byte sink;

    /** Burns roughly 5 ms of this thread's CPU time by hashing in a loop. */
    @GetMapping("/cpu")
    public String cpu() throws NoSuchAlgorithmException {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] buf = "seed".getBytes(StandardCharsets.UTF_8);
        long start = THREADS.getCurrentThreadCpuTime();
        while (THREADS.getCurrentThreadCpuTime() - start < 5_000_000L) {
            for (int i = 0; i < 200; i++) {
                buf = md.digest(buf);
            }
        }
        sink = buf[0];
        return "ok";
    }
}
