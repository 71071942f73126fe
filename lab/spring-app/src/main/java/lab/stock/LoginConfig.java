package lab.stock;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.crypto.password.DelegatingPasswordEncoder;
import org.springframework.security.crypto.password.NoOpPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.SimpleUrlAuthenticationSuccessHandler;
import org.springframework.security.web.csrf.CsrfFilter;
import org.springframework.security.web.servlet.util.matcher.PathPatternRequestMatcher;
import org.springframework.security.web.util.matcher.AndRequestMatcher;
import org.springframework.security.web.util.matcher.OrRequestMatcher;
import org.springframework.security.web.util.matcher.RequestMatcher;

/**
 * The optional form login ({@code --lab.login=true}): {@code lab.accounts} in-memory users
 * {@code user0}..{@code user{N-1}} with passwords {@code pw0}..; Spring Security's generated
 * login page at {@code /login}; CSRF (the token in the session) on the POSTs of
 * {@code /login}, {@code /logout} and {@code /account/**}; {@code /account/**} for the
 * logged-in only; everything else as without it (permitAll, no CSRF).
 *
 * <p>Off by default: Spring Boot's security auto-configuration is excluded in
 * application.properties and this class is skipped, so no security filter is registered
 * and the other endpoints cost what they did before Spring Security was a dependency.
 */
@Configuration
@EnableWebSecurity
@ConditionalOnProperty(name = "lab.login", havingValue = "true")
public class LoginConfig {

    /**
     * Passwords stored and compared as they are ({@code {noop}}): this is a load test of
     * the session (login, CSRF, pages, logout), not of bcrypt, whose ~100 ms of CPU a
     * login would swamp everything else. The delegating encoder encodes with "noop" too:
     * with Spring's default one (bcrypt for new passwords), the first login of each user
     * would re-encode its {noop} password with bcrypt ("upgradeEncoding", as
     * InMemoryUserDetailsManager is a UserDetailsPasswordService) and every later login
     * would pay for bcrypt.
     */
    @Bean
    @SuppressWarnings("deprecation")
    PasswordEncoder passwordEncoder() {
        return new DelegatingPasswordEncoder("noop", Map.of("noop", NoOpPasswordEncoder.getInstance()));
    }

    /** {@code user0}..{@code user{N-1}}, password {@code pw{i}}, N = {@code lab.accounts}. */
    @Bean
    InMemoryUserDetailsManager users(@Value("${lab.accounts:200}") int accounts) {
        List<UserDetails> users = new ArrayList<>(accounts);
        for (int i = 0; i < accounts; i++) {
            users.add(User.withUsername("user" + i).password("{noop}pw" + i).roles("USER").build());
        }
        return new InMemoryUserDetailsManager(users);
    }

    @Bean
    LoginCounts loginCounts() {
        return new LoginCounts();
    }

    @Bean
    SecurityFilterChain labLogin(HttpSecurity http, LoginCounts counts) throws Exception {
        PathPatternRequestMatcher.Builder path = PathPatternRequestMatcher.withDefaults();
        // CSRF only where the login lives; the app's other endpoints take no token.
        RequestMatcher csrfPaths = new OrRequestMatcher(
                path.matcher("/login"), path.matcher("/logout"), path.matcher("/account/**"));

        SimpleUrlAuthenticationSuccessHandler home = new SimpleUrlAuthenticationSuccessHandler("/account/home");
        home.setAlwaysUseDefaultTargetUrl(true);

        http.authorizeHttpRequests(a -> a
                        .requestMatchers(path.matcher("/account/**")).authenticated()
                        .anyRequest().permitAll())
                // The generated login page (no loginPage set); failure -> /login?error.
                .formLogin(f -> f.successHandler((request, response, auth) -> {
                    counts.login(auth.getName());
                    home.onAuthenticationSuccess(request, response, auth);
                }))
                // Counted by a handler beside the default ones, so that the success URL
                // stays the default /login?logout, the one the generated page answers
                // ("You have been signed out"); a success handler of its own would leave
                // that page unknown to it, and /login?logout a 404.
                .logout(l -> l.addLogoutHandler((request, response, auth) -> {
                    if (auth != null) {
                        counts.logout(auth.getName());
                    }
                }))
                // The default HttpSessionCsrfTokenRepository and XorCsrfTokenRequestAttributeHandler.
                .csrf(c -> c.requireCsrfProtectionMatcher(
                        new AndRequestMatcher(CsrfFilter.DEFAULT_CSRF_MATCHER, csrfPaths)));
        return http.build();
    }
}
