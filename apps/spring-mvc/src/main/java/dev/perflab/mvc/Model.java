package dev.perflab.mvc;

import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Positive;
import jakarta.validation.constraints.Size;
import java.util.List;

/** The JSON shapes of apps/contract/README.md; the constraints are the contract's rules. */
final class Model {

    static final String ZIP = "^[0-9]{5}(-[0-9]{4})?$";

    record Zipcode(
            @NotNull @Pattern(regexp = ZIP) String zip,
            @NotNull @Size(min = 1, max = 64) String city,
            @NotNull @Size(min = 1, max = 64) String county,
            @NotNull @Pattern(regexp = "^[A-Z]{2}$") String state,
            @NotNull @Size(min = 1, max = 32) String timezone,
            @NotNull @Size(min = 1, max = 16) String type) {
    }

    record Book(long id, String title, String author) {
    }

    record NewBook(@NotBlank @Size(max = 128) String title, @NotBlank @Size(max = 128) String author) {
    }

    record BookOrder(long id, long bookId, long userId) {
    }

    record NewOrder(@NotNull @Positive Long bookId, @NotNull @Positive Long userId) {
    }

    record ApiError(int status, List<String> errors) {
    }

    /** TechEmpower's JSON test: a new one per request, serialized by Jackson (never a pre-serialized body). */
    record Message(String message) {
    }

    /** TechEmpower's World row: {"id", "randomNumber"}. */
    record World(int id, int randomNumber) {
    }

    /** TechEmpower's Fortune row, a line of templates/fortunes.mustache. */
    record Fortune(int id, String message) {
    }

    private Model() {
    }
}
