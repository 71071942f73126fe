package lab.stock;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** Per user: the /account/orders served (200s), the successful logins and the logouts. */
public class LoginCounts {
    private final ConcurrentHashMap<String, AtomicLong> orders = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, AtomicLong> logins = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, AtomicLong> logouts = new ConcurrentHashMap<>();

    public void order(String user) {
        add(orders, user);
    }

    public void login(String user) {
        add(logins, user);
    }

    public void logout(String user) {
        add(logouts, user);
    }

    /** {"orders": {"user0": 3, ...}, "logins": {...}, "logouts": {...}}. */
    public Map<String, Map<String, Long>> snapshot() {
        Map<String, Map<String, Long>> all = new LinkedHashMap<>();
        all.put("orders", copy(orders));
        all.put("logins", copy(logins));
        all.put("logouts", copy(logouts));
        return all;
    }

    private static void add(ConcurrentHashMap<String, AtomicLong> counts, String user) {
        counts.computeIfAbsent(user, u -> new AtomicLong()).incrementAndGet();
    }

    private static Map<String, Long> copy(ConcurrentHashMap<String, AtomicLong> counts) {
        Map<String, Long> out = new TreeMap<>();
        counts.forEach((user, n) -> out.put(user, n.get()));
        return out;
    }
}
