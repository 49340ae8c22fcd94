package dev.perflab.quarkus;

import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;

import java.util.Optional;

/**
 * Quarkus treats the datasource password as optional and would start, then fail every DB call;
 * the lab's contract is that PERFLAB_DB_PASSWORD is required, so the start fails instead.
 */
@Singleton
public class RequiredSettings {
    void check(@Observes StartupEvent event, @ConfigProperty(name = "quarkus.datasource.password") Optional<String> password) {
        if (password.isEmpty() || password.get().isEmpty()) {
            throw new IllegalStateException("PERFLAB_DB_PASSWORD is required: set it to the password of the app's DB user");
        }
    }
}
