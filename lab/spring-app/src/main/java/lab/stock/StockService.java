package lab.stock;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
public class StockService {
    private final JdbcTemplate jdbc;

    public StockService(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Transactional
    public String decrement() throws InterruptedException {
        jdbc.update("UPDATE stock SET n = n - 1 WHERE id = 1");
        Thread.sleep(4);
        return "ok";
    }

    /** A query the database answers after {@code ms}, spending no CPU on it (pg_sleep). */
    public void sleep(int ms) {
        jdbc.queryForObject("SELECT 1 FROM pg_sleep(?)", Integer.class, ms / 1000.0);
    }

    /** Counts {@code rows} rows the database generates: its CPU, no table, no lock. */
    public long count(int rows) {
        Long n = jdbc.queryForObject("SELECT count(*) FROM generate_series(1, ?)", Long.class, rows);
        return n == null ? 0 : n;
    }
}
