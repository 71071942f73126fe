package lab.stock;

import java.util.Map;

import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.security.core.Authentication;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.util.HtmlUtils;

/** The pages behind the optional login (LoginConfig): there only with --lab.login=true. */
@RestController
@ConditionalOnProperty(name = "lab.login", havingValue = "true")
public class AccountController {
    private final LoginCounts counts;

    public AccountController(LoginCounts counts) {
        this.counts = counts;
    }

    /** The logged-in user's page, with the session's CSRF token for the logout form. */
    @GetMapping(value = "/account/home", produces = MediaType.TEXT_HTML_VALUE)
    public String home(Authentication auth, CsrfToken csrf) {
        String user = HtmlUtils.htmlEscape(auth.getName());
        String token = HtmlUtils.htmlEscape(csrf.getToken());
        return "<!DOCTYPE html>\n<html><head><title>Account</title></head><body>\n"
                + "<h1>Welcome, " + user + "</h1>\n"
                + "<p><a href=\"/account/orders?user=" + user + "\">Your orders</a></p>\n"
                + "<form method=\"post\" action=\"/logout\">\n"
                + "<input type=\"hidden\" name=\"" + HtmlUtils.htmlEscape(csrf.getParameterName())
                + "\" value=\"" + token + "\"/>\n"
                + "<button type=\"submit\">Log out</button>\n</form>\n</body></html>\n";
    }

    /** {@code user}'s orders, to that user's session only (403 to anyone else's). */
    @GetMapping(value = "/account/orders", produces = MediaType.TEXT_PLAIN_VALUE)
    public ResponseEntity<String> orders(@RequestParam String user, Authentication auth) {
        if (!user.equals(auth.getName())) {
            return ResponseEntity.status(HttpStatus.FORBIDDEN).body("not your account");
        }
        counts.order(user);
        return ResponseEntity.ok("orders of " + user);
    }

    /** Per user: /account/orders served, logins, logouts (no login needed). */
    @GetMapping("/lab/counts")
    public Map<String, Map<String, Long>> labCounts() {
        return counts.snapshot();
    }
}
