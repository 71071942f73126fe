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
}
